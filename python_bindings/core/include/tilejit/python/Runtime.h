// The Python package's GPU runtime: a JIT runtime (its caches and load
// statistics) on a CUDA device or compile-only, and the kernels it compiles and
// launches on a stream the caller owns. Plain C++ like Core.h.
#ifndef TILEJIT_PYTHON_RUNTIME_H
#define TILEJIT_PYTHON_RUNTIME_H

#include "tilejit/python/Core.h"

#include <array>

namespace tilejit::python {

/// The runtime's load statistics (runtime::LoadStatsSnapshot).
struct LoadStatistics {
  uint64_t bytesUploaded = 0, modulesCompiled = 0, modulesLoaded = 0, memoryHits = 0,
           diskHits = 0, corruptEntries = 0;
  /// Every copy through the runtime's device, weights and buffers alike:
  /// host -> device, device -> host, device -> device (0 when compile-only).
  uint64_t bytesToDevice = 0, bytesToHost = 0, bytesOnDevice = 0;
  std::map<std::string, double> compileMsByStage;
  /// runtime::LoadStatsSnapshot::print's line.
  std::string text;
};

/// An argument of a GPU launch: a device address or a scalar.
struct DeviceArg {
  enum class Kind { Pointer, Int, Float } kind = Kind::Int;
  uint64_t address = 0;
  int64_t integer = 0;
  double number = 0;
};

/// A kernel of a Runtime (runtime::Kernel): compiled on first use through the
/// memory cache, the disk cache, then the compiler.
class DeviceKernel {
public:
  ~DeviceKernel();
  const std::string &name() const;
  /// Obtains the compiled code; no device work. Errors: ErrorKind::Compile.
  void compile();
  /// compile(), then loads the module. Errors: ErrorKind::Device.
  void prepare();
  /// "none", "memory", "disk" or "compiler".
  std::string origin() const;
  double compileMs() const;
  std::string diskKey() const;
  /// The compiled PTX; empty before compile().
  std::string ptx() const;
  /// Launches on `stream` (a CUstream owned by the caller, e.g. torch's
  /// current stream; 0 is the legacy default stream). Scalars are converted
  /// to the compiled parameter kinds, range-checked. Errors: ErrorKind::Argument
  /// for a bad argument, ErrorKind::Device for a driver failure.
  void launch(uint64_t stream, const std::array<uint32_t, 3> &grid,
              const std::vector<DeviceArg> &args);

  struct State;
  explicit DeviceKernel(std::unique_ptr<State> state);

private:
  std::unique_ptr<State> state;
};

/// How to open a Runtime.
struct RuntimeConfig {
  /// "cuda": the GPU through the driver. "compile-only": no device; kernels
  /// compile (and fill the caches) for `arch` but cannot be prepared or launched.
  std::string device = "cuda";
  int ordinal = 0;
  /// Empty: TILEJIT_ARCH, else the device's own arch ("compile-only" needs one).
  std::string arch;
  /// Empty: TILEJIT_CACHE_DIR and its defaults.
  std::string cacheDirectory;
  /// False turns the disk cache off (as TILEJIT_NO_CACHE=1 does).
  bool diskCache = true;
};

/// A JIT runtime on one device context (runtime::JitRuntime), opened through
/// the models' front door (models::Backend), so the Mamba2 steps made on it
/// plan with its arch and tuning database.
class Runtime {
public:
  /// Errors (ErrorKind::Device): no driver, no GPU, an unknown arch, a cache
  /// directory that cannot be made.
  static std::shared_ptr<Runtime> open(const RuntimeConfig &config);
  ~Runtime();
  std::string arch() const;
  /// The CUDA device ordinal (RuntimeConfig::ordinal).
  int ordinal() const;
  /// printDeviceInfo's line, or "compile-only (sm_90a)".
  std::string describe() const;
  bool canLaunch() const;
  LoadStatistics stats() const;
  /// A kernel handle for `module`; compiled on first use.
  std::shared_ptr<DeviceKernel> kernel(std::shared_ptr<KernelModule> module,
                                       unsigned optLevel);
  /// Waits on the host until the work queued on `stream` (a CUstream of this
  /// device's context) is done: how a launch is ordered after an array's
  /// producer stream (CUDA array interface v3) other than its own.
  void synchronizeStream(uint64_t stream);

  /// Opaque outside the core (CoreInternal.h defines it): the models' backend
  /// on this device, which the Mamba2 steps made on this runtime share.
  struct State;
  explicit Runtime(std::shared_ptr<State> state);
  const std::shared_ptr<State> &internal() const { return state; }

private:
  std::shared_ptr<State> state;
};

/// Every constant of the registered out_proj kernel for a projection of `rows`
/// rows with `geometry` (inner, hidden, fp8 and any others), tiled as the
/// Mamba2 plans tile theirs (models::planProjection) for `runtime`'s arch with
/// its tuning database; no runtime (the interpreter): the tiles every arch
/// runs, nothing tuned. Errors (ErrorKind::Argument): a geometry out_proj
/// refuses.
std::map<std::string, int64_t>
planProjection(const Runtime *runtime, int64_t rows,
               const std::map<std::string, int64_t> &geometry);

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_RUNTIME_H
