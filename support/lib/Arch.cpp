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
  // Capabilities, each as the PTX ISA 9.0 target notes of the instructions it
  // gates give it (ptxas 13 accepts each probe exactly there:
  // tests/unit/PTXTargetTest.cpp):
  //  - mmaSyncBf16, mmaSyncE4m3: "Warp Level Matrix Multiply-Accumulate
  //    Instructions: mma": .bf16 m16n8k16 from sm_80, .e4m3 m16n8k32 from sm_89
  //    (PTX 8.4): every arch here.
  //  - wgmma: "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
  //    Instructions": sm_90a only (sm_100 and later have tcgen05 instead).
  //  - tma: "Data Movement and Conversion Instructions: cp.async.bulk.tensor"
  //    and "Parallel Synchronization and Communication Instructions: mbarrier"
  //    (expect_tx, try_wait.parity): sm_90 and later, so sm_90 (the portable
  //    Hopper target), sm_110a and sm_121a too. The .multicast::cluster form
  //    is no entry: no path uses it.
  //  - setmaxnreg: "Miscellaneous Instructions: setmaxnreg": the arch-specific
  //    targets sm_90a, sm_100a, sm_110a, sm_120a and sm_121a, never plain sm_90.
  //  - cpAsync: "cp.async": sm_80 and later.
  //  - gridDependency: "Parallel Synchronization and Communication
  //    Instructions: griddepcontrol" (sm_90, PTX 7.8) and "Data Movement and
  //    Conversion Instructions: cp.async.bulk.prefetch" (sm_90, PTX 8.0):
  //    every arch here.
  // Device profiles: the H200 for both Hopper targets (the GPU tilejit is
  // measured on; an H100 differs in memory only), Jetson AGX Thor (20
  // multiprocessors, LPDDR5X at 273 GB/s) and GB10 (48 multiprocessors, 99 KiB
  // of shared memory per program, LPDDR5x at 273 GB/s); 64 Ki registers per
  // multiprocessor on all.
  constexpr DeviceProfile h200{"NVIDIA H200", 132, 227 * 1024, 65536, 4800};
  constexpr DeviceProfile thor{"Jetson AGX Thor", 20, 227 * 1024, 65536, 273};
  constexpr DeviceProfile gb10{"NVIDIA GB10", 48, 99 * 1024, 65536, 273};
  static const Arch table[] = {
      Arch("sm_90", 90, /*archSpecific=*/false, "+ptx88", 88,
           {/*mmaSyncBf16=*/true, /*mmaSyncE4m3=*/true, /*wgmma=*/false,
            /*tma=*/true, /*setmaxnreg=*/false, /*cpAsync=*/true,
            /*gridDependency=*/true},
           h200),
      Arch("sm_90a", 90, /*archSpecific=*/true, "+ptx88", 88,
           {/*mmaSyncBf16=*/true, /*mmaSyncE4m3=*/true, /*wgmma=*/true,
            /*tma=*/true, /*setmaxnreg=*/true, /*cpAsync=*/true,
            /*gridDependency=*/true},
           h200),
      Arch("sm_110a", 110, /*archSpecific=*/true, "+ptx90", 90,
           {/*mmaSyncBf16=*/true, /*mmaSyncE4m3=*/true, /*wgmma=*/false,
            /*tma=*/true, /*setmaxnreg=*/true, /*cpAsync=*/true,
            /*gridDependency=*/true},
           thor),
      Arch("sm_121a", 121, /*archSpecific=*/true, "+ptx88", 88,
           {/*mmaSyncBf16=*/true, /*mmaSyncE4m3=*/true, /*wgmma=*/false,
            /*tma=*/true, /*setmaxnreg=*/true, /*cpAsync=*/true,
            /*gridDependency=*/true},
           gb10),
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
