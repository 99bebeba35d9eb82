// The decode kernels (fused in_proj+conv, state update, gated norm with e4m3
// output, out_proj) and the whole planned decode step on the interpreter
// against the sequential f64 reference, with padding rows, random slots and
// carried state. Every band is paired with the counterfactual it separates.
#include "tilejit/Support/FloatFormats.h"
#include "tilejit/models/DecodeCheck.h"
#include "tilejit/models/Kernels.h"
#include "tilejit/models/Reference.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace tilejit;
using namespace tilejit::models;

namespace {

const KernelRegistry &registry() {
  static KernelRegistry r = [] {
    KernelRegistry reg;
    llvm::cantFail(registerModelKernels(reg));
    return reg;
  }();
  return r;
}

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}



/// A small NemotronH whose layer 0 has FP8 projections and layer 1 bf16 ones
/// (an attention layer follows it), with geometry the decode tiles divide
/// unevenly: in_proj's K of 200 is 1.6 steps of 128, its 392 outputs 24.5
/// programs of 16, out_proj's K of 128 half a step of 256.
NemotronHConfig smallConfig() {
  NemotronHConfig c;
  c.hiddenSize = 200;
  c.numHeads = 8;
  c.headDim = 16;
  c.numGroups = 2;
  c.stateSize = 32;
  c.layerPattern = "MM*";
  return c;
}

} // namespace

TEST_CASE("decode step on the interpreter: 3 carried steps, FP8 and bf16 layers, "
          "padding and random slots, against f64",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  REQUIRE((*layers)[0].inProj.isFP8);
  REQUIRE(!(*layers)[1].inProj.isFP8);
  const int64_t numSlots = 7;
  const std::vector<int32_t> slots = {5, -1, 2};
  // The GEMV in_proj (block_m 1) and the tensor-core one (a 16-row tile of
  // which 13 rows are masked).
  KernelOverrides overrides = GENERATE(
      KernelOverrides{},
      KernelOverrides{{"in_proj_conv", {"block_m=16", "block_n=64", "block_k=64"}}});
  auto plan = planDecodeStep(registry(), c, *layers, 3, numSlots, overrides);
  REQUIRE(bool(plan));
  InterpreterDecoder decoder(registry());
  auto check = checkDecodeSteps(c, *layers, *plan, slots, 3, 61, [&](HostBuffers &b) {
    return decoder.run(*plan, *layers, b);
  });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  std::string report;
  llvm::raw_string_ostream os(report);
  check->print(os);
  INFO(report);
  CHECK(check->ok());
  CHECK(check->outChecked == 3 * c.hiddenSize);
  CHECK(check->ssmChecked == 2 * numSlots * c.numHeads * c.headDim * c.stateSize);
  CHECK(check->convChecked == 2 * numSlots * c.convChannels() * 3);
  CHECK(check->outBad == 0);
  CHECK(check->ssmBad == 0);
  CHECK(check->paddingNonZero == 0);
  CHECK(check->untouchedSlotsDiffering == 0);

  // The counterfactual of the state band: a dropped carry (the state zeroed)
  // lands far outside it.
  for (const ref::PagedState &want : check->want) {
    int64_t outside = 0;
    for (float v : want.ssm.data)
      outside += !(std::abs(v) <= 1e-3 + 3e-4 * std::abs(v));
    CHECK(outside > int64_t(want.ssm.data.size()) / 2);
  }
  // ... and of the output band: s_x dropped from layer 0's in_proj output
  // scale (activations still quantized by it) moves the output outside it.
  std::vector<MambaLayerWeights> broken = *layers;
  broken[0].inProj.weightScale /= broken[0].inProj.inputScale;
  auto brokenPlan = planDecodeStep(registry(), c, broken, 3, numSlots);
  REQUIRE(bool(brokenPlan));
  auto wrong = checkDecodeSteps(c, *layers, *brokenPlan, slots, 1, 61, [&](HostBuffers &b) {
    return decoder.run(*brokenPlan, broken, b);
  });
  REQUIRE(bool(wrong));
  CHECK(wrong->outBad > wrong->outChecked / 4);
}

TEST_CASE("decode step: duplicate and out-of-range slots are refused before any launch",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  auto plan = planDecodeStep(registry(), c, *layers, 3, 4);
  REQUIRE(bool(plan));
  HostBuffers buffers = allocateHostBuffers(*plan);
  Rng rng(3);
  buffers["l0.ssm_page"] = bytesOf(randomF32({4, c.numHeads, c.headDim, c.stateSize}, rng, -1, 1).data);
  const std::vector<uint8_t> before = buffers["l0.ssm_page"];
  InterpreterDecoder decoder(registry());
  buffers["slots"] = bytesOf(std::vector<int32_t>{1, -1, 1});
  std::string message = llvm::toString(decoder.run(*plan, *layers, buffers));
  CHECK(message.find("slot 1 appears twice in one batch (row 2)") != std::string::npos);
  buffers["slots"] = bytesOf(std::vector<int32_t>{0, 4, -3});
  message = llvm::toString(decoder.run(*plan, *layers, buffers));
  CHECK(message.find("row 1 uses slot 4, but the pages hold 4 slots") != std::string::npos);
  CHECK(buffers["l0.ssm_page"] == before);
}

TEST_CASE("decode plan: a bad kernel override fails the plan with the kernel's message",
          "[e2e][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  auto plan = planDecodeStep(registry(), c, *layers, 1, 1, {{"out_proj", {"block_x=3"}}});
  REQUIRE(!plan);
  CHECK(llvm::toString(plan.takeError()).find("block_x") != std::string::npos);
}
