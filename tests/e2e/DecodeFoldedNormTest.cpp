// out_proj with the gated norm folded into its GEMV prologue (`norm_prologue`)
// on the interpreter: the decode step computes bit for bit what the separate
// gated_rmsnorm and out_proj launches compute (so the separate plan's f64
// checks carry over), on both GEMV paths, FP8 and bf16 layers.
#include "tilejit/models/nemotron_h/Check.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

/// The decode step of `layers` after one interpreted step from seeded buffers.
HostBuffers stepAfter(const NemotronHConfig &c,
                      const std::vector<MambaLayerWeights> &layers, int64_t rows,
                      const std::vector<int32_t> &slots, KernelOverrides o,
                      float epsScale = 1.0f) {
  auto plan = planDecodeStep(modelRegistry(), c, layers, rows, rows + 3,
                             PlanOptions{std::move(o)});
  REQUIRE(bool(plan));
  for (PlannedLaunch &l : plan->launches)
    for (PlanArg &arg : l.args)
      if (l.kernel == "out_proj" && arg.kind == PlanArg::Kind::Float &&
          arg.floatValue == c.eps)
        arg.floatValue *= epsScale;
  HostBuffers buffers = randomStepBuffers(*plan, slots, 41, true);
  InterpreterRunner runner(modelRegistry());
  llvm::Error error = runner.run(*plan, buffers);
  INFO((error ? llvm::toString(std::move(error)) : ""));
  REQUIRE(!error);
  return buffers;
}

} // namespace

TEST_CASE("the folded norm computes bit for bit what gated_rmsnorm feeds out_proj",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  c.hiddenSize = 208; // whole 16-byte chunks for the chunked GEMV
  const std::vector<MambaLayerWeights> layers = mixedProjectionLayers(c);
  const int64_t rows = GENERATE(1, 3), chunked = GENERATE(0, 1);
  INFO("rows " << rows << ", chunked " << chunked);
  const std::vector<int32_t> slots = randomDecodeSlots(rows, rows + 3, 17 + rows);
  // K steps of one norm group (64 channels here) in both plans, so their
  // GEMVs sum in the same order.
  KernelOverrides separate = {
      {"out_proj", {{"chunked", chunked}, {"packed", chunked}, {"block_k", 64}}}};
  KernelOverrides folded = separate;
  folded["out_proj"]["norm_prologue"] = 1;

  auto plan =
      planDecodeStep(modelRegistry(), c, layers, rows, rows + 3, PlanOptions{folded});
  REQUIRE(bool(plan));
  int64_t foldedLaunches = 0;
  for (const PlannedLaunch &l : plan->launches) {
    CHECK(l.kernel != "gated_rmsnorm");
    foldedLaunches += l.kernel == "out_proj" && l.spec.get("norm_prologue") == 1;
  }
  CHECK(foldedLaunches == 2);

  HostBuffers want = stepAfter(c, layers, rows, slots, separate);
  HostBuffers got = stepAfter(c, layers, rows, slots, folded);
  REQUIRE(got.size() == want.size());
  // Every buffer but the normed intermediate the folded plan no longer writes:
  // the outputs, the states (untouched slots included) and the padding rows.
  for (const auto &[name, bytes] : want)
    if (name.find("normed") == std::string::npos) {
      INFO(name);
      CHECK(got.at(name) == bytes);
    }
  // The counterfactual: the folded kernel with another eps computes something else.
  HostBuffers other = stepAfter(c, layers, rows, slots, folded, 4096.0f);
  const std::string out = StepPlan::activation(2);
  CHECK(other.at(out) != got.at(out));
}

TEST_CASE("the folded norm on the interpreter: carried steps against f64",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  const int64_t rows = GENERATE(1, 3), numSlots = rows + 3;
  INFO("rows " << rows);
  const std::vector<int32_t> slots = randomDecodeSlots(rows, numSlots, 90 + rows);
  // A checked plan keeps gated_rmsnorm beside the folded out_proj so that its
  // checks can read the activation; out_proj reads y and z only.
  auto plan = planDecodeStep(
      modelRegistry(), c, *layers, rows, numSlots,
      PlanOptions{{{"out_proj", {{"norm_prologue", 1}, {"skinny", 0}}}}, nullptr, true});
  INFO((plan ? "" : llvm::toString(plan.takeError())));
  REQUIRE(bool(plan));
  for (const PlannedLaunch &l : plan->launches)
    if (l.kernel == "out_proj") {
      CHECK(l.spec.get("norm_prologue") == 1);
      for (const PlanArg &arg : l.args)
        CHECK(arg.buffer.find("normed") == std::string::npos);
    }
  InterpreterRunner runner(modelRegistry());
  auto check = checkDecodeSteps(c, *layers, *plan, {}, slots, 2, 61,
                                [&](HostBuffers &b) { return runner.run(*plan, b); });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  requireDecodeCheck(*check, 2, rows, c.hiddenSize);
}
