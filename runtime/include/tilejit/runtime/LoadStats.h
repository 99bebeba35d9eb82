// Load statistics: counters, not logs (docs/design.md#load-statistics). Tests assert
// them: a weight uploads once, the second forward uploads 0 bytes and compiles nothing.
#ifndef TILEJIT_RUNTIME_LOADSTATS_H
#define TILEJIT_RUNTIME_LOADSTATS_H

#include "tilejit/runtime/CompilerInterface.h"

#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace tilejit::runtime {

/// "812 B", "41.2 KB", "27.7 MB", "1.5 GB": decimal units, one decimal.
std::string formatBytes(uint64_t bytes);

/// A copy of the counters at one moment; subtract two to get what a region did.
struct LoadStatsSnapshot {
  /// Bytes copied host -> device for weights.
  uint64_t bytesUploaded = 0;
  /// Weight bytes re-packed into a kernel's layout before their upload (also
  /// counted in bytesUploaded), and the host time the packing took.
  uint64_t bytesPacked = 0;
  double packMs = 0;
  /// Kernels the compiler compiled (neither cache had them).
  uint64_t modulesCompiled = 0;
  /// Modules loaded into a device context.
  uint64_t modulesLoaded = 0;
  /// Kernels found loaded in the memory cache.
  uint64_t memoryHits = 0;
  /// Kernels read from the disk cache instead of compiled.
  uint64_t diskHits = 0;
  /// Disk cache entries found corrupt or truncated (and recompiled).
  uint64_t corruptEntries = 0;
  /// Compile milliseconds per stage, summed over modulesCompiled.
  std::map<std::string, double> compileMsByStage;

  double compileMs() const;
  LoadStatsSnapshot operator-(const LoadStatsSnapshot &earlier) const;
  /// "uploaded 27.7 MB (packed 27.7 MB in 9.1 ms), compiled 3 (ptx 40.1 ms, tile 1.2 ms;
  /// total 41.3 ms), loaded 3, memory hits 0, disk hits 2, corrupt 0".
  void print(llvm::raw_ostream &os) const;
};

/// The live counters of one JitRuntime; safe to update from any thread.
class LoadStats {
public:
  void addUpload(uint64_t bytes) { bytesUploaded += bytes; }
  /// Counts `bytes` re-packed in `ms` (the upload counts them separately).
  void addPacked(uint64_t bytes, double ms) {
    bytesPacked += bytes;
    packMicros += uint64_t(ms * 1000);
  }
  /// Counts one compiled module and adds its stage timings.
  void addCompiled(const CompiledKernel &kernel);
  void addModuleLoaded() { ++modulesLoaded; }
  void addMemoryHit() { ++memoryHits; }
  void addDiskHit() { ++diskHits; }
  void addCorruptEntry() { ++corruptEntries; }

  LoadStatsSnapshot snapshot() const;

private:
  std::atomic<uint64_t> bytesUploaded{0}, bytesPacked{0}, packMicros{0},
      modulesCompiled{0}, modulesLoaded{0}, memoryHits{0}, diskHits{0}, corruptEntries{0};
  mutable std::mutex stageMutex;
  std::map<std::string, double> stageMs;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_LOADSTATS_H
