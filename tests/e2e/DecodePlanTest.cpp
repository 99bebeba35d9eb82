// What the decode plan launches and how its runners take it: the GEMM path
// from 64 rows on sm_90a (run on the interpreter against f64), FP8 and bf16
// projections mixed within a layer, slots refused before any launch, every
// buffer's type and shape, kernel overrides and tuning-database entries
// (DecodeRunnerTest.cpp: the GPU runner on the fake device).
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/runtime/Jit.h"
#include "tilejit/tuning/TunedLookup.h"

#include "llvm/Support/FileSystem.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

TEST_CASE("decode step from 64 rows on sm_90a: prefill's GEMMs, the conv and the state "
          "update reading zxbcdt in place, on the interpreter against f64",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig(); // hidden 200: FP8 rows of 200 bytes
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  const int64_t rows = 64, numSlots = rows + 4;
  const std::vector<int32_t> slots = randomDecodeSlots(rows, numSlots, 77);
  PlanOptions options{{}, nullptr, /*perLayerActivations=*/true};
  options.arch = llvm::cantFail(Arch::parse("sm_90a"));
  auto plan = planDecodeStep(modelRegistry(), c, *layers, rows, numSlots, options);
  REQUIRE(bool(plan));
  // The bf16 layer (rows of 400 bytes) takes the producer GEMMs; the FP8 one,
  // whose rows TMA cannot copy, keeps the fused in_proj_conv.
  std::map<std::pair<int64_t, std::string>, std::string> kernelOf;
  for (const PlannedLaunch &l : plan->launches)
    kernelOf[{l.layer, l.role}] = l.kernel;
  const int64_t fp8Layer = (*layers)[0].layer, bf16Layer = (*layers)[1].layer;
  CHECK(kernelOf[{fp8Layer, "in_proj"}] == "in_proj_conv");
  CHECK(kernelOf.count({fp8Layer, "conv"}) == 0);
  CHECK(kernelOf[{bf16Layer, "in_proj"}] == "out_proj");
  CHECK(kernelOf[{bf16Layer, "conv"}] == "conv_update");
  // Both GEMMs' few column tiles would leave most multiprocessors idle: they
  // split K (decodeKSplits), each summed by split_k_sum.
  for (const PlannedLaunch &l : plan->launches)
    if (l.layer == bf16Layer && (l.role == "in_proj" || l.role == "out_proj")) {
      INFO(l.role);
      CHECK(l.spec.get("producer") == 1);
      CHECK(l.spec.get("k_splits") > 1);
      CHECK(kernelOf[{bf16Layer, l.role + "_sum"}] == "split_k_sum");
    }
  // The caller's out_proj.k_splits=1 keeps the unsplit plans: out_proj on
  // the decode tiles below 256 rows.
  PlanOptions unsplit = options;
  unsplit.overrides["out_proj"]["k_splits"] = 1;
  auto kept = planDecodeStep(modelRegistry(), c, *layers, rows, numSlots, unsplit);
  REQUIRE(bool(kept));
  for (const PlannedLaunch &l : kept->launches)
    if (l.layer == bf16Layer && (l.role == "in_proj" || l.role == "out_proj")) {
      INFO(l.role);
      CHECK((l.spec.get("producer") == 1) == (l.role == "in_proj"));
      CHECK(l.spec.get("k_splits") == 1);
    }
  // From 256 rows out_proj is the GEMM too (planned only).
  auto wide = planDecodeStep(modelRegistry(), c, *layers, 256, 260, options);
  REQUIRE(bool(wide));
  for (const PlannedLaunch &l : wide->launches)
    if (l.layer == bf16Layer && l.role == "out_proj")
      CHECK(l.spec.get("producer") == 1);
  InterpreterRunner runner(modelRegistry());
  auto check = checkDecodeSteps(c, *layers, *plan, {}, slots, 2, 63,
                                [&](HostBuffers &b) { return runner.run(*plan, b); });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  INFO(reportOf(*check));
  CHECK(check->ok());
  CHECK(check->outBad == 0);
  CHECK(check->paddingNonZero == 0);
  CHECK(check->untouchedSlotsDiffering == 0);
  for (const StepCheck::Layer &l : check->layers) {
    CHECK(l.ssmBad == 0);
    CHECK(l.convBad == 0);
  }
  for (const ProjectionCheck &p : check->projections) {
    INFO(p.what);
    CHECK(p.outside == 0);
  }
}

TEST_CASE("decode step: FP8 and bf16 projections mixed within a layer are planned and "
          "pass the check",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  const std::vector<MambaLayerWeights> layers = mixedProjectionLayers(c);
  REQUIRE((layers[0].inProj.isFP8 && !layers[0].outProj.isFP8));
  REQUIRE((!layers[1].inProj.isFP8 && layers[1].outProj.isFP8));
  const int64_t rows = 3, numSlots = rows + 4;
  auto plan = planDecodeStep(modelRegistry(), c, layers, rows, numSlots,
                             PlanOptions{{}, nullptr, /*perLayerActivations=*/true});
  INFO((plan ? "" : llvm::toString(plan.takeError())));
  REQUIRE(bool(plan));
  InterpreterRunner runner(modelRegistry());
  auto check =
      checkDecodeSteps(c, layers, *plan, {}, randomDecodeSlots(rows, numSlots, 5), 2, 17,
                       [&](HostBuffers &b) { return runner.run(*plan, b); });
  REQUIRE(bool(check));
  std::string report;
  llvm::raw_string_ostream os(report);
  check->print(os);
  INFO(report);
  CHECK(check->ok());
  REQUIRE(check->norms.size() == 2);
  CHECK(!check->norms[0].e4m3); // the norm feeds layer 0's bf16 out_proj
  CHECK(check->norms[1].e4m3);
  CHECK(check->outBad == 0);
}

TEST_CASE("decode step: duplicate and out-of-range slots are refused before any launch",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  auto plan = planDecodeStep(modelRegistry(), c, *layers, 3, 4);
  REQUIRE(bool(plan));
  HostBuffers buffers = allocateHostBuffers(*plan);
  Rng rng(3);
  buffers["l0.ssm_page"] =
      bytesOf(randomF32({4, c.numHeads, c.headDim, c.stateSize}, rng, -1, 1).data);
  const std::vector<uint8_t> before = buffers["l0.ssm_page"];
  InterpreterRunner runner(modelRegistry());
  buffers["slots"] = bytesOf(std::vector<int32_t>{1, -1, 1});
  std::string message = llvm::toString(runner.run(*plan, buffers));
  CHECK(message.find("slot 1 appears twice in one batch (row 2)") != std::string::npos);
  buffers["slots"] = bytesOf(std::vector<int32_t>{0, 4, -3});
  message = llvm::toString(runner.run(*plan, buffers));
  CHECK(message.find("row 1 uses slot 4, but the pages hold 4 slots") !=
        std::string::npos);
  // Host buffers of the wrong size are refused before the slots are read.
  buffers["slots"] = bytesOf(std::vector<int32_t>{0, 1});
  message = llvm::toString(runner.run(*plan, buffers));
  CHECK(message.find("buffer 'slots' has 8 bytes, the plan expects 12") !=
        std::string::npos);
  buffers["slots"] = bytesOf(std::vector<int32_t>{0, 1, 2});
  buffers["act0"].resize(buffers["act0"].size() - 2);
  message = llvm::toString(runner.run(*plan, buffers));
  CHECK(message.find("buffer 'act0' has 1198 bytes, the plan expects 1200") !=
        std::string::npos);
  CHECK(buffers["l0.ssm_page"] == before);
}

TEST_CASE("decode plan: every buffer carries its element type and row-major shape",
          "[e2e][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  auto plan = planDecodeStep(modelRegistry(), c, *layers, 3, 5);
  REQUIRE(bool(plan));
  // The shapes of docs/numerics.md#geometry at this geometry: Cd = 128 + 2 * 2 * 32,
  // in_proj's outputs 128 + 256 + 8; layer 0 FP8, layer 1 bf16.
  struct Want {
    const char *name;
    DType type;
    std::vector<int64_t> shape;
  };
  for (const Want &want :
       std::vector<Want>{{"act0", DType::BF16, {3, 200}},
                         {"act2", DType::BF16, {3, 200}},
                         {"slots", DType::I32, {3}},
                         {"l0.in_proj.weight", DType::F8E4M3, {392, 200}},
                         {"l1.in_proj.weight", DType::BF16, {392, 200}},
                         {"l0.out_proj.weight", DType::F8E4M3, {200, 128}},
                         {"l1.conv_page", DType::BF16, {5, 256, 3}},
                         {"l1.ssm_page", DType::F32, {5, 8, 16, 32}},
                         {"l0.A_log", DType::F32, {8}}}) {
    INFO(want.name);
    const PlanBuffer &buffer = plan->buffers.at(want.name);
    CHECK(buffer.type == want.type);
    CHECK(buffer.shape == want.shape);
  }
  for (const auto &[name, buffer] : plan->buffers) {
    INFO(name);
    CHECK(buffer.bytes == size_t(numElements(buffer.shape)) * dtypeBytes(buffer.type));
    if (buffer.role == PlanBuffer::Role::Weight)
      CHECK(buffer.hostWeight.size() == buffer.bytes);
  }
  // A plan buffer without a recorded shape (built as {role, bytes}) takes no
  // caller tensor, whatever its shape.
  StepPlan shapeless;
  shapeless.buffers["x"] = {PlanBuffer::Role::Input, 8};
  CHECK(
      llvm::toString(checkPlanTensor(shapeless, "x", "x", {"bf16", {4}, {}, -1, 16}, -1))
          .find("no shape is recorded for buffer 'x'") != std::string::npos);
}

TEST_CASE("decode plan: a bad kernel override fails the plan with the kernel's message",
          "[e2e][decode]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1);
  REQUIRE(bool(layers));
  auto plan = planDecodeStep(modelRegistry(), c, *layers, 1, 1,
                             PlanOptions{{{"out_proj", {{"block_x", 3}}}}});
  REQUIRE(!plan);
  CHECK(llvm::toString(plan.takeError()).find("block_x") != std::string::npos);
}

TEST_CASE(
    "decode plan: a tuning database entry for in_proj_conv sets its constants and grid, "
    "says so, and yields to --set",
    "[e2e][decode][tune]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1); // layer 0: FP8
  REQUIRE(bool(layers));
  FakeTunedRuntime fake;
  runtime::JitRuntime &jit = *fake.jit;

  // The entry as `tilejit tune in_proj_conv --shape rows=1` records it: the
  // tuner's own key for the kernel at this geometry, tunables at defaults.
  const KernelDef *def = modelRegistry().find("in_proj_conv");
  auto base = def->specialize(
      {{"hidden", 200}, {"inner", 128}, {"channels", 256}, {"heads", 8}, {"fp8", 1}});
  REQUIRE(bool(base));
  REQUIRE(!saveInProjConvEntry(jit, *def, *base, fake.tuneDbPath));

  auto inProj = [](const StepPlan &plan) {
    for (const PlannedLaunch &l : plan.launches)
      if (l.kernel == "in_proj_conv")
        return l;
    FAIL("no in_proj_conv launch");
    return PlannedLaunch{};
  };
  std::string log;
  llvm::raw_string_ostream os(log);
  auto plan = planDecodeStep(
      modelRegistry(), c, *layers, 1, 2,
      PlanOptions{{}, tunedFromDatabase(jit, modelRegistry(), {{"rows", 1}}, os)});
  REQUIRE(bool(plan));
  PlannedLaunch tuned = inProj(*plan);
  CHECK(tuned.grid[0] == 13); // 392 columns / 32 (16 without the entry: 25)
  CHECK(tuned.spec.get("warps") == 2);
  CHECK(log.find("in_proj_conv (rows<=1") != std::string::npos);
  CHECK(log.find("uses block_n=32,warps=2") != std::string::npos);

  // The caller's --set wins over the database.
  auto overridden = planDecodeStep(
      modelRegistry(), c, *layers, 1, 2,
      PlanOptions{{{"in_proj_conv", {{"block_n", 8}}}},
                  tunedFromDatabase(jit, modelRegistry(), {{"rows", 1}}, os)});
  REQUIRE(bool(overridden));
  CHECK(inProj(*overridden).grid[0] == 49);
  // Another shape bucket (3 rows: rows<=4) has no entry: the plan's own choice,
  // the skinny form's 32 weight rows a program.
  log.clear();
  auto other = planDecodeStep(
      modelRegistry(), c, *layers, 3, 4,
      PlanOptions{{}, tunedFromDatabase(jit, modelRegistry(), {{"rows", 3}}, os)});
  REQUIRE(bool(other));
  CHECK(inProj(*other).spec.get("skinny") == 1);
  CHECK(inProj(*other).grid[0] == 13);
  CHECK(log.empty());
}
