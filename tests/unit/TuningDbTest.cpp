// The tuning database: keys, JSON round trip and errors, lookup by version,
// import/export, and the one tuned-constant lookup (TunedLookup.h) and what it says.
#include "runtime/RuntimeTestSupport.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/tuning/ShippedTuneDb.h"
#include "tilejit/tuning/TunedLookup.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cmath>
#include <set>

using namespace tilejit;
using namespace tilejit::tuning;
using namespace tilejit::runtime::testing;

namespace {

TuneEntry sampleEntry(std::string version, unsigned sms = 132) {
  TuneEntry e;
  e.key = {"gemm_bf16", hashKernelIR("ir of gemm"), shapeBucket({{"m", 4096}}), "sm_90a",
           sms,         std::move(version)};
  e.constants = {{"k", 4096}, {"n", 4096}};
  e.shape = {{"m", 4096}};
  e.config = {{"block_k", 64}, {"block_m", 128}};
  e.medianMs = 0.3125;
  e.minMs = 0.3;
  e.maxMs = 0.35;
  e.samples = 15;
  e.defaultMedianMs = 0.327;
  e.provenance = {"2026-11-30T12:00:00Z", "NVIDIA H200", 13000, "sm 1980 MHz"};
  return e;
}

} // namespace

TEST_CASE("tuning keys: IR hash, shape bucket, id without version", "[tuning]") {
  std::string h = hashKernelIR("tile.kernel @a");
  CHECK(h.size() == 64);
  CHECK(h == hashKernelIR("tile.kernel @a"));
  CHECK(h != hashKernelIR("tile.kernel @b"));
  CHECK(shapeBucket({{"m", 4096}}) == "m<=4096");
  CHECK(shapeBucket({{"m", 4097}}) == "m<=8192");
  CHECK(shapeBucket({{"rows", 37}, {"cols", 1000}}) == "cols<=1024,rows<=64");
  CHECK(shapeBucket({{"m", 1}}) == "m<=1");
  CHECK(shapeBucket({}).empty());
  TuneKey a = sampleEntry("v1").key, b = sampleEntry("v2").key,
          c = sampleEntry("v1", 78).key;
  CHECK(a.id() == b.id());
  CHECK(a.id() != c.id());
  CHECK(tuneVersion("abc123", "22.1.0") == "abc123/llvm-22.1.0");
  CHECK(formatNamedValues({{"b", 2}, {"a", 1}}) == "a=1,b=2");
}

TEST_CASE("tuning database: JSON and file round trip", "[tuning]") {
  TempDir dir;
  std::string path = dir.sub("sub/tune.json");
  TuneDb empty = llvm::cantFail(TuneDb::load(path));
  CHECK(empty.entries().empty());
  TuneDb db;
  TuneEntry rejected = sampleEntry("v1", 78);
  rejected.rejected = "wrong results";
  db.record(sampleEntry("v1"));
  db.record(rejected);
  REQUIRE(!db.save(path));
  TuneDb back = llvm::cantFail(TuneDb::load(path));
  REQUIRE(back.entries().size() == 2);
  const TuneEntry &e = back.entries()[0];
  TuneEntry want = sampleEntry("v1");
  CHECK(e.key.id() == want.key.id());
  CHECK(e.key.version == "v1");
  CHECK(e.constants == want.constants);
  CHECK(e.shape == want.shape);
  CHECK(e.config == want.config);
  CHECK(e.medianMs == want.medianMs);
  CHECK(e.samples == 15);
  CHECK(e.defaultMedianMs == want.defaultMedianMs);
  CHECK(e.provenance.date == want.provenance.date);
  CHECK(e.provenance.driverVersion == 13000);
  CHECK(e.provenance.clocks == "sm 1980 MHz");
  CHECK(e.rejected.empty());
  CHECK(back.entries()[1].rejected == "wrong results");
}

TEST_CASE("describeTuneDb: what a database holds and whether this build measured it",
          "[tuning]") {
  TempDir dir;
  const std::string path = dir.sub("tune.json");
  // No database file: the shipped one stands in, and the line says so.
  const std::string shipped = "; using tunedb/h200.tune.json (shipped with tilejit): ";
  CHECK_THAT(describeTuneDb("", "v2"),
             Catch::StartsWith("tuning database: none configured" + shipped) &&
                 Catch::Contains("in_proj_conv on sm_90a (132 SMs) at rows<=1"));
  CHECK_THAT(describeTuneDb(path, "v2"),
             Catch::StartsWith("tuning database " + path + ": none there" + shipped));
  REQUIRE(!TuneDb().save(path));
  CHECK(describeTuneDb(path, "v2") == "tuning database " + path + ": none there");
  TuneDb db;
  db.record(sampleEntry("v2"));
  TuneEntry small = sampleEntry("v2");
  small.key.shapeBucket = shapeBucket({{"m", 64}});
  db.record(small);
  TuneEntry other = sampleEntry("v1", 78);
  other.key.kernel = "softmax";
  db.record(other);
  REQUIRE(!db.save(path));
  CHECK(describeTuneDb(path, "v2") ==
        "tuning database " + path +
            ": 3 entries, 2 of them measured by this build (v2), the others by v1 (used "
            "where this build compiles their winners to the code measured, the rest "
            "after 'tilejit tune --revalidate'): gemm_bf16 on sm_90a (132 SMs) at "
            "m<=4096, m<=64; softmax on sm_90a (78 SMs) at m<=4096");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    REQUIRE(!ec);
    os << "{";
  }
  CHECK_THAT(describeTuneDb(path, "v2"),
             Catch::StartsWith("tuning database '" + path + "': ") &&
                 Catch::EndsWith("; nothing tuned is used"));
}

TEST_CASE("the shipped database: compiled in, found without a file", "[tuning]") {
  llvm::Expected<TuneDb> shipped = shippedTuneDb();
  REQUIRE(bool(shipped));
  std::set<std::string> kernels;
  for (const TuneEntry &e : shipped->entries()) {
    kernels.insert(e.key.kernel);
    CHECK(e.key.arch == "sm_90a");
    CHECK(e.key.smCount == 132);
  }
  // The kernels the model plans look up (bench/tunedb_gpu.sh tunes each
  // decode launch and ssd_prefill); which of them an export holds depends on
  // the plans it was measured with.
  const std::set<std::string> planned = {"in_proj_conv", "out_proj",    "ssm_update",
                                         "conv_update",  "split_k_sum", "quantize_e4m3",
                                         "ssd_prefill"};
  CHECK(kernels.count("in_proj_conv"));
  CHECK(kernels.count("ssd_prefill"));
  for (const std::string &kernel : kernels)
    CHECK(planned.count(kernel));
  CHECK(shippedTuneDbName() == "tunedb/h200.tune.json (shipped with tilejit)");
}

TEST_CASE("tuning database: malformed files are errors that say why", "[tuning]") {
  CHECK(toString(TuneDb::fromJSON(llvm::json::Object{{"entries", llvm::json::Array{}}})
                     .takeError()) ==
        "not a tuning database (expected \"format\": \"tilejit-tune-db/1\")");
  TuneDb one;
  one.record(sampleEntry("v1"));
  llvm::json::Value broken = one.toJSON();
  (*(*broken.getAsObject()->getArray("entries"))[0].getAsObject())["sm_count"] = "many";
  CHECK(toString(TuneDb::fromJSON(broken).takeError()) ==
        "entry 0: 'sm_count' must be an integer in [0, 65536]");
  TempDir dir;
  std::string path = dir.sub("tune.json");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << "{ not json";
  }
  std::string err = toString(TuneDb::load(path).takeError());
  CHECK(llvm::StringRef(err).starts_with("tuning database '" + path + "': "));
}

TEST_CASE("tuning database: every number is read in its range, never through a wrap",
          "[tuning][bad-input]") {
  TuneDb one;
  one.record(sampleEntry("v1"));
  auto withField = [&](const char *field, llvm::json::Value value,
                       bool provenance = false) {
    llvm::json::Value v = one.toJSON();
    llvm::json::Object *entry = (*v.getAsObject()->getArray("entries"))[0].getAsObject();
    if (provenance)
      entry = entry->getObject("provenance");
    (*entry)[field] = std::move(value);
    return v;
  };
  // 2^32 + 132 SMs would read as 132 through a cast to unsigned.
  CHECK(toString(
            TuneDb::fromJSON(withField("sm_count", int64_t(4294967428))).takeError()) ==
        "entry 0: 'sm_count' must be an integer in [0, 65536]");
  CHECK(toString(TuneDb::fromJSON(withField("sm_count", -1)).takeError()) ==
        "entry 0: 'sm_count' must be an integer in [0, 65536]");
  CHECK(toString(TuneDb::fromJSON(withField("samples", int64_t(1) << 32)).takeError()) ==
        "entry 0: 'samples' must be an integer in [0, 4294967295]");
  CHECK(
      toString(
          TuneDb::fromJSON(withField("driver", int64_t(4294980296), true)).takeError()) ==
      "entry 0 provenance: 'driver' must be an integer in [0, 2147483647]");
  // A time beyond the double range parses as infinity.
  llvm::Expected<llvm::json::Value> huge = llvm::json::parse(R"({"t": 1e400})");
  REQUIRE(bool(huge));
  CHECK(toString(TuneDb::fromJSON(withField("median_ms", *huge->getAsObject()->get("t")))
                     .takeError()) ==
        "entry 0: 'median_ms' must be a finite number of milliseconds, at least 0");
  CHECK(toString(TuneDb::fromJSON(withField("min_ms", -0.5)).takeError()) ==
        "entry 0: 'min_ms' must be a finite number of milliseconds, at least 0");
  // A rejection reason of another type is not read as "not rejected".
  CHECK(toString(TuneDb::fromJSON(withField("rejected", true)).takeError()) ==
        "entry 0: 'rejected' must be a string when present");
  CHECK(toString(TuneDb::fromJSON(withField("rejected", 1)).takeError()) ==
        "entry 0: 'rejected' must be a string when present");
  // The counterfactual: the same entry with its own values loads.
  CHECK(bool(TuneDb::fromJSON(one.toJSON())));
}

TEST_CASE("tuning database: two entries with one key are refused, naming both",
          "[tuning][bad-input]") {
  TuneDb one;
  one.record(sampleEntry("v1"));
  llvm::json::Value v = one.toJSON();
  llvm::json::Array &entries = *v.getAsObject()->getArray("entries");
  entries.push_back(entries[0]);
  std::string id = sampleEntry("v1").key.id();
  CHECK(toString(TuneDb::fromJSON(v).takeError()) ==
        "entry 1 has the key of entry 0 (" + id + ", version v1)");
  // The same problem measured by two versions is two entries, as import keeps them.
  TuneDb two;
  two.record(sampleEntry("v1"));
  TuneDb other;
  other.record(sampleEntry("v2"));
  two.merge(other, "v2");
  CHECK(llvm::cantFail(TuneDb::fromJSON(two.toJSON())).entries().size() == 2);
}

TEST_CASE("tuning database: a time no JSON reader accepts is never written",
          "[tuning][bad-input]") {
  TempDir dir;
  std::string path = dir.sub("tune.json");
  TuneDb db;
  TuneEntry e = sampleEntry("v1");
  e.medianMs = INFINITY;
  db.record(e);
  CHECK(toString(db.save(path)) ==
        "tuning database '" + path +
            "': entry 0 (gemm_bf16) has a time of inf ms, which a database cannot hold");
  CHECK_FALSE(llvm::sys::fs::exists(path));
}

TEST_CASE("tuning database: lookup by version, record supersedes", "[tuning]") {
  TuneDb db;
  TuneKey key = sampleEntry("v2").key;
  CHECK(db.lookup(key).first == TuneMatch::None);
  db.record(sampleEntry("v1"));
  auto [match, entry] = db.lookup(key);
  CHECK(match == TuneMatch::OtherVersion);
  REQUIRE(entry);
  CHECK(entry->key.version == "v1");
  CHECK(db.staleEntries("v2").size() == 1);
  std::vector<std::string> replaced = db.record(sampleEntry("v2"));
  CHECK(replaced == std::vector<std::string>{"v1"});
  CHECK(db.entries().size() == 1);
  CHECK(db.lookup(key).first == TuneMatch::Exact);
  CHECK(db.staleEntries("v2").empty());
  TuneEntry bad = sampleEntry("v2");
  bad.rejected = "re-validation: wrong";
  db.record(bad);
  CHECK(db.lookup(key).first == TuneMatch::Rejected);
  // Another SM count is another problem.
  TuneKey otherGpu = key;
  otherGpu.smCount = 78;
  CHECK(db.lookup(otherGpu).first == TuneMatch::None);
}

TEST_CASE("tuning database: export and import keep other versions for re-validation",
          "[tuning]") {
  TempDir dir;
  TuneDb shipped;
  shipped.record(sampleEntry("old"));
  TuneEntry other = sampleEntry("current", 78);
  shipped.record(other);
  REQUIRE(!shipped.save(dir.sub("model.tune.json")));

  TuneDb local;
  TuneEntry mine = sampleEntry("current", 78);
  mine.medianMs = 9.0;
  local.record(mine);
  TuneDb incoming = llvm::cantFail(TuneDb::load(dir.sub("model.tune.json")));
  TuneDb::MergeReport report = local.merge(incoming, "current");
  CHECK(report.added == 1);
  CHECK(report.replaced == 1);
  REQUIRE(report.needRevalidation.size() == 1);
  CHECK(report.needRevalidation[0]->key.version == "old");
  REQUIRE(local.entries().size() == 2);
  // The imported measurement replaced the local one of the same key and version.
  CHECK(local.lookup(mine.key).second->medianMs == other.medianMs);
  // The old-version entry is kept, but a current lookup does not use it.
  TuneKey current = sampleEntry("current").key;
  CHECK(local.lookup(current).first == TuneMatch::OtherVersion);
}

TEST_CASE("tuning database: an export never renames over a link, FIFO or device, and a "
          "database that is no regular file is refused unread",
          "[tuning][badinput]") {
  TempDir dir;
  TuneDb db;
  db.record(sampleEntry("v1"));
  REQUIRE(!db.save(dir.sub("target.json")));
  REQUIRE(!llvm::sys::fs::create_link(dir.sub("target.json"), dir.sub("link.json")));
  CHECK(toString(db.save(dir.sub("link.json"))) ==
        "refusing to replace tuning database '" + dir.sub("link.json") +
            "': it is a symbolic link; write to a regular file or a new path");
  CHECK(
      toString(db.save("/dev/null")) ==
      "refusing to replace tuning database '/dev/null': it is a character device; write "
      "to a regular file or a new path");
  REQUIRE(::mkfifo(dir.sub("fifo.json").c_str(), 0644) == 0);
  CHECK(toString(db.save(dir.sub("fifo.json"))) ==
        "refusing to replace tuning database '" + dir.sub("fifo.json") +
            "': it is a FIFO; write to a regular file or a new path");
  // Loading the FIFO returns at once: no writer is waited for.
  CHECK(toString(TuneDb::load(dir.sub("fifo.json")).takeError()) ==
        "tuning database '" + dir.sub("fifo.json") + "' is a FIFO, not a regular file");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir.sub("deep.json"), ec);
    os << std::string(100000, '[');
  }
  CHECK_THAT(toString(TuneDb::load(dir.sub("deep.json")).takeError()),
             Catch::EndsWith("arrays and objects nest deeper than 64 levels"));
}

TEST_CASE("lookupTuned: a current entry's constants, said; others not used, said why",
          "[tuning]") {
  TempDir dir;
  std::vector<std::string> warnings;
  runtime::RuntimeOptions options = optionsFor(dir.sub("cache"));
  options.tuneDbPath = dir.sub("tune.json");
  options.diagnostics = [&](llvm::StringRef m) { warnings.push_back(m.str()); };
  runtime::FakeDevice *device;
  auto jit = fakeRuntime(std::make_shared<FakeCompiler>(), options, device);
  KernelRegistry registry;
  llvm::cantFail(models::registerExampleKernels(registry));
  const KernelDef *def = registry.find("vector_add");
  REQUIRE(def);
  // A plan's value of a tunable constant is not part of the key: its default is.
  Specialization base = llvm::cantFail(tuningBase(*def, {{"block", 256}}));
  CHECK(base.get("block") == 1024);

  TuneEntry entry = sampleEntry(tuneVersion(jit->compiler()));
  entry.key = llvm::cantFail(tuneKeyFor(*jit, {def, nullptr, base, {{"n", 3000}}}));
  CHECK(entry.key.shapeBucket == "n<=4096");
  CHECK(entry.key.smCount == device->info().smCount);
  entry.config = {{"block", 512}};
  auto lookup = [&](const NamedValues &shape) {
    return lookupTuned(*jit, loadTuneDb(*jit), *def, base, shape);
  };

  SECTION("no database file: the defaults, nothing said") {
    TunedChoice choice = lookup({{"n", 3000}});
    CHECK(choice.match == TuneMatch::None);
    CHECK(choice.config.empty());
    CHECK(choice.message.empty());
    CHECK(warnings.empty());
  }
  SECTION("a current entry: its constants, said with where they come from") {
    TuneDb db;
    db.record(entry);
    REQUIRE(!db.save(options.tuneDbPath));
    TunedChoice choice = lookup({{"n", 3000}});
    CHECK(choice.match == TuneMatch::Exact);
    CHECK(choice.config == ConstantValues{{"block", 512}});
    CHECK_THAT(choice.message, Catch::StartsWith("tuning database " + options.tuneDbPath +
                                                 ": vector_add (n<=4096, "));
    CHECK_THAT(choice.message,
               Catch::Contains("uses block=512 (tuned 2026-11-30T12:00:00Z "
                               "on NVIDIA H200"));
  }
  SECTION("an entry of another version: not used until re-validated, said") {
    entry.key.version = "someone-else/llvm-21";
    TuneDb db;
    db.record(entry);
    REQUIRE(!db.save(options.tuneDbPath));
    TunedChoice choice = lookup({{"n", 3000}});
    CHECK(choice.match == TuneMatch::OtherVersion);
    CHECK(choice.config.empty());
    CHECK_THAT(choice.message,
               Catch::Contains("measured by tilejit someone-else/llvm-21"));
    CHECK_THAT(choice.message, Catch::Contains("until it is re-validated"));
  }
  SECTION("an entry naming a constant the kernel lacks: not used, said") {
    entry.config = {{"block", 512}, {"stages", 3}};
    TuneDb db;
    db.record(entry);
    REQUIRE(!db.save(options.tuneDbPath));
    TunedChoice choice = lookup({{"n", 3000}});
    CHECK(choice.config.empty());
    CHECK_THAT(choice.message,
               Catch::Contains("constants the kernel does not have (stages)"));
  }
  SECTION("another shape bucket: not matched, nothing said") {
    TuneDb db;
    db.record(entry);
    REQUIRE(!db.save(options.tuneDbPath));
    TunedChoice choice = lookup({{"n", 5000}});
    CHECK(choice.match == TuneMatch::None);
    CHECK(choice.message.empty());
  }
  SECTION("a database that cannot be read: a warning, the defaults") {
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(options.tuneDbPath, ec);
      os << "{ not json";
    }
    CHECK(lookup({{"n", 3000}}).config.empty());
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::EndsWith("; no tuned configuration is used"));
  }
}
