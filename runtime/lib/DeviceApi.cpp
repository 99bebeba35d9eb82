// Device-independent parts of the device layer: which arch a device runs, how it
// is described in messages, and process-unique context ids.
#include "tilejit/runtime/DeviceApi.h"

#include "llvm/Support/FormatVariadic.h"

#include <atomic>

using namespace llvm;

namespace tilejit::runtime {

DeviceInfo compileOnlyInfo(const Arch &arch) {
  DeviceInfo info;
  info.name = arch.profile().device.str() + " (compile-only)";
  info.ccMajor = unsigned(arch.smVersion() / 10);
  info.ccMinor = unsigned(arch.smVersion() % 10);
  info.smCount = unsigned(arch.profile().smCount);
  info.maxDynamicSharedBytes = uint32_t(arch.profile().sharedBytesPerBlock);
  return info;
}

Expected<Arch> nativeArch(const DeviceInfo &info) {
  return Arch::forComputeCapability(info.ccMajor, info.ccMinor);
}

bool hasArchSpecificTarget(const DeviceInfo &info) {
  Expected<Arch> arch = nativeArch(info);
  if (!arch) {
    consumeError(arch.takeError());
    return false;
  }
  return arch->isArchSpecific();
}

bool canRun(const DeviceInfo &info, const Arch &arch) {
  if (arch.isArchSpecific())
    return arch.smVersion() == info.smVersion();
  return arch.smVersion() <= info.smVersion();
}

void printDeviceInfo(raw_ostream &os, const DeviceInfo &info) {
  os << formatv("device {0} ({1}, compute capability {2}.{3}, {4} SMs, {5:F1} GiB, ",
                info.ordinal, info.name, info.ccMajor, info.ccMinor, info.smCount,
                double(info.totalMemoryBytes) / double(1ull << 30));
  Expected<Arch> arch = nativeArch(info);
  if (arch)
    os << arch->name() << ")";
  else {
    consumeError(arch.takeError());
    os << "no tilejit arch)";
  }
}

uint64_t newContextId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

DeviceApi::~DeviceApi() = default;

} // namespace tilejit::runtime
