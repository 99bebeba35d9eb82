// The GPU architectures tilejit compiles for and the per-arch capability table
// (docs/design.md#the-capability-table) from which the layout pass picks each
// dot's path and the tuner prunes. Plain data over LLVMSupport: the runtime uses it.
#ifndef TILEJIT_SUPPORT_ARCH_H
#define TILEJIT_SUPPORT_ARCH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace tilejit {

/// What a target can execute, as far as tilejit has a lowering path for it,
/// each entry as the PTX ISA's target notes of the instructions it gates give
/// it (Arch.cpp cites them; tests/unit/PTXTargetTest.cpp assembles a probe of
/// each entry with ptxas on every arch, accepted where true and refused where
/// false). A false entry means no path: an op that needs it is a diagnostic,
/// never a silent fallback.
struct ArchCapabilities {
  /// mma.sync.m16n8k16 with bf16 inputs and f32 accumulation.
  bool mmaSyncBf16;
  /// mma.sync.m16n8k32 with e4m3 inputs and f32 accumulation.
  bool mmaSyncE4m3;
  /// Warpgroup MMA (wgmma.mma_async), bf16 and e4m3.
  bool wgmma;
  /// Tensor Memory Accelerator bulk copies (cp.async.bulk.tensor, unicast)
  /// completing on mbarrier transactions (mbarrier.arrive.expect_tx,
  /// mbarrier.try_wait.parity): what a TMA producer pipeline needs.
  bool tma;
  /// Per-warpgroup register budgets (setmaxnreg).
  bool setmaxnreg;
  /// Ampere-style asynchronous global-to-shared copies (cp.async).
  bool cpAsync;
  /// Programmatic dependent launch: griddepcontrol.wait and
  /// .launch_dependents, with the bulk L2 prefetch (cp.async.bulk.prefetch.L2)
  /// a kernel issues before it waits.
  bool gridDependency;
};

/// The device an arch's plans are sized for, beside the ISA it runs: what
/// the planner and the tuner read instead of one GPU's numbers
/// (docs/design.md, "Device profiles"). Nominal figures from the vendors'
/// specifications; the plans' floors are measured on the device that runs them.
struct DeviceProfile {
  /// The device ("NVIDIA H200", "Jetson AGX Thor", "NVIDIA GB10").
  llvm::StringRef device;
  /// Streaming multiprocessors.
  int64_t smCount;
  /// Shared memory one program may use (its dynamic limit raised to the most).
  int64_t sharedBytesPerBlock;
  /// 32-bit registers of one multiprocessor.
  int64_t registersPerSM;
  /// DRAM bandwidth, GB/s.
  double memoryGBps;
};

/// One exact compilation target, e.g. `sm_90a`. A value type: cheap to copy,
/// compared by name. Only the arches in `all()` exist; obtain one with
/// `parse` or `forComputeCapability`.
class Arch {
public:
  /// Parses an exact arch name ("sm_90", "sm_90a", "sm_110a", "sm_121a").
  /// Anything else is an error that lists the known arches.
  static llvm::Expected<Arch> parse(llvm::StringRef name);

  /// The arch to compile for on a device of compute capability major.minor:
  /// always the arch-specific (`a`) target, which runs only there and unlocks
  /// its fast paths (9.0 -> sm_90a, 11.0 -> sm_110a, 12.1 -> sm_121a).
  static llvm::Expected<Arch> forComputeCapability(unsigned major, unsigned minor);

  /// Every supported arch, in ascending SM order, portable before `a`.
  static llvm::ArrayRef<Arch> all();

  /// The exact name, suffix included ("sm_90a"); part of every cache key,
  /// since an `a` build runs only on its own GPU.
  llvm::StringRef name() const { return archName; }
  /// The SM number: 90 for sm_90 and sm_90a, 121 for sm_121a.
  unsigned smVersion() const { return sm; }
  /// Whether this is an arch-specific (`a`) target.
  bool isArchSpecific() const { return archSpecific; }
  /// The NVPTX CPU name handed to LLVM's TargetMachine.
  llvm::StringRef llvmCPU() const { return archName; }
  /// The NVPTX subtarget feature selecting the PTX ISA version ("+ptx88").
  llvm::StringRef ptxFeature() const { return feature; }
  /// The PTX ISA version as LLVM encodes it: 88 for PTX 8.8.
  unsigned ptxVersion() const { return ptx; }
  /// The PTX ISA version as the `.version` directive spells it ("8.8").
  std::string ptxVersionString() const;
  /// What this arch can execute; see ArchCapabilities.
  ArchCapabilities capabilities() const { return caps; }
  /// The device this arch's plans are sized for; see DeviceProfile.
  const DeviceProfile &profile() const { return hardware; }

  bool operator==(const Arch &other) const { return archName == other.archName; }
  bool operator!=(const Arch &other) const { return !(*this == other); }

private:
  constexpr Arch(llvm::StringRef archName, unsigned sm, bool archSpecific,
                 llvm::StringRef feature, unsigned ptx, ArchCapabilities caps,
                 DeviceProfile hardware)
      : archName(archName), sm(sm), archSpecific(archSpecific), feature(feature),
        ptx(ptx), caps(caps), hardware(hardware) {}

  llvm::StringRef archName;
  unsigned sm;
  bool archSpecific;
  llvm::StringRef feature;
  unsigned ptx;
  ArchCapabilities caps;
  DeviceProfile hardware;
};

} // namespace tilejit

#endif // TILEJIT_SUPPORT_ARCH_H
