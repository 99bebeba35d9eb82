// The JIT facade: one device context, the compiler, both caches, weight slots, load
// statistics and the capture guard; kernels compile on first use or all at once, in
// parallel, at load.
#ifndef TILEJIT_RUNTIME_JIT_H
#define TILEJIT_RUNTIME_JIT_H

#include "tilejit/runtime/Capture.h"
#include "tilejit/runtime/CompilerInterface.h"
#include "tilejit/runtime/DeviceApi.h"
#include "tilejit/runtime/DeviceMemory.h"
#include "tilejit/runtime/DiskCache.h"
#include "tilejit/runtime/Kernel.h"
#include "tilejit/runtime/LoadStats.h"
#include "tilejit/runtime/ModuleCache.h"
#include "tilejit/runtime/RuntimeOptions.h"
#include "tilejit/runtime/WeightSlot.h"

#include "tilejit/support/Arch.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace tilejit::runtime {

/// One kernel's line in a LoadReport.
struct KernelLoadRecord {
  std::string name;
  CompileOrigin origin = CompileOrigin::None;
  /// Obtaining the compiled code (cache lookups or compiling), on its worker.
  double compileMs = 0;
  /// Loading the module, on the calling thread; 0 when not loaded.
  double loadMs = 0;
  /// Why the module was not loaded (the device cannot run the arch); empty
  /// when it was.
  std::string notLoaded;
};

/// What JitRuntime::compileAll did.
struct LoadReport {
  /// Wall time of the whole call.
  double totalMs = 0;
  unsigned threads = 0;
  std::vector<KernelLoadRecord> kernels;

  /// "compiled 7 kernels in 812.3 ms on 4 threads" and one line per kernel.
  void print(llvm::raw_ostream &os) const;
};

/// The runtime of one device context. Thread-safe, except that a Kernel is
/// used by one thread at a time.
class JitRuntime {
public:
  /// A runtime on `device`, compiling with `compiler` for options.archOverride
  /// or else the device's own arch. Errors: an unknown arch, a device tilejit
  /// has no arch for (and no override), a disk cache directory that cannot be
  /// created.
  static llvm::Expected<std::unique_ptr<JitRuntime>>
  create(std::unique_ptr<DeviceApi> device, std::shared_ptr<KernelCompiler> compiler,
         RuntimeOptions options);
  ~JitRuntime();

  /// The arch kernels are compiled for.
  const Arch &targetArch() const { return arch; }
  DeviceApi &device() { return *dev; }
  KernelCompiler &compiler() { return *comp; }
  LoadStats &stats() { return loadStats; }
  ModuleCache &modules() { return moduleCache; }
  CaptureGuard &capture() { return captureGuard; }
  /// Null when the disk cache is off.
  DiskCache *diskCache() { return disk.get(); }

  /// A new, empty weight slot with a fresh id.
  std::unique_ptr<WeightSlot> createWeightSlot(llvm::StringRef name);
  /// Whether the slot with this id exists.
  bool isWeightSlotLive(uint64_t id) const;

  /// Device memory; refused during graph capture.
  llvm::Expected<DeviceBuffer> allocate(size_t bytes);

  /// Starts capturing `stream`; kernels launched until endCapture must be ready.
  llvm::Error beginCapture(const Stream &stream) { return captureGuard.begin(stream); }
  llvm::Expected<Graph> endCapture(const Stream &stream) {
    return captureGuard.end(stream);
  }

  /// Compiles `kernels` on `threads` worker threads (0: one per core, at most
  /// one per kernel), then loads each module the device can run. Every
  /// kernel is attempted; the error lists all that failed. Refused during
  /// graph capture.
  llvm::Expected<LoadReport> compileAll(llvm::ArrayRef<Kernel *> kernels,
                                        unsigned threads = 0);

  /// The disk key of `request` for this runtime's compiler.
  std::string diskKeyFor(const KernelRequest &request) const;
  /// The disk cache's entry for `request` when there is a valid one, else the
  /// compiler's output (validated, then stored). Counted in the statistics.
  llvm::Expected<std::pair<std::shared_ptr<const CompiledKernel>, CompileOrigin>>
  obtainCompiled(const KernelRequest &request, llvm::StringRef diskKey);

  /// Reports a recovered problem through the diagnostics handler.
  void warn(const llvm::Twine &message);
  /// Reports a choice the runtime made through the notes handler.
  void note(const llvm::Twine &message);

  /// RuntimeOptions::tuneDbPath: the tuning database the kernels of this
  /// runtime are tuned from (tuning/ reads it); empty: none.
  llvm::StringRef tuneDbPath() const { return options.tuneDbPath; }
  /// RuntimeOptions::sharedBytesLimit: the shared memory every kernel of this
  /// runtime is compiled to (0: the target arch's).
  int64_t sharedBytesLimit() const { return options.sharedBytesLimit; }
  /// Whether kernels that wait for their predecessors launch with
  /// programmatic stream serialization (RuntimeOptions::dependentLaunch, on
  /// an arch that has it).
  bool dependentLaunch() const {
    return options.dependentLaunch && arch.capabilities().gridDependency;
  }

private:
  friend class WeightSlot;
  JitRuntime(std::unique_ptr<DeviceApi> device, std::shared_ptr<KernelCompiler> compiler,
             RuntimeOptions options, Arch arch, std::unique_ptr<DiskCache> disk);
  /// Called by ~WeightSlot: forgets the id and unloads its modules.
  void releaseWeightSlot(uint64_t id);

  std::unique_ptr<DeviceApi> dev;
  std::shared_ptr<KernelCompiler> comp;
  RuntimeOptions options;
  Arch arch;
  std::unique_ptr<DiskCache> disk;
  LoadStats loadStats;
  ModuleCache moduleCache;
  CaptureGuard captureGuard;
  mutable std::mutex slotMutex;
  std::set<uint64_t> liveSlots;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_JIT_H
