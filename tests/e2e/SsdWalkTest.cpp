// The SSD walks over chunks on the interpreter: ssd_prefill's single walk over a
// varlen batch with spare chunks and a non-finite x (R5p's bands, NaN never
// flowing backwards), and the prefill plan's span schedule (ssd_span_state and
// ssd_prefill span_states=1) against the f64 mixer check in the exact and split
// state modes, whose SSD check fails a dropped carry.
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/models/plan/Runners.h"

#include "ModelTestSupport.h"
#include "SsdTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;
using namespace tilejit::models::testing::ssd;

TEST_CASE("ssd_prefill: the single walk over a varlen batch with spare chunks and a "
          "non-finite x stays within R5p's bands and keeps NaN from flowing backwards",
          "[e2e][interp][prefill]") {
  // Lengths 5 and 1 (shorter than a chunk), 35, 99 (padding) and 160; chunk
  // 32; then none or three spare chunks (the walk's last chunk a live one or
  // a spare one).
  const Batch batch{{0, 5, 40, 41, 140, 300}, {4, 0, 2, -1, 5}, {1, 0, 1, 1, 1}};
  const int64_t spare = GENERATE(0, 3), bad = 190; // bad: in sequence 4's second chunk
  INFO(spare << " spare chunks");
  const auto [in, page0, want, wantY] = referenceCase(batch, 7, 33);
  SsdInputs nonFinite = in;
  nonFinite.xBC.data[bad * Cd + 5] = 0x7fc0; // a bf16 NaN in x, head 0

  for (const auto precision : {SsdPrecision::Exact, SsdPrecision::SplitState}) {
    INFO("precision " << int64_t(precision));
    Tensor<float> page = page0, nanPage = page0;
    const std::vector<float> y = runSsd<float>(in, batch, 32, page, precision, {}, spare);
    const std::vector<float> yNan =
        runSsd<float>(nonFinite, batch, 32, nanPage, precision, {}, spare);
    // NaN never flows backwards: every earlier row is the clean run's, the
    // bad token's own head-0 row NaN from it on.
    CHECK(std::memcmp(yNan.data(), y.data(), bad * I * sizeof(float)) == 0);
    for (int64_t t = bad; t < batch.cu[5]; t += 37)
      CHECK(std::isnan(yNan[t * I + 5]));
    // R5p's bands (f32 y at the bf16 band of each sequence's length).
    int64_t outside = 0;
    for (size_t s = 0; s + 1 < batch.cu.size(); ++s)
      for (int64_t i = batch.cu[s] * I; i < batch.cu[s + 1] * I; ++i)
        outside += !(batch.cu[s + 1] - batch.cu[s] > 256 ? kLongY : kShortY)
                        .holds(y[i], wantY[i]);
    CHECK(outside == 0);
    checkPages(page, want, page0, {1, 3, 6});
  }
}

TEST_CASE("prefill plan: the span schedule (ssd_span_state, ssd_prefill over spans) "
          "passes the f64 mixer check in the exact and split state modes, and its SSD "
          "check fails a dropped carry",
          "[e2e][interp][prefill]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  // Lengths 5 (continued), 65 (fresh, three chunks), 1 (padding), 59
  // (continued), 20 (fresh).
  const ref::PrefillBatch batch{
      {0, 5, 70, 71, 130, 150}, {3, 0, -1, 5, 1}, {true, false, true, true, false}};
  // Spans of 2 and 1 chunks: sequences across spans, tails from a span's
  // start and from a sequence start, and spans of one chunk.
  const int64_t spanTokens = GENERATE(64, 32);
  const auto precision = GENERATE(SsdPrecision::Exact, SsdPrecision::SplitState);
  INFO("span tokens " << spanTokens << ", precision " << int64_t(precision));
  PlanOptions options{{{"ssd_prefill", {{"block_p", 16}, {"warps", 4}}}},
                      nullptr,
                      /*perLayerActivations=*/true};
  options.ssdSpanTokens = spanTokens;
  options.overrides["ssd_prefill"]["precision"] = int64_t(precision);
  auto prefill = planPrefill(modelRegistry(), c, *layers, batch, 150, 6, options);
  INFO((prefill ? "" : llvm::toString(prefill.takeError())));
  REQUIRE(bool(prefill));
  CHECK(prefill->ssdPrecision == precision);
  InterpreterRunner runner(modelRegistry());
  const StepFn run = [&](HostBuffers &buffers) {
    return runner.run(prefill->plan, buffers);
  };
  auto check = checkPrefillSteps(c, *layers, *prefill, {}, batch, 2, 7, run);
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  INFO(reportOf(*check));
  CHECK(check->ok());
  REQUIRE(check->ssds.size() == 1);
  CHECK(check->ssds[0].precision == precision);
  // A reduced mode's layer outputs are bounded by the yardstick's layers.
  CHECK(check->yardOut == (precision != SsdPrecision::Exact));
  if (check->yardOut)
    CHECK(check->yardOutChecked == check->outChecked);

  // The counterfactual: a carry dropped in the checked forward (the only one)
  // puts y outside the band where the yardstick puts none.
  auto dropped =
      checkPrefillSteps(c, *layers, *prefill, {}, batch, 1, 7,
                        plantCarryDefect(run, prefill->plan, Defect::DropCarry));
  REQUIRE(bool(dropped));
  INFO(reportOf(*dropped));
  CHECK(!dropped->ok());
  REQUIRE(dropped->ssds.size() == 1);
  CHECK(!dropped->ssds[0].ok());
  CHECK(dropped->ssds[0].outside > dropped->ssds[0].yardOutside);
  if (precision != SsdPrecision::Exact)
    CHECK(!dropped->outputsOk());
}

TEST_CASE("a reduced SSD's layer outputs may leave the band only as far as R5p-m's "
          "yardstick layers do",
          "[e2e][prefill]") {
  StepCheck check;
  check.outChecked = 1000;
  CHECK(check.outputsOk()); // none outside: R5p's own band holds
  check.outBad = 2, check.outMaxError = 1.2;
  CHECK_FALSE(check.outputsOk()); // the exact mode: none may be outside
  check.yardOut = true, check.yardOutBad = 3, check.yardOutMaxError = 1.0;
  CHECK(check.outputsOk());
  check.outBad = 4; // more than the yardstick's
  CHECK_FALSE(check.outputsOk());
  check.outBad = 3, check.outMaxError = 1.26; // past 1.25 x its worst
  CHECK_FALSE(check.outputsOk());
}
