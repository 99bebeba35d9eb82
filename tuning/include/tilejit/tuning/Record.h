// Recording measurements in the tuning database: where and when they were made,
// the locked write of an entry, and the re-validation of the entries another
// tilejit version measured. `tilejit tune` parses options, calls these and prints.
#ifndef TILEJIT_TUNING_RECORD_H
#define TILEJIT_TUNING_RECORD_H

#include "tilejit/tuning/Tuner.h"

#include <optional>
#include <string>
#include <vector>

namespace tilejit::tuning {

/// Date (UTC), device, driver and clocks (nvidia-smi, when present) now.
TuneProvenance currentProvenance(const runtime::DeviceInfo &info);

/// Records `entry`, with the provenance of `info` now, in the database at
/// `path` (under its lock). Returns the versions whose entries it replaced.
llvm::Expected<std::vector<std::string>>
recordEntry(llvm::StringRef path, TuneEntry entry, const runtime::DeviceInfo &info);

/// What re-validating one entry of another version found.
struct Revalidation {
  /// Why the entry cannot be re-validated on this device (another arch or SM
  /// count); nothing is to be recorded then.
  std::string notHere;
  /// The entry to record: the re-measured configuration for this version, or
  /// the entry marked rejected with the reason.
  TuneEntry verdict;
  /// The measurement of the stored configuration against the default, when
  /// one was made.
  std::optional<TuneReport> report;
};

/// Rebuilds `entry`'s kernel at its constants and sizes. An entry whose IR
/// hash changed is rejected (it can never match again); otherwise the stored
/// configuration and the default are checked and timed again and the faster
/// becomes the verdict, or the entry is rejected when the stored one fails.
/// Errors only for what stops the measurement itself.
llvm::Expected<Revalidation>
revalidateEntry(runtime::JitRuntime &jit, const KernelRegistry &kernels,
                const TuneProblemRegistry &problems, const TuneEntry &entry,
                const TuneOptions &options, const ProgressFn &progress);

/// What stampCodeHashes did.
struct StampReport {
  unsigned stamped = 0;
  /// "kernel [bucket] arch: why" for each entry left without a code hash.
  std::vector<std::string> skipped;
};

/// Gives each entry of `db` for `jit`'s arch and SM count that `jit`'s compiler
/// measured (its version) and that has no code hash the runtime::codeFingerprint
/// of its winner as `jit` compiles it (a compile-only device will do: the code
/// this build generates is the code it timed). Entries of other versions, those
/// whose kernel IR changed and those that no longer compile are skipped and
/// named.
StampReport stampCodeHashes(TuneDb &db, const KernelRegistry &kernels,
                            const TuneProblemRegistry &problems,
                            runtime::JitRuntime &jit);

} // namespace tilejit::tuning

#endif // TILEJIT_TUNING_RECORD_H
