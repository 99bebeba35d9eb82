// Per-batch tuning of every decode kernel (docs/tune.md), on the interpreter:
// each launch of the decode plans at B = 1, 8, 64, 256 is tunable by rows as
// `bench/tune_plan_sets.py` tunes it (its candidates compute what the plan's
// configuration does, within the problem's band), and the plan takes a tuned
// entry at the batches of its bucket only, refusing one that sets a
// constant that is not a launch choice.
#include "tilejit/models/TuneProblems.h"
#include "tilejit/tuning/Candidates.h"
#include "tilejit/tuning/Tuner.h"

#include "ModelTestSupport.h"

#include <set>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

const tuning::TuneProblemRegistry &modelProblems() {
  static tuning::TuneProblemRegistry r = [] {
    tuning::TuneProblemRegistry reg;
    llvm::cantFail(registerModelTuneProblems(reg));
    return reg;
  }();
  return r;
}

/// The constants `tilejit tune` must keep at the plan's values (as
/// bench/tune_plan_sets.py passes them with --set): every one without a
/// candidate list, and a tunable one whose plan value is not among its
/// default and candidates.
std::vector<std::string> fixedAtPlan(const KernelDef &def, const Specialization &spec) {
  std::vector<std::string> fixed;
  for (const KernelConstant &c : def.constants) {
    const int64_t v = spec.get(c.name);
    if (!c.isTunable() || (v != c.defaultValue && !llvm::is_contained(c.candidates, v)))
      fixed.push_back(c.name);
  }
  return fixed;
}

StepPlan decodePlan(const NemotronHConfig &c,
                    const std::vector<MambaLayerWeights> &layers, int64_t rows,
                    PlanOptions options = {}) {
  options.arch = llvm::cantFail(Arch::parse("sm_90a"));
  auto plan = planDecodeStep(modelRegistry(), c, layers, rows, rows + 2, options);
  REQUIRE(bool(plan));
  return std::move(*plan);
}

} // namespace

TEST_CASE("decode tuning: every kernel the decode plans launch is tuned by rows, its "
          "candidates agree with the plan's configuration on the interpreter",
          "[e2e][interp][decode][tune]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2); // an FP8 layer and a bf16 layer
  REQUIRE(bool(layers));
  const Arch arch = llvm::cantFail(Arch::parse("sm_90a"));
  std::set<std::string> seen, instances;
  for (int64_t rows : {1, 8, 64, 256}) {
    for (const PlannedLaunch &l : decodePlan(c, *layers, rows).launches) {
      INFO("B=" << rows << " " << l.role << " " << l.kernel << " "
                << formatConstants(l.spec.values()));
      seen.insert(l.kernel);
      const KernelDef *def = modelRegistry().find(l.kernel);
      REQUIRE(def);
      if (l.kernel == "gated_rmsnorm") { // no launch choice: one program per group
        CHECK(def->tuningKey.empty());
        continue;
      }
      CHECK(def->tuningKey == std::vector<std::string>{"rows"});
      if (!instances.insert(l.kernel + formatConstants(l.spec.values())).second)
        continue;
      auto target = tuning::makeTuneTarget(modelRegistry(), modelProblems(), l.kernel,
                                           l.spec.values(), {{"rows", rows}});
      REQUIRE(bool(target));
      auto candidates = tuning::prunedCandidates(*target, tuning::limitsForArch(arch),
                                                 arch, fixedAtPlan(*def, l.spec));
      // The plan's own configuration comes first and is kept.
      REQUIRE(!candidates.empty());
      CHECK(candidates[0].pruned == "");
      auto checked = tuning::checkOnInterpreter(*target, candidates[0].spec);
      REQUIRE(bool(checked));
      CHECK(*checked > 0);
      // The last kept candidate differs most from the first.
      for (auto it = candidates.rbegin(); it != candidates.rend(); ++it)
        if (it->pruned.empty() && it != candidates.rend() - 1) {
          INFO("candidate " << it->label());
          auto other = tuning::checkOnInterpreter(*target, it->spec);
          CHECK(bool(other));
          if (!other)
            FAIL_CHECK(llvm::toString(other.takeError()));
          break;
        }
    }
  }
  // quantize_e4m3 runs before the skinny FP8 in_proj (B = 8); the FP8 in_proj
  // GEMM, which the small geometry's FP8 rows (200 bytes, not a TMA row) never
  // take, would run it too: below, also at its defaults.
  CHECK(seen == std::set<std::string>{"conv_update", "gated_rmsnorm", "in_proj_conv",
                                      "out_proj", "quantize_e4m3", "split_k_sum",
                                      "ssm_update"});
  auto quant = tuning::makeTuneTarget(modelRegistry(), modelProblems(), "quantize_e4m3",
                                      {{"width", 200}}, {{"rows", 64}});
  REQUIRE(bool(quant));
  CHECK(bool(tuning::checkOnInterpreter(
      *quant, llvm::cantFail(quant->def->specialize({{"width", 200}, {"block", 256}})))));
}

TEST_CASE("decode tuning: a candidate that computed something else would fail the "
          "problem's band",
          "[e2e][interp][decode][tune]") {
  // What a wrong candidate would do, on the same arguments: the state update
  // without dt's softplus; the conv reading x a quarter row to the right.
  struct Wrong {
    const char *kernel;
    ConstantValues constants;
    const char *change;
    int64_t value;
  };
  for (const Wrong &w :
       {Wrong{"ssm_update",
              {{"heads", 8}, {"head_dim", 16}, {"groups", 2}, {"state", 32}},
              "dt_softplus",
              0},
        Wrong{"conv_update", {{"channels", 768}, {"x_stride", 1024}}, "x_col", 256}}) {
    INFO(w.kernel);
    auto target = tuning::makeTuneTarget(modelRegistry(), modelProblems(), w.kernel,
                                         w.constants, {{"rows", 3}});
    REQUIRE(bool(target));
    Specialization wrong = target->base;
    wrong.set(w.change, w.value);
    auto checked = tuning::checkOnInterpreter(*target, wrong);
    REQUIRE_FALSE(bool(checked));
    CHECK_THAT(llvm::toString(checked.takeError()),
               Catch::Contains("elements outside the band; first argument"));
  }
}

TEST_CASE("decode tuning: the plan takes a tuned entry at the batches of its bucket "
          "only, ignores another build's and refuses one that changes semantics",
          "[e2e][decode][tune]") {
  NemotronHConfig c = smallConfig(); // head_dim 16
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  FakeTunedRuntime fake;
  runtime::JitRuntime &jit = *fake.jit;
  auto stateUpdate = [](const StepPlan &plan) {
    for (const PlannedLaunch &l : plan.launches)
      if (l.kernel == "ssm_update")
        return l;
    FAIL("no ssm_update launch");
    return PlannedLaunch{};
  };
  // Entries as `tilejit tune ssm_update --shape rows=R` with the plan's
  // constants records them: keyed by the plan's instance, tunables at defaults.
  const KernelDef *def = modelRegistry().find("ssm_update");
  auto entryAt = [&](int64_t rows, tuning::NamedValues config) {
    auto base =
        tuning::tuningBase(*def, stateUpdate(decodePlan(c, *layers, rows)).spec.values());
    REQUIRE(bool(base));
    tuning::TuneEntry e;
    e.key =
        llvm::cantFail(tuning::tuneKeyFor(jit, {def, nullptr, *base, {{"rows", rows}}}));
    e.config = std::move(config);
    e.provenance = {"2026-12-07T00:00:00Z", "test", 13000, "unknown"};
    return e;
  };
  tuning::TuneDb db;
  db.record(entryAt(8, {{"block_p", 8}, {"warps", 2}}));
  tuning::TuneEntry stale = entryAt(4, {{"block_p", 8}});
  stale.key.version = "another-build/llvm-22";
  db.record(stale);
  // `state` is the page's shape: an entry setting it would read another page.
  db.record(entryAt(1, {{"block_p", 8}, {"state", 16}}));
  REQUIRE(!db.save(fake.tuneDbPath));

  std::string log;
  llvm::raw_string_ostream os(log);
  auto planAt = [&](int64_t rows) {
    log.clear();
    PlanOptions tuned{{}, tunedFromDatabase(jit, modelRegistry(), {{"rows", rows}}, os)};
    return stateUpdate(decodePlan(c, *layers, rows, tuned));
  };
  for (int64_t rows : {5, 8}) { // rows<=8
    INFO("B=" << rows);
    PlannedLaunch l = planAt(rows);
    CHECK(l.spec.get("block_p") == 8);
    CHECK(l.spec.get("warps") == 2);
    CHECK(l.grid[0] == 2); // head_dim 16 / 8 (1 at the default 16)
    CHECK_THAT(log, Catch::Contains("ssm_update (rows<=8, "));
    CHECK_THAT(log, Catch::Contains("uses block_p=8,warps=2"));
  }
  for (int64_t rows : {9, 64}) { // no entry: the defaults, nothing said of ssm_update
    INFO("B=" << rows);
    CHECK(planAt(rows).spec.get("block_p") == 16);
    CHECK(log.find("ssm_update") == std::string::npos);
  }
  PlannedLaunch other = planAt(3); // rows<=4: another build's entry
  CHECK(other.spec.get("block_p") == 16);
  CHECK_THAT(log, Catch::Contains("measured by tilejit another-build/llvm-22"));
  PlannedLaunch refused = planAt(1);
  CHECK(refused.spec.get("block_p") == 16);
  CHECK(refused.spec.get("state") == 32);
  CHECK_THAT(log, Catch::Contains("ssm_update (rows<=1, "));
  CHECK_THAT(log, Catch::Contains("sets state, not tuned launch choices of the kernel "
                                  "(they change what it computes); refused"));
}
