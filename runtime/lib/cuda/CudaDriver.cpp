// Opens libcuda.so.1 with dlopen, resolves the entry points of CudaDriver.h by
// their versioned export names and runs cuInit, once per process.
#include "CudaDriver.h"

#include "llvm/Support/FormatVariadic.h"

#include <dlfcn.h>
#include <initializer_list>
#include <mutex>
#include <string>

using namespace llvm;

namespace tilejit::runtime::cuda {

static constexpr const char *driverLibrary = "libcuda.so.1";

/// The first of `names` that `library` exports, or null.
static void *resolve(void *library, std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (void *symbol = ::dlsym(library, name))
      return symbol;
  return nullptr;
}

/// Loads the driver into `driver`; returns why not, or an empty string.
static std::string loadDriver(Driver &driver) {
  // RTLD_LOCAL: the driver's symbols must not satisfy anyone else's lookups.
  // The handle is never closed: the driver stays for the process's lifetime.
  void *library = ::dlopen(driverLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = ::dlerror();
    return formatv("no CUDA driver found ({0}): {1}", driverLibrary,
                   reason ? reason : "dlopen failed");
  }
#define TILEJIT_CUDA_RESOLVE(member, prototype, ...)                                     \
  driver.member =                                                                        \
      reinterpret_cast<decltype(driver.member)>(resolve(library, {__VA_ARGS__}));        \
  if (!driver.member)                                                                    \
    return formatv("the CUDA driver ({0}) lacks {1}: it is older than tilejit needs",    \
                   driverLibrary, Driver::member##Symbol);
  TILEJIT_CUDA_ENTRY_POINTS(TILEJIT_CUDA_RESOLVE)
#undef TILEJIT_CUDA_RESOLVE
  if (Error err = TILEJIT_CU(driver, init, 0u))
    return toString(std::move(err));
  return "";
}

Expected<const Driver &> Driver::get() {
  static Driver driver;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] { failure = loadDriver(driver); });
  if (!failure.empty())
    return createStringError(inconvertibleErrorCode(), failure);
  return driver;
}

Error Driver::check(CUresult result, const char *call) const {
  if (result == CUDA_SUCCESS)
    return Error::success();
  const char *name = nullptr;
  const char *message = nullptr;
  if (getErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUresult";
  if (getErrorString(result, &message) != CUDA_SUCCESS || !message)
    message = "no message";
  return createStringError(
      inconvertibleErrorCode(),
      formatv("{0}: {1} ({2}, code {3})", call, name, message, static_cast<int>(result)));
}

} // namespace tilejit::runtime::cuda
