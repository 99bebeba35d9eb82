// The skinny decode projections (`skinny` = 1: the weight as the mma's M side,
// a few batch rows as its N side) in decode plans on the interpreter: carried
// steps against the sequential f64 reference with the R1 / R1b bands and
// their counterfactuals, padding rows of the 8-row tile, random slots.
#include "tilejit/models/nemotron_h/Check.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

KernelOverrides skinnyOverrides() {
  return {{"in_proj_conv", {{"skinny", 1}}}, {"out_proj", {{"skinny", 1}}}};
}

/// Two carried steps of `plan` on the interpreter against f64, every band
/// with its counterfactuals.
void requireSkinnySteps(const NemotronHConfig &c,
                        const std::vector<MambaLayerWeights> &layers,
                        const StepPlan &plan, int64_t rows, uint64_t seed) {
  InterpreterRunner runner(modelRegistry());
  auto check =
      checkDecodeSteps(c, layers, plan, {}, randomDecodeSlots(rows, rows + 3, seed), 2,
                       seed + 20, [&](HostBuffers &b) { return runner.run(plan, b); });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  REQUIRE(check->projections.size() == 4);
  requireDecodeCheck(*check, 2, rows, c.hiddenSize);
}

} // namespace

TEST_CASE("skinny decode projections on the interpreter: carried steps against f64",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  // Layer 0 an FP8 in_proj and a bf16 out_proj, layer 1 the reverse.
  const std::vector<MambaLayerWeights> layers = mixedProjectionLayers(c);
  const int64_t rows = GENERATE(2, 3, 8);
  INFO("rows " << rows);
  auto plan = planDecodeStep(modelRegistry(), c, layers, rows, rows + 3,
                             PlanOptions{skinnyOverrides(), nullptr, true});
  REQUIRE(bool(plan));
  int64_t skinny = 0, quants = 0;
  for (const PlannedLaunch &l : plan->launches) {
    if (l.kernel == "in_proj_conv" || l.kernel == "out_proj") {
      CHECK(l.spec.get("skinny") == 1);
      CHECK(l.spec.get("block_m") == 8);
      ++skinny;
    }
    // Only the FP8 in_proj reads an e4m3 activation quantized before it.
    if (l.kernel == "in_proj_conv")
      CHECK(l.spec.get("quantized_input") == l.spec.get("fp8"));
    quants += l.kernel == "quantize_e4m3";
  }
  CHECK(skinny == 4);
  CHECK(quants == 1);
  requireSkinnySteps(c, layers, *plan, rows, 17);
}

TEST_CASE("the skinny in_proj quantizing in the kernel agrees with f64 too",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  const std::vector<MambaLayerWeights> layers = mixedProjectionLayers(c);
  const int64_t rows = 3;
  KernelOverrides overrides = skinnyOverrides();
  overrides["in_proj_conv"]["quantized_input"] = 0;
  auto plan = planDecodeStep(modelRegistry(), c, layers, rows, rows + 3,
                             PlanOptions{overrides, nullptr, true});
  REQUIRE(bool(plan));
  for (const PlannedLaunch &l : plan->launches)
    CHECK(l.kernel != "quantize_e4m3");
  requireSkinnySteps(c, layers, *plan, rows, 5);
}
