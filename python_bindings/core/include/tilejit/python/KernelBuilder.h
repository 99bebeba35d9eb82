// The Python package's kernel builder: tilejit's C++ builder (tilejit::Kernel)
// driven call by call, each value kept by its index, each op located at the
// caller's source line. Plain C++ like Core.h.
#ifndef TILEJIT_PYTHON_KERNELBUILDER_H
#define TILEJIT_PYTHON_KERNELBUILDER_H

#include "tilejit/python/Core.h"

#include <functional>
#include <optional>

namespace tilejit::python {

/// A value of the kernel under construction, by its index in the builder.
using ValueId = int32_t;

/// An argument of a builder call: a value, an integer or a float, with the
/// location of the user's expression.
struct Operand {
  enum class Kind { Value, Int, Float } kind = Kind::Int;
  ValueId value = -1;
  int64_t integer = 0;
  double number = 0;
  Location loc;
};

/// A size or stride of a view: static or a run-time value.
struct ViewDim {
  std::optional<int64_t> fixed;
  ValueId value = -1;
};

/// `#tile.config` of the kernel (tilejit::Config).
struct KernelConfig {
  std::vector<int64_t> tile;
  int64_t warps = 4, stages = 1, vector = 1, splitK = 1;
};

enum class UnaryOp { Neg, Exp, Log, Log1p, Sqrt, Rsqrt, Abs, Silu, Softplus };
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  Xor,
  Shl, ///< left shift
  Shr, ///< logical right shift (zeros shift in), as the C++ builder's shr
  Maximum,
  Minimum
};
enum class ReduceOp { Sum, Max, Min, Cumsum };

/// A kernel under construction (tilejit::Kernel). One per thread at a time:
/// the builder's free functions (programId, arange) act on the thread's
/// current kernel. Mistakes are recorded with their location and reported
/// together by finish(), as in C++.
class KernelBuilder {
public:
  /// Errors: another kernel is still under construction on this thread.
  KernelBuilder(const std::string &name, const Location &loc);
  ~KernelBuilder();
  KernelBuilder(const KernelBuilder &) = delete;
  KernelBuilder &operator=(const KernelBuilder &) = delete;

  /// The unfinished kernel of this thread, or null.
  static KernelBuilder *current();
  const std::string &name() const;
  bool finished() const;

  ValueId ptrParam(const std::string &name, DType pointee, const Location &loc);
  ValueId scalarParam(const std::string &name, DType type, const Location &loc);
  void setConfig(const KernelConfig &config);
  /// Records a mistake that finish() will report (e.g. a Python loop body
  /// that raised).
  void fail(const Location &loc, const std::string &message);

  bool valid(ValueId v) const;
  bool isTile(ValueId v) const;
  bool isPointer(ValueId v) const;
  bool isView(ValueId v) const;
  std::vector<int64_t> shape(ValueId v) const;
  DType dtype(ValueId v) const;
  /// "tile<128xf32>", "i32", "!tile.ptr<bf16>"; "<invalid>" after a mistake.
  std::string describe(ValueId v) const;

  ValueId convert(ValueId v, DType type, const Location &loc);
  ValueId programId(int axis, const Location &loc);
  ValueId numPrograms(int axis, const Location &loc);
  ValueId arange(int start, int end, const Location &loc);
  ValueId constant(double value, DType type, const Location &loc);
  ValueId full(const std::vector<int64_t> &shape, const Operand &value, DType type);
  ValueId zeros(const std::vector<int64_t> &shape, DType type, const Location &loc);
  ValueId broadcastTo(const Operand &x, const std::vector<int64_t> &shape);
  ValueId expandDims(const Operand &x, int axis);
  ValueId reshape(const Operand &x, const std::vector<int64_t> &shape);
  ValueId transpose(const Operand &x, const std::vector<int32_t> &order);
  ValueId unary(UnaryOp op, const Operand &x);
  /// x's bits read as `type`, of the same width (f32 <-> i32, bf16 / f16 <-> i16).
  ValueId bitcast(const Operand &x, DType type);
  ValueId binary(BinaryOp op, const Operand &a, const Operand &b);
  ValueId where(const Operand &cond, const Operand &a, const Operand &b);
  ValueId fma(const Operand &a, const Operand &b, const Operand &c);
  ValueId reduce(ReduceOp op, const Operand &x, int axis);
  ValueId dot(const Operand &a, const Operand &b, const Operand &acc);

  ValueId makeView(const Operand &ptr, const std::vector<ViewDim> &sizes,
                   const std::vector<ViewDim> &strides);
  ValueId loadView(ValueId view, const std::vector<Operand> &offsets,
                   const std::vector<int64_t> &shape, std::optional<double> padding,
                   const Location &loc);
  void storeView(ValueId view, const std::vector<Operand> &offsets, const Operand &value,
                 const Location &loc);
  ValueId load(const Operand &ptrs, const std::optional<Operand> &mask,
               const std::optional<Operand> &other);
  void store(const Operand &ptrs, const Operand &value,
             const std::optional<Operand> &mask);

  /// The loop body must not throw: a caller that can fail (Python) catches,
  /// calls fail() and returns no values.
  using LoopBody = std::function<std::vector<ValueId>(ValueId iv, std::vector<ValueId>)>;
  std::vector<ValueId> forRange(const Operand &lo, const Operand &hi, const Operand &step,
                                const std::vector<ValueId> &init, const LoopBody &body);
  void ifThen(const Operand &cond, const std::function<void()> &body);

  /// Programmatic dependent launch (tilejit/Builder/Builder.h).
  void markInvariant(ValueId param, const Location &loc);
  void waitForPredecessors(const Location &loc);
  void launchDependents(const Location &loc);
  void prefetchL2(const Operand &ptr, const Operand &bytes);

  /// Verifies the kernel and ends construction. Errors (ErrorKind::Build):
  /// every recorded mistake and verifier error, each with its location.
  std::shared_ptr<KernelModule> finish();

private:
  struct State;
  std::unique_ptr<State> state;
};

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_KERNELBUILDER_H
