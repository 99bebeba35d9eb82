// The persistent decode GEMV (in_proj_conv and out_proj with `gemv_programs`
// P > 0: P programs a row walk the column tiles) on the interpreter: carried
// steps against the sequential f64 reference, and every buffer bit for bit as
// the one-tile-a-program GEMV leaves it, with several tiles a program, tile
// counts P does not divide, and P past the tiles; and the B = 1 plan's walking
// kernels through ptxas without spills.
#include "tilejit/models/nemotron_h/Check.h"

#include "ModelPtxas.h"
#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

/// smallConfig's in_proj has 25 FP8 tiles of 16 columns and 49 bf16 ones of
/// 8, out_proj 50 of 4: 2, 7 or 9 programs walk 3 to 25 tiles each, 64 leave
/// programs without a tile. Direct off, so 3 rows are the GEMV too.
KernelOverrides walkOverrides(int64_t inPrograms, int64_t outPrograms, int64_t fold) {
  KernelOverrides o = {{"in_proj_conv", {{"direct", 0}}},
                       {"out_proj", {{"direct", 0}, {"norm_prologue", fold}}}};
  if (inPrograms)
    o["in_proj_conv"]["gemv_programs"] = inPrograms;
  if (outPrograms)
    o["out_proj"]["gemv_programs"] = outPrograms;
  // K steps of one norm group (64 channels), as the folded norm takes.
  if (fold)
    o["out_proj"]["block_k"] = 64;
  return o;
}

StepPlan planWalk(const NemotronHConfig &c, const std::vector<MambaLayerWeights> &layers,
                  int64_t rows, const KernelOverrides &o) {
  auto plan = planDecodeStep(modelRegistry(), c, layers, rows, rows + 3,
                             PlanOptions{o, nullptr, true});
  INFO((plan ? "" : llvm::toString(plan.takeError())));
  REQUIRE(bool(plan));
  return std::move(*plan);
}

} // namespace

TEST_CASE("the persistent decode GEMV on the interpreter: carried steps against f64",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  const int64_t rows = GENERATE(1, 3), fold = GENERATE(0, 1);
  INFO("rows " << rows << ", norm_prologue " << fold);
  StepPlan plan = planWalk(c, *layers, rows, walkOverrides(7, 9, fold));
  // Both projections of both layers walk: the grid's x is P.
  int64_t walks = 0;
  for (const PlannedLaunch &l : plan.launches)
    if (l.kernel == "in_proj_conv" || l.kernel == "out_proj") {
      CHECK(l.grid[0] == (l.kernel == "out_proj" ? 9 : 7));
      CHECK(l.grid[1] == rows);
      walks += l.spec.get("gemv_programs") > 0;
    }
  CHECK(walks == 4);
  const std::vector<int32_t> slots = randomDecodeSlots(rows, rows + 3, 30 + rows);
  InterpreterRunner runner(modelRegistry());
  auto check = checkDecodeSteps(c, *layers, plan, {}, slots, 2, 61,
                                [&](HostBuffers &b) { return runner.run(plan, b); });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  requireDecodeCheck(*check, 2, rows, c.hiddenSize);
}

TEST_CASE("the persistent decode GEMV leaves every buffer bit for bit as the "
          "one-tile-a-program GEMV",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  const int64_t rows = GENERATE(1, 3), fold = GENERATE(0, 1);
  const std::vector<int32_t> slots = randomDecodeSlots(rows, rows + 3, 12 + rows);
  auto stepAfter = [&](const KernelOverrides &o) {
    StepPlan plan = planWalk(c, *layers, rows, o);
    // Activations start poisoned (NaN bytes): a tile the walk skipped would
    // keep its poison.
    HostBuffers buffers = randomStepBuffers(plan, slots, 57, true);
    for (auto &[name, bytes] : buffers)
      if (name != "act0" && name != "slots" && name.find("page") == std::string::npos)
        std::fill(bytes.begin(), bytes.end(), uint8_t(0xff));
    InterpreterRunner runner(modelRegistry());
    llvm::Error error = runner.run(plan, buffers);
    INFO((error ? llvm::toString(std::move(error)) : ""));
    REQUIRE(!error);
    return buffers;
  };
  const HostBuffers once = stepAfter(walkOverrides(0, 0, fold));
  for (auto [in, out] : {std::pair<int64_t, int64_t>{7, 9}, {2, 64}, {64, 2}}) {
    INFO("rows " << rows << ", norm_prologue " << fold << ", programs " << in << " / "
                 << out);
    const HostBuffers walked = stepAfter(walkOverrides(in, out, fold));
    REQUIRE(walked.size() == once.size());
    for (const auto &[name, bytes] : once) {
      INFO(name);
      CHECK(walked.at(name) == bytes);
    }
  }
}

TEST_CASE("gemv_programs takes the GEMV form", "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  c.hiddenSize = 208; // whole 16-byte chunks: only gemv_programs breaks a rule
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  for (const char *form : {"chunked", "direct", "skinny"}) {
    INFO(form);
    KernelOverrides o = {{"in_proj_conv", {{"gemv_programs", 7}, {form, 1}}}};
    auto plan = planDecodeStep(modelRegistry(), c, *layers, 8, 11, PlanOptions{o});
    REQUIRE(!plan);
    CHECK_THAT(llvm::toString(plan.takeError()),
               Catch::Contains("gemv_programs > 0 takes the GEMV"));
  }
  // The bf16 layer's 49 in_proj tiles on one program: 49 walks, unrolled.
  KernelOverrides o = {{"in_proj_conv", {{"gemv_programs", 1}}}};
  auto plan = planDecodeStep(modelRegistry(), c, *layers, 1, 4, PlanOptions{o});
  REQUIRE(!plan);
  CHECK_THAT(llvm::toString(plan.takeError()),
             Catch::Contains("at most 32 column tiles"));
}

TEST_CASE("the persistent GEMVs of the sm_90a B = 1 plan assemble without spills",
          "[e2e][plan][ptxas]") {
  auto assembled = assembleDecodeForm({{"in_proj_conv", {{"gemv_programs", 264}}},
                                       {"out_proj", {{"gemv_programs", 264}}}},
                                      {1}, "gemv_programs");
  if (assembled)
    CHECK(assembled->size() == 4); // both projections, FP8 and bf16
}
