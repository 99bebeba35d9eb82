// `tilejit cache ls|verify|clear` on the environment's (or a given) cache directory.
#include "tilejit/runtime/CacheCommand.h"

#include "tilejit/runtime/LoadStats.h"
#include "tilejit/runtime/RuntimeOptions.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit::runtime {

static constexpr StringLiteral subcommands[] = {"ls", "verify", "clear"};

ArrayRef<StringLiteral> cacheSubcommands() { return subcommands; }

void printCacheListing(raw_ostream &os, StringRef directory, uint64_t maxBytes,
                       ArrayRef<CacheEntryInfo> entries) {
  uint64_t total = 0;
  for (const CacheEntryInfo &entry : entries)
    total += entry.fileBytes;
  os << formatv("kernel cache {0}: {1} entries, {2} of {3}\n", directory, entries.size(),
                formatBytes(total), formatBytes(maxBytes));
  if (entries.empty())
    return;
  os << formatv("{0,-14}{1,-28}{2,-9}{3,-10}{4,-21}{5}\n", "KEY", "KERNEL", "ARCH",
                "SIZE", "LAST USED", "STATE");
  for (const CacheEntryInfo &entry : entries)
    os << formatv("{0,-14}{1,-28}{2,-9}{3,-10}{4,-21}{5}\n", entry.key.substr(0, 12),
                  entry.kernelName.empty() ? "?" : entry.kernelName,
                  entry.arch.empty() ? "?" : entry.arch, formatBytes(entry.fileBytes),
                  formatv("{0:%Y-%m-%d %H:%M:%S}", entry.lastUsed).str(),
                  entry.problem.empty() ? "ok" : "corrupt: " + entry.problem);
}

void printVerifyReport(raw_ostream &os, const VerifyReport &report) {
  os << formatv("{0} valid, {1} corrupt ({2} removed)\n", report.valid,
                report.corrupt.size(), report.removed);
  for (const CacheEntryInfo &entry : report.corrupt)
    os << formatv("  {0}: {1}\n", entry.key, entry.problem);
}

Error runCacheCommand(StringRef subcommand, raw_ostream &os, StringRef directory) {
  if (!is_contained(subcommands, subcommand))
    return createStringError(inconvertibleErrorCode(),
                             formatv("unknown cache command '{0}' (expected {1})",
                                     subcommand, llvm::join(cacheSubcommands(), ", ")));
  std::string dir = directory.str();
  if (dir.empty()) {
    Expected<std::string> fromEnv = cacheDirectoryFromEnvironment();
    if (!fromEnv)
      return fromEnv.takeError();
    dir = std::move(*fromEnv);
  }
  Expected<std::unique_ptr<DiskCache>> cache = DiskCache::open({dir});
  if (!cache)
    return cache.takeError();

  if (subcommand == "ls") {
    Expected<std::vector<CacheEntryInfo>> entries = (*cache)->list();
    if (!entries)
      return entries.takeError();
    printCacheListing(os, dir, (*cache)->maxBytes(), *entries);
    return Error::success();
  }
  if (subcommand == "verify") {
    Expected<VerifyReport> report = (*cache)->verify(/*removeCorrupt=*/true);
    if (!report)
      return report.takeError();
    printVerifyReport(os, *report);
    if (!report->corrupt.empty())
      return createStringError(inconvertibleErrorCode(),
                               formatv("{0} corrupt kernel cache entries in {1}",
                                       report->corrupt.size(), dir));
    return Error::success();
  }
  Expected<unsigned> removed = (*cache)->clear();
  if (!removed)
    return removed.takeError();
  os << formatv("removed {0} entries from {1}\n", *removed, dir);
  return Error::success();
}

} // namespace tilejit::runtime
