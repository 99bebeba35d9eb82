// The device layer the runtime is written against: the CUDA Driver API subset it
// uses (query, memory, streams, events, modules, launch, graph capture) behind an
// interface, so that tests substitute FakeDevice for the driver-backed CudaDevice.
#ifndef TILEJIT_RUNTIME_DEVICEAPI_H
#define TILEJIT_RUNTIME_DEVICEAPI_H

#include "tilejit/runtime/KernelSignature.h"
#include "tilejit/support/Arch.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tilejit::runtime {

/// An opaque driver object (CUmodule, CUfunction, CUstream, ...). The tag keeps
/// the kinds apart; a null handle is `{}`.
template <typename Tag> struct Handle {
  void *raw = nullptr;

  explicit operator bool() const { return raw != nullptr; }
  bool operator==(const Handle &other) const = default;
};
using ModuleHandle = Handle<struct ModuleTag>;
using FunctionHandle = Handle<struct FunctionTag>;
using StreamHandle = Handle<struct StreamTag>;
using EventHandle = Handle<struct EventTag>;
/// An instantiated (executable) graph.
using GraphHandle = Handle<struct GraphTag>;

/// Grid or block extents.
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

/// What the device query reports.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  unsigned ccMajor = 0, ccMinor = 0;
  unsigned smCount = 0;
  uint64_t totalMemoryBytes = 0;
  /// The L2 cache, in bytes (0 when unknown): timers rotate buffers past it.
  uint64_t l2Bytes = 0;
  /// The largest dynamic shared memory a block may opt in to, in bytes.
  uint32_t maxDynamicSharedBytes = 48 * 1024;
  /// The driver's CUDA version as cuDriverGetVersion encodes it (13000).
  int driverVersion = 0;

  /// major * 10 + minor: 90 for compute capability 9.0.
  unsigned smVersion() const { return ccMajor * 10 + ccMinor; }
};

/// The arch tilejit compiles for on this device: its arch-specific (`a`)
/// target. An error when tilejit has no arch for the compute capability.
llvm::Expected<Arch> nativeArch(const DeviceInfo &info);
/// Whether an arch-specific target applies to this device at all.
bool hasArchSpecificTarget(const DeviceInfo &info);
/// `arch`'s GPU as its profile describes it (compute capability,
/// multiprocessors, shared memory per program), named "<device>
/// (compile-only)": what a FakeDevice stands in for where nothing runs, so that
/// compiles fill caches and tuning keys see that GPU's multiprocessors.
DeviceInfo compileOnlyInfo(const Arch &arch);
/// Whether code built for `arch` runs here: an `a` target only on its own SM,
/// a portable target on its SM and later ones (the driver JIT-compiles PTX).
bool canRun(const DeviceInfo &info, const Arch &arch);
/// "device 0 (NVIDIA H200, compute capability 9.0, 132 SMs, 139.8 GiB, sm_90a)".
void printDeviceInfo(llvm::raw_ostream &os, const DeviceInfo &info);

/// A process-unique id for a new device context. Never an address: a context
/// created after another was destroyed must not share its cached modules.
uint64_t newContextId();

/// Launch geometry of one kernel launch.
struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t dynamicSharedBytes = 0;
  StreamHandle stream;
  /// Programmatic stream serialization: the kernel may start before the one
  /// before it on the stream has ended (it waits for it with
  /// griddepcontrol.wait). Only for kernels that wait, on sm_90 and later.
  bool programmatic = false;
};

/// One device with its context. Every call returns an error value naming the
/// driver call and its message; none aborts. Calls may come from any thread.
class DeviceApi {
public:
  virtual ~DeviceApi();

  virtual const DeviceInfo &info() const = 0;
  /// The process-unique id of this device's context (see newContextId).
  virtual uint64_t contextId() const = 0;

  /// Device memory.
  virtual llvm::Expected<DevicePtr> allocate(size_t bytes) = 0;
  virtual llvm::Error free(DevicePtr address) = 0;
  /// Copies host -> device on `stream`; returns when the copy is complete.
  virtual llvm::Error copyToDevice(DevicePtr dst, const void *src, size_t bytes,
                                   StreamHandle stream) = 0;
  /// Copies device -> host on `stream`; returns when the copy is complete.
  virtual llvm::Error copyToHost(void *dst, DevicePtr src, size_t bytes,
                                 StreamHandle stream) = 0;
  virtual llvm::Error fill(DevicePtr dst, uint8_t value, size_t bytes,
                           StreamHandle stream) = 0;
  /// Copies device -> device on `stream`, stream-ordered and asynchronous:
  /// returns at once, the copy runs after the stream's earlier work.
  virtual llvm::Error copyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                                   StreamHandle stream) = 0;

  /// Streams (non-blocking with respect to the legacy default stream).
  virtual llvm::Expected<StreamHandle> createStream() = 0;
  virtual llvm::Error destroyStream(StreamHandle stream) = 0;
  virtual llvm::Error synchronize(StreamHandle stream) = 0;

  /// Events with timing.
  virtual llvm::Expected<EventHandle> createEvent() = 0;
  virtual llvm::Error destroyEvent(EventHandle event) = 0;
  virtual llvm::Error recordEvent(EventHandle event, StreamHandle stream) = 0;
  virtual llvm::Error synchronizeEvent(EventHandle event) = 0;
  virtual llvm::Expected<float> elapsedMs(EventHandle start, EventHandle end) = 0;

  /// Loads PTX text; a JIT failure's error carries the driver's error log.
  virtual llvm::Expected<ModuleHandle> loadModule(llvm::StringRef ptx) = 0;
  virtual llvm::Error unloadModule(ModuleHandle module) = 0;
  virtual llvm::Expected<FunctionHandle> getFunction(ModuleHandle module,
                                                     llvm::StringRef entry) = 0;
  /// Raises the function's dynamic shared memory limit to `bytes`.
  virtual llvm::Error setMaxDynamicSharedBytes(FunctionHandle function,
                                               uint32_t bytes) = 0;
  /// Builds the TMA descriptor of `spec`'s view at `base`, `rows` x `cols`
  /// elements (host work, allowed during capture). Errors name what the
  /// driver refused (alignment, extents, strides).
  virtual llvm::Error encodeTensorMap(const TensorMapSpec &spec, DevicePtr base,
                                      uint64_t rows, uint64_t cols,
                                      TensorMapBytes &out) = 0;
  /// Launches with `args` already checked against the kernel's signature.
  virtual llvm::Error launch(FunctionHandle function, const LaunchConfig &config,
                             llvm::ArrayRef<KernelArg> args) = 0;

  /// Stream capture into a graph (global capture mode).
  virtual llvm::Error beginCapture(StreamHandle stream) = 0;
  /// Ends the capture and instantiates the captured graph.
  virtual llvm::Expected<GraphHandle> endCapture(StreamHandle stream) = 0;
  virtual llvm::Expected<bool> isCapturing(StreamHandle stream) = 0;
  virtual llvm::Error launchGraph(GraphHandle graph, StreamHandle stream) = 0;
  virtual llvm::Error destroyGraph(GraphHandle graph) = 0;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_DEVICEAPI_H
