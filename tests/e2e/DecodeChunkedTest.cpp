// The chunked decode GEMV (in_proj_conv and out_proj with `chunked` = 1, block_m
// rows against one read of the weight) on the interpreter: carried decode steps
// against the sequential f64 reference with the R1 bands and their
// counterfactuals, and the packed weight read bit for bit as the row-major one.
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/models/reference/Reference.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

/// smallConfig with rows of whole 16-byte chunks (K = 208 e4m3), whose
/// in_proj (392 rows) ends in a half group of 16 and whose K loops end in a
/// partial step.
NemotronHConfig chunkedConfig() {
  NemotronHConfig c = smallConfig();
  c.hiddenSize = 208;
  return c;
}

KernelOverrides chunkedOverrides(int64_t packed) {
  return {{"in_proj_conv", {{"chunked", 1}, {"packed", packed}}},
          {"out_proj", {{"chunked", 1}, {"packed", packed}}}};
}

} // namespace

TEST_CASE("chunked decode projections on the interpreter: carried steps against f64",
          "[e2e][interp][decode]") {
  NemotronHConfig c = chunkedConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  const int64_t rows = GENERATE(1, 2, 3, 8, 17), numSlots = rows + 3;
  INFO("rows " << rows);
  const std::vector<int32_t> slots = randomDecodeSlots(rows, numSlots, 70 + rows);
  auto plan = planDecodeStep(modelRegistry(), c, *layers, rows, numSlots,
                             PlanOptions{chunkedOverrides(1), nullptr, true});
  REQUIRE(bool(plan));
  // Every projection is the chunked GEMV on a packed weight.
  int64_t packedArgs = 0;
  for (const PlannedLaunch &l : plan->launches)
    if (l.kernel == "in_proj_conv" || l.kernel == "out_proj") {
      CHECK(l.spec.get("chunked") == 1);
      CHECK(l.spec.get("block_m") == std::min<int64_t>(16, llvm::PowerOf2Ceil(rows)));
      for (const PlanArg &arg : l.args)
        packedArgs += arg.layout.packed();
    }
  CHECK(packedArgs == 4);
  InterpreterRunner runner(modelRegistry());
  auto check = checkDecodeSteps(c, *layers, *plan, {}, slots, 2, 83,
                                [&](HostBuffers &b) { return runner.run(*plan, b); });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  REQUIRE(check->projections.size() == 4);
  requireDecodeCheck(*check, 2, rows, c.hiddenSize);
}

TEST_CASE("the chunked GEMV reads a packed weight bit for bit as the row-major one",
          "[e2e][interp][decode]") {
  NemotronHConfig c = chunkedConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  const int64_t rows = GENERATE(1, 3), numSlots = rows + 2;
  INFO("rows " << rows);
  const std::vector<int32_t> slots = randomDecodeSlots(rows, numSlots, 5 + rows);
  std::map<int64_t, HostBuffers> after;
  for (int64_t packed : {0, 1}) {
    auto plan = planDecodeStep(modelRegistry(), c, *layers, rows, numSlots,
                               PlanOptions{chunkedOverrides(packed), nullptr, true});
    REQUIRE(bool(plan));
    HostBuffers buffers = randomStepBuffers(*plan, slots, 99, true);
    InterpreterRunner runner(modelRegistry());
    REQUIRE(!llvm::errorToBool(runner.run(*plan, buffers)));
    after[packed] = std::move(buffers);
  }
  REQUIRE(after[0].size() == after[1].size());
  for (const auto &[name, bytes] : after[0]) {
    INFO(name);
    CHECK(after[1].at(name) == bytes);
  }
  // The counterfactual: out_proj's packed kernel reading the row-major bytes
  // (what a runner that forgot the layout would bind; in_proj's padded last
  // group would read past them) computes something else.
  auto plan = planDecodeStep(modelRegistry(), c, *layers, rows, numSlots,
                             PlanOptions{chunkedOverrides(1), nullptr, true});
  REQUIRE(bool(plan));
  for (PlannedLaunch &l : plan->launches)
    if (l.kernel == "out_proj")
      for (PlanArg &arg : l.args)
        arg.layout = {};
  HostBuffers forgot = randomStepBuffers(*plan, slots, 99, true);
  InterpreterRunner runner(modelRegistry());
  REQUIRE(!llvm::errorToBool(runner.run(*plan, forgot)));
  const std::string out = StepPlan::activation(plan->numLayers);
  CHECK(forgot.at(out) != after[1].at(out));
}
