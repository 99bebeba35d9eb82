// The disk cache of compiled kernels (docs/design.md#cache-keys): content-hash keys,
// entries written to a temporary file and renamed, checksummed and verified on read, a
// size cap with LRU eviction, safe for several processes sharing one directory.
#ifndef TILEJIT_RUNTIME_DISKCACHE_H
#define TILEJIT_RUNTIME_DISKCACHE_H

#include "tilejit/runtime/CompilerInterface.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace tilejit::runtime {

/// Receives warnings the runtime cannot return to a caller (a corrupt cache
/// entry it recovered from, a cache write that failed).
using DiagnosticHandler = std::function<void(llvm::StringRef message)>;
/// Prints "tilejit: warning: <message>" on stderr.
void printWarning(llvm::StringRef message);
/// Prints "tilejit: note: <message>" on stderr.
void printNote(llvm::StringRef message);

/// Everything a compiled kernel depends on. Any change gives another key.
struct DiskKeyInputs {
  /// The tile IR after specialization, printed canonically.
  std::string canonicalIR;
  /// CompileOptions::canonical().
  std::string options;
  /// The exact arch, suffix included.
  std::string arch;
  /// The PTX ISA version emitted for the arch ("8.8").
  std::string ptxVersion;
  /// CompilerIdentity::buildId and llvmVersion.
  std::string buildId;
  std::string llvmVersion;
};

/// SHA-256 over the inputs (each length-prefixed, so no two input sets
/// concatenate to the same bytes) and the entry format version: 64 hex digits.
std::string computeDiskKey(const DiskKeyInputs &inputs);

/// Whether `key` has the form computeDiskKey produces (64 lowercase hex digits).
bool isDiskKey(llvm::StringRef key);

/// Default size cap of the disk cache: 2 GiB.
constexpr uint64_t defaultDiskCacheMaxBytes = 2ull << 30;

struct DiskCacheConfig {
  std::string directory;
  uint64_t maxBytes = defaultDiskCacheMaxBytes;
  /// Where corrupt entries are reported (once each); printWarning when empty.
  DiagnosticHandler diagnostics;
};

/// One entry as `tilejit cache ls` shows it.
struct CacheEntryInfo {
  std::string key;
  std::string kernelName;
  std::string arch;
  uint64_t fileBytes = 0;
  /// The LRU clock: the last store or hit.
  llvm::sys::TimePoint<> lastUsed;
  /// Why the entry is unusable; empty for a valid one.
  std::string problem;
};

/// What `tilejit cache verify` found.
struct VerifyReport {
  unsigned valid = 0;
  std::vector<CacheEntryInfo> corrupt;
  /// How many of the corrupt entries were removed.
  unsigned removed = 0;
};

/// The result of a lookup.
struct DiskLookup {
  enum Status { Hit, Miss, Corrupt } status = Miss;
  /// The kernel, for a Hit.
  CompiledKernel kernel;
  /// What was wrong, for Corrupt.
  std::string problem;
};

/// A cache directory:
///   <dir>/entries/<key>.tjk   one compiled kernel each
///   <dir>/tmp/                entries being written (renamed into entries/)
///   <dir>/lock                serializes renames, eviction and removal
/// Readers take no lock: an entry is complete once renamed into place, and an
/// entry removed while being read stays readable through the open file.
/// Thread-safe, and safe for several processes sharing the directory.
class DiskCache {
public:
  /// Creates the directories when missing.
  static llvm::Expected<std::unique_ptr<DiskCache>> open(DiskCacheConfig config);

  /// Reads the entry for `key`. A corrupt or truncated entry is reported to
  /// the diagnostics handler (once per key and process) and returned as
  /// Corrupt, never as a Hit; the caller recompiles and store() replaces it. A
  /// hit refreshes the entry's LRU time. Errors are I/O failures other than a
  /// missing entry.
  llvm::Expected<DiskLookup> lookup(llvm::StringRef key);

  /// Writes the entry for `key` atomically (temporary file, then rename), then
  /// evicts least recently used entries until the cache fits its cap (the new
  /// entry stays even if it alone exceeds the cap).
  llvm::Error store(llvm::StringRef key, llvm::StringRef kernelName, llvm::StringRef arch,
                    const CompiledKernel &kernel);

  /// Every entry, oldest use first, each read and checked.
  llvm::Expected<std::vector<CacheEntryInfo>> list() const;
  /// Checks every entry; with `removeCorrupt`, removes the corrupt ones.
  llvm::Expected<VerifyReport> verify(bool removeCorrupt);
  /// Removes every entry and temporary file; returns how many entries.
  llvm::Expected<unsigned> clear();

  llvm::StringRef directory() const { return config.directory; }
  uint64_t maxBytes() const { return config.maxBytes; }

private:
  explicit DiskCache(DiskCacheConfig config);

  std::string entryPath(llvm::StringRef key) const;
  /// Under the lock: evicts LRU entries beyond the cap, never `keep`.
  llvm::Error evictLocked(llvm::StringRef keep);
  void reportCorrupt(llvm::StringRef key, llvm::StringRef problem);

  DiskCacheConfig config;
  std::mutex reportedMutex;
  std::set<std::string> reported;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_DISKCACHE_H
