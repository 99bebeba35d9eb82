// The decode kernels (fused in_proj+conv, state update, gated norm with e4m3
// output, out_proj) and the whole planned decode step on the interpreter
// against the sequential f64 reference, with padding rows, random slots and
// carried state. Every band is paired with the counterfactual it separates.
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/models/reference/Reference.h"
#include "tilejit/support/FloatFormats.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

TEST_CASE("decode step on the interpreter: 3 carried steps, FP8 and bf16 layers, "
          "padding and random slots, against f64",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  REQUIRE((*layers)[0].inProj.isFP8);
  REQUIRE(!(*layers)[1].inProj.isFP8);
  const int64_t rows = GENERATE(1, 3, 64), numSlots = rows + 4;
  const std::vector<int32_t> slots = randomDecodeSlots(rows, numSlots, 40 + rows);
  INFO("rows " << rows);
  // The GEMV in_proj (block_m 1) and the tensor-core one (a 16-row tile of
  // which 13 rows are masked).
  // The direct tensor-core projections (operands straight into fragments, K
  // split over warp groups): one masked K step of 256 over K = 200.
  KernelOverrides overrides = GENERATE(
      KernelOverrides{},
      KernelOverrides{
          {"in_proj_conv", {{"block_m", 16}, {"block_n", 64}, {"block_k", 64}}}},
      KernelOverrides{{"in_proj_conv", {{"direct", 1}}}, {"out_proj", {{"direct", 1}}}});
  auto plan =
      planDecodeStep(modelRegistry(), c, *layers, rows, numSlots,
                     PlanOptions{overrides, nullptr, /*perLayerActivations=*/true});
  REQUIRE(bool(plan));
  InterpreterRunner runner(modelRegistry());
  auto check = checkDecodeSteps(c, *layers, *plan, {}, slots, 3, 61,
                                [&](HostBuffers &b) { return runner.run(*plan, b); });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  INFO(reportOf(*check));
  CHECK(check->ok());
  CHECK(check->outChecked == 2 * rows * c.hiddenSize); // both layers
  REQUIRE(check->layers.size() == 2);
  // in_proj and out_proj of both layers, each band with its separations.
  REQUIRE(check->projections.size() == 4);
  for (const ProjectionCheck &p : check->projections) {
    INFO(p.what);
    CHECK(p.outside == 0);
    CHECK(p.separates());
  }
  REQUIRE(check->norms.size() == 2);
  CHECK(check->norms[0].e4m3);
  CHECK(!check->norms[1].e4m3);
  for (const StepCheck::Layer &l : check->layers) {
    CHECK(l.ssmChecked == numSlots * c.numHeads * c.headDim * c.stateSize);
    CHECK(l.convChecked == numSlots * c.convChannels() * 3);
    CHECK(l.ssmBad == 0);
    CHECK(l.convBad == 0);
  }
  CHECK(check->outBad == 0);
  CHECK(check->paddingNonZero == 0);
  CHECK(check->untouchedSlotsDiffering == 0);

  // The counterfactuals of the state bands: a dropped carry (the SSM state
  // zeroed) and an unshifted conv state land far outside them for the rows'
  // slots.
  for (size_t l = 0; l < check->want.size(); ++l) {
    int64_t ssmOutside = 0, convOutside = 0, used = 0;
    for (int32_t slot : slots) {
      if (slot < 0)
        continue;
      ++used;
      auto want = sliceRows(check->want[l].ssm, slot, slot + 1);
      for (float v : want.data)
        ssmOutside +=
            !(std::abs(v) <= StepCheck::kStateAtol + StepCheck::kStateRtol * std::abs(v));
      auto shifted = sliceRows(check->want[l].conv, slot, slot + 1);
      auto unshifted = sliceRows(check->initial[l].conv, slot, slot + 1);
      for (size_t i = 0; i < shifted.data.size(); ++i) {
        double w = bf16ToF32(shifted.data[i]), u = bf16ToF32(unshifted.data[i]);
        convOutside +=
            !(std::abs(u - w) <= StepCheck::kOutAtol + StepCheck::kOutRtol * std::abs(w));
      }
    }
    const int64_t stateElements = c.numHeads * c.headDim * c.stateSize;
    CHECK(ssmOutside > used * stateElements / 2);
    CHECK(convOutside > used * c.convChannels() * 3 / 2);
  }
  // ... and of the output band: s_x dropped from layer 0's in_proj output
  // scale (activations still quantized by it) moves the output outside it.
  std::vector<MambaLayerWeights> broken = *layers;
  broken[0].inProj.weightScale /= broken[0].inProj.inputScale;
  auto brokenPlan = planDecodeStep(modelRegistry(), c, broken, rows, numSlots,
                                   PlanOptions{{}, nullptr, true});
  REQUIRE(bool(brokenPlan));
  auto wrong =
      checkDecodeSteps(c, *layers, *brokenPlan, {}, slots, 1, 61,
                       [&](HostBuffers &b) { return runner.run(*brokenPlan, b); });
  REQUIRE(bool(wrong));
  CHECK(wrong->outBad > wrong->outChecked / 4);
}

TEST_CASE(
    "ssm_update (R5d) alone against f64: state in the f32 band, y within a bf16 ulp",
    "[e2e][interp][decode]") {
  NemotronHConfig c; // full geometry
  const int64_t rows = 3, numSlots = 5, H = c.numHeads, P = c.headDim, N = c.stateSize;
  const int64_t G = c.numGroups, I = c.intermediate(), Cd = c.convChannels();
  Rng rng(12);
  auto layer = syntheticMambaLayer(c, 0);
  REQUIRE(bool(layer));
  Tensor<uint16_t> xBC = randomBF16({rows, Cd}, rng, -1, 1);
  Tensor<uint16_t> dt = randomBF16({rows, H}, rng, -3, 1);
  Tensor<float> page = randomF32({numSlots, H, P, N}, rng, -1, 1);
  const std::vector<int32_t> slots = {3, -1, 0};
  std::vector<uint16_t> y(rows * I, 0x7fc1);
  Tensor<float> want = page;
  auto def = modelRegistry().find("ssm_update");
  REQUIRE(def);
  InterpreterRunner runner(modelRegistry());
  StepPlan plan;
  plan.rows = rows;
  plan.numSlots = numSlots;
  plan.buffers = {{"xbc", {PlanBuffer::Role::Activation, xBC.data.size() * 2}},
                  {"dt", {PlanBuffer::Role::Activation, dt.data.size() * 2}},
                  {"slots", {PlanBuffer::Role::Input, rows * 4}},
                  {"ssm", {PlanBuffer::Role::State, page.data.size() * 4}},
                  {"y", {PlanBuffer::Role::Activation, y.size() * 2}},
                  {"l0.A_log", {PlanBuffer::Role::Weight, size_t(H * 4)}},
                  {"l0.dt_bias", {PlanBuffer::Role::Weight, size_t(H * 4)}},
                  {"l0.D", {PlanBuffer::Role::Weight, size_t(H * 4)}}};
  plan.launches = {{"ssm_update",
                    llvm::cantFail(def->specialize({})),
                    {P / 16, H, rows},
                    {PlanArg::of("xbc"), PlanArg::of("dt"), PlanArg::of("l0.A_log"),
                     PlanArg::of("l0.dt_bias"), PlanArg::of("l0.D"), PlanArg::of("slots"),
                     PlanArg::of("ssm"), PlanArg::of("y"), PlanArg::real(c.dtMin),
                     PlanArg::real(c.dtMax)},
                    0}};
  HostBuffers buffers = {{"xbc", bytesOf(xBC.data)},
                         {"dt", bytesOf(dt.data)},
                         {"slots", bytesOf(slots)},
                         {"ssm", bytesOf(page.data)},
                         {"y", bytesOf(y)}};
  auto bytesOfParam = [](const Tensor<float> &t) {
    return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(t.data.data()),
                                   t.data.size() * 4);
  };
  plan.buffers.at("l0.A_log").hostWeight = bytesOfParam(layer->aLog);
  plan.buffers.at("l0.dt_bias").hostWeight = bytesOfParam(layer->dtBias);
  plan.buffers.at("l0.D").hostWeight = bytesOfParam(layer->d);
  REQUIRE(!runner.run(plan, buffers));

  // The reference on the R2 views of the same xBC.
  Tensor<uint16_t> x = sliceColumns(xBC, 0, I).reshaped({rows, H, P});
  Tensor<uint16_t> B = sliceColumns(xBC, I, I + G * N).reshaped({rows, G, N});
  Tensor<uint16_t> C = sliceColumns(xBC, I + G * N, Cd).reshaped({rows, G, N});
  auto params = ref::SsmParams::of(c, *layer);
  auto wantY = ref::ssmUpdatePaged(x, dt, B, C, params, {3, -1, 0}, want);
  REQUIRE(bool(wantY));
  std::vector<float> gotState(page.data.size());
  std::memcpy(gotState.data(), buffers["ssm"].data(), gotState.size() * 4);
  int64_t bad = 0, checked = 0, notIdentical = 0;
  for (size_t i = 0; i < gotState.size(); ++i, ++checked) {
    double g = gotState[i], w = want.data[i];
    bad += !(std::abs(g - w) <= 1e-3 + 3e-4 * std::abs(w)); // R5d's f32 band
    notIdentical += gotState[i] != page.data[i];
  }
  CHECK(bad == 0);
  CHECK(checked == numSlots * H * P * N);
  CHECK(notIdentical == 2 * H * P * N); // exactly the two rows' slots moved
  std::vector<uint16_t> gotY(y.size());
  std::memcpy(gotY.data(), buffers["y"].data(), gotY.size() * 2);
  int64_t yBad = 0;
  for (size_t i = 0; i < gotY.size(); ++i) {
    double w = ref::bf16Value(ref::bf16Bits(wantY->data[i]));
    // f32 vs f64 before one bf16 rounding: at most one bf16 ulp apart.
    yBad += !(std::abs(bf16ToF32(gotY[i]) - w) <= 0x1p-7 * std::abs(w) + 1e-30);
  }
  CHECK(yBad == 0);
  // The counterfactual of the y band: dropping D * x moves y by far more.
  int64_t dMatters = 0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t p = 0; p < P; ++p) {
      double w = wantY->data[h * P + p];
      double dx = layer->d.data[h] * ref::bf16Value(x.data[h * P + p]);
      dMatters += std::abs(dx) > 0x1p-6 * std::abs(w);
    }
  CHECK(dMatters > H * P / 2);
}

TEST_CASE("compareBuffer: identical buffers agree, one code or one exponent bit apart is "
          "judged by its type's band",
          "[e2e][decode]") {
  Rng rng(5);
  std::vector<uint8_t> codes = {0x38, 0x39, 0xb8, 0x00, 0x80};
  PlanBuffer e4m3{PlanBuffer::Role::Activation, codes.size(), DType::F8E4M3, {5}};
  CHECK(compareBuffer(e4m3, codes, codes).outside == 0);
  std::vector<uint8_t> moved = codes;
  moved[0] ^= 0x01; // one code: the quantization step a one-ulp input may move
  moved[3] = 0x80;  // +0 against -0
  CHECK(compareBuffer(e4m3, moved, codes).outside == 0);
  moved[1] ^= 0x02; // two codes apart
  CHECK(compareBuffer(e4m3, moved, codes).outside == 1);
  std::vector<uint8_t> state = bytesOf(randomF32({64}, rng, -1, 1).data);
  PlanBuffer f32{PlanBuffer::Role::State, state.size(), DType::F32, {64}};
  std::vector<uint8_t> flipped = state;
  flipped[3] ^= 0x40; // an exponent bit of one f32
  BufferAgreement a = compareBuffer(f32, flipped, state);
  CHECK(a.elements == 64);
  CHECK(a.identical == 63);
  CHECK(a.outside == 1);
}

TEST_CASE("a planted defect makes the decode check fail at the band that guards it",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1); // FP8
  REQUIRE(bool(layers));
  const Defect defect = GENERATE(Defect::DropKStep, Defect::ScaleColumn,
                                 Defect::DropInputScale, Defect::DropCarry);
  INFO(defectName(defect).str());
  std::vector<MambaLayerWeights> planted = plantWeightDefect(*layers, defect);
  const int64_t rows = 3, numSlots = 6;
  auto plan = planDecodeStep(modelRegistry(), c, planted, rows, numSlots,
                             PlanOptions{{}, nullptr, true});
  REQUIRE(bool(plan));
  InterpreterRunner runner(modelRegistry());
  auto check = checkDecodeSteps(
      c, *layers, *plan, {}, randomDecodeSlots(rows, numSlots, 9), 2, 5,
      plantCarryDefect([&](HostBuffers &b) { return runner.run(*plan, b); }, *plan,
                       defect));
  REQUIRE(bool(check));
  std::string report;
  llvm::raw_string_ostream os(report);
  check->print(os);
  INFO(report);
  CHECK(!check->ok());
  if (defect == Defect::DropCarry) {
    CHECK(check->layers[0].ssmBad > 0);
  } else {
    REQUIRE(!check->projections.empty());
    CHECK(check->projections[0].outside > 0); // in_proj
  }
}
