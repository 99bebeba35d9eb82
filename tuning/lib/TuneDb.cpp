// The tuning database: JSON (de)serialization with errors that name the field,
// lookup by id and version, merge for import, atomic save by rename, and the
// locked read-modify-write that tuners share.
#include "tilejit/tuning/TuneDb.h"
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/support/InputFile.h"
#include "tilejit/support/Json.h"
#include "tilejit/support/OutputFile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>

using namespace llvm;

namespace tilejit::tuning {

/// The "format" field of every database file; bumped when the layout changes.
static constexpr StringLiteral dbFormat = "tilejit-tune-db/1";
/// Far above any GPU's multiprocessor count; the key holds it as unsigned.
static constexpr int64_t kMaxSmCount = 1 << 16;

std::string TuneKey::id() const {
  return formatv("{0}|{1}|{2}|{3}|{4}", kernel, irHash, shapeBucket, arch, smCount);
}

std::string hashKernelIR(StringRef canonicalIR) {
  return toHex(SHA256::hash(arrayRefFromStringRef(canonicalIR)), /*LowerCase=*/true);
}

std::string shapeBucket(const NamedValues &shape) {
  std::string out;
  for (const auto &[name, value] : shape) {
    if (!out.empty())
      out += ",";
    out += formatv("{0}<={1}", name, value <= 1 ? 1 : PowerOf2Ceil(uint64_t(value)));
  }
  return out;
}

std::string tuneVersion(StringRef buildId, StringRef llvmVersion) {
  return (buildId + "/llvm-" + llvmVersion).str();
}

std::string formatNamedValues(const NamedValues &values) {
  return formatConstants(values);
}

namespace {

json::Object namedToJSON(const NamedValues &values) {
  json::Object out;
  for (const auto &[name, value] : values)
    out[name] = value;
  return out;
}

/// Reads fields of one JSON object, collecting the first problem.
class FieldReader {
public:
  FieldReader(const json::Object &object, std::string where)
      : object(object), where(std::move(where)) {}

  std::string string(StringRef name) {
    if (std::optional<StringRef> s = object.getString(name))
      return s->str();
    fail(name, "a string");
    return {};
  }
  /// An integer in [lo, hi]: a field narrower than 64 bits is range-checked
  /// here, never wrapped by a cast.
  int64_t integer(StringRef name, int64_t lo, int64_t hi) {
    if (std::optional<int64_t> i = object.getInteger(name); i && *i >= lo && *i <= hi)
      return *i;
    fail(name, formatv("an integer in [{0}, {1}]", lo, hi).str());
    return 0;
  }
  /// A time in ms: finite and not negative (a JSON number beyond the double
  /// range reads as infinity, which could not be written back).
  double milliseconds(StringRef name) {
    if (std::optional<double> d = object.getNumber(name);
        d && std::isfinite(*d) && *d >= 0)
      return *d;
    fail(name, "a finite number of milliseconds, at least 0");
    return 0;
  }
  /// A string field that may be absent (empty then), but is never another type.
  std::string optionalString(StringRef name) {
    const json::Value *v = object.get(name);
    if (!v)
      return {};
    if (std::optional<StringRef> s = v->getAsString())
      return s->str();
    fail(name, "a string when present");
    return {};
  }
  NamedValues named(StringRef name) {
    NamedValues out;
    const json::Object *inner = object.getObject(name);
    if (!inner) {
      fail(name, "an object of integers");
      return out;
    }
    for (const auto &[key, value] : *inner) {
      if (std::optional<int64_t> i = value.getAsInteger())
        out[key.str()] = *i;
      else
        fail((name + "." + key.str()).str(), "an integer");
    }
    return out;
  }
  const json::Object *object_(StringRef name) {
    if (const json::Object *inner = object.getObject(name))
      return inner;
    fail(name, "an object");
    return nullptr;
  }
  Error takeError() {
    return problem.empty() ? Error::success()
                           : createStringError(inconvertibleErrorCode(), problem);
  }

private:
  void fail(StringRef name, StringRef expected) {
    if (problem.empty())
      problem = formatv("{0}: '{1}' must be {2}", where, name, expected);
  }

  const json::Object &object;
  std::string where;
  std::string problem;
};

json::Value entryToJSON(const TuneEntry &e) {
  json::Object out{
      {"kernel", e.key.kernel},
      {"ir_hash", e.key.irHash},
      {"shape_bucket", e.key.shapeBucket},
      {"arch", e.key.arch},
      {"sm_count", int64_t(e.key.smCount)},
      {"tilejit_version", e.key.version},
      {"constants", namedToJSON(e.constants)},
      {"shape", namedToJSON(e.shape)},
      {"config", namedToJSON(e.config)},
      {"median_ms", e.medianMs},
      {"min_ms", e.minMs},
      {"max_ms", e.maxMs},
      {"samples", int64_t(e.samples)},
      {"default_median_ms", e.defaultMedianMs},
      {"provenance", json::Object{{"date", e.provenance.date},
                                  {"device", e.provenance.device},
                                  {"driver", int64_t(e.provenance.driverVersion)},
                                  {"clocks", e.provenance.clocks}}}};
  if (!e.codeHash.empty())
    out["code_hash"] = e.codeHash;
  if (!e.rejected.empty())
    out["rejected"] = e.rejected;
  return out;
}

Expected<TuneEntry> entryFromJSON(const json::Value &value, size_t index) {
  std::string where = formatv("entry {0}", index);
  const json::Object *object = value.getAsObject();
  if (!object)
    return createStringError(inconvertibleErrorCode(), where + " is not an object");
  FieldReader r(*object, where);
  TuneEntry e;
  e.key.kernel = r.string("kernel");
  e.key.irHash = r.string("ir_hash");
  e.key.shapeBucket = r.string("shape_bucket");
  e.key.arch = r.string("arch");
  e.key.smCount = unsigned(r.integer("sm_count", 0, kMaxSmCount));
  e.key.version = r.string("tilejit_version");
  e.constants = r.named("constants");
  e.shape = r.named("shape");
  e.config = r.named("config");
  e.medianMs = r.milliseconds("median_ms");
  e.minMs = r.milliseconds("min_ms");
  e.maxMs = r.milliseconds("max_ms");
  e.samples = unsigned(r.integer("samples", 0, UINT32_MAX));
  e.defaultMedianMs = r.milliseconds("default_median_ms");
  e.rejected = r.optionalString("rejected");
  e.codeHash = r.optionalString("code_hash");
  if (!e.codeHash.empty() && (e.codeHash.size() != 64 || !all_of(e.codeHash, [](char c) {
                                return isDigit(c) || (c >= 'a' && c <= 'f');
                              })))
    return createStringError(inconvertibleErrorCode(),
                             where + ": 'code_hash' must be 64 lowercase hex digits");
  if (const json::Object *p = r.object_("provenance")) {
    FieldReader pr(*p, where + " provenance");
    e.provenance.date = pr.string("date");
    e.provenance.device = pr.string("device");
    e.provenance.driverVersion = int(pr.integer("driver", 0, INT32_MAX));
    e.provenance.clocks = pr.string("clocks");
    if (Error err = pr.takeError())
      return std::move(err);
  }
  if (Error err = r.takeError())
    return std::move(err);
  return e;
}

} // namespace

json::Value TuneDb::toJSON() const {
  json::Array entries;
  for (const TuneEntry &e : all)
    entries.push_back(entryToJSON(e));
  return json::Object{{"format", dbFormat}, {"entries", std::move(entries)}};
}

Expected<TuneDb> TuneDb::fromJSON(const json::Value &value) {
  const json::Object *object = value.getAsObject();
  std::optional<StringRef> format = object ? object->getString("format") : std::nullopt;
  if (!format || *format != dbFormat)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("not a tuning database (expected \"format\": \"{0}\")", dbFormat));
  const json::Array *entries = object->getArray("entries");
  if (!entries)
    return createStringError(inconvertibleErrorCode(), "'entries' must be an array");
  TuneDb db;
  // Entries are unique by (id, version): a second one would be shadowed by the
  // first at every lookup, so a file holding two is refused, naming both.
  std::map<std::pair<std::string, std::string>, size_t> seen;
  for (size_t i = 0; i < entries->size(); ++i) {
    Expected<TuneEntry> e = entryFromJSON((*entries)[i], i);
    if (!e)
      return e.takeError();
    auto [at, added] = seen.try_emplace({e->key.id(), e->key.version}, i);
    if (!added)
      return createStringError(
          inconvertibleErrorCode(),
          formatv("entry {0} has the key of entry {1} ({2}, version {3})", i, at->second,
                  e->key.id(), e->key.version));
    db.all.push_back(std::move(*e));
  }
  return db;
}

Expected<TuneDb> TuneDb::load(StringRef path) {
  auto file = support::InputFile::openIfExists(path, "tuning database");
  if (!file)
    return file.takeError();
  if (!*file)
    return TuneDb();
  Expected<std::string> text = (*file)->readAll(support::kMaxTuneDbBytes);
  if (!text)
    return text.takeError();
  Expected<json::Value> parsed = support::parseJson(*text);
  Expected<TuneDb> db = parsed ? fromJSON(*parsed) : Expected<TuneDb>(parsed.takeError());
  if (!db)
    return createStringError(inconvertibleErrorCode(), "tuning database '%s': %s",
                             path.str().c_str(), toString(db.takeError()).c_str());
  return db;
}

Error TuneDb::save(StringRef path) const {
  // JSON has no infinity or NaN: such a time would be written as a literal no
  // reader accepts, so it never reaches the file.
  for (auto [index, e] : llvm::enumerate(all))
    for (double ms : {e.medianMs, e.minMs, e.maxMs, e.defaultMedianMs})
      if (!std::isfinite(ms) || ms < 0)
        return createStringError(
            inconvertibleErrorCode(),
            "tuning database '%s': entry %zu (%s) has a time of %g ms, "
            "which a database cannot hold",
            path.str().c_str(), index, e.key.kernel.c_str(), ms);
  if (Error err = support::checkReplaceable(path, "tuning database"))
    return err;
  StringRef dir = sys::path::parent_path(path);
  if (!dir.empty())
    if (std::error_code ec = sys::fs::create_directories(dir))
      return createStringError(ec, "cannot create '%s': %s", dir.str().c_str(),
                               ec.message().c_str());
  SmallString<128> tmp;
  int fd = -1;
  if (std::error_code ec = sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, tmp))
    return createStringError(ec, "cannot write next to '%s': %s", path.str().c_str(),
                             ec.message().c_str());
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << formatv("{0:2}", toJSON()) << "\n";
    if (Error err = support::closeChecked(os, tmp, "tuning database")) {
      sys::fs::remove(tmp);
      return err;
    }
  }
  if (std::error_code ec = sys::fs::rename(tmp, path)) {
    sys::fs::remove(tmp);
    return createStringError(ec, "cannot rename '%s' to '%s': %s", tmp.c_str(),
                             path.str().c_str(), ec.message().c_str());
  }
  return Error::success();
}

std::pair<TuneMatch, const TuneEntry *> TuneDb::lookup(const TuneKey &key) const {
  std::string id = key.id();
  const TuneEntry *other = nullptr;
  for (const TuneEntry &e : all) {
    if (e.key.id() != id)
      continue;
    if (e.key.version == key.version)
      return {e.rejected.empty() ? TuneMatch::Exact : TuneMatch::Rejected, &e};
    other = &e;
  }
  return {other ? TuneMatch::OtherVersion : TuneMatch::None, other};
}

std::vector<std::string> TuneDb::record(TuneEntry entry) {
  std::vector<std::string> replaced;
  std::string id = entry.key.id();
  llvm::erase_if(all, [&](const TuneEntry &e) {
    if (e.key.id() != id)
      return false;
    replaced.push_back(e.key.version);
    return true;
  });
  all.push_back(std::move(entry));
  return replaced;
}

TuneDb::MergeReport TuneDb::merge(const TuneDb &other, StringRef currentVersion) {
  MergeReport report;
  std::vector<size_t> imported;
  for (const TuneEntry &incoming : other.all) {
    auto same = llvm::find_if(all, [&](const TuneEntry &e) {
      return e.key.id() == incoming.key.id() && e.key.version == incoming.key.version;
    });
    if (same != all.end()) {
      *same = incoming;
      ++report.replaced;
      imported.push_back(same - all.begin());
    } else {
      all.push_back(incoming);
      ++report.added;
      imported.push_back(all.size() - 1);
    }
  }
  // Pointers are taken once `all` no longer grows.
  for (size_t i : imported)
    if (all[i].key.version != currentVersion)
      report.needRevalidation.push_back(&all[i]);
  return report;
}

std::vector<const TuneEntry *> TuneDb::staleEntries(StringRef currentVersion) const {
  std::vector<const TuneEntry *> out;
  for (const TuneEntry &e : all)
    if (e.key.version != currentVersion)
      out.push_back(&e);
  return out;
}

Error updateTuneDb(StringRef path, const std::function<Error(TuneDb &)> &update) {
  if (StringRef dir = sys::path::parent_path(path); !dir.empty())
    if (std::error_code ec = sys::fs::create_directories(dir))
      return createStringError(ec, "cannot create the folder of '%s'",
                               path.str().c_str());
  int fd;
  std::string lockPath = (path + ".lock").str();
  if (std::error_code ec = sys::fs::openFileForReadWrite(
          lockPath, fd, sys::fs::CD_OpenAlways, sys::fs::OF_None))
    return createStringError(ec, "cannot open '%s': %s", lockPath.c_str(),
                             ec.message().c_str());
  scope_exit closeLock([&] { sys::Process::SafelyCloseFileDescriptor(fd); });
  if (std::error_code ec = sys::fs::lockFile(fd))
    return createStringError(ec, "cannot lock '%s': %s", lockPath.c_str(),
                             ec.message().c_str());
  scope_exit unlockLock([&] { sys::fs::unlockFile(fd); });
  Expected<TuneDb> db = TuneDb::load(path);
  if (!db)
    return db.takeError();
  if (Error err = update(*db))
    return err;
  return db->save(path);
}

} // namespace tilejit::tuning
