// The runtime's settings and the environment variables that set them
// (docs/design.md#environment): TILEJIT_ARCH, TILEJIT_CACHE_DIR (default
// $XDG_CACHE_HOME/tilejit or ~/.cache/tilejit), TILEJIT_NO_CACHE=1 and TILEJIT_TUNE_DB
// (default <cache dir>/tune.json).
#ifndef TILEJIT_RUNTIME_RUNTIMEOPTIONS_H
#define TILEJIT_RUNTIME_RUNTIMEOPTIONS_H

#include "tilejit/runtime/DiskCache.h"
#include "tilejit/support/Arch.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace tilejit::runtime {

struct RuntimeOptions {
  /// Compile for this arch instead of the device's (TILEJIT_ARCH, parsed
  /// where it is read). None: the device's arch-specific target. Code the
  /// device cannot run is an error when it is launched, not when it is
  /// compiled.
  std::optional<Arch> archOverride;
  /// Shared memory a program may use, when the plans are sized for a smaller
  /// device than the one the kernels run on (`tilejit run --plan-arch
  /// sm_121a` on an H200: GB10's 99 KiB); 0: the target arch's. Every kernel
  /// is compiled to it (CompileOptions::sharedBytesLimit, part of the cache
  /// keys) and refused if it needs more.
  int64_t sharedBytesLimit = 0;
  /// Launch kernels that wait for their predecessors (tile.grid_dep_wait) with
  /// programmatic stream serialization, so they start while the kernel before
  /// them drains; TILEJIT_PDL=0 (or false, no, off) launches every kernel after
  /// its predecessor has ended (the waits are then no-ops).
  bool dependentLaunch = true;
  /// Read and write the disk cache; TILEJIT_NO_CACHE=1 (or true, yes, on) turns
  /// it off. The memory cache is always on.
  bool useDiskCache = true;
  /// The disk cache directory (TILEJIT_CACHE_DIR and its defaults).
  std::string cacheDirectory;
  uint64_t cacheMaxBytes = defaultDiskCacheMaxBytes;
  /// Warnings the runtime recovers from; printWarning when empty.
  DiagnosticHandler diagnostics;
  /// Where this deployment keeps its tuning database (TILEJIT_TUNE_DB, else
  /// tune.json in the cache directory); empty: none. The runtime only carries
  /// the place: tuning/ reads the file and says what it used through `notes`.
  std::string tuneDbPath;
  /// Choices made on the runtime's behalf (a tuned configuration used, or one
  /// not used and why); printNote when empty.
  DiagnosticHandler notes;

  /// The settings the environment selects. Errors: an unknown TILEJIT_ARCH
  /// (the message lists the known arches; not read when `archGiven`, for a
  /// caller that names its arch itself), a TILEJIT_NO_CACHE that is not a
  /// boolean (1/true/yes/on, 0/false/no/off), no cache directory to be found
  /// while the disk cache is on.
  static llvm::Expected<RuntimeOptions> fromEnvironment(bool archGiven = false);
};

/// TILEJIT_CACHE_DIR, else $XDG_CACHE_HOME/tilejit, else $HOME/.cache/tilejit.
/// An error when none of the variables is set.
llvm::Expected<std::string> cacheDirectoryFromEnvironment();

/// TILEJIT_TUNE_DB, else tune.json in the cache directory
/// (cacheDirectoryFromEnvironment). An error when neither can be found.
llvm::Expected<std::string> tuneDbPathFromEnvironment();

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_RUNTIMEOPTIONS_H
