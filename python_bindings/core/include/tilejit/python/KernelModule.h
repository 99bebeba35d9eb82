// A finished kernel of the Python package: its parameters, its IR, its stages
// down to PTX and its runs on the CPU interpreter. Plain C++ like Core.h.
#ifndef TILEJIT_PYTHON_KERNELMODULE_H
#define TILEJIT_PYTHON_KERNELMODULE_H

#include "tilejit/python/Core.h"

#include <array>
#include <utility>
#include <variant>

namespace tilejit::python {

/// One kernel parameter: a pointer to `type`, or a scalar of `type`.
struct Param {
  std::string name;
  bool pointer = false;
  DType type = DType::F32;
  /// Pointers: the declared row-major shape, each dimension a size, the name
  /// of the scalar parameter holding it, or "?"; empty when not declared.
  std::vector<std::variant<int64_t, std::string>> shape;
};

/// One compiled stage's text, in pipeline order ("tile", "mlir.<pass>",
/// "llvm", "ptx").
struct Stage {
  std::string name;
  std::string text;
};

/// A kernel compiled to PTX (tilejit::CompiledKernel) with every stage.
struct PTXResult {
  std::string entry;
  std::string ptx;
  int64_t threads = 0;
  int64_t sharedBytes = 0;
  /// "reduced" when a dot adds its products with fewer bits than f32 (e4m3
  /// wgmma: R1h's band applies), else "exact".
  std::string sums = "exact";
  std::vector<std::pair<std::string, std::string>> params;
  std::vector<Stage> stages;
  double lowerMs = 0, translateMs = 0, optimizeMs = 0, codegenMs = 0;
};

/// An argument of an interpreter run: a host buffer or a scalar.
struct HostArg {
  enum class Kind { Buffer, Int, Float } kind = Kind::Int;
  void *data = nullptr;
  size_t bytes = 0;
  bool writable = false;
  int64_t integer = 0;
  double number = 0;
};

/// A verified kernel module: immutable, shareable across threads.
class KernelModule {
public:
  ~KernelModule();
  const std::string &name() const;
  const std::vector<Param> &params() const;
  /// The tile IR; with locations, each op names the source line that built it.
  std::string tileIR(bool locations) const;
  /// Generic form without locations: the text the disk cache key hashes.
  const std::string &canonicalIR() const;
  /// Lowers a copy of the module for `arch` ("sm_90a", ...) and returns each
  /// stage's text when `stages` is set. Errors: ErrorKind::Compile.
  PTXResult compilePTX(const std::string &arch, unsigned optLevel, bool stages) const;
  /// Runs on the CPU interpreter over `grid` (translated once, on first use).
  /// Errors: ErrorKind::Run with the op's location and the program id.
  void run(const std::array<int64_t, 3> &grid, const std::vector<HostArg> &args) const;

  struct State;
  explicit KernelModule(std::unique_ptr<State> state);

private:
  std::unique_ptr<State> state;
};

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_KERNELMODULE_H
