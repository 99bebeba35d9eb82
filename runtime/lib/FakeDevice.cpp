// FakeDevice: device memory at fake addresses backed by host vectors, modules
// loaded from PTX entry signatures (fake/FakePtx.cpp reads them), launches and
// graphs recorded.
#include "tilejit/runtime/FakeDevice.h"
#include "fake/FakePtx.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>

using namespace llvm;

namespace tilejit::runtime {

/// An entry of a module: its name and the byte size of each `.param`.
struct FakeDevice::Function {
  Module *module;
  std::string entry;
  std::vector<uint32_t> paramSizes;
  uint32_t sharedLimit = 48 * 1024;
};

struct FakeDevice::Module {
  uint64_t id;
  bool loaded = true;
  std::vector<Function> entries;
};

struct FakeDevice::Graph {
  std::vector<FakeLaunch> launches;
};

struct FakeDevice::Object {};

DeviceInfo FakeDevice::h200() {
  DeviceInfo info;
  info.name = "Fake NVIDIA H200";
  info.ccMajor = 9;
  info.ccMinor = 0;
  info.smCount = 132;
  info.totalMemoryBytes = 150'000'000'000ull;
  info.l2Bytes = 50ull << 20;
  info.maxDynamicSharedBytes = 227 * 1024;
  info.driverVersion = 13000;
  return info;
}

DeviceInfo FakeDevice::withComputeCapability(unsigned major, unsigned minor) {
  DeviceInfo info = h200();
  info.name = formatv("Fake GPU {0}.{1}", major, minor);
  info.ccMajor = major;
  info.ccMinor = minor;
  return info;
}

// Fake addresses sit far from any host pointer and only grow, so a freed
// address is never handed out again: a stale pointer is always detectable.
FakeDevice::FakeDevice(DeviceInfo info)
    : deviceInfo(std::move(info)), ctxId(newContextId()),
      nextAddress(0xD000'0000'0000ull) {}

FakeDevice::~FakeDevice() = default;

std::vector<FakeLaunch> FakeDevice::launches() const {
  std::lock_guard<std::mutex> lock(mutex);
  return recorded;
}

void FakeDevice::clearLaunches() {
  std::lock_guard<std::mutex> lock(mutex);
  recorded.clear();
}

bool FakeDevice::isLive(DevicePtr address) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = memory.upper_bound(address);
  if (it == memory.begin())
    return false;
  --it;
  return address < it->first + it->second.size();
}

std::vector<DevicePtr> FakeDevice::allocationsEverMade() const {
  std::lock_guard<std::mutex> lock(mutex);
  return everAllocated;
}

size_t FakeDevice::liveAllocationCount() const {
  std::lock_guard<std::mutex> lock(mutex);
  return memory.size();
}

uint64_t FakeDevice::modulesLoaded() const {
  std::lock_guard<std::mutex> lock(mutex);
  return loads;
}

uint64_t FakeDevice::modulesUnloaded() const {
  std::lock_guard<std::mutex> lock(mutex);
  return unloads;
}

uint64_t FakeDevice::moduleId(ModuleHandle module) const {
  return static_cast<const Module *>(module.raw)->id;
}

uint32_t FakeDevice::dynamicSharedLimit(FunctionHandle function) const {
  std::lock_guard<std::mutex> lock(mutex);
  return static_cast<const Function *>(function.raw)->sharedLimit;
}

std::vector<uint8_t> *FakeDevice::findMemory(DevicePtr address, size_t bytes,
                                             size_t &offset) {
  auto it = memory.upper_bound(address);
  if (it == memory.begin())
    return nullptr;
  --it;
  offset = address - it->first;
  if (address + bytes > it->first + it->second.size())
    return nullptr;
  return &it->second;
}

Error FakeDevice::refuseDuringCapture(const char *call) const {
  if (capturing.empty())
    return Error::success();
  return driverError(call, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                     "operation not permitted when a stream is capturing");
}

void *FakeDevice::newObject() {
  objects.push_back(std::make_unique<Object>());
  return objects.back().get();
}

Expected<DevicePtr> FakeDevice::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  if (Error err = refuseDuringCapture("cuMemAlloc_v2"))
    return std::move(err);
  DevicePtr address = nextAddress;
  nextAddress += alignTo(std::max<size_t>(bytes, 1), 256) + 256;
  memory[address].assign(bytes, 0);
  everAllocated.push_back(address);
  return address;
}

Error FakeDevice::free(DevicePtr address) {
  std::lock_guard<std::mutex> lock(mutex);
  if (Error err = refuseDuringCapture("cuMemFree_v2"))
    return err;
  if (!memory.erase(address))
    return driverError("cuMemFree_v2", "CUDA_ERROR_INVALID_VALUE",
                       formatv("{0:x} is not a live allocation", address));
  return Error::success();
}

Error FakeDevice::copyToDevice(DevicePtr dst, const void *src, size_t bytes,
                               StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  if (Error err = refuseDuringCapture("cuMemcpyHtoDAsync_v2"))
    return err;
  size_t offset = 0;
  std::vector<uint8_t> *block = findMemory(dst, bytes, offset);
  if (!block)
    return driverError(
        "cuMemcpyHtoDAsync_v2", "CUDA_ERROR_INVALID_VALUE",
        formatv("[{0:x}, +{1}) is not inside a live allocation", dst, bytes));
  if (bytes)
    std::memcpy(block->data() + offset, src, bytes);
  copied.toDevice += bytes;
  return Error::success();
}

Error FakeDevice::copyToHost(void *dst, DevicePtr src, size_t bytes,
                             StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  if (Error err = refuseDuringCapture("cuMemcpyDtoHAsync_v2"))
    return err;
  size_t offset = 0;
  std::vector<uint8_t> *block = findMemory(src, bytes, offset);
  if (!block)
    return driverError(
        "cuMemcpyDtoHAsync_v2", "CUDA_ERROR_INVALID_VALUE",
        formatv("[{0:x}, +{1}) is not inside a live allocation", src, bytes));
  if (bytes)
    std::memcpy(dst, block->data() + offset, bytes);
  copied.toHost += bytes;
  return Error::success();
}

Error FakeDevice::copyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                               StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  if (Error err = refuseDuringCapture("cuMemcpyDtoDAsync_v2"))
    return err;
  size_t dstOffset = 0, srcOffset = 0;
  std::vector<uint8_t> *to = findMemory(dst, bytes, dstOffset);
  std::vector<uint8_t> *from = findMemory(src, bytes, srcOffset);
  if (!to || !from)
    return driverError(
        "cuMemcpyDtoDAsync_v2", "CUDA_ERROR_INVALID_VALUE",
        formatv("[{0:x}, +{1}) is not inside a live allocation", to ? src : dst, bytes));
  if (bytes)
    std::memmove(to->data() + dstOffset, from->data() + srcOffset, bytes);
  copied.onDevice += bytes;
  return Error::success();
}

FakeDevice::CopiedBytes FakeDevice::copiedBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  return copied;
}

Error FakeDevice::fill(DevicePtr dst, uint8_t value, size_t bytes, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  size_t offset = 0;
  std::vector<uint8_t> *block = findMemory(dst, bytes, offset);
  if (!block)
    return driverError(
        "cuMemsetD8Async", "CUDA_ERROR_INVALID_VALUE",
        formatv("[{0:x}, +{1}) is not inside a live allocation", dst, bytes));
  std::memset(block->data() + offset, value, bytes);
  return Error::success();
}

Expected<StreamHandle> FakeDevice::createStream() {
  std::lock_guard<std::mutex> lock(mutex);
  return StreamHandle{newObject()};
}

Error FakeDevice::destroyStream(StreamHandle stream) { return Error::success(); }

Error FakeDevice::synchronize(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  if (capturing.count(stream.raw))
    return driverError("cuStreamSynchronize", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                       "operation not permitted when stream is capturing");
  return Error::success();
}

Expected<EventHandle> FakeDevice::createEvent() {
  std::lock_guard<std::mutex> lock(mutex);
  return EventHandle{newObject()};
}

Error FakeDevice::destroyEvent(EventHandle event) { return Error::success(); }
Error FakeDevice::recordEvent(EventHandle event, StreamHandle stream) {
  return Error::success();
}
Error FakeDevice::synchronizeEvent(EventHandle event) { return Error::success(); }
Expected<float> FakeDevice::elapsedMs(EventHandle start, EventHandle end) { return 0.0f; }

Expected<ModuleHandle> FakeDevice::loadModule(StringRef ptx) {
  std::lock_guard<std::mutex> lock(mutex);
  if (Error err = refuseDuringCapture("cuModuleLoadDataEx"))
    return std::move(err);
  // Like the driver's PTX JIT: an `a` target for another GPU does not load.
  if (std::optional<Arch> target = ptxTarget(ptx); target && !canRun(deviceInfo, *target))
    return driverError("cuModuleLoadDataEx", "CUDA_ERROR_INVALID_PTX",
                       "SM version specified by .target is higher than the device's");
  auto entries = parseEntries(ptx);
  if (!entries)
    return entries.takeError();
  auto module = std::make_unique<Module>();
  module->id = modules.size() + 1;
  for (auto &[name, sizes] : *entries)
    module->entries.push_back(Function{module.get(), name, std::move(sizes)});
  modules.push_back(std::move(module));
  ++loads;
  return ModuleHandle{modules.back().get()};
}

Error FakeDevice::unloadModule(ModuleHandle handle) {
  std::lock_guard<std::mutex> lock(mutex);
  if (Error err = refuseDuringCapture("cuModuleUnload"))
    return err;
  auto *module = static_cast<Module *>(handle.raw);
  if (!module->loaded)
    return driverError("cuModuleUnload", "CUDA_ERROR_INVALID_HANDLE",
                       formatv("module {0} was already unloaded", module->id));
  module->loaded = false;
  ++unloads;
  return Error::success();
}

Expected<FunctionHandle> FakeDevice::getFunction(ModuleHandle handle, StringRef entry) {
  std::lock_guard<std::mutex> lock(mutex);
  auto *module = static_cast<Module *>(handle.raw);
  for (Function &function : module->entries)
    if (function.entry == entry)
      return FunctionHandle{&function};
  return driverError("cuModuleGetFunction", "CUDA_ERROR_NOT_FOUND",
                     formatv("module {0} has no entry '{1}'", module->id, entry));
}

Error FakeDevice::setMaxDynamicSharedBytes(FunctionHandle handle, uint32_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  if (bytes > deviceInfo.maxDynamicSharedBytes)
    return driverError("cuFuncSetAttribute", "CUDA_ERROR_INVALID_VALUE",
                       formatv("{0} bytes exceed the opt-in maximum {1}", bytes,
                               deviceInfo.maxDynamicSharedBytes));
  static_cast<Function *>(handle.raw)->sharedLimit = bytes;
  return Error::success();
}

Error FakeDevice::checkLaunch(const Function &function, const LaunchConfig &config,
                              ArrayRef<KernelArg> args) {
  const char *call = config.programmatic ? "cuLaunchKernelEx" : "cuLaunchKernel";
  if (config.programmatic && info().smVersion() < 90)
    return driverError(call, "CUDA_ERROR_NOT_SUPPORTED",
                       "programmatic stream serialization needs compute capability 9.0");
  if (!function.module->loaded)
    return driverError(call, "CUDA_ERROR_INVALID_HANDLE",
                       formatv("module {0} was unloaded", function.module->id));
  if (args.size() != function.paramSizes.size())
    return driverError(call, "CUDA_ERROR_INVALID_VALUE",
                       formatv("'{0}' takes {1} parameters, got {2}", function.entry,
                               function.paramSizes.size(), args.size()));
  for (auto [index, arg, size] : enumerate(args, function.paramSizes)) {
    if (arg.size() != size)
      return driverError(call, "CUDA_ERROR_INVALID_VALUE",
                         formatv("parameter {0} of '{1}' has {2} bytes, got {3}", index,
                                 function.entry, size, arg.size()));
    size_t offset = 0;
    if (arg.kind() == ParamKind::Pointer && arg.pattern() != 0 &&
        !findMemory(arg.pattern(), 1, offset))
      return driverError(call, "CUDA_ERROR_ILLEGAL_ADDRESS",
                         formatv("pointer argument {0} of '{1}' ({2:x}) is not inside a "
                                 "live allocation",
                                 index, function.entry, arg.pattern()));
  }
  uint64_t threads = uint64_t(config.block.x) * config.block.y * config.block.z;
  if (threads == 0 || threads > 1024)
    return driverError(call, "CUDA_ERROR_INVALID_VALUE",
                       formatv("{0} threads per block", threads));
  if (config.dynamicSharedBytes > function.sharedLimit)
    return driverError(call, "CUDA_ERROR_INVALID_VALUE",
                       formatv("{0} bytes of dynamic shared memory exceed the function's "
                               "limit of {1}",
                               config.dynamicSharedBytes, function.sharedLimit));
  return Error::success();
}

Error FakeDevice::encodeTensorMap(const TensorMapSpec &spec, DevicePtr base,
                                  uint64_t rows, uint64_t cols, TensorMapBytes &out) {
  std::lock_guard<std::mutex> lock(mutex);
  const char *call = "cuTensorMapEncodeTiled";
  size_t offset = 0;
  if (base % 16 || !findMemory(base, 1, offset))
    return driverError(call, "CUDA_ERROR_INVALID_VALUE",
                       formatv("global address {0:x} is not a 16-byte aligned address "
                               "inside a live allocation",
                               base));
  if (rows == 0 || cols == 0 || rows > (uint64_t(1) << 32) || cols > (uint64_t(1) << 32))
    return driverError(call, "CUDA_ERROR_INVALID_VALUE",
                       formatv("global extents {0} x {1} outside [1, 2^32]", rows, cols));
  if (Error err = spec.validate())
    return driverError(call, "CUDA_ERROR_INVALID_VALUE", toString(std::move(err)));
  // What a test can recognize: the base and extents, little-endian.
  out = TensorMapBytes{};
  std::memcpy(out.bytes, &base, 8);
  std::memcpy(out.bytes + 8, &rows, 8);
  std::memcpy(out.bytes + 16, &cols, 8);
  ++encodes;
  return Error::success();
}

uint64_t FakeDevice::tensorMapsEncoded() const {
  std::lock_guard<std::mutex> lock(mutex);
  return encodes;
}

Error FakeDevice::launch(FunctionHandle handle, const LaunchConfig &config,
                         ArrayRef<KernelArg> args) {
  std::lock_guard<std::mutex> lock(mutex);
  const auto &function = *static_cast<const Function *>(handle.raw);
  if (Error err = checkLaunch(function, config, args))
    return err;
  FakeLaunch launch{function.entry, function.module->id, config, {}, {}, false};
  launch.copyArgs(args);
  auto capture = capturing.find(config.stream.raw);
  if (capture != capturing.end())
    capture->second->launches.push_back(std::move(launch));
  else
    recorded.push_back(std::move(launch));
  return Error::success();
}

Error FakeDevice::beginCapture(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  if (capturing.count(stream.raw))
    return driverError("cuStreamBeginCapture_v2", "CUDA_ERROR_ILLEGAL_STATE",
                       "the stream is already capturing");
  capturing[stream.raw] = std::make_unique<Graph>();
  return Error::success();
}

Expected<GraphHandle> FakeDevice::endCapture(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = capturing.find(stream.raw);
  if (it == capturing.end())
    return driverError("cuStreamEndCapture", "CUDA_ERROR_ILLEGAL_STATE",
                       "the stream is not capturing");
  std::unique_ptr<Graph> graph = std::move(it->second);
  capturing.erase(it);
  void *raw = graph.get();
  graphs[raw] = std::move(graph);
  return GraphHandle{raw};
}

Expected<bool> FakeDevice::isCapturing(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  return capturing.count(stream.raw) != 0;
}

Error FakeDevice::launchGraph(GraphHandle handle, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = graphs.find(handle.raw);
  if (it == graphs.end())
    return driverError("cuGraphLaunch", "CUDA_ERROR_INVALID_HANDLE", "unknown graph");
  // A replay re-runs the captured launches: their modules and pointers must
  // still be alive, exactly as on a GPU.
  for (const FakeLaunch &captured : it->second->launches) {
    const Module &module = *modules[captured.moduleId - 1];
    for (const Function &function : module.entries)
      if (function.entry == captured.entry)
        if (Error err = checkLaunch(function, captured.config, captured.args))
          return err;
    FakeLaunch replay = captured;
    replay.fromGraph = true;
    replay.config.stream = stream;
    recorded.push_back(std::move(replay));
  }
  return Error::success();
}

Error FakeDevice::destroyGraph(GraphHandle handle) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!graphs.erase(handle.raw))
    return driverError("cuGraphExecDestroy", "CUDA_ERROR_INVALID_HANDLE",
                       "unknown graph");
  return Error::success();
}

} // namespace tilejit::runtime
