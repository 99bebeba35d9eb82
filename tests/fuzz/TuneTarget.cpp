// The `tune-db` target: a tuning database file (tuning/lib/TuneDb.cpp) as
// TuneDb::load reads it. What loads must survive a JSON round trip unchanged
// and answer a lookup of each of its own keys. Seeds: databases built with
// TuneDb::record and written by toJSON.
#include "FuzzTargets.h"

#include "tilejit/tuning/TuneDb.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace tilejit::tuning;

namespace tilejit::fuzz {
namespace {

std::string printed(const llvm::json::Value &value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::formatv("{0:2}", value);
  return text;
}

TuneEntry sampleEntry(llvm::StringRef kernel, llvm::StringRef version, bool rejected) {
  TuneEntry e;
  e.key = {kernel.str(), std::string(64, 'c'), "m<=1024", "sm_90a", 132, version.str()};
  e.constants = {{"k", 4096}, {"n", 4096}};
  e.shape = {{"m", 1000}};
  e.config = {{"block_k", 64}, {"block_m", 128}, {"stages", 3}, {"warps", 8}};
  e.medianMs = 0.118;
  e.minMs = 0.116;
  e.maxMs = 0.131;
  e.samples = 20;
  e.defaultMedianMs = 0.142;
  if (rejected)
    e.rejected = "re-validation failed: 3 elements outside the band";
  e.provenance = {"2026-11-30T12:34:56Z", "NVIDIA H200", 13000, "sm 1980 MHz"};
  return e;
}

} // namespace

void runTuneDb(llvm::ArrayRef<uint8_t> input) {
  llvm::SmallString<256> path(scratchDir());
  llvm::sys::path::append(path, "tune.json");
  writeFileOrDie(
      std::string(path),
      llvm::StringRef(reinterpret_cast<const char *>(input.data()), input.size()));
  auto db = TuneDb::load(path);
  if (!db) {
    llvm::consumeError(db.takeError());
    return;
  }
  llvm::json::Value json = db->toJSON();
  auto again = TuneDb::fromJSON(json);
  check(bool(again), "a loaded database does not read back its own JSON");
  check(printed(again->toJSON()) == printed(json), "a database changes in a round trip");
  for (const TuneEntry &entry : db->entries())
    check(db->lookup(entry.key).first != TuneMatch::None,
          "an entry's own key finds nothing");
}

Seeds tuneDbSeeds(llvm::StringRef) {
  TuneDb db;
  db.record(sampleEntry("gemm_bf16", "build-1/llvm-22.1.8", false));
  db.record(sampleEntry("gemm_e4m3", "build-1/llvm-22.1.8", true));
  TuneDb stale;
  stale.record(sampleEntry("softmax", "build-0/llvm-22.1.0", false));
  return {{"two.json", printed(db.toJSON())},
          {"stale.json", printed(stale.toJSON())},
          {"empty.json", printed(TuneDb().toJSON())}};
}

} // namespace tilejit::fuzz
