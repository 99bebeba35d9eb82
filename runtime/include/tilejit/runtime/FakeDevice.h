// A DeviceApi without a GPU: host memory stands in for device memory at addresses
// that are never reused, modules are parsed PTX, launches and graph replays are
// recorded. Tests (and CPU dry runs) use it where CudaDevice would need a driver.
#ifndef TILEJIT_RUNTIME_FAKEDEVICE_H
#define TILEJIT_RUNTIME_FAKEDEVICE_H

#include "tilejit/runtime/DeviceApi.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace tilejit::runtime {

/// One launch the fake device executed (recorded, not run).
struct FakeLaunch {
  /// The entry launched and the id of the module it came from.
  std::string entry;
  uint64_t moduleId = 0;
  LaunchConfig config;
  std::vector<KernelArg> args;
  /// The tensor maps' bytes as the launch passed them (copyArgs).
  std::shared_ptr<const std::vector<TensorMapBytes>> tensorMaps;
  /// True when the launch was replayed from an instantiated graph.
  bool fromGraph = false;

  /// Records `args`, each tensor map's bytes copied to `tensorMaps` (as the
  /// driver copies them at launch) and its argument pointing at the copy.
  void copyArgs(llvm::ArrayRef<KernelArg> launched) {
    auto maps = std::make_shared<std::vector<TensorMapBytes>>(launched.size());
    args.assign(launched.begin(), launched.end());
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].kind() == ParamKind::TensorMap)
        args[i] = KernelArg::tensorMap(
            (*maps)[i] = *static_cast<const TensorMapBytes *>(args[i].data()));
    tensorMaps = std::move(maps);
  }
};

/// Behaves like the driver where the runtime relies on it, and stricter where
/// a bug would otherwise go unnoticed: a launch fails when its module was
/// unloaded, when a pointer argument is not inside a live allocation, when its
/// arguments do not match the PTX parameters, or when its dynamic shared
/// memory exceeds the function's limit. Like the driver in global capture
/// mode, it refuses allocation, free, module load/unload and synchronous
/// copies while any stream captures. Thread-safe.
class FakeDevice final : public DeviceApi {
public:
  /// An H200: compute capability 9.0, 132 SMs, 141 GB, 227 KiB opt-in shared.
  static DeviceInfo h200();
  /// h200() with another compute capability.
  static DeviceInfo withComputeCapability(unsigned major, unsigned minor);

  explicit FakeDevice(DeviceInfo info = h200());
  ~FakeDevice() override;

  /// Inspection for tests.
  std::vector<FakeLaunch> launches() const;
  void clearLaunches();
  /// Whether `address` lies inside an allocation not yet freed.
  bool isLive(DevicePtr address) const;
  /// Every allocation ever made, live or freed, by base address.
  std::vector<DevicePtr> allocationsEverMade() const;
  size_t liveAllocationCount() const;
  uint64_t modulesLoaded() const;
  uint64_t modulesUnloaded() const;
  /// How many tensor maps encodeTensorMap has built.
  uint64_t tensorMapsEncoded() const;
  /// The module id `loadModule` gave `module` (ids start at 1, never reused).
  uint64_t moduleId(ModuleHandle module) const;
  /// Bytes copied host -> device, device -> host and device -> device so far.
  struct CopiedBytes {
    uint64_t toDevice = 0, toHost = 0, onDevice = 0;
  };
  CopiedBytes copiedBytes() const;
  /// The limit set by setMaxDynamicSharedBytes, 48 KiB when never set.
  uint32_t dynamicSharedLimit(FunctionHandle function) const;

  const DeviceInfo &info() const override { return deviceInfo; }
  uint64_t contextId() const override { return ctxId; }

  llvm::Expected<DevicePtr> allocate(size_t bytes) override;
  llvm::Error free(DevicePtr address) override;
  llvm::Error copyToDevice(DevicePtr dst, const void *src, size_t bytes,
                           StreamHandle stream) override;
  llvm::Error copyToHost(void *dst, DevicePtr src, size_t bytes,
                         StreamHandle stream) override;
  llvm::Error fill(DevicePtr dst, uint8_t value, size_t bytes,
                   StreamHandle stream) override;
  /// Copies at once; refused during capture (graphs here record launches only).
  llvm::Error copyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                           StreamHandle stream) override;

  llvm::Expected<StreamHandle> createStream() override;
  llvm::Error destroyStream(StreamHandle stream) override;
  llvm::Error synchronize(StreamHandle stream) override;

  llvm::Expected<EventHandle> createEvent() override;
  llvm::Error destroyEvent(EventHandle event) override;
  llvm::Error recordEvent(EventHandle event, StreamHandle stream) override;
  llvm::Error synchronizeEvent(EventHandle event) override;
  llvm::Expected<float> elapsedMs(EventHandle start, EventHandle end) override;

  llvm::Expected<ModuleHandle> loadModule(llvm::StringRef ptx) override;
  llvm::Error unloadModule(ModuleHandle module) override;
  llvm::Expected<FunctionHandle> getFunction(ModuleHandle module,
                                             llvm::StringRef entry) override;
  llvm::Error setMaxDynamicSharedBytes(FunctionHandle function, uint32_t bytes) override;
  /// Checks what the driver checks (a live, aligned base; extents; the spec)
  /// and writes the base and extents into the first 24 bytes.
  llvm::Error encodeTensorMap(const TensorMapSpec &spec, DevicePtr base, uint64_t rows,
                              uint64_t cols, TensorMapBytes &out) override;
  llvm::Error launch(FunctionHandle function, const LaunchConfig &config,
                     llvm::ArrayRef<KernelArg> args) override;

  llvm::Error beginCapture(StreamHandle stream) override;
  llvm::Expected<GraphHandle> endCapture(StreamHandle stream) override;
  llvm::Expected<bool> isCapturing(StreamHandle stream) override;
  llvm::Error launchGraph(GraphHandle graph, StreamHandle stream) override;
  llvm::Error destroyGraph(GraphHandle graph) override;

private:
  struct Module;
  struct Function;
  struct Graph;
  struct Object;

  /// The live allocation holding [address, address + bytes), or null.
  std::vector<uint8_t> *findMemory(DevicePtr address, size_t bytes, size_t &offset);
  llvm::Error refuseDuringCapture(const char *call) const;
  llvm::Error checkLaunch(const Function &function, const LaunchConfig &config,
                          llvm::ArrayRef<KernelArg> args);
  void *newObject();

  DeviceInfo deviceInfo;
  uint64_t ctxId;
  mutable std::mutex mutex;
  DevicePtr nextAddress;
  std::map<DevicePtr, std::vector<uint8_t>> memory;
  std::vector<DevicePtr> everAllocated;
  std::vector<std::unique_ptr<Module>> modules;
  std::map<void *, std::unique_ptr<Graph>> graphs;
  /// Streams (and events) are opaque objects; capturing streams map to their graph.
  std::vector<std::unique_ptr<Object>> objects;
  std::map<void *, std::unique_ptr<Graph>> capturing;
  std::vector<FakeLaunch> recorded;
  uint64_t loads = 0, unloads = 0, encodes = 0;
  CopiedBytes copied;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_FAKEDEVICE_H
