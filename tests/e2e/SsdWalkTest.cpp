// The SSD walks' walk_ahead (a chunk's loads issued a chunk ahead as loop
// values) changes only the order of the loads: on the interpreter every output
// is the same bits as the walk without it, for ssd_prefill's single walk over a
// varlen batch with spare chunks and a non-finite x, and for the prefill plan's
// span schedule (ssd_span_state and ssd_prefill span_states=1); the runs with it
// stay within R5p's bands and keep NaN from flowing backwards.
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

namespace {

/// Same bits (NaN payloads included), element for element.
template <typename T> bool sameBits(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

constexpr int64_t kWalks[] = {1, 2, 3}; // WalkAhead::Metadata, XDt, Tiles

} // namespace

TEST_CASE("ssd_prefill: walk_ahead gives the single walk's outputs bit for bit over a "
          "varlen batch with spare chunks and a non-finite x, within R5p's bands",
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
    auto run = [&](const SsdInputs &inputs, int64_t walk, Tensor<float> &page) {
      page = page0;
      return runSsd<float>(inputs, batch, 32, page, precision, {{"walk_ahead", walk}},
                           spare);
    };
    Tensor<float> page = page0, nanPage = page0;
    const std::vector<float> y = run(in, 0, page), yNan = run(nonFinite, 0, nanPage);
    for (int64_t walk : kWalks) {
      INFO("walk_ahead " << walk);
      Tensor<float> walkPage = page0, walkNanPage = page0;
      const std::vector<float> walkY = run(in, walk, walkPage);
      CHECK(sameBits(walkY, y));
      CHECK(sameBits(walkPage.data, page.data));
      const std::vector<float> walkNan = run(nonFinite, walk, walkNanPage);
      CHECK(sameBits(walkNan, yNan));
      CHECK(sameBits(walkNanPage.data, nanPage.data));
      // NaN never flows backwards: every earlier row is the clean run's, the
      // bad token's own head-0 row NaN from it on.
      CHECK(std::memcmp(walkNan.data(), walkY.data(), bad * I * sizeof(float)) == 0);
      for (int64_t t = bad; t < batch.cu[5]; t += 37)
        CHECK(std::isnan(walkNan[t * I + 5]));
      // R5p's bands (f32 y at the bf16 band of each sequence's length).
      int64_t outside = 0;
      for (size_t s = 0; s + 1 < batch.cu.size(); ++s)
        for (int64_t i = batch.cu[s] * I; i < batch.cu[s + 1] * I; ++i)
          outside += !(batch.cu[s + 1] - batch.cu[s] > 256 ? kLongY : kShortY)
                          .holds(walkY[i], wantY[i]);
      CHECK(outside == 0);
      checkPages(walkPage, want, page0, {1, 3, 6});
    }
  }
}

TEST_CASE("prefill plan: walk_ahead on ssd_span_state and ssd_prefill gives the span "
          "schedule's buffers bit for bit and passes the f64 mixer check",
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
  INFO("span tokens " << spanTokens);
  auto runWith = [&](int64_t walk, std::vector<HostBuffers> &after) {
    PlanOptions options{{{"ssd_prefill", {{"block_p", 16}, {"warps", 4}}}},
                        nullptr,
                        /*perLayerActivations=*/true};
    options.ssdSpanTokens = spanTokens;
    options.overrides["ssd_prefill"]["walk_ahead"] = walk;
    options.overrides["ssd_span_state"]["walk_ahead"] = walk;
    auto prefill = planPrefill(modelRegistry(), c, *layers, batch, 150, 6, options);
    INFO((prefill ? "" : llvm::toString(prefill.takeError())));
    REQUIRE(bool(prefill));
    int64_t walks = 0;
    for (const PlannedLaunch &l : prefill->plan.launches)
      if (l.kernel == "ssd_prefill" || l.kernel == "ssd_span_state")
        walks += l.spec.get("walk_ahead") == walk;
    CHECK(walks == 2);
    InterpreterRunner runner(modelRegistry());
    auto run = [&](HostBuffers &buffers) {
      auto ran = runner.run(prefill->plan, buffers);
      after.push_back(buffers);
      return ran;
    };
    auto check = checkPrefillSteps(c, *layers, *prefill, {}, batch, 2, 7, run);
    INFO((check ? "" : llvm::toString(check.takeError())));
    REQUIRE(bool(check));
    INFO(reportOf(*check));
    CHECK(check->ok());
  };
  std::vector<HostBuffers> base;
  runWith(0, base);
  REQUIRE(!base.empty());
  for (int64_t walk : kWalks) {
    INFO("walk_ahead " << walk);
    std::vector<HostBuffers> walked;
    runWith(walk, walked);
    REQUIRE(walked.size() == base.size());
    for (size_t step = 0; step < base.size(); ++step)
      for (const auto &[name, bytes] : base[step]) {
        INFO("step " << step << ", buffer " << name);
        CHECK(walked[step].at(name) == bytes);
      }
  }
}
