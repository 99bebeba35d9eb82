// The `cache-entry` target: the bytes of one disk cache entry file, read the
// two ways the runtime reads them: parseEntry (which `tilejit cache ls/verify`
// use) and DiskCache::lookup of a cache directory holding the file. Seeds:
// entries written by serializeEntry for kernels shaped like the registry's.
#include "FuzzTargets.h"

#include "tilejit/runtime/DiskCache.h"

#include "CacheEntry.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace tilejit::runtime;

namespace tilejit::fuzz {
namespace {

/// The key every fuzzed entry is stored under.
const std::string &fuzzKey() {
  static const std::string key =
      computeDiskKey({"ir", "O3", "sm_90a", "8.8", "fuzz", "22"});
  return key;
}

DiskCache &scratchCache() {
  static std::unique_ptr<DiskCache> cache = [] {
    llvm::SmallString<256> dir(scratchDir());
    llvm::sys::path::append(dir, "cache");
    DiskCacheConfig config;
    config.directory = std::string(dir);
    // Corrupt entries are the expected outcome here.
    config.diagnostics = [](llvm::StringRef) {};
    auto opened = DiskCache::open(std::move(config));
    check(bool(opened), "cannot open the scratch cache");
    return std::move(*opened);
  }();
  return *cache;
}

std::string entryPath() {
  llvm::SmallString<256> path(scratchCache().directory());
  llvm::sys::path::append(path, "entries", fuzzKey() + ".tjk");
  return std::string(path);
}

CompiledKernel kernel(llvm::StringRef entry, unsigned params, uint32_t shared) {
  CompiledKernel k;
  k.entryName = entry.str();
  k.launch = {128, shared};
  const ParamKind kinds[] = {ParamKind::Pointer, ParamKind::I32, ParamKind::F32};
  const uint32_t sizes[] = {8, 4, 4};
  for (unsigned i = 0; i < params; ++i)
    k.params.push_back({"p" + std::to_string(i), kinds[i % 3], sizes[i % 3]});
  k.ptx = "//\n.version 8.8\n.target sm_90a\n.address_size 64\n\n.visible .entry " +
          entry.str() + "()\n{\n\tret;\n}\n";
  return k;
}

bool sameKernel(const CompiledKernel &a, const CompiledKernel &b) {
  return a.ptx == b.ptx && a.entryName == b.entryName && a.params == b.params &&
         a.launch == b.launch;
}

} // namespace

void runCacheEntry(llvm::ArrayRef<uint8_t> input) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(input.data()), input.size());
  auto parsed = cache::parseEntry(bytes);
  // The format has one spelling per entry: what parses re-serializes to the
  // same bytes, so nothing the reader accepts is ignored or misread.
  if (parsed)
    check(cache::serializeEntry(parsed->first, parsed->second) == bytes,
          "a parsed entry serializes to other bytes");

  writeFileOrDie(entryPath(), bytes);
  auto lookup = scratchCache().lookup(fuzzKey());
  check(bool(lookup), "lookup of a readable entry file failed instead of "
                      "reporting a hit or a corrupt entry");
  bool hit = parsed && parsed->first.key == fuzzKey();
  check((lookup->status == DiskLookup::Hit) == hit,
        "lookup and parseEntry disagree on whether the entry is valid");
  check(lookup->status != DiskLookup::Miss, "an existing entry was a miss");
  if (hit)
    check(sameKernel(lookup->kernel, parsed->second), "lookup returned another kernel");
  if (!parsed)
    llvm::consumeError(parsed.takeError());
  // A lookup only reads: the file is as it was written.
  auto after = llvm::MemoryBuffer::getFile(entryPath());
  check(after && (*after)->getBuffer() == bytes, "lookup changed the entry file");
}

Seeds cacheEntrySeeds(llvm::StringRef) {
  Seeds seeds;
  const std::string &key = fuzzKey();
  seeds["no-params.tjk"] =
      cache::serializeEntry({key, "ssm_update", "sm_90a"}, kernel("ssm_update", 0, 0));
  seeds["five-params.tjk"] = cache::serializeEntry({key, "conv_update", "sm_90a"},
                                                   kernel("conv_update", 5, 49152));
  seeds["other-key.tjk"] = cache::serializeEntry(
      {std::string(64, 'a'), "gemm", "sm_121a"}, kernel("gemm", 3, 0));
  return seeds;
}

} // namespace tilejit::fuzz
