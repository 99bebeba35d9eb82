// The arch table: names, PTX feature levels and capabilities
// (docs/design.md#the-capability-table).
// Assumes LLVM 22's NVPTX backend, which emits PTX ISA 9.0 at most.
#include "tilejit/support/Arch.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit {

ArrayRef<Arch> Arch::all() {
  // PTX feature levels. LLVM's default for the CPU alone would be PTX 7.8 on
  // sm_90 and 8.0 on sm_90a, but e4m3 mma.sync is only selectable from PTX 8.4
  // (below that LLVM aborts with "Cannot select"), so every arch is pinned
  // explicitly, at one level where possible so that the lowering can rely on
  // the same instruction forms everywhere:
  //  - sm_90, sm_90a, sm_121a: PTX 8.8, the first ISA that knows sm_121 and
  //    the newest a CUDA 12.9 driver can load, so H100/H200 hosts do not need
  //    a CUDA 13 driver.
  //  - sm_110a: PTX 9.0. Thor became sm_110 (it was sm_101) in CUDA 13, whose
  //    PTX 9.0 is the first ISA that has it; LLVM rejects 8.8 for sm_110a.
  //
  // Capabilities follow the design table. cp.async (PTX: sm_80 and later) is
  // listed on sm_90 and inherited by every later arch. TMA is kept to the
  // sm_90a fast path together with wgmma, which exists only on sm_90a;
  // sm_110a and sm_121a have no TMA lowering yet. Shared memory per program:
  // 227 KiB on Hopper and Thor, 99 KiB on GB10.
  static const Arch table[] = {
      Arch("sm_90", 90, /*archSpecific=*/false, "+ptx88", 88,
           {/*mmaSyncBf16=*/true, /*mmaSyncE4m3=*/true, /*wgmma=*/false,
            /*tma=*/false, /*cpAsync=*/true, /*sharedBytesPerBlock=*/227 * 1024}),
      Arch("sm_90a", 90, /*archSpecific=*/true, "+ptx88", 88,
           {/*mmaSyncBf16=*/true, /*mmaSyncE4m3=*/true, /*wgmma=*/true,
            /*tma=*/true, /*cpAsync=*/true, /*sharedBytesPerBlock=*/227 * 1024}),
      Arch("sm_110a", 110, /*archSpecific=*/true, "+ptx90", 90,
           {/*mmaSyncBf16=*/true, /*mmaSyncE4m3=*/true, /*wgmma=*/false,
            /*tma=*/false, /*cpAsync=*/true, /*sharedBytesPerBlock=*/227 * 1024}),
      Arch("sm_121a", 121, /*archSpecific=*/true, "+ptx88", 88,
           {/*mmaSyncBf16=*/true, /*mmaSyncE4m3=*/true, /*wgmma=*/false,
            /*tma=*/false, /*cpAsync=*/true, /*sharedBytesPerBlock=*/99 * 1024}),
  };
  return table;
}

/// "sm_90, sm_90a, sm_110a, sm_121a", for error messages.
static std::string knownArchList() {
  std::string list;
  for (const Arch &arch : Arch::all()) {
    if (!list.empty())
      list += ", ";
    list += arch.name().str();
  }
  return list;
}

Expected<Arch> Arch::parse(StringRef name) {
  for (const Arch &arch : all())
    if (arch.name() == name)
      return arch;
  // "sm_110" for "sm_110a" is the likely slip: name the target that exists.
  for (const Arch &arch : all())
    if (arch.isArchSpecific() && arch.name().drop_back() == name)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("arch '{0}' is not supported: only the arch-specific '{1}' "
                  "exists for SM {2} (known arches: {3})",
                  name, arch.name(), arch.smVersion(), knownArchList()));
  return createStringError(
      inconvertibleErrorCode(),
      formatv("unknown arch '{0}' (known arches: {1})", name, knownArchList()));
}

Expected<Arch> Arch::forComputeCapability(unsigned major, unsigned minor) {
  unsigned sm = major * 10 + minor;
  for (const Arch &arch : all())
    if (arch.isArchSpecific() && arch.smVersion() == sm)
      return arch;
  std::string known;
  for (const Arch &arch : all()) {
    if (!arch.isArchSpecific())
      continue;
    if (!known.empty())
      known += ", ";
    known += formatv("{0}.{1} -> {2}", arch.smVersion() / 10, arch.smVersion() % 10,
                     arch.name());
  }
  return createStringError(
      inconvertibleErrorCode(),
      formatv("no tilejit arch for a device of compute capability {0}.{1} "
              "(supported: {2})",
              major, minor, known));
}

std::string Arch::ptxVersionString() const {
  return formatv("{0}.{1}", ptx / 10, ptx % 10);
}

} // namespace tilejit
