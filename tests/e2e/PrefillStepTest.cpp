// The planned prefill forward (quant, in_proj GEMM, conv, chunked SSD, gated
// norm, out_proj) on the interpreter against the sequential f64 mixer, over a
// varlen batch with fresh, continued, short and padding sequences and a second
// forward that continues from the state the first wrote. Bands: StepCheck's
// (StepCheck.h), each op alone held to its own in its kernel test.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/models/plan/Runners.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/runtime/Jit.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

/// The SSD's state tile of 16 x 32 holds four mma blocks: four warps.
const PlanOptions kSmall{{{"ssd_prefill", {{"block_p", 16}, {"warps", 4}}}},
                         nullptr,
                         /*perLayerActivations=*/true};

/// Clears `flag` in every span's flags of the plan's inputs.
void clearSpanFlag(HostBuffers &buffers, int32_t flag) {
  auto &flags = buffers["span_flags"];
  for (size_t i = 0; i < flags.size(); i += 4) // little-endian int32s
    flags[i] &= ~uint8_t(flag);
}

/// Lengths 5 (continued), 65 (fresh, three chunks), 1 (padding), 59
/// (continued), 20 (fresh), over 6 slots.
const ref::PrefillBatch kBatch{
    {0, 5, 70, 71, 130, 150}, {3, 0, -1, 5, 1}, {true, false, true, true, false}};

} // namespace

TEST_CASE("prefill forward on the interpreter: two layers, a varlen batch, two carried "
          "forwards, against the f64 mixer",
          "[e2e][interp][prefill]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  REQUIRE((*layers)[0].inProj.isFP8);
  REQUIRE_FALSE((*layers)[1].inProj.isFP8);
  // SSD spans of 16, 2 and 1 chunks: one span of five sequences; sequences across
  // spans and spans of several; every chunk its own span. Then the chunk-parallel
  // schedule (ssd_chunk_scan, selected by its override) at chunks of 32 and 64.
  const auto schedule =
      GENERATE(table<int64_t, int64_t>({{512, 0}, {64, 0}, {32, 0}, {32, 32}, {32, 64}}));
  const int64_t spanTokens = std::get<0>(schedule), chunked = std::get<1>(schedule);
  INFO("ssd span tokens " << spanTokens << ", chunk-parallel chunk " << chunked);
  PlanOptions options = kSmall;
  options.ssdSpanTokens = spanTokens;
  if (chunked)
    options.overrides = {
        {"ssd_chunk_scan", {{"chunk", chunked}, {"block_m", 16}, {"block_p", 16}}}};
  auto prefill = planPrefill(modelRegistry(), c, *layers, kBatch, 150, 6, options);
  INFO((prefill ? "" : llvm::toString(prefill.takeError())));
  REQUIRE(bool(prefill));
  const int64_t chunks = chunked == 64 ? 1 + 2 + 1 + 1 + 1 : 1 + 3 + 1 + 2 + 1;
  CHECK(prefill->batch.numChunks() == chunks);
  CHECK(prefill->batch.numSpans() == (spanTokens == 32 || chunked ? chunks
                                      : spanTokens == 64          ? 4
                                                                  : 1));
  InterpreterRunner runner(modelRegistry());
  auto run = [&](HostBuffers &buffers) { return runner.run(prefill->plan, buffers); };
  auto check = checkPrefillSteps(c, *layers, *prefill, {}, kBatch, 2, 7, run);
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  INFO(reportOf(*check));
  CHECK(check->ok());
  CHECK(check->outChecked == 2 * 150 * c.hiddenSize); // both layers
  CHECK(check->layers.size() == 2);
  REQUIRE(check->projections.size() == 4);
  CHECK(check->quantChecked == 150 * c.hiddenSize); // the FP8 layer's quant

  // The counterfactual: the kernels told every sequence starts fresh while the
  // reference continues three of them from their slots.
  auto fresh = [&](HostBuffers &buffers) {
    std::fill(buffers["init"].begin(), buffers["init"].end(), 0);
    clearSpanFlag(buffers, kSpanTailFromPage);
    return runner.run(prefill->plan, buffers);
  };
  auto dropped = checkPrefillSteps(c, *layers, *prefill, {}, kBatch, 2, 7, fresh);
  REQUIRE(bool(dropped));
  CHECK_FALSE(dropped->ok());
  CHECK(dropped->outBad > 0);
  if (!chunked)
    return;
  // The chunk-parallel schedule's pass writes the pages: told no sequence ends
  // in its chunk, it writes none, and the second forward continues from stale
  // states.
  auto unwritten = [&](HostBuffers &buffers) {
    clearSpanFlag(buffers, kSpanTailEnds);
    return runner.run(prefill->plan, buffers);
  };
  auto stale = checkPrefillSteps(c, *layers, *prefill, {}, kBatch, 2, 7, unwritten);
  REQUIRE(bool(stale));
  CHECK_FALSE(stale->ok());
}

TEST_CASE("prefill forward: FP8 and bf16 projections mixed within a layer are planned "
          "and pass the check",
          "[e2e][interp][prefill]") {
  NemotronHConfig c = smallConfig();
  const std::vector<MambaLayerWeights> layers = mixedProjectionLayers(c);
  REQUIRE((layers[0].inProj.isFP8 && !layers[0].outProj.isFP8));
  auto prefill = planPrefill(modelRegistry(), c, layers, kBatch, 150, 6, kSmall);
  INFO((prefill ? "" : llvm::toString(prefill.takeError())));
  REQUIRE(bool(prefill));
  InterpreterRunner runner(modelRegistry());
  auto run = [&](HostBuffers &buffers) { return runner.run(prefill->plan, buffers); };
  auto check = checkPrefillSteps(c, layers, *prefill, {}, kBatch, 1, 9, run);
  REQUIRE(bool(check));
  std::string report;
  llvm::raw_string_ostream os(report);
  check->print(os);
  INFO(report);
  CHECK(check->ok());
  CHECK(check->quantChecked == 150 * c.hiddenSize); // layer 0's FP8 in_proj quant
  REQUIRE(check->projections.size() == 4);
}

TEST_CASE(
    "prefill plan: a bad batch is refused with its numbers before anything is planned",
    "[e2e][prefill]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  auto error = [&](ref::PrefillBatch batch, int64_t tokens) {
    auto plan = planPrefill(modelRegistry(), c, *layers, batch, tokens, 4, kSmall);
    REQUIRE_FALSE(bool(plan));
    return llvm::toString(plan.takeError());
  };
  CHECK(error({{0, 5, 5, 9}, {0, 1, 2}, {false, false, false}}, 9).find("empty") !=
        std::string::npos);
  CHECK(error({{0, 5, 9}, {1, 1}, {false, false}}, 9).find("slot 1") !=
        std::string::npos);
  CHECK(error({{0, 5, 9}, {0, 4}, {false, false}}, 9).find("slot 4") !=
        std::string::npos);
  CHECK(error({{0, 5, 9}, {0, 1}, {false, false}}, 10).find("10") != std::string::npos);
  // The conv and the SSD share the chunk metadata: different chunks are refused.
  auto mixed = planPrefill(modelRegistry(), c, *layers, {{0, 9}, {0}, {false}}, 9, 4,
                           PlanOptions{{{"ssd_prefill", {{"block_p", 16}, {"warps", 4}}},
                                        {"conv_prefill", {{"block_t", 64}}}}});
  REQUIRE_FALSE(bool(mixed));
  CHECK(llvm::toString(mixed.takeError()).find("block_t (64) must equal") !=
        std::string::npos);
}

TEST_CASE("prefill: the GPU-against-interpreter comparison runs a prefill plan launch by "
          "launch on the fake device and reports the launches it did not run",
          "[e2e][prefill][jit]") {
  // The fake device records launches without running them, so every buffer a
  // launch writes keeps its uploaded bytes there: the comparison must get
  // through the whole plan and say FAIL, not crash or pass.
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  // tilejit run's batch of 100 tokens: a padding sequence marked continued.
  const ref::PrefillBatch run{
      {0, 37, 53, 66, 99, 100}, {4, 0, -1, 2, 5}, {false, true, true, true, false}};
  const auto [batch, tokens, slots] =
      GENERATE_REF(std::make_tuple(kBatch, int64_t(150), int64_t(6)),
                   std::make_tuple(run, int64_t(100), int64_t(8)));
  for (const MambaLayerWeights &layer : *layers) {
    const std::vector<MambaLayerWeights> one = {layer}; // outlives the plan
    auto prefill = planPrefill(modelRegistry(), c, one, batch, tokens, slots, kSmall);
    INFO((prefill ? "" : llvm::toString(prefill.takeError())));
    REQUIRE(bool(prefill));
    auto options = runtime::RuntimeOptions::fromEnvironment();
    REQUIRE(bool(options));
    options->useDiskCache = false;
    auto jit =
        runtime::JitRuntime::create(std::make_unique<runtime::FakeDevice>(),
                                    JitCompiler::fromEnvironment(), std::move(*options));
    REQUIRE(bool(jit));
    std::string log;
    llvm::raw_string_ostream os(log);
    auto gpu = GpuRunner::create(**jit, modelRegistry(), prefill->plan, os);
    INFO((gpu ? log : llvm::toString(gpu.takeError())));
    REQUIRE(bool(gpu));
    HostBuffers buffers = randomStepBuffers(prefill->plan, {}, 78);
    prefill->writeInputs(buffers);
    InterpreterRunner interpreter(modelRegistry());
    auto compared = compareWithInterpreter(**gpu, interpreter, std::move(buffers));
    INFO((compared ? "" : llvm::toString(compared.takeError())));
    REQUIRE(bool(compared));
    CHECK_FALSE(compared->ok());
    CHECK(!compared->buffers.empty());
  }
}

TEST_CASE(
    "prefill plan: the SSD's default block_p (32) over head_dim 16 still covers every "
    "head's rows, and matches the f64 mixer",
    "[e2e][interp][prefill][badinput]") {
  // At 13c8ee2 the grid was head_dim / block_p = 0 programs: no y was written.
  NemotronHConfig c = smallConfig();
  REQUIRE(c.headDim == 16);
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  const ref::PrefillBatch batch{{0, 20, 40}, {0, 1}, {false, true}};
  auto prefill = planPrefill(modelRegistry(), c, *layers, batch, 40, 2,
                             PlanOptions{{{"ssd_prefill", {{"warps", 4}}}},
                                         nullptr,
                                         /*perLayerActivations=*/true});
  INFO((prefill ? "" : llvm::toString(prefill.takeError())));
  REQUIRE(bool(prefill));
  // Two sequences of 20 tokens: one span.
  REQUIRE(prefill->batch.numSpans() == 1);
  for (const PlannedLaunch &launch : prefill->plan.launches)
    if (launch.kernel == "ssd_prefill" || launch.kernel == "ssd_span_state")
      CHECK(launch.grid == std::array<int64_t, 3>{1, c.numHeads, 1});
  InterpreterRunner runner(modelRegistry());
  auto run = [&](HostBuffers &buffers) { return runner.run(prefill->plan, buffers); };
  auto check = checkPrefillSteps(c, *layers, *prefill, {}, batch, 1, 3, run);
  REQUIRE(bool(check));
  INFO(reportOf(*check));
  CHECK(check->ok());
}

TEST_CASE(
    "prefill plan: the GEMMs take the TMA producer tiles where their rows start on 16 "
    "bytes, wgmma's persistent ones on sm_90a, mma.sync ones sized to the device's "
    "shared memory elsewhere, and the cp.async tiles without an arch",
    "[e2e][prefill][plan]") {
  NemotronHConfig c = smallConfig(); // hidden 200: FP8 in_proj rows of 200 bytes
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  auto gemmSpecs = [&](std::optional<Arch> arch) {
    PlanOptions options = kSmall;
    options.arch = arch;
    auto plan = planPrefill(modelRegistry(), c, *layers, kBatch, 150, 6, options);
    INFO((plan ? "" : llvm::toString(plan.takeError())));
    REQUIRE(bool(plan));
    std::map<std::string, Specialization> byRole; // "in_proj layer 0" -> its constants
    for (const PlannedLaunch &l : plan->plan.launches)
      if (l.role == "in_proj" || l.role == "out_proj")
        byRole[l.role + " layer " + std::to_string(l.layer)] = l.spec;
    return byRole;
  };
  auto hopper = gemmSpecs(llvm::cantFail(Arch::parse("sm_90a")));
  REQUIRE(!hopper.empty());
  for (const auto &[role, spec] : hopper) {
    INFO(role << ": " << formatConstants(spec.values()));
    // The FP8 in_proj's rows (K = 200 bytes) do not start on 16 bytes: cp.async.
    bool fp8InProj = role.starts_with("in_proj") && spec.get("fp8") == 1;
    CHECK((spec.get("producer") == 1) == !fp8InProj);
    CHECK((spec.get("block_n") == 256) == !fp8InProj);
    // Persistent, and 3 slots: the rings leave room to store the
    // accumulator as whole rows.
    CHECK((spec.get("persistent") == 8) == !fp8InProj);
    CHECK(spec.get("stages") == 3);
  }
  // TMA and mma.sync: bf16 in 128 x 256 tiles whose copies a consumer thread
  // issues, 3 stages of 48 KiB (2 within GB10's 99 KiB); e4m3 in 128 x 128
  // tiles fed by a producer warp, 3 stages; the FP8 in_proj's rows keep the
  // cp.async tiles.
  for (const char *arch : {"sm_90", "sm_110a", "sm_121a"})
    for (const auto &[role, spec] : gemmSpecs(llvm::cantFail(Arch::parse(arch)))) {
      INFO(arch << " " << role << ": " << formatConstants(spec.values()));
      const bool fp8 = spec.get("fp8") == 1;
      const bool fp8InProj = role.starts_with("in_proj") && fp8;
      CHECK(spec.get("persistent") == 0);
      if (fp8InProj) {
        CHECK(spec.get("producer") == 0);
        CHECK(spec.get("block_m") == 64);
      } else if (fp8) {
        CHECK((spec.get("block_m") == 128 && spec.get("block_n") == 128));
        CHECK((spec.get("stages") == 3 && spec.get("producer") == 1));
      } else {
        CHECK((spec.get("block_m") == 128 && spec.get("block_n") == 256));
        CHECK(spec.get("stages") == (std::string(arch) == "sm_121a" ? 2 : 3));
        CHECK(spec.get("producer") == 2);
      }
    }
  for (const auto &[role, spec] : gemmSpecs(std::nullopt))
    CHECK(spec.get("producer") != 1);
}
