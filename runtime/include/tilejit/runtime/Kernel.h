// The kernel handle of the JIT facade: compiled on first use for the runtime's
// arch (memory cache, then disk cache, then the compiler), loaded, launched with
// its arguments checked against the compiled signature.
#ifndef TILEJIT_RUNTIME_KERNEL_H
#define TILEJIT_RUNTIME_KERNEL_H

#include "tilejit/runtime/CompilerInterface.h"
#include "tilejit/runtime/DeviceMemory.h"
#include "tilejit/runtime/ModuleCache.h"

#include "tilejit/support/Arch.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace tilejit::runtime {

class JitRuntime;
class WeightSlot;

/// Where a kernel's compiled code came from.
enum class CompileOrigin { None, Memory, Disk, Compiler };
/// "memory", "disk", "compiler" ("none" before compile()).
llvm::StringRef compileOriginName(CompileOrigin origin);

/// What a kernel is: everything the runtime needs to compile it on demand.
struct KernelSpec {
  std::string name;
  /// Produces the canonical tile IR after specialization for `arch` (the
  /// builder + printer in compiler/). Called once, by the first compile().
  std::function<llvm::Expected<std::string>(const Arch &arch)> buildIR;
  CompileOptions options;
  /// The weight this kernel is specialized to, if any: its modules are keyed
  /// by the slot's id and die with the slot.
  const WeightSlot *weightSlot = nullptr;
};

/// A handle to one kernel specialization. Cheap until first use; then holds
/// the compiled metadata and a cached function handle. One thread at a time
/// (JitRuntime::compileAll may compile it on a worker thread).
class Kernel {
public:
  Kernel(JitRuntime &runtime, KernelSpec spec);

  llvm::StringRef name() const { return spec.name; }

  /// Obtains the compiled code (memory cache, disk cache or the compiler); no
  /// device work. Idempotent. Refused during graph capture.
  llvm::Error compile();
  /// compile(), then loads the module into the device context (setting the
  /// dynamic shared memory limit above 48 KiB). Refused during graph capture;
  /// an error when the device cannot run the arch compiled for.
  llvm::Error prepare();
  /// Whether a launch needs no compile, load or allocation.
  bool isReady();

  /// Launches on `stream` with `grid` blocks of the compiled block size.
  /// Prepares first when not ready (refused during capture). The arguments
  /// are checked against the compiled signature before the driver sees them.
  llvm::Error launch(const Stream &stream, Dim3 grid, llvm::ArrayRef<KernelArg> args);

  /// After compile(): the compiled metadata, its disk key, where it came
  /// from and how long obtaining it took.
  const CompiledKernel *compiled() const { return kernel.get(); }
  llvm::StringRef diskKey() const { return key.diskKey; }
  CompileOrigin origin() const { return compiledFrom; }
  double compileMs() const { return obtainMs; }

private:
  /// Success when the kernel's weight slot (if any) is alive.
  llvm::Error checkWeightSlot() const;
  /// The cached function when the module cache still holds it.
  std::optional<FunctionHandle> readyFunction();
  /// Loads the compiled module into the context and the module cache.
  llvm::Error load();
  /// `args` followed by what the launcher supplies: a persistent kernel's
  /// logical grid (`grid`, which then becomes at most one program per
  /// multiprocessor), and the tensor maps, each built from the view its spec
  /// names in `args` (TensorMapSpec), or taken from `tensorMaps` when that
  /// view's base and extents were seen before. Each map's bytes are copied to
  /// `maps`, the launch's own, where its argument points: the cache may evict
  /// an entry while this launch still needs it (a kernel launched over more
  /// views than the cache keeps, as decode's GEMMs over 23 layers' weights).
  llvm::Error withSupplied(llvm::ArrayRef<KernelArg> args, Dim3 &grid,
                           llvm::SmallVectorImpl<KernelArg> &all,
                           llvm::SmallVectorImpl<TensorMapBytes> &maps);

  /// A built descriptor.
  struct BuiltTensorMap {
    uint32_t param;
    DevicePtr base;
    uint64_t rows, cols;
    TensorMapBytes bytes;
  };
  std::vector<BuiltTensorMap> tensorMaps;

  JitRuntime &runtime;
  KernelSpec spec;
  uint64_t weightSlotId = 0;
  std::string weightSlotName;
  ModuleKey key;
  std::shared_ptr<const CompiledKernel> kernel;
  CompileOrigin compiledFrom = CompileOrigin::None;
  double obtainMs = 0;
  FunctionHandle function;
  uint64_t functionGeneration = 0;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_KERNEL_H
