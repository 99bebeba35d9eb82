// How `tilejit tune` runs a registered kernel: its launch sizes, the buffers and
// scalars of a launch, the grid, the constraints between tile constants and sizes,
// and the tolerance of the check against the interpreter.
#ifndef TILEJIT_TUNING_TUNEPROBLEM_H
#define TILEJIT_TUNING_TUNEPROBLEM_H

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/tuning/TuneDb.h"

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tilejit::tuning {

/// One kernel argument of a tuning launch, in parameter order.
struct TuneArg {
  /// Input: random, read only. Output: poisoned, written, checked. Data:
  /// given bytes, read only (slot lists, sequence metadata). State: random,
  /// read and written in place (a state page), restored before each check
  /// launch and checked like an output.
  enum class Kind { Input, Output, Data, State, Int, Float };
  Kind kind = Kind::Int;
  DType dtype = DType::F32;
  /// Buffers: the element count.
  int64_t elements = 0;
  /// Inputs: values drawn from N(0, 1), times `scale`, rounded to `dtype`.
  double scale = 1.0;
  int64_t intValue = 0;
  double floatValue = 0;
  /// Data: the bytes.
  std::vector<uint8_t> bytes;

  static TuneArg input(DType dtype, int64_t elements, double scale = 1.0) {
    return {Kind::Input, dtype, elements, scale};
  }
  /// Poisoned (all bits set: NaN in every float type) before each launch.
  static TuneArg output(DType dtype, int64_t elements) {
    return {Kind::Output, dtype, elements};
  }
  /// Given int32 values (e.g. slots, cu_seqlens), read only.
  static TuneArg int32s(const std::vector<int32_t> &values) {
    TuneArg a{Kind::Data, DType::I32, int64_t(values.size())};
    a.bytes.resize(values.size() * 4);
    std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
    return a;
  }
  /// Random values read and written in place (a state page).
  static TuneArg state(DType dtype, int64_t elements, double scale = 1.0) {
    return {Kind::State, dtype, elements, scale};
  }
  static TuneArg integer(int64_t value) {
    TuneArg a;
    a.intValue = value;
    return a;
  }
  static TuneArg real(double value) {
    TuneArg a;
    a.kind = Kind::Float;
    a.floatValue = value;
    return a;
  }
};

/// A kernel made tunable: everything that is not in its KernelDef.
struct TuneProblem {
  std::string kernel;
  /// The launch sizes tuned for by default (runtime dimensions: "m" of a GEMM).
  NamedValues shape;
  /// Smaller sizes at which each candidate is checked against the
  /// interpreter (it runs the whole grid on one CPU thread); best not
  /// multiples of any tile, so partial tiles are checked too.
  NamedValues checkShape;
  /// (tile, size): the value named `size` (a constant or a launch size) must
  /// be a multiple of the constant `tile`.
  std::vector<std::pair<std::string, std::string>> divides;
  /// (tile, size): the constant `tile` must be at least `size`.
  std::vector<std::pair<std::string, std::string>> covers;
  /// The launch's arguments for a specialization and launch sizes.
  std::function<std::vector<TuneArg>(const Specialization &, const NamedValues &)> args;
  /// Programs along axes 0, 1, 2.
  std::function<std::array<int64_t, 3>(const Specialization &, const NamedValues &)> grid;
  /// An output element passes when |got - want| <= atol + rtol * |want|.
  double atol = 0, rtol = 0;
};

/// The tuning problems of a program, by kernel name. Registration is explicit,
/// like KernelRegistry's.
class TuneProblemRegistry {
public:
  static TuneProblemRegistry &global();
  /// A second problem for the same kernel is an error.
  llvm::Error add(TuneProblem problem);
  /// add() of each, stopping at the first error.
  llvm::Error addAll(std::vector<TuneProblem> all);
  const TuneProblem *find(llvm::StringRef kernel) const;
  std::vector<std::string> names() const;

private:
  std::map<std::string, TuneProblem, std::less<>> problems;
};

/// A problem instance: kernel, fixed constants, launch sizes.
struct TuneTarget {
  const KernelDef *def = nullptr;
  /// Null for an instance that is only keyed (looked up), never measured.
  const TuneProblem *problem = nullptr;
  /// Every constant at its value before tuning (defaults and --set).
  Specialization base;
  NamedValues shape;
};

/// The instance of `kernel` that `tilejit tune` measures: its def and problem,
/// the defaults with `constants` applied, and the problem's launch sizes with
/// `shape` applied. Errors name the unknown kernel, problem or launch size.
llvm::Expected<TuneTarget> makeTuneTarget(const KernelRegistry &kernels,
                                          const TuneProblemRegistry &problems,
                                          llvm::StringRef kernel,
                                          const NamedValues &constants,
                                          const NamedValues &shape);

/// The value of `name` in the specialization, else in `shape`.
std::optional<int64_t> lookupValue(const Specialization &spec, const NamedValues &shape,
                                   llvm::StringRef name);

/// Why the problem's divides/covers constraints reject `spec` at `shape`;
/// empty when they hold. A constraint naming an unknown value is a reason too.
std::string checkShapeConstraints(const TuneProblem &problem, const Specialization &spec,
                                  const NamedValues &shape);

} // namespace tilejit::tuning

#endif // TILEJIT_TUNING_TUNEPROBLEM_H
