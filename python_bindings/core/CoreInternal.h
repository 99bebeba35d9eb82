// Helpers shared by the core's implementation files (not a public header): type
// mapping between the core's plain types and tilejit's, and the module's state.
#ifndef TILEJIT_PYTHON_COREINTERNAL_H
#define TILEJIT_PYTHON_COREINTERNAL_H

#include "tilejit/python/KernelModule.h"
#include "tilejit/python/Runtime.h"

#include "tilejit/Builder/Builder.h"
#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "tilejit/Interpreter/Interpreter.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <mutex>

namespace tilejit {
class KernelRegistry;
namespace models {
class Backend;
}
} // namespace tilejit

namespace tilejit::python {

/// Throws `err` as an Error of `kind` (its message unchanged).
[[noreturn]] void throwError(ErrorKind kind, llvm::Error err);

/// The value of `expected`, or its error thrown as `kind`.
template <typename T> T unwrap(llvm::Expected<T> expected, ErrorKind kind) {
  if (!expected)
    throwError(kind, expected.takeError());
  return std::move(*expected);
}

/// A fresh context with every dialect a kernel may hold at any stage.
std::unique_ptr<mlir::MLIRContext> makeCompilerContext();

/// The kernel's parameters, read from its signature and the `tile.name` and
/// `tile.shape` attributes of its parameters.
std::vector<Param> paramsOf(tile::KernelOp kernel);

/// The one tile.kernel of a module built by the builder.
tile::KernelOp kernelOf(mlir::ModuleOp module);

/// A finished kernel: its context, its module and what is derived from them.
/// The module is never modified after construction (compilePTX lowers a clone).
struct KernelModule::State {
  std::unique_ptr<mlir::MLIRContext> ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string name;
  std::vector<Param> params;
  std::string canonical;
  /// The interpreter's translation, made by the first run. A clone of the
  /// module is lowered under the same lock, since MLIR contexts are not safe
  /// for concurrent mutation.
  mutable std::mutex mutex;
  mutable std::optional<interp::CompiledKernel> interpreted;
};

class StreamLendingDevice;

struct Runtime::State {
  /// The models' front door on this device: the JIT runtime (kernels of any
  /// module launch on it too) and the plan options of its decode steps.
  std::shared_ptr<models::Backend> backend;
  /// The device inside the backend's runtime; null for a compile-only runtime.
  StreamLendingDevice *lending = nullptr;
  int ordinal = 0;
};

/// The kernels of models/ (Mamba2 ops and examples): models::modelKernels().
/// Errors: ErrorKind::Build when a registration fails.
const KernelRegistry &registry();

/// Wraps a verified module (built by the builder or the registry).
std::shared_ptr<KernelModule> makeKernelModule(std::unique_ptr<mlir::MLIRContext> ctx,
                                               mlir::OwningOpRef<mlir::ModuleOp> module);

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_COREINTERNAL_H
