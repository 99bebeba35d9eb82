// Load statistics counters and their printed form.
#include "tilejit/runtime/LoadStats.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit::runtime {

std::string formatBytes(uint64_t bytes) {
  if (bytes < 1000)
    return formatv("{0} B", bytes);
  if (bytes < 1000 * 1000)
    return formatv("{0:F1} KB", double(bytes) / 1e3);
  if (bytes < 1000ull * 1000 * 1000)
    return formatv("{0:F1} MB", double(bytes) / 1e6);
  return formatv("{0:F1} GB", double(bytes) / 1e9);
}

double LoadStatsSnapshot::compileMs() const {
  double total = 0;
  for (const auto &[stage, ms] : compileMsByStage)
    total += ms;
  return total;
}

LoadStatsSnapshot LoadStatsSnapshot::operator-(const LoadStatsSnapshot &earlier) const {
  LoadStatsSnapshot delta = *this;
  delta.bytesUploaded -= earlier.bytesUploaded;
  delta.bytesPacked -= earlier.bytesPacked;
  delta.packMs -= earlier.packMs;
  delta.modulesCompiled -= earlier.modulesCompiled;
  delta.modulesLoaded -= earlier.modulesLoaded;
  delta.memoryHits -= earlier.memoryHits;
  delta.diskHits -= earlier.diskHits;
  delta.corruptEntries -= earlier.corruptEntries;
  for (const auto &[stage, ms] : earlier.compileMsByStage)
    delta.compileMsByStage[stage] -= ms;
  return delta;
}

void LoadStatsSnapshot::print(raw_ostream &os) const {
  os << "uploaded " << formatBytes(bytesUploaded);
  if (bytesPacked)
    os << formatv(" (packed {0} in {1:F1} ms)", formatBytes(bytesPacked), packMs);
  os << formatv(", compiled {0}", modulesCompiled);
  if (!compileMsByStage.empty()) {
    os << " (";
    bool first = true;
    for (const auto &[stage, ms] : compileMsByStage) {
      os << (first ? "" : ", ") << formatv("{0} {1:F1} ms", stage, ms);
      first = false;
    }
    os << formatv("; total {0:F1} ms)", compileMs());
  }
  os << formatv(", loaded {0}, memory hits {1}, disk hits {2}, corrupt {3}",
                modulesLoaded, memoryHits, diskHits, corruptEntries);
}

void LoadStats::addCompiled(const CompiledKernel &kernel) {
  ++modulesCompiled;
  std::lock_guard<std::mutex> lock(stageMutex);
  for (const StageTiming &timing : kernel.timings)
    stageMs[timing.stage] += timing.ms;
}

LoadStatsSnapshot LoadStats::snapshot() const {
  LoadStatsSnapshot snap;
  snap.bytesUploaded = bytesUploaded;
  snap.bytesPacked = bytesPacked;
  snap.packMs = packMicros / 1000.0;
  snap.modulesCompiled = modulesCompiled;
  snap.modulesLoaded = modulesLoaded;
  snap.memoryHits = memoryHits;
  snap.diskHits = diskHits;
  snap.corruptEntries = corruptEntries;
  std::lock_guard<std::mutex> lock(stageMutex);
  snap.compileMsByStage = stageMs;
  return snap;
}

} // namespace tilejit::runtime
