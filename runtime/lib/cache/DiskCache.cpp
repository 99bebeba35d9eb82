// The disk cache: lock-free reads of complete entries, atomic writes by rename,
// and renames, eviction and removal serialized across threads and processes by
// a process-wide mutex plus an advisory lock on <dir>/lock.
#include "tilejit/runtime/DiskCache.h"

#include "CacheEntry.h"
#include "tilejit/support/InputFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;
namespace fs = llvm::sys::fs;

namespace tilejit::runtime {

namespace {

constexpr StringLiteral entryExtension = ".tjk";
/// A temporary file this old belongs to a writer that died.
constexpr std::chrono::hours staleTemporaryAge(1);

sys::TimePoint<> now() {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now());
}

std::string join(StringRef dir, StringRef name) {
  SmallString<256> path(dir);
  sys::path::append(path, name);
  return std::string(path);
}

/// Exclusive ownership of a cache directory. Advisory file locks do not
/// exclude threads of one process from each other (and fcntl locks drop when
/// any descriptor of the file closes), so a process-wide mutex comes first.
class CacheLock {
public:
  static Expected<std::unique_ptr<CacheLock>> acquire(StringRef dir) {
    auto lock = std::unique_ptr<CacheLock>(new CacheLock());
    std::string path = join(dir, "lock");
    if (std::error_code ec =
            fs::openFileForReadWrite(path, lock->fd, fs::CD_OpenAlways, fs::OF_None))
      return createFileError(path, ec);
    if (std::error_code ec = fs::lockFile(lock->fd))
      return createFileError(path, ec);
    lock->locked = true;
    return std::move(lock);
  }

  ~CacheLock() {
    if (locked)
      fs::unlockFile(fd);
    if (fd >= 0)
      fs::closeFile(fd);
  }

private:
  CacheLock() : guard(processMutex()) {}

  static std::mutex &processMutex() {
    static std::mutex mutex;
    return mutex;
  }

  std::lock_guard<std::mutex> guard;
  int fd = -1;
  bool locked = false;
};

struct FileItem {
  std::string path;
  std::string key;
  uint64_t size;
  sys::TimePoint<> modified;
};

/// The `*.tjk` files of `dir`, oldest modification first (ties by key).
Expected<std::vector<FileItem>> scanEntries(StringRef dir) {
  std::vector<FileItem> items;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    StringRef path = it->path();
    if (sys::path::extension(path) != entryExtension)
      continue;
    fs::file_status status;
    // An entry removed by another process since the listing is simply gone.
    if (fs::status(path, status))
      continue;
    items.push_back({path.str(), sys::path::stem(path).str(), status.getSize(),
                     status.getLastModificationTime()});
  }
  if (ec)
    return createFileError(dir, ec);
  llvm::sort(items, [](const FileItem &a, const FileItem &b) {
    return std::tie(a.modified, a.key) < std::tie(b.modified, b.key);
  });
  return items;
}

/// The bytes of `path`; std::nullopt when it does not exist. With `touch`, the
/// file's times become now (the LRU clock). Only a regular file of at most
/// kMaxCacheEntryBytes is read: an entry replaced by a FIFO, a device or a
/// huge sparse file is an error, not a hang.
Expected<std::optional<std::string>> readFile(StringRef path, bool touch) {
  auto file = support::InputFile::openIfExists(path, "kernel cache entry");
  if (!file)
    return file.takeError();
  if (!*file)
    return std::nullopt;
  Expected<std::string> bytes = (*file)->readAll(support::kMaxCacheEntryBytes);
  if (!bytes)
    return bytes.takeError();
  if (touch)
    fs::setLastAccessAndModificationTime((*file)->descriptor(), now());
  return std::optional<std::string>(std::move(*bytes));
}

/// Reads and checks one entry file into `info`.
void describeEntry(const FileItem &item, CacheEntryInfo &info) {
  info.key = item.key;
  info.fileBytes = item.size;
  info.lastUsed = item.modified;
  Expected<std::optional<std::string>> bytes = readFile(item.path, /*touch=*/false);
  if (!bytes) {
    info.problem = toString(bytes.takeError());
    return;
  }
  if (!*bytes) {
    info.problem = "removed while listing";
    return;
  }
  auto parsed = cache::parseEntry(**bytes);
  if (!parsed) {
    info.problem = toString(parsed.takeError());
    return;
  }
  info.kernelName = parsed->first.kernelName;
  info.arch = parsed->first.arch;
  if (parsed->first.key != item.key)
    info.problem = formatv("the entry holds key {0}", parsed->first.key);
}

} // namespace

void printWarning(StringRef message) {
  errs() << "tilejit: warning: " << message << "\n";
}

void printNote(StringRef message) { errs() << "tilejit: note: " << message << "\n"; }

DiskCache::DiskCache(DiskCacheConfig cfg) : config(std::move(cfg)) {
  if (!config.diagnostics)
    config.diagnostics = printWarning;
}

Expected<std::unique_ptr<DiskCache>> DiskCache::open(DiskCacheConfig config) {
  if (config.directory.empty())
    return createStringError(inconvertibleErrorCode(), "no disk cache directory given");
  for (StringRef sub : {"entries", "tmp"}) {
    std::string path = join(config.directory, sub);
    if (std::error_code ec = fs::create_directories(path))
      return createFileError(path, ec);
  }
  return std::unique_ptr<DiskCache>(new DiskCache(std::move(config)));
}

std::string DiskCache::entryPath(StringRef key) const {
  return join(join(config.directory, "entries"), (key + entryExtension).str());
}

void DiskCache::reportCorrupt(StringRef key, StringRef problem) {
  std::lock_guard<std::mutex> lock(reportedMutex);
  if (reported.insert(key.str()).second)
    config.diagnostics(
        formatv("kernel cache entry {0} is corrupt ({1}); it is not loaded: "
                "the kernel is recompiled and the entry replaced",
                entryPath(key), problem)
            .str());
}

Expected<DiskLookup> DiskCache::lookup(StringRef key) {
  if (!isDiskKey(key))
    return createStringError(inconvertibleErrorCode(), "not a disk cache key: '%s'",
                             key.str().c_str());
  Expected<std::optional<std::string>> bytes = readFile(entryPath(key), /*touch=*/true);
  DiskLookup result;
  if (!bytes) {
    // What is no entry file (a FIFO, a device, a file past the size limit)
    // is corrupt like a damaged entry: reported once, recompiled, replaced.
    std::error_code ec;
    std::string problem;
    handleAllErrors(bytes.takeError(), [&](const ErrorInfoBase &e) {
      ec = e.convertToErrorCode();
      problem = e.message();
    });
    if (ec != std::errc::invalid_argument && ec != std::errc::file_too_large)
      return createStringError(ec, problem);
    result.status = DiskLookup::Corrupt;
    result.problem = problem;
    reportCorrupt(key, problem);
    return result;
  }
  if (!*bytes)
    return result;
  auto parsed = cache::parseEntry(**bytes);
  if (parsed && parsed->first.key != key)
    parsed = createStringError(inconvertibleErrorCode(),
                               "the entry holds key " + parsed->first.key);
  if (!parsed) {
    result.status = DiskLookup::Corrupt;
    result.problem = toString(parsed.takeError());
    reportCorrupt(key, result.problem);
    return result;
  }
  result.status = DiskLookup::Hit;
  result.kernel = std::move(parsed->second);
  return result;
}

Error DiskCache::store(StringRef key, StringRef kernelName, StringRef arch,
                       const CompiledKernel &kernel) {
  if (!isDiskKey(key))
    return createStringError(inconvertibleErrorCode(), "not a disk cache key: '%s'",
                             key.str().c_str());
  std::string bytes =
      cache::serializeEntry({key.str(), kernelName.str(), arch.str()}, kernel);

  int fd = -1;
  SmallString<256> tmpPath;
  std::string model = join(join(config.directory, "tmp"), (key + "-%%%%%%%%.tmp").str());
  if (std::error_code ec = fs::createUniqueFile(model, fd, tmpPath))
    return createFileError(model, ec);
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << bytes;
    os.flush();
    // Stamped explicitly: the LRU order must not depend on the clock
    // granularity of the file system.
    fs::setLastAccessAndModificationTime(fd, now());
    os.close();
    if (os.has_error()) {
      std::error_code ec = os.error();
      os.clear_error();
      fs::remove(tmpPath);
      return createFileError(tmpPath, ec);
    }
  }

  Expected<std::unique_ptr<CacheLock>> lock = CacheLock::acquire(config.directory);
  if (!lock) {
    fs::remove(tmpPath);
    return lock.takeError();
  }
  std::string path = entryPath(key);
  if (std::error_code ec = fs::rename(tmpPath, path)) {
    fs::remove(tmpPath);
    return createFileError(path, ec);
  }
  return evictLocked(key);
}

Error DiskCache::evictLocked(StringRef keep) {
  // Temporary files of writers that died are removed on the way.
  std::string tmpDir = join(config.directory, "tmp");
  std::error_code ec;
  for (fs::directory_iterator it(tmpDir, ec), end; !ec && it != end; it.increment(ec)) {
    fs::file_status status;
    if (!fs::status(it->path(), status) &&
        now() - status.getLastModificationTime() > staleTemporaryAge)
      fs::remove(it->path());
  }

  Expected<std::vector<FileItem>> items = scanEntries(join(config.directory, "entries"));
  if (!items)
    return items.takeError();
  uint64_t total = 0;
  for (const FileItem &item : *items)
    total += item.size;
  for (const FileItem &item : *items) {
    if (total <= config.maxBytes)
      break;
    if (item.key == keep)
      continue;
    if (std::error_code removeEc = fs::remove(item.path))
      return createFileError(item.path, removeEc);
    total -= item.size;
  }
  return Error::success();
}

Expected<std::vector<CacheEntryInfo>> DiskCache::list() const {
  Expected<std::vector<FileItem>> items = scanEntries(join(config.directory, "entries"));
  if (!items)
    return items.takeError();
  std::vector<CacheEntryInfo> entries(items->size());
  for (auto [item, info] : zip_equal(*items, entries))
    describeEntry(item, info);
  return entries;
}

Expected<VerifyReport> DiskCache::verify(bool removeCorrupt) {
  Expected<std::vector<CacheEntryInfo>> entries = list();
  if (!entries)
    return entries.takeError();
  VerifyReport report;
  for (CacheEntryInfo &info : *entries) {
    if (info.problem.empty())
      ++report.valid;
    else
      report.corrupt.push_back(std::move(info));
  }
  if (!removeCorrupt || report.corrupt.empty())
    return report;
  Expected<std::unique_ptr<CacheLock>> lock = CacheLock::acquire(config.directory);
  if (!lock)
    return lock.takeError();
  for (const CacheEntryInfo &info : report.corrupt) {
    // Another process may have replaced the entry since it was read.
    std::string path = entryPath(info.key);
    fs::file_status status;
    if (fs::status(path, status))
      continue;
    CacheEntryInfo again;
    describeEntry({path, info.key, status.getSize(), status.getLastModificationTime()},
                  again);
    if (again.problem.empty())
      continue;
    if (std::error_code ec = fs::remove(path))
      return createFileError(path, ec);
    ++report.removed;
  }
  return report;
}

Expected<unsigned> DiskCache::clear() {
  Expected<std::unique_ptr<CacheLock>> lock = CacheLock::acquire(config.directory);
  if (!lock)
    return lock.takeError();
  Expected<std::vector<FileItem>> items = scanEntries(join(config.directory, "entries"));
  if (!items)
    return items.takeError();
  for (const FileItem &item : *items)
    if (std::error_code ec = fs::remove(item.path))
      return createFileError(item.path, ec);
  std::string tmpDir = join(config.directory, "tmp");
  std::error_code ec;
  for (fs::directory_iterator it(tmpDir, ec), end; !ec && it != end; it.increment(ec))
    fs::remove(it->path());
  return static_cast<unsigned>(items->size());
}

} // namespace tilejit::runtime
