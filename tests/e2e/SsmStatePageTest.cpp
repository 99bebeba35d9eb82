// The 16-bit SSM page as a plan option (docs/numerics.md R8s): carried decode
// and prefill steps on the interpreter against the f64 reference that rounds its
// state to the page's type where a step does, untouched slots byte-identical, a
// dropped carry outside the band, the page's bytes in the plan's counts, a
// stochastic step replayed with its seed writing the same page bytes, and the
// kernels the page changes through ptxas.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/models/session/Session.h"
#include "tilejit/support/FloatFormats.h"

#include "ModelPtxas.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <map>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

PlanOptions pageOptions(DType type, bool stochastic) {
  PlanOptions options;
  options.perLayerActivations = true;
  options.ssmState = {type, stochastic};
  return options;
}

const PlannedLaunch &launchOf(const StepPlan &plan, llvm::StringRef kernel) {
  for (const PlannedLaunch &l : plan.launches)
    if (l.kernel == kernel)
      return l;
  FAIL("no launch of " << kernel.str());
  return plan.launches.front();
}

/// The bytes of slot `slot`'s rows in page `bytes` of `numSlots` slots.
std::vector<uint8_t> slotBytes(const std::vector<uint8_t> &bytes, int64_t numSlots,
                               int64_t slot) {
  const size_t row = bytes.size() / size_t(numSlots);
  return {bytes.begin() + slot * row, bytes.begin() + (slot + 1) * row};
}

} // namespace

TEST_CASE("decode with a 16-bit SSM page on the interpreter: carried steps against "
          "f64 rounded at the page, padding and random slots",
          "[e2e][interp][decode][ssm-page]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  const int64_t rows = GENERATE(1, 3), numSlots = rows + 4;
  const DType type = GENERATE(DType::BF16, DType::F16);
  const bool stochastic = GENERATE(false, true);
  const int steps = 2;
  INFO("rows " << rows << ", page " << tensorTypeName(type).str()
               << (stochastic ? ", stochastic" : ", nearest even"));
  const std::vector<int32_t> slots = randomDecodeSlots(rows, numSlots, 70 + rows);
  auto plan = planDecodeStep(modelRegistry(), c, *layers, rows, numSlots,
                             pageOptions(type, stochastic));
  REQUIRE(bool(plan));
  auto f32 = planDecodeStep(modelRegistry(), c, *layers, rows, numSlots,
                            pageOptions(DType::F32, false));
  REQUIRE(bool(f32));
  // The page and the state update's counted bytes are half the f32 plan's.
  const int64_t stateElements = c.numHeads * c.headDim * c.stateSize;
  const PlanBuffer &page = plan->buffers.at("l0.ssm_page");
  CHECK(page.type == type);
  CHECK(page.bytes == size_t(numSlots * stateElements * 2));
  const PlannedLaunch &ssm = launchOf(*plan, "ssm_update");
  const PlannedLaunch &ssm32 = launchOf(*f32, "ssm_update");
  CHECK(ssm32.bytesRead - ssm.bytesRead == rows * stateElements * 2);
  CHECK(ssm32.bytesWritten - ssm.bytesWritten == rows * stateElements * 2);
  CHECK(ssm.spec.get("stochastic") == int64_t(stochastic));
  CHECK(plan->buffers.count(kSsmSeedBuffer) == size_t(stochastic));

  InterpreterRunner runner(modelRegistry());
  std::map<std::string, std::vector<uint8_t>> before, after;
  int64_t seed = 0;
  auto check =
      checkDecodeSteps(c, *layers, *plan, {}, slots, steps, 83, [&](HostBuffers &b) {
        for (const MambaLayerWeights &w : *layers) {
          std::string name = StepPlan::layerBuffer(w.layer, "ssm_page");
          before.emplace(name, b.at(name));
        }
        if (stochastic)
          b[kSsmSeedBuffer] = bytesOf(std::vector<int64_t>{seed++});
        auto err = runner.run(*plan, b);
        for (auto &[name, bytes] : before)
          after[name] = b.at(name);
        return err;
      });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  INFO(reportOf(*check));
  CHECK(check->ok());
  REQUIRE(check->layers.size() == 2);
  for (const StepCheck::Layer &l : check->layers) {
    CHECK(l.ssmChecked == numSlots * stateElements);
    CHECK(l.ssmBad == 0);
    CHECK(l.pageType == type);
    // Stochastic rounding: the reference continues each step from the page
    // the backend wrote (docs/numerics.md R8s), one rounding apart.
    CHECK(l.pageUlps == (stochastic ? 1 : steps));
    // The counterfactual: a dropped carry leaves the band (ok() holds it
    // where a carried head keeps its state; here one must).
    CHECK(l.droppedCarry >= StepCheck::kMinDroppedCarry);
  }
  CHECK(check->untouchedSlotsDiffering == 0);
  // Untouched slots byte for byte (a -0 rounded from a tiny state would pass a
  // comparison of values).
  std::set<int32_t> used(slots.begin(), slots.end());
  for (auto &[name, bytes] : before)
    for (int64_t slot = 0; slot < numSlots; ++slot)
      if (!used.count(int32_t(slot)))
        CHECK(slotBytes(after.at(name), numSlots, slot) ==
              slotBytes(bytes, numSlots, slot));
}

TEST_CASE("prefill with a 16-bit SSM page: initial states read from it, final states "
          "written to it, against f64",
          "[e2e][interp][prefill][ssm-page]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  const DType type = GENERATE(DType::BF16, DType::F16);
  // The span schedule, or the chunk-parallel one (its pass writes the pages).
  const bool chunked = GENERATE(false, true);
  INFO("chunk-parallel: " << chunked);
  // a fresh sequence of two chunks, a continued one, a padding one
  const ref::PrefillBatch batch{{0, 40, 47, 50}, {1, 3, -1}, {false, true, false}};
  const int64_t numSlots = 5;
  PlanOptions options = pageOptions(type, false);
  options.overrides = {{chunked ? "ssd_chunk_scan" : "ssd_prefill", {{"chunk", 32}}}};
  options.ssdSpanTokens = 32;
  auto prefill = planPrefill(modelRegistry(), c, *layers, batch, 50, numSlots, options);
  REQUIRE(bool(prefill));
  for (const PlannedLaunch &l : prefill->plan.launches) {
    if (l.kernel == "ssd_prefill") {
      CHECK(l.spec.get("init_type") == (type == DType::BF16 ? 0 : 1));
      CHECK(l.spec.get("state_type") == l.spec.get("init_type"));
    }
    if (l.kernel == "ssd_state_pass") {
      CHECK(l.spec.get("page_type") == (type == DType::BF16 ? 0 : 1));
      CHECK(l.spec.get("write_page") == int64_t(chunked));
      if (chunked)
        CHECK(l.spec.get("state_type") == l.spec.get("page_type"));
    }
  }
  InterpreterRunner runner(modelRegistry());
  auto check =
      checkPrefillSteps(c, *layers, *prefill, {}, batch, 2, 91,
                        [&](HostBuffers &b) { return runner.run(prefill->plan, b); });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  INFO(reportOf(*check));
  CHECK(check->ok());
  CHECK(check->untouchedSlotsDiffering == 0);
  REQUIRE(check->layers.size() == 1);
  CHECK(check->layers[0].droppedCarry >= StepCheck::kMinDroppedCarry);
}

TEST_CASE("a stochastic 16-bit page: a step replayed with its seed writes the same "
          "page bytes, another seed other bytes",
          "[e2e][interp][decode][ssm-page]") {
  models::BackendOptions backendOptions;
  backendOptions.kind = models::BackendKind::Interpreter;
  auto backend = models::Backend::open(std::move(backendOptions));
  REQUIRE(bool(backend));
  models::ModelSource source;
  source.geometry = smallConfig();
  source.layers = 1;
  auto model = models::loadModel(source);
  REQUIRE(bool(model));
  models::SessionOptions options;
  options.slots = 4;
  options.ssmState = {GENERATE(DType::BF16, DType::F16), true};
  auto session = models::ModelSession::create(*backend, *model, options);
  REQUIRE(bool(session));
  auto step = (*session)->decode(3);
  REQUIRE(bool(step));
  const std::string pageName =
      StepPlan::layerBuffer((*model)->weights[0].layer, "ssm_page");
  const size_t pageBytes = (*step)->plan().buffers.at(pageName).bytes;
  // Random pages (in the page's type) and hidden rows: every state moves.
  Rng rng(5);
  std::vector<uint16_t> bits;
  for (float v : randomF32({int64_t(pageBytes / 2)}, rng, -1, 1).data)
    bits.push_back(options.ssmState.type == DType::BF16 ? f32ToBF16(v) : f32ToF16(v));
  const std::vector<uint8_t> start = bytesOf(bits);
  Tensor<uint16_t> hidden = randomBF16({3, smallConfig().hiddenSize}, rng, -2, 2);
  Tensor<uint16_t> out({3, smallConfig().hiddenSize});
  const std::vector<int32_t> slots = {2, -1, 0};
  auto ref = [](auto &t) {
    return TensorRef{"bf16", t.shape, {}, -1, uint64_t(uintptr_t(t.data.data()))};
  };
  // The conv page moves on each step too: a replay starts from both pages.
  const std::string convName =
      StepPlan::layerBuffer((*model)->weights[0].layer, "conv_page");
  std::vector<uint8_t> conv((*step)->plan().buffers.at(convName).bytes);
  REQUIRE(!(*step)->read(convName, conv));
  auto run = [&](int64_t seed) {
    REQUIRE(!(*step)->write(pageName, start));
    REQUIRE(!(*step)->write(convName, conv));
    (*step)->setSeed(seed);
    REQUIRE(!(*step)->run(ref(hidden), slots, ref(out), runtime::StreamHandle()));
    CHECK((*step)->seed() == seed + 1); // the counter moves on
    std::vector<uint8_t> page(pageBytes);
    REQUIRE(!(*step)->read(pageName, page));
    return page;
  };
  std::vector<uint8_t> first = run(7), again = run(7), other = run(8);
  CHECK(first == again);
  CHECK(first != start);
  CHECK(other != first);
}

TEST_CASE("the kernels a 16-bit SSM page changes assemble with ptxas for sm_90a, "
          "sm_90 and sm_121a without spills beyond the f32 plan's, stochastic "
          "rounding's hash included",
          "[e2e][plan][ptxas][ssm-page]") {
  auto ptxas = tilejit::testing::findPtxas();
  if (!ptxas) {
    WARN("SKIP: ptxas not found (install the CUDA 13 toolkit)");
    return;
  }
  const NemotronHConfig c; // the full geometry
  std::vector<MambaLayerWeights> layers = {llvm::cantFail(syntheticMambaLayer(c, 0))};
  const ref::PrefillBatch batch{{0, 1024}, {0}, {true}};
  JitCompiler compiler;
  for (const char *archName : {"sm_90a", "sm_90", "sm_121a"}) {
    Arch arch = llvm::cantFail(Arch::parse(archName));
    auto kernelsOf = [&](DType type, bool stochastic) {
      PlanOptions options = pageOptions(type, stochastic);
      options.perLayerActivations = false;
      options.arch = arch;
      std::map<std::string, ConstantValues> kernels;
      auto decode = planDecodeStep(modelRegistry(), c, layers, 64, 128, options);
      auto prefill = planPrefill(modelRegistry(), c, layers, batch, 1024, 1, options);
      REQUIRE(bool(decode));
      REQUIRE(bool(prefill));
      for (const StepPlan *plan : {&*decode, &prefill->plan})
        for (const PlannedLaunch &l : plan->launches)
          if (l.kernel == "ssm_update" || l.kernel.rfind("ssd_", 0) == 0)
            kernels[l.kernel] = l.spec.values();
      return kernels;
    };
    // The f32 plan's spills are the bound: the page type must add none.
    auto spillsOf = [&](const std::string &name, const ConstantValues &constants) {
      return tilejit::testing::spillBytes(
          assembleModelKernel(compiler, *ptxas, name, constants, arch, archName)
              .ptxas.output);
    };
    std::map<std::string, int64_t> f32Spills;
    for (const auto &[name, constants] : kernelsOf(DType::F32, false))
      f32Spills[name] = spillsOf(name, constants);
    for (auto [type, stochastic] :
         {std::pair{DType::BF16, false}, std::pair{DType::F16, false},
          std::pair{DType::BF16, true}, std::pair{DType::F16, true}})
      for (const auto &[name, constants] : kernelsOf(type, stochastic)) {
        INFO(archName << " " << name << " " << formatConstants(constants));
        CHECK(spillsOf(name, constants) <= f32Spills.at(name));
      }
  }
}
