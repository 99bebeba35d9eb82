// The device entry points of a build without cuda.h: every call says why there is
// no GPU support, so binaries behave as on a machine without a driver.
#include "tilejit/runtime/CudaDevice.h"

using namespace llvm;

namespace tilejit::runtime {

static Error noCudaSupport() {
  return createStringError(inconvertibleErrorCode(),
                           "no CUDA driver support: tilejit was built without cuda.h "
                           "(set CUDA_HOME when configuring)");
}

Expected<int> cudaDeviceCount() { return noCudaSupport(); }

Expected<std::unique_ptr<DeviceApi>> openCudaDevice(int ordinal) {
  return noCudaSupport();
}

} // namespace tilejit::runtime
