// The tuning database: the configurations `tilejit tune` measured fastest, keyed
// by kernel IR hash, shape bucket, exact arch, SM count and tilejit version, with
// provenance. A JSON file consulted before a tunable kernel is specialized.
#ifndef TILEJIT_TUNING_TUNEDB_H
#define TILEJIT_TUNING_TUNEDB_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tilejit::tuning {

/// Integer values by name: a kernel's constants, a configuration, launch sizes.
using NamedValues = std::map<std::string, int64_t>;

/// What a tuned configuration applies to. Entries are unique by (id(), version).
struct TuneKey {
  std::string kernel;
  /// SHA-256 of the canonical tile IR at the default configuration (see
  /// hashKernelIR): changes whenever the kernel's code or its fixed constants do.
  std::string irHash;
  /// shapeBucket() of the launch sizes.
  std::string shapeBucket;
  /// The exact arch, suffix included.
  std::string arch;
  unsigned smCount = 0;
  /// tuneVersion() of the compiler that measured the entry.
  std::string version;

  /// Everything but the version, "kernel|hash|bucket|arch|sms": entries with
  /// equal ids and other versions are the same tuning problem, measured by
  /// another compiler.
  std::string id() const;
};

/// Where and when an entry was measured.
struct TuneProvenance {
  /// UTC, ISO 8601 ("2026-11-30T12:34:56Z").
  std::string date;
  std::string device;
  /// The driver's CUDA version as cuDriverGetVersion encodes it (13000).
  int driverVersion = 0;
  /// The clocks during the run as read (e.g. nvidia-smi), or why unknown.
  std::string clocks;
};

/// One tuned configuration.
struct TuneEntry {
  TuneKey key;
  /// The kernel's constants that are not tuned (shape constants), and the
  /// launch sizes it was measured at: enough to rebuild and re-validate it.
  NamedValues constants;
  NamedValues shape;
  /// The winning values of the tunable constants.
  NamedValues config;
  /// Per-launch time of the winner and of the default configuration, in ms.
  double medianMs = 0, minMs = 0, maxMs = 0;
  unsigned samples = 0;
  double defaultMedianMs = 0;
  /// runtime::codeFingerprint of the winner as the measuring build compiled
  /// it ("" in entries recorded before it existed). Another build that
  /// compiles the winner to the same code may use the entry: the time
  /// measured is the time of the code it would run.
  std::string codeHash;
  /// Empty for a usable entry; else why it must not be used (a re-validation
  /// that failed). Such an entry stays in the file, visible, until re-tuned.
  std::string rejected;
  TuneProvenance provenance;
};

/// How a lookup matched.
enum class TuneMatch {
  None,
  /// An entry of this version: use it.
  Exact,
  /// Only entries of other versions: not used until re-validated, unless
  /// this build compiles the entry's winner to the code it measured
  /// (TunedChoice::sameCode).
  OtherVersion,
  /// An entry of this version marked rejected.
  Rejected,
};

/// The database in memory. Not thread-safe.
class TuneDb {
public:
  /// Reads `path`; a missing file is an empty database. A file that is not a
  /// tuning database is an error naming the path and what is wrong.
  static llvm::Expected<TuneDb> load(llvm::StringRef path);
  static llvm::Expected<TuneDb> fromJSON(const llvm::json::Value &value);
  llvm::json::Value toJSON() const;
  /// Writes to a temporary file in the same folder and renames it into place,
  /// so a reader sees the old or the new database, never a part.
  llvm::Error save(llvm::StringRef path) const;

  /// The entry for `key`: the one with key.version when present (Exact or
  /// Rejected), else any of another version (OtherVersion), else none.
  std::pair<TuneMatch, const TuneEntry *> lookup(const TuneKey &key) const;
  /// Adds `entry`, replacing every entry of the same id (all versions: a new
  /// measurement supersedes them). Returns the versions replaced.
  std::vector<std::string> record(TuneEntry entry);

  /// What merge() did.
  struct MergeReport {
    unsigned added = 0, replaced = 0;
    /// Imported entries of another version than `currentVersion`: kept, but
    /// used only after re-validation.
    std::vector<const TuneEntry *> needRevalidation;
  };
  /// Imports `other`'s entries, replacing entries of equal id and version.
  MergeReport merge(const TuneDb &other, llvm::StringRef currentVersion);

  const std::vector<TuneEntry> &entries() const { return all; }
  /// Sets entries()[index].codeHash (stampCodeHashes).
  void setCodeHash(size_t index, std::string codeHash) {
    all.at(index).codeHash = std::move(codeHash);
  }
  /// Entries whose version is not `currentVersion`.
  std::vector<const TuneEntry *> staleEntries(llvm::StringRef currentVersion) const;

private:
  std::vector<TuneEntry> all;
};

/// SHA-256 of a kernel's canonical tile IR, 64 hex digits.
std::string hashKernelIR(llvm::StringRef canonicalIR);
/// Launch sizes grouped so that nearby sizes share a tuned entry: each value
/// rounded up to a power of two, "m<=4096,n<=1024" in name order ("" for none).
std::string shapeBucket(const NamedValues &shape);
/// The version stamped on entries: the compiler's build id and LLVM version.
std::string tuneVersion(llvm::StringRef buildId, llvm::StringRef llvmVersion);
/// "block_k=64,block_m=128" in name order.
std::string formatNamedValues(const NamedValues &values);

/// Reads the database at `path`, lets `update` change it and writes it back,
/// all under an advisory lock on `path`.lock, so that several tuners may
/// share one file.
llvm::Error updateTuneDb(llvm::StringRef path,
                         const std::function<llvm::Error(TuneDb &)> &update);

} // namespace tilejit::tuning

#endif // TILEJIT_TUNING_TUNEDB_H
