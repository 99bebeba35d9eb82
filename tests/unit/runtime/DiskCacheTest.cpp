// The disk cache of docs/design.md#cache-keys: keys change with every keyed input and
// only then; corrupt or truncated entries are reported, recompiled and never loaded; LRU
// eviction under the size cap; `tilejit cache ls|verify|clear`.
#include "RuntimeTestSupport.h"

#include "tilejit/runtime/CacheCommand.h"
#include "tilejit/runtime/DiskCache.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <catch2/catch.hpp>

#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

namespace {

DiskKeyInputs baseInputs() {
  return {"tile.func @k() {}", "O3", "sm_90a", "8.8", "build-1", "22.1.0"};
}

CompiledKernel sampleKernel(llvm::StringRef body = "body") {
  KernelRequest request{
      "k", fakeIR("k", ptrAndCount(), 128, 0, body), archNamed("sm_90a"), {}};
  FakeCompiler compiler;
  return llvm::cantFail(compiler.compile(request));
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::unique_ptr<DiskCache> openCache(const TempDir &dir,
                                     std::vector<std::string> *reports,
                                     uint64_t maxBytes = defaultDiskCacheMaxBytes) {
  DiskCacheConfig config{dir.path(), maxBytes,
                         [reports](llvm::StringRef m) { reports->push_back(m.str()); }};
  return llvm::cantFail(DiskCache::open(config));
}

std::string entryFile(const TempDir &dir, llvm::StringRef key) {
  return dir.sub("entries/" + key.str() + ".tjk");
}

} // namespace

TEST_CASE("the disk key changes when any keyed input changes, and only then",
          "[runtime][cache]") {
  const std::string base = computeDiskKey(baseInputs());
  CHECK(isDiskKey(base));
  CHECK(computeDiskKey(baseInputs()) == base);

  std::vector<std::pair<const char *, void (*)(DiskKeyInputs &)>> changes = {
      {"ir", [](DiskKeyInputs &in) { in.canonicalIR += " "; }},
      {"options", [](DiskKeyInputs &in) { in.options = "O2"; }},
      {"arch", [](DiskKeyInputs &in) { in.arch = "sm_90"; }},
      {"ptx version", [](DiskKeyInputs &in) { in.ptxVersion = "9.0"; }},
      {"build id", [](DiskKeyInputs &in) { in.buildId = "build-2"; }},
      {"llvm version", [](DiskKeyInputs &in) { in.llvmVersion = "22.1.1"; }},
  };
  std::set<std::string> keys = {base};
  for (auto &[field, change] : changes) {
    DiskKeyInputs inputs = baseInputs();
    change(inputs);
    INFO("changed " << field);
    CHECK(keys.insert(computeDiskKey(inputs)).second);
  }

  // A byte moved from one field into the next is another input set.
  DiskKeyInputs left = baseInputs(), right = baseInputs();
  left.canonicalIR = "ab";
  left.options = "c";
  right.canonicalIR = "a";
  right.options = "bc";
  CHECK(computeDiskKey(left) != computeDiskKey(right));

  // Options are written canonically, a shared-memory limit only when set.
  CompileOptions options;
  CHECK(options.canonical() == "O3");
  options.optLevel = 2;
  options.sharedBytesLimit = 101376;
  CHECK(options.canonical() == "O2;shared-bytes=101376");
}

TEST_CASE("the runtime's disk key covers the arch and the compiler's identity",
          "[runtime][cache]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  KernelRequest request{"k", fakeIR("k", ptrAndCount()), archNamed("sm_90a"), {}};
  std::string key = runtime->diskKeyFor(request);
  CHECK(runtime->diskKeyFor(request) == key);
  KernelRequest portable = request;
  portable.arch = archNamed("sm_90");
  CHECK(runtime->diskKeyFor(portable) != key);
  compiler->buildId = "fake-build-2";
  CHECK(runtime->diskKeyFor(request) != key);
}

TEST_CASE("a runtime held to a smaller device's shared memory hands the compiler its "
          "limit, and keys it",
          "[runtime][cache]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto whole = fakeRuntime(compiler, optionsFor(""), device);
  RuntimeOptions limitedOptions = optionsFor("");
  limitedOptions.sharedBytesLimit = 101376;
  auto limited = fakeRuntime(compiler, std::move(limitedOptions), device);
  Kernel a(*whole, specFor("k", fakeIR("k", ptrAndCount())));
  Kernel b(*limited, specFor("k", fakeIR("k", ptrAndCount())));
  REQUIRE(message(a.compile()) == "");
  REQUIRE(message(b.compile()) == "");
  // The fake compiler writes the options it was handed into its PTX.
  CHECK_THAT(a.compiled()->ptx, Catch::Contains("// fake PTX, O3\n"));
  CHECK_THAT(b.compiled()->ptx, Catch::Contains("// fake PTX, O3;shared-bytes=101376\n"));
  CHECK(a.diskKey() != b.diskKey());
}

TEST_CASE("an entry round-trips and a hit refreshes its LRU time", "[runtime][cache]") {
  TempDir dir;
  std::vector<std::string> reports;
  auto cache = openCache(dir, &reports);
  std::string key = computeDiskKey(baseInputs());

  DiskLookup miss = llvm::cantFail(cache->lookup(key));
  CHECK(miss.status == DiskLookup::Miss);

  CompiledKernel kernel = sampleKernel();
  kernel.launch.dynamicSharedBytes = 64 * 1024;
  kernel.sums = SumPrecision::Reduced; // not the default: the field must travel
  REQUIRE(message(cache->store(key, "k", "sm_90a", kernel)) == "");
  DiskLookup hit = llvm::cantFail(cache->lookup(key));
  REQUIRE(hit.status == DiskLookup::Hit);
  CHECK(hit.kernel.ptx == kernel.ptx);
  CHECK(hit.kernel.entryName == kernel.entryName);
  CHECK(hit.kernel.params == kernel.params);
  CHECK(hit.kernel.launch == kernel.launch);
  CHECK(hit.kernel.sums == SumPrecision::Reduced);
  CHECK(hit.kernel.timings.empty());
  CHECK(reports.empty());

  std::vector<CacheEntryInfo> entries = llvm::cantFail(cache->list());
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].key == key);
  CHECK(entries[0].kernelName == "k");
  CHECK(entries[0].arch == "sm_90a");
  CHECK(entries[0].problem == "");
  // Nothing is left behind in tmp/.
  std::error_code ec;
  CHECK(llvm::sys::fs::directory_iterator(dir.sub("tmp"), ec) ==
        llvm::sys::fs::directory_iterator());
}

TEST_CASE("a truncated or bit-flipped entry is reported once and never returned",
          "[runtime][cache]") {
  TempDir dir;
  std::vector<std::string> reports;
  auto cache = openCache(dir, &reports);
  std::string key = computeDiskKey(baseInputs());
  REQUIRE(message(cache->store(key, "k", "sm_90a", sampleKernel())) == "");
  const std::string good = readAll(entryFile(dir, key));

  struct Damage {
    const char *what;
    std::string bytes;
    const char *problem;
  };
  std::string flippedPayload = good, flippedHeader = good, flippedMagic = good;
  flippedPayload[good.size() - 20] ^= 0x04;
  flippedHeader[16] ^= 0x01; // payload length
  flippedMagic[0] ^= 0x20;
  std::vector<Damage> damages = {
      {"truncated payload", good.substr(0, good.size() - 7),
       "truncated: the header promises"},
      {"truncated header", good.substr(0, 10), "shorter than the 32-byte header"},
      {"empty file", "", "truncated: 0 bytes"},
      {"flipped payload bit", flippedPayload, "checksum mismatch"},
      {"flipped length bit", flippedHeader, "the header promises"},
      {"flipped magic bit", flippedMagic, "bad magic"},
  };
  for (const Damage &damage : damages) {
    INFO(damage.what);
    reports.clear();
    auto fresh = openCache(dir, &reports); // "once" is per process and cache
    writeAll(entryFile(dir, key), damage.bytes);
    for (int attempt = 0; attempt < 2; ++attempt) {
      DiskLookup found = llvm::cantFail(fresh->lookup(key));
      CHECK(found.status == DiskLookup::Corrupt);
      CHECK_THAT(found.problem, Catch::Contains(damage.problem));
      CHECK(found.kernel.ptx.empty());
    }
    REQUIRE(reports.size() == 1);
    CHECK_THAT(reports[0], Catch::Contains("is corrupt") && Catch::Contains(key) &&
                               Catch::Contains(damage.problem) &&
                               Catch::Contains("recompiled"));
  }

  // A payload that passes its checksum is still parsed with bounds checks.
  std::string forged = good;
  size_t kindAt = forged.find("ptr");
  REQUIRE(kindAt != std::string::npos);
  forged.replace(kindAt, 3, "xyz");
  llvm::support::endian::write64le(
      &forged[24], llvm::xxh3_64bits(llvm::StringRef(forged).drop_front(32)));
  writeAll(entryFile(dir, key), forged);
  DiskLookup forgedLookup = llvm::cantFail(cache->lookup(key));
  CHECK(forgedLookup.status == DiskLookup::Corrupt);
  CHECK(forgedLookup.problem == "malformed payload: parameter kind 'xyz'");

  // An intact entry stored under another key's name is caught too.
  std::string otherKey = computeDiskKey({"x", "O3", "sm_90a", "8.8", "b", "22"});
  writeAll(entryFile(dir, otherKey), good);
  DiskLookup moved = llvm::cantFail(cache->lookup(otherKey));
  CHECK(moved.status == DiskLookup::Corrupt);
  CHECK_THAT(moved.problem, Catch::Contains("the entry holds key " + key));
}

TEST_CASE("an entry that is a FIFO or past the size limit is reported as corrupt, never "
          "read",
          "[runtime][cache][badinput]") {
  TempDir dir;
  std::vector<std::string> reports;
  auto cache = openCache(dir, &reports);
  std::string key = computeDiskKey(baseInputs());
  const std::string path = entryFile(dir, key);
  // A FIFO: a blocking open would wait for a writer forever.
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
  DiskLookup fifo = llvm::cantFail(cache->lookup(key));
  CHECK(fifo.status == DiskLookup::Corrupt);
  CHECK(fifo.problem ==
        "kernel cache entry '" + path + "' is a FIFO, not a regular file");
  REQUIRE(reports.size() == 1);
  // The store that follows a recompile replaces it.
  REQUIRE(message(cache->store(key, "k", "sm_90a", sampleKernel())) == "");
  CHECK(llvm::cantFail(cache->lookup(key)).status == DiskLookup::Hit);
  // 300 MB of holes: refused by its size, not read.
  REQUIRE(::truncate(path.c_str(), off_t(300) << 20) == 0);
  auto fresh = openCache(dir, &reports);
  DiskLookup huge = llvm::cantFail(fresh->lookup(key));
  CHECK(huge.status == DiskLookup::Corrupt);
  CHECK(huge.problem ==
        "kernel cache entry '" + path +
            "' has 314572800 bytes, more than the 268435456 a kernel cache "
            "entry may have");
}

TEST_CASE("the JIT recompiles a corrupt entry, loads the fresh code and replaces it",
          "[runtime][cache]") {
  TempDir dir;
  auto compiler = std::make_shared<FakeCompiler>();
  std::string ir = fakeIR("scale", ptrAndCount());
  std::string diskKey;
  {
    FakeDevice *device = nullptr;
    auto runtime = fakeRuntime(compiler, optionsFor(dir.path()), device);
    Kernel kernel(*runtime, specFor("scale", ir));
    REQUIRE(message(kernel.prepare()) == "");
    diskKey = kernel.diskKey().str();
  }
  std::string path = entryFile(dir, diskKey);
  std::string good = readAll(path);
  for (std::string bad : {good.substr(0, good.size() / 2), [&] {
                            std::string flipped = good;
                            flipped[flipped.size() - 30] ^= 0x10; // inside the PTX
                            return flipped;
                          }()}) {
    writeAll(path, bad);
    std::vector<std::string> warnings;
    FakeDevice *device = nullptr;
    auto runtime = fakeRuntime(compiler, optionsFor(dir.path(), &warnings), device);
    int compilesBefore = compiler->compiles;
    Kernel kernel(*runtime, specFor("scale", ir));
    REQUIRE(message(kernel.prepare()) == "");
    LoadStatsSnapshot stats = runtime->stats().snapshot();
    CHECK(stats.corruptEntries == 1);
    CHECK(stats.diskHits == 0);
    CHECK(stats.modulesCompiled == 1);
    CHECK(compiler->compiles == compilesBefore + 1);
    CHECK(kernel.origin() == CompileOrigin::Compiler);
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("is corrupt"));
    // What was loaded is the compiler's output, and the entry is whole again.
    CHECK(
        kernel.compiled()->ptx ==
        FakeCompiler::ptxFor({"scale", ir, archNamed("sm_90a"), {}}, *kernel.compiled()));
    CHECK(readAll(path) == good);
  }
}

TEST_CASE("the size cap evicts least recently used entries", "[runtime][cache]") {
  TempDir dir;
  std::vector<std::string> reports;
  auto probe = openCache(dir, &reports);
  std::vector<std::string> keys;
  for (int i = 0; i < 4; ++i) {
    DiskKeyInputs inputs = baseInputs();
    inputs.canonicalIR += std::to_string(i);
    keys.push_back(computeDiskKey(inputs));
  }
  REQUIRE(message(probe->store(keys[0], "k", "sm_90a", sampleKernel("b0"))) == "");
  uint64_t entryBytes = 0;
  REQUIRE(!llvm::sys::fs::file_size(entryFile(dir, keys[0]), entryBytes));

  // Room for three entries of this size, not four.
  auto cache = openCache(dir, &reports, 3 * entryBytes + entryBytes / 2);
  for (int i = 1; i < 3; ++i)
    REQUIRE(message(cache->store(keys[i], "k", "sm_90a",
                                 sampleKernel("b" + std::to_string(i)))) == "");
  // Use keys[0] again: keys[1] is now the least recently used.
  REQUIRE(llvm::cantFail(cache->lookup(keys[0])).status == DiskLookup::Hit);
  REQUIRE(message(cache->store(keys[3], "k", "sm_90a", sampleKernel("b3"))) == "");

  CHECK(llvm::sys::fs::exists(entryFile(dir, keys[0])));
  CHECK_FALSE(llvm::sys::fs::exists(entryFile(dir, keys[1])));
  CHECK(llvm::sys::fs::exists(entryFile(dir, keys[2])));
  CHECK(llvm::sys::fs::exists(entryFile(dir, keys[3])));
  CHECK(llvm::cantFail(cache->lookup(keys[1])).status == DiskLookup::Miss);

  // An entry larger than the whole cap is still kept: it is the one in use.
  auto tiny = openCache(dir, &reports, 1);
  REQUIRE(message(tiny->store(keys[1], "k", "sm_90a", sampleKernel("b1"))) == "");
  std::vector<CacheEntryInfo> left = llvm::cantFail(tiny->list());
  REQUIRE(left.size() == 1);
  CHECK(left[0].key == keys[1]);
}

TEST_CASE("tilejit cache ls, verify and clear", "[runtime][cache]") {
  TempDir dir;
  std::vector<std::string> reports;
  auto cache = openCache(dir, &reports);
  std::string good = computeDiskKey(baseInputs());
  DiskKeyInputs other = baseInputs();
  other.arch = "sm_121a";
  std::string bad = computeDiskKey(other);
  REQUIRE(message(cache->store(good, "gated_rms_norm", "sm_90a", sampleKernel())) == "");
  REQUIRE(message(cache->store(bad, "conv_update", "sm_121a", sampleKernel())) == "");
  std::string badBytes = readAll(entryFile(dir, bad));
  writeAll(entryFile(dir, bad), badBytes.substr(0, badBytes.size() - 1));

  std::string out;
  llvm::raw_string_ostream os(out);
  REQUIRE(message(runCacheCommand("ls", os, dir.path())) == "");
  CHECK_THAT(out, Catch::Contains("2 entries"));
  CHECK_THAT(out, Catch::Contains(good.substr(0, 12)) &&
                      Catch::Contains("gated_rms_norm") && Catch::Contains("sm_90a") &&
                      Catch::Contains(" ok"));
  CHECK_THAT(out,
             Catch::Contains(bad.substr(0, 12)) && Catch::Contains("corrupt: truncated"));

  out.clear();
  CHECK_THAT(message(runCacheCommand("verify", os, dir.path())),
             Catch::Contains("1 corrupt kernel cache entries"));
  CHECK_THAT(out,
             Catch::Contains("1 valid, 1 corrupt (1 removed)") && Catch::Contains(bad));
  CHECK_FALSE(llvm::sys::fs::exists(entryFile(dir, bad)));
  out.clear();
  CHECK(message(runCacheCommand("verify", os, dir.path())) == "");
  CHECK_THAT(out, Catch::Contains("1 valid, 0 corrupt"));

  out.clear();
  REQUIRE(message(runCacheCommand("clear", os, dir.path())) == "");
  CHECK_THAT(out, Catch::Contains("removed 1 entries"));
  CHECK(llvm::cantFail(cache->list()).empty());

  CHECK(message(runCacheCommand("purge", os, dir.path())) ==
        "unknown cache command 'purge' (expected ls, verify, clear)");
}
