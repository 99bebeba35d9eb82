// The CUDA driver entry points tilejit uses, resolved from libcuda.so.1 at run time,
// and the one checked helper every call goes through. Private to runtime/lib/cuda.
#ifndef TILEJIT_RUNTIME_LIB_CUDA_CUDADRIVER_H
#define TILEJIT_RUNTIME_LIB_CUDA_CUDADRIVER_H

#include <cuda.h>

#include "llvm/Support/Error.h"

namespace tilejit::runtime::cuda {

/// X(member, prototype in cuda.h, exported symbol names tried in order). The
/// versioned names fix the ABI: cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2,
/// and the exported _v2 symbol has exactly that prototype on every driver.
#define TILEJIT_CUDA_ENTRY_POINTS(X)                                                     \
  X(getErrorName, cuGetErrorName, "cuGetErrorName")                                      \
  X(getErrorString, cuGetErrorString, "cuGetErrorString")                                \
  X(init, cuInit, "cuInit")                                                              \
  X(driverGetVersion, cuDriverGetVersion, "cuDriverGetVersion")                          \
  X(deviceGetCount, cuDeviceGetCount, "cuDeviceGetCount")                                \
  X(deviceGet, cuDeviceGet, "cuDeviceGet")                                               \
  X(deviceGetName, cuDeviceGetName, "cuDeviceGetName")                                   \
  X(deviceGetAttribute, cuDeviceGetAttribute, "cuDeviceGetAttribute")                    \
  X(deviceTotalMem, cuDeviceTotalMem, "cuDeviceTotalMem_v2")                             \
  X(primaryCtxRetain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")              \
  X(primaryCtxRelease, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")        \
  X(ctxGetCurrent, cuCtxGetCurrent, "cuCtxGetCurrent")                                   \
  X(ctxSetCurrent, cuCtxSetCurrent, "cuCtxSetCurrent")                                   \
  X(memAlloc, cuMemAlloc, "cuMemAlloc_v2")                                               \
  X(memFree, cuMemFree, "cuMemFree_v2")                                                  \
  X(memcpyHtoDAsync, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                          \
  X(memcpyDtoHAsync, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")                          \
  X(memcpyDtoDAsync, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")                          \
  X(memsetD8Async, cuMemsetD8Async, "cuMemsetD8Async")                                   \
  X(streamCreate, cuStreamCreate, "cuStreamCreate")                                      \
  X(streamDestroy, cuStreamDestroy, "cuStreamDestroy_v2")                                \
  X(streamSynchronize, cuStreamSynchronize, "cuStreamSynchronize")                       \
  X(eventCreate, cuEventCreate, "cuEventCreate")                                         \
  X(eventDestroy, cuEventDestroy, "cuEventDestroy_v2")                                   \
  X(eventRecord, cuEventRecord, "cuEventRecord")                                         \
  X(eventSynchronize, cuEventSynchronize, "cuEventSynchronize")                          \
  X(eventElapsedTime, cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime") \
  X(moduleLoadDataEx, cuModuleLoadDataEx, "cuModuleLoadDataEx")                          \
  X(moduleUnload, cuModuleUnload, "cuModuleUnload")                                      \
  X(moduleGetFunction, cuModuleGetFunction, "cuModuleGetFunction")                       \
  X(funcSetAttribute, cuFuncSetAttribute, "cuFuncSetAttribute")                          \
  X(launchKernel, cuLaunchKernel, "cuLaunchKernel")                                      \
  X(launchKernelEx, cuLaunchKernelEx, "cuLaunchKernelEx")                                \
  X(tensorMapEncodeTiled, cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled")              \
  X(streamBeginCapture, cuStreamBeginCapture, "cuStreamBeginCapture_v2")                 \
  X(streamEndCapture, cuStreamEndCapture, "cuStreamEndCapture")                          \
  X(streamIsCapturing, cuStreamIsCapturing, "cuStreamIsCapturing")                       \
  X(graphInstantiate, cuGraphInstantiate, "cuGraphInstantiateWithFlags")                 \
  X(graphLaunch, cuGraphLaunch, "cuGraphLaunch")                                         \
  X(graphExecDestroy, cuGraphExecDestroy, "cuGraphExecDestroy")                          \
  X(graphDestroy, cuGraphDestroy, "cuGraphDestroy")

/// The resolved driver: one per process, loaded and cuInit'ed on first use.
struct Driver {
#define TILEJIT_CUDA_FIRST(first, ...) first
#define TILEJIT_CUDA_MEMBER(member, prototype, ...)                                      \
  decltype(&::prototype) member = nullptr;                                               \
  static constexpr const char *member##Symbol = TILEJIT_CUDA_FIRST(__VA_ARGS__);
  TILEJIT_CUDA_ENTRY_POINTS(TILEJIT_CUDA_MEMBER)
#undef TILEJIT_CUDA_MEMBER
#undef TILEJIT_CUDA_FIRST

  /// The loaded driver, or why there is none ("no CUDA driver found
  /// (libcuda.so.1): ..."). Loads and initializes once per process; later calls
  /// return the same driver or the same reason.
  static llvm::Expected<const Driver &> get();

  /// The checked helper: llvm::Error::success() for CUDA_SUCCESS, otherwise
  /// "<call>: <CUDA_ERROR_NAME> (<driver's message>)".
  llvm::Error check(CUresult result, const char *call) const;

  /// Calls `fn(args...)` and checks its result under the name `call`.
  template <typename Fn, typename... Args>
  llvm::Error call(const char *call, Fn fn, Args... args) const {
    return check(fn(args...), call);
  }
};

/// Calls driver entry point `member` with `args`, checked, named by its symbol.
#define TILEJIT_CU(driver, member, ...)                                                  \
  (driver).call(Driver::member##Symbol, (driver).member, __VA_ARGS__)

} // namespace tilejit::runtime::cuda

#endif // TILEJIT_RUNTIME_LIB_CUDA_CUDADRIVER_H
