// The driver-backed device: libcuda.so.1 is opened at run time (never linked), so
// every tilejit binary starts on a machine without a GPU and reports that cleanly.
#ifndef TILEJIT_RUNTIME_CUDADEVICE_H
#define TILEJIT_RUNTIME_CUDADEVICE_H

#include "tilejit/runtime/DeviceApi.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace tilejit::runtime {

/// The number of CUDA devices. Errors: "no CUDA driver found (libcuda.so.1):
/// <dlerror>" when the driver is not installed, "cuInit: CUDA_ERROR_NO_DEVICE
/// (...)" when it finds no GPU.
llvm::Expected<int> cudaDeviceCount();

/// Opens device `ordinal` on its primary context (shared with the CUDA runtime
/// and frameworks in the same process). The same errors as cudaDeviceCount,
/// and "no CUDA device N (the driver reports M)" for an ordinal out of range.
llvm::Expected<std::unique_ptr<DeviceApi>> openCudaDevice(int ordinal = 0);

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_CUDADEVICE_H
