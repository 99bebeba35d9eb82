// DeviceApi on the CUDA driver: the device's primary context, made current on the
// calling thread before each call; every driver call goes through Driver::check.
#include "tilejit/runtime/CudaDevice.h"

#include "CudaDriver.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <string>

using namespace llvm;

namespace tilejit::runtime {
namespace {

using cuda::Driver;

template <typename T> T *fromHandle(void *raw) { return static_cast<T *>(raw); }

/// `err` with what the runtime was doing appended: "<call>: <error> (allocating 64
/// bytes)".
Error annotate(Error err, const Twine &doing) {
  return createStringError(inconvertibleErrorCode(),
                           toString(std::move(err)) + " (" + doing + ")");
}

class CudaDevice final : public DeviceApi {
public:
  CudaDevice(const Driver &driver, CUdevice device, CUcontext context, DeviceInfo info)
      : driver(driver), device(device), context(context), deviceInfo(std::move(info)),
        ctxId(newContextId()) {}

  ~CudaDevice() override {
    if (Error err = TILEJIT_CU(driver, primaryCtxRelease, device))
      errs() << "tilejit: warning: " << toString(std::move(err)) << "\n";
  }

  const DeviceInfo &info() const override { return deviceInfo; }
  uint64_t contextId() const override { return ctxId; }

  Expected<DevicePtr> allocate(size_t bytes) override {
    if (Error err = makeCurrent())
      return std::move(err);
    CUdeviceptr address = 0;
    if (Error err = TILEJIT_CU(driver, memAlloc, &address, bytes))
      return annotate(std::move(err), formatv("allocating {0} bytes", bytes));
    return address;
  }

  Error free(DevicePtr address) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, memFree, static_cast<CUdeviceptr>(address));
  }

  Error copyToDevice(DevicePtr dst, const void *src, size_t bytes,
                     StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    if (Error err =
            TILEJIT_CU(driver, memcpyHtoDAsync, dst, src, bytes, cuStream(stream)))
      return err;
    return synchronize(stream);
  }

  Error copyToHost(void *dst, DevicePtr src, size_t bytes, StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    if (Error err =
            TILEJIT_CU(driver, memcpyDtoHAsync, dst, src, bytes, cuStream(stream)))
      return err;
    return synchronize(stream);
  }

  Error copyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                     StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, memcpyDtoDAsync, dst, src, bytes, cuStream(stream));
  }

  Error fill(DevicePtr dst, uint8_t value, size_t bytes, StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, memsetD8Async, dst, value, bytes, cuStream(stream));
  }

  Expected<StreamHandle> createStream() override {
    if (Error err = makeCurrent())
      return std::move(err);
    CUstream stream = nullptr;
    if (Error err = TILEJIT_CU(driver, streamCreate, &stream,
                               static_cast<unsigned>(CU_STREAM_NON_BLOCKING)))
      return std::move(err);
    return StreamHandle{stream};
  }

  Error destroyStream(StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, streamDestroy, cuStream(stream));
  }

  Error synchronize(StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, streamSynchronize, cuStream(stream));
  }

  Expected<EventHandle> createEvent() override {
    if (Error err = makeCurrent())
      return std::move(err);
    CUevent event = nullptr;
    if (Error err = TILEJIT_CU(driver, eventCreate, &event,
                               static_cast<unsigned>(CU_EVENT_DEFAULT)))
      return std::move(err);
    return EventHandle{event};
  }

  Error destroyEvent(EventHandle event) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, eventDestroy, fromHandle<CUevent_st>(event.raw));
  }

  Error recordEvent(EventHandle event, StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, eventRecord, fromHandle<CUevent_st>(event.raw),
                      cuStream(stream));
  }

  Error synchronizeEvent(EventHandle event) override {
    return TILEJIT_CU(driver, eventSynchronize, fromHandle<CUevent_st>(event.raw));
  }

  Expected<float> elapsedMs(EventHandle start, EventHandle end) override {
    float ms = 0;
    if (Error err =
            TILEJIT_CU(driver, eventElapsedTime, &ms, fromHandle<CUevent_st>(start.raw),
                       fromHandle<CUevent_st>(end.raw)))
      return std::move(err);
    return ms;
  }

  Expected<ModuleHandle> loadModule(StringRef ptx) override {
    if (Error err = makeCurrent())
      return std::move(err);
    // The driver wants a NUL-terminated image and fills the log buffer on a JIT
    // failure; the size option is in/out (bytes written come back in it).
    std::string image = ptx.str();
    SmallVector<char, 0> log(64 * 1024, '\0');
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log.data(), reinterpret_cast<void *>(uintptr_t(log.size()))};
    CUmodule module = nullptr;
    if (Error err = TILEJIT_CU(driver, moduleLoadDataEx, &module, image.c_str(), 2u,
                               options, values)) {
      StringRef jitLog(log.data());
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0}\nPTX JIT error log:\n{1}", toString(std::move(err)),
                  jitLog.empty() ? StringRef("(empty)") : jitLog.rtrim()));
    }
    return ModuleHandle{module};
  }

  Error unloadModule(ModuleHandle module) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, moduleUnload, fromHandle<CUmod_st>(module.raw));
  }

  Expected<FunctionHandle> getFunction(ModuleHandle module, StringRef entry) override {
    CUfunction function = nullptr;
    std::string name = entry.str();
    if (Error err = TILEJIT_CU(driver, moduleGetFunction, &function,
                               fromHandle<CUmod_st>(module.raw), name.c_str()))
      return annotate(std::move(err), formatv("looking up entry '{0}'", entry));
    return FunctionHandle{function};
  }

  Error setMaxDynamicSharedBytes(FunctionHandle function, uint32_t bytes) override {
    return TILEJIT_CU(driver, funcSetAttribute, fromHandle<CUfunc_st>(function.raw),
                      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                      static_cast<int>(bytes));
  }

  Error encodeTensorMap(const TensorMapSpec &spec, DevicePtr base, uint64_t rows,
                        uint64_t cols, TensorMapBytes &out) override {
    static_assert(sizeof(CUtensorMap) == sizeof(TensorMapBytes));
    // A plain copy: the element width is all TMA needs. Innermost first.
    CUtensorMapDataType type = spec.elementBytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                                      : CU_TENSOR_MAP_DATA_TYPE_UINT16;
    cuuint64_t dims[2] = {cols, rows};
    cuuint64_t strides[1] = {cuuint64_t(spec.rowStride) * spec.elementBytes};
    cuuint32_t box[2] = {spec.box[1], spec.box[0]};
    cuuint32_t elementStrides[2] = {1, 1};
    uint32_t rowBytes = spec.box[1] * spec.elementBytes;
    CUtensorMapSwizzle swizzle = rowBytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                 : rowBytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                  : CU_TENSOR_MAP_SWIZZLE_32B;
    return TILEJIT_CU(driver, tensorMapEncodeTiled, reinterpret_cast<CUtensorMap *>(&out),
                      type, cuuint32_t(2), reinterpret_cast<void *>(base), dims, strides,
                      box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  }

  Error launch(FunctionHandle function, const LaunchConfig &config,
               ArrayRef<KernelArg> args) override {
    if (Error err = makeCurrent())
      return err;
    SmallVector<void *, 16> params;
    for (const KernelArg &arg : args)
      params.push_back(const_cast<void *>(arg.data()));
    if (config.programmatic) {
      // Programmatic stream serialization: the kernel may start while the
      // one before it drains; it waits for it with griddepcontrol.wait. In a
      // capture this becomes a programmatic edge of the graph.
      CUlaunchAttribute attribute{};
      attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attribute.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig launch{};
      launch.gridDimX = config.grid.x;
      launch.gridDimY = config.grid.y;
      launch.gridDimZ = config.grid.z;
      launch.blockDimX = config.block.x;
      launch.blockDimY = config.block.y;
      launch.blockDimZ = config.block.z;
      launch.sharedMemBytes = config.dynamicSharedBytes;
      launch.hStream = cuStream(config.stream);
      launch.attrs = &attribute;
      launch.numAttrs = 1;
      return TILEJIT_CU(driver, launchKernelEx, &launch,
                        fromHandle<CUfunc_st>(function.raw), params.data(),
                        static_cast<void **>(nullptr));
    }
    return TILEJIT_CU(driver, launchKernel, fromHandle<CUfunc_st>(function.raw),
                      config.grid.x, config.grid.y, config.grid.z, config.block.x,
                      config.block.y, config.block.z, config.dynamicSharedBytes,
                      cuStream(config.stream), params.data(),
                      static_cast<void **>(nullptr));
  }

  Error beginCapture(StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, streamBeginCapture, cuStream(stream),
                      CU_STREAM_CAPTURE_MODE_GLOBAL);
  }

  Expected<GraphHandle> endCapture(StreamHandle stream) override {
    if (Error err = makeCurrent())
      return std::move(err);
    CUgraph graph = nullptr;
    if (Error err = TILEJIT_CU(driver, streamEndCapture, cuStream(stream), &graph))
      return std::move(err);
    CUgraphExec exec = nullptr;
    Error instantiated = TILEJIT_CU(driver, graphInstantiate, &exec, graph, 0ull);
    Error destroyed = TILEJIT_CU(driver, graphDestroy, graph);
    if (Error err = joinErrors(std::move(instantiated), std::move(destroyed)))
      return std::move(err);
    return GraphHandle{exec};
  }

  Expected<bool> isCapturing(StreamHandle stream) override {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (Error err = TILEJIT_CU(driver, streamIsCapturing, cuStream(stream), &status))
      return std::move(err);
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
  }

  Error launchGraph(GraphHandle graph, StreamHandle stream) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, graphLaunch, fromHandle<CUgraphExec_st>(graph.raw),
                      cuStream(stream));
  }

  Error destroyGraph(GraphHandle graph) override {
    if (Error err = makeCurrent())
      return err;
    return TILEJIT_CU(driver, graphExecDestroy, fromHandle<CUgraphExec_st>(graph.raw));
  }

private:
  static CUstream cuStream(StreamHandle stream) {
    return fromHandle<CUstream_st>(stream.raw);
  }

  /// The primary context must be current on whichever thread calls in.
  Error makeCurrent() const {
    CUcontext current = nullptr;
    if (Error err = TILEJIT_CU(driver, ctxGetCurrent, &current))
      return err;
    if (current == context)
      return Error::success();
    return TILEJIT_CU(driver, ctxSetCurrent, context);
  }

  const Driver &driver;
  CUdevice device;
  CUcontext context;
  DeviceInfo deviceInfo;
  uint64_t ctxId;
};

/// Fills the query fields of `info` for `device`.
Error queryDevice(const Driver &driver, CUdevice device, DeviceInfo &info) {
  char name[256] = {};
  if (Error err = TILEJIT_CU(driver, deviceGetName, name, int(sizeof(name)), device))
    return err;
  info.name = name;
  auto attribute = [&](CUdevice_attribute attr, auto &out) -> Error {
    int value = 0;
    if (Error err = TILEJIT_CU(driver, deviceGetAttribute, &value, attr, device))
      return err;
    out = value;
    return Error::success();
  };
  if (Error err = joinErrors(
          joinErrors(
              attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, info.ccMajor),
              attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, info.ccMinor)),
          joinErrors(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, info.smCount),
                     attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                               info.maxDynamicSharedBytes))))
    return err;
  size_t bytes = 0;
  if (Error err = TILEJIT_CU(driver, deviceTotalMem, &bytes, device))
    return err;
  info.totalMemoryBytes = bytes;
  if (Error err = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, info.l2Bytes))
    return err;
  return TILEJIT_CU(driver, driverGetVersion, &info.driverVersion);
}

} // namespace

Expected<int> cudaDeviceCount() {
  Expected<const Driver &> driver = Driver::get();
  if (!driver)
    return driver.takeError();
  int count = 0;
  if (Error err = TILEJIT_CU(*driver, deviceGetCount, &count))
    return std::move(err);
  return count;
}

Expected<std::unique_ptr<DeviceApi>> openCudaDevice(int ordinal) {
  Expected<int> count = cudaDeviceCount();
  if (!count)
    return count.takeError();
  if (ordinal < 0 || ordinal >= *count)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("no CUDA device {0} (the driver reports {1})", ordinal, *count));
  const Driver &driver = cantFail(Driver::get());
  CUdevice device = 0;
  if (Error err = TILEJIT_CU(driver, deviceGet, &device, ordinal))
    return std::move(err);
  DeviceInfo info;
  info.ordinal = ordinal;
  if (Error err = queryDevice(driver, device, info))
    return std::move(err);
  CUcontext context = nullptr;
  if (Error err = TILEJIT_CU(driver, primaryCtxRetain, &context, device))
    return std::move(err);
  return std::make_unique<CudaDevice>(driver, device, context, std::move(info));
}

} // namespace tilejit::runtime
