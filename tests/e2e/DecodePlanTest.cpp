// What the decode plan launches and how its runners take it: the GEMM path
// from 64 rows on sm_90a (run on the interpreter against f64), FP8 and bf16
// projections mixed within a layer, slots refused before any launch, every
// buffer's type and shape, kernel overrides and tuning-database entries, and
// the GPU decoder on the fake device.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/plan/Check.h"
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
  // out_proj's 11 column tiles would leave most multiprocessors idle below
  // 256 rows: it keeps the decode tiles.
  for (const PlannedLaunch &l : plan->launches)
    if (l.layer == bf16Layer && (l.role == "in_proj" || l.role == "out_proj")) {
      INFO(l.role);
      CHECK(llvm::is_contained(l.constants, "producer=1") == (l.role == "in_proj"));
    }
  // From 256 rows out_proj is the GEMM too (planned only).
  auto wide = planDecodeStep(modelRegistry(), c, *layers, 256, 260, options);
  REQUIRE(bool(wide));
  for (const PlannedLaunch &l : wide->launches)
    if (l.layer == bf16Layer && l.role == "out_proj")
      CHECK(llvm::is_contained(l.constants, "producer=1"));
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
    ElementType type;
    std::vector<int64_t> shape;
  };
  for (const Want &want :
       std::vector<Want>{{"act0", ElementType::BF16, {3, 200}},
                         {"act2", ElementType::BF16, {3, 200}},
                         {"slots", ElementType::I32, {3}},
                         {"l0.in_proj.weight", ElementType::E4M3, {392, 200}},
                         {"l1.in_proj.weight", ElementType::BF16, {392, 200}},
                         {"l0.out_proj.weight", ElementType::E4M3, {200, 128}},
                         {"l1.conv_page", ElementType::BF16, {5, 256, 3}},
                         {"l1.ssm_page", ElementType::F32, {5, 8, 16, 32}},
                         {"l0.A_log", ElementType::F32, {8}}}) {
    INFO(want.name);
    const PlanBuffer &buffer = plan->buffers.at(want.name);
    CHECK(buffer.type == want.type);
    CHECK(buffer.shape == want.shape);
  }
  for (const auto &[name, buffer] : plan->buffers) {
    INFO(name);
    CHECK(buffer.bytes == size_t(numElements(buffer.shape)) * elementBytes(buffer.type));
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
                             PlanOptions{{{"out_proj", {"block_x=3"}}}});
  REQUIRE(!plan);
  CHECK(llvm::toString(plan.takeError()).find("block_x") != std::string::npos);
}

TEST_CASE(
    "GPU decoder on the fake device: weights upload once, bad slots are refused before "
    "any copy",
    "[e2e][decode][jit]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 2);
  REQUIRE(bool(layers));
  auto plan = planDecodeStep(modelRegistry(), c, *layers, 3, 4);
  REQUIRE(bool(plan));
  auto options = runtime::RuntimeOptions::fromEnvironment();
  REQUIRE(bool(options));
  options->useDiskCache = false;
  auto device = std::make_unique<runtime::FakeDevice>();
  runtime::FakeDevice &fake = *device;
  auto jit = runtime::JitRuntime::create(
      std::move(device), JitCompiler::fromEnvironment(), std::move(*options));
  REQUIRE(bool(jit));
  std::string log;
  llvm::raw_string_ostream os(log);
  auto decoder = GpuRunner::create(**jit, modelRegistry(), *plan, os);
  INFO((decoder ? log : llvm::toString(decoder.takeError())));
  REQUIRE(bool(decoder));
  size_t weightBytes = 0;
  for (const auto &[name, buffer] : plan->buffers)
    weightBytes += buffer.role == PlanBuffer::Role::Weight ? buffer.bytes : 0;
  CHECK((*jit)->stats().snapshot().bytesUploaded == weightBytes);

  // Valid slots and random pages go up; duplicated slots are refused by the
  // host check before a single byte is copied, so the device keeps the pages.
  HostBuffers good = allocateHostBuffers(*plan);
  Rng rng(4);
  good["l0.ssm_page"] =
      bytesOf(randomF32({4, c.numHeads, c.headDim, c.stateSize}, rng, -1, 1).data);
  good["slots"] = bytesOf(std::vector<int32_t>{2, -1, 0});
  REQUIRE(!(*decoder)->upload(good));
  HostBuffers bad = allocateHostBuffers(*plan);
  bad["slots"] = bytesOf(std::vector<int32_t>{1, -1, 1});
  std::string message = llvm::toString((*decoder)->upload(bad));
  CHECK(message.find("slot 1 appears twice in one batch (row 2)") != std::string::npos);
  bad["slots"] = bytesOf(std::vector<int32_t>{0, 9, -1});
  message = llvm::toString((*decoder)->upload(bad));
  CHECK(message.find("row 1 uses slot 9, but the pages hold 4 slots") !=
        std::string::npos);
  HostBuffers back = allocateHostBuffers(*plan);
  REQUIRE(!(*decoder)->download(back));
  CHECK(back["l0.ssm_page"] == good["l0.ssm_page"]);
  CHECK(back["slots"] == good["slots"]);
  // The captured step replays; nothing more is uploaded or compiled.
  const auto before = (*jit)->stats().snapshot();
  REQUIRE(!(*decoder)->step());
  CHECK((*jit)->stats().snapshot().bytesUploaded == before.bytesUploaded);
  CHECK((*jit)->stats().snapshot().modulesCompiled == before.modulesCompiled);

  // Caller-owned device tensors on the caller's stream. The fake device records
  // launches without running them, so the graph leaves "act2" (the output) as
  // uploaded here: the step must copy the caller's hidden into "act0" and
  // "act2" into the caller's out, device to device, with no host copy.
  const size_t hiddenBytes = plan->buffers.at("act0").bytes;
  REQUIRE(plan->buffers.at("act2").shape == std::vector<int64_t>{3, c.hiddenSize});
  auto callerHidden = (*jit)->allocate(hiddenBytes),
       callerOut = (*jit)->allocate(hiddenBytes);
  auto callerStream = runtime::Stream::create((*jit)->device());
  REQUIRE((callerHidden && callerOut && callerStream));
  std::vector<uint8_t> hiddenPattern(hiddenBytes), outPattern(hiddenBytes);
  for (size_t i = 0; i < hiddenBytes; ++i)
    hiddenPattern[i] = uint8_t(i * 7 + 1), outPattern[i] = uint8_t(i * 13 + 5);
  REQUIRE(!callerHidden->upload(hiddenPattern));
  HostBuffers seeded{{"slots", good["slots"]}, {"act2", outPattern}};
  REQUIRE(!(*decoder)->upload(seeded));
  auto ref = [](const runtime::DeviceBuffer &b) {
    return TensorRef{"bf16", {3, 200}, {200, 1}, 0, b.address()};
  };
  const TensorRef hiddenRef = ref(*callerHidden), outRef = ref(*callerOut);
  const auto copiesBefore = fake.copiedBytes();
  const size_t launchesBefore = fake.launches().size();
  REQUIRE(!(*decoder)->step(hiddenRef, std::vector<int32_t>{2, -1, 0}, outRef,
                            callerStream->handle()));
  auto copies = fake.copiedBytes();
  CHECK(copies.toDevice == copiesBefore.toDevice); // the slots were on the device already
  CHECK(copies.toHost == copiesBefore.toHost);
  CHECK(copies.onDevice == copiesBefore.onDevice + 2 * hiddenBytes);
  auto launches = fake.launches();
  REQUIRE(launches.size() == launchesBefore + plan->launches.size());
  for (size_t i = launchesBefore; i < launches.size(); ++i) {
    CHECK(launches[i].fromGraph);
    CHECK(launches[i].config.stream == callerStream->handle());
  }
  std::vector<uint8_t> gotOut(hiddenBytes);
  REQUIRE(!callerOut->download(gotOut));
  CHECK(gotOut == outPattern);
  HostBuffers input{{"act0", {}}};
  REQUIRE(!(*decoder)->download(input));
  CHECK(input["act0"] == hiddenPattern);
  // New slots go up once: 4 bytes per row, nothing else through the host.
  const auto beforeNewSlots = fake.copiedBytes();
  REQUIRE(!(*decoder)->step(hiddenRef, std::vector<int32_t>{0, -1, 3}, outRef,
                            callerStream->handle()));
  CHECK(fake.copiedBytes().toDevice == beforeNewSlots.toDevice + 3 * sizeof(int32_t));
  CHECK(fake.copiedBytes().toHost == beforeNewSlots.toHost);
  REQUIRE(!(*decoder)->step(hiddenRef, std::vector<int32_t>{0, -1, 3}, outRef,
                            callerStream->handle()));
  CHECK(fake.copiedBytes().toDevice == beforeNewSlots.toDevice + 3 * sizeof(int32_t));

  // Each bad tensor or slot list is refused with its numbers before anything
  // is copied or launched.
  struct Bad {
    TensorRef hidden, out;
    std::vector<int32_t> slots;
    const char *message;
  };
  auto with = [](TensorRef t, auto change) {
    change(t);
    return t;
  };
  const std::vector<int32_t> fine = {0, -1, 3};
  const std::vector<Bad> cases = {
      {with(hiddenRef, [](TensorRef &t) { t.type = "f32"; }), outRef, fine,
       "tensor 'hidden' (plan buffer 'act0') must be bf16, got f32"},
      {hiddenRef, with(outRef, [](TensorRef &t) { t.shape = {3, 199}; }), fine,
       "tensor 'out' (plan buffer 'act2') must have shape [3, 200], got [3, 199]"},
      {with(hiddenRef, [](TensorRef &t) { t.shape = {200, 3}, t.strides = {1, 200}; }),
       outRef, fine, "must have shape [3, 200], got [200, 3]"},
      {with(hiddenRef, [](TensorRef &t) { t.strides = {1, 3}; }), outRef, fine,
       "tensor 'hidden' (plan buffer 'act0') must be contiguous (row-major): strides [1, "
       "3] "
       "(elements) for shape [3, 200], expected [200, 1]"},
      {hiddenRef, with(outRef, [](TensorRef &t) { t.strides = {400, 1}; }), fine,
       "strides [400, 1] (elements) for shape [3, 200], expected [200, 1]"},
      {with(hiddenRef, [](TensorRef &t) { t.device = -1; }), outRef, fine,
       "tensor 'hidden' (plan buffer 'act0') must be on cuda:0, got the host"},
      {hiddenRef, with(outRef, [](TensorRef &t) { t.device = 1; }), fine,
       "tensor 'out' (plan buffer 'act2') must be on cuda:0, got cuda:1"},
      {hiddenRef, with(outRef, [](TensorRef &t) { t.address = 0; }), fine,
       "tensor 'out' (plan buffer 'act2') has a null address"},
      {hiddenRef, outRef, {0, -1}, "step: 2 slots for 3 rows"},
      {hiddenRef, outRef, {3, -1, 3}, "slot 3 appears twice in one batch (row 2)"},
  };
  const auto copiesBeforeBad = fake.copiedBytes();
  const size_t launchesBeforeBad = fake.launches().size();
  for (const Bad &bad : cases) {
    std::string text = llvm::toString(
        (*decoder)->step(bad.hidden, bad.slots, bad.out, callerStream->handle()));
    INFO(text);
    CHECK(text.find(bad.message) != std::string::npos);
  }
  // An extent-1 dimension may have any stride (torch gives [1, 200] strides
  // such as [7, 1] after slicing); the other dimensions may not.
  auto onePlan = planDecodeStep(modelRegistry(), c, *layers, 1, 4);
  REQUIRE(bool(onePlan));
  CHECK(
      !checkPlanTensor(*onePlan, "act0", "hidden", {"bf16", {1, 200}, {7, 1}, 0, 16}, 0));
  CHECK(llvm::toString(checkPlanTensor(*onePlan, "act0", "hidden",
                                       {"bf16", {1, 200}, {7, 2}, 0, 16}, 0))
            .find("strides [7, 2] (elements) for shape [1, 200], expected [200, 1]") !=
        std::string::npos);
  CHECK(fake.copiedBytes().toDevice == copiesBeforeBad.toDevice);
  CHECK(fake.copiedBytes().onDevice == copiesBeforeBad.onDevice);
  CHECK(fake.launches().size() == launchesBeforeBad);
  std::vector<uint8_t> outAfter(hiddenBytes);
  REQUIRE(!callerOut->download(outAfter));
  CHECK(outAfter == outPattern);
}

TEST_CASE(
    "decode plan: a tuning database entry for in_proj_conv sets its constants and grid, "
    "says so, and yields to --set",
    "[e2e][decode][tune]") {
  NemotronHConfig c = smallConfig();
  auto layers = syntheticMambaLayers(c, 1); // layer 0: FP8
  REQUIRE(bool(layers));
  llvm::SmallString<128> dir;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory("tilejit-tunedb", dir));
  auto options = runtime::RuntimeOptions::fromEnvironment();
  REQUIRE(bool(options));
  options->useDiskCache = false;
  options->tuneDbPath = (dir + "/tune.json").str();
  auto jit = runtime::JitRuntime::create(std::make_unique<runtime::FakeDevice>(),
                                         JitCompiler::fromEnvironment(), *options);
  REQUIRE(bool(jit));

  // The entry as `tilejit tune in_proj_conv --shape rows=1` records it: the
  // tuner's own key for the kernel at this geometry, tunables at defaults.
  const KernelDef *def = modelRegistry().find("in_proj_conv");
  auto base =
      def->specialize({"hidden=200", "inner=128", "channels=256", "heads=8", "fp8=1"});
  REQUIRE(bool(base));
  auto key = tuning::tuneKeyFor(**jit, {def, nullptr, *base, {{"rows", 1}}});
  REQUIRE(bool(key));
  tuning::TuneEntry entry;
  entry.key = *key;
  entry.config = {{"block_n", 32}, {"warps", 2}};
  entry.medianMs = 0.01;
  entry.defaultMedianMs = 0.02;
  entry.provenance.date = "2026-11-30T00:00:00Z";
  entry.provenance.device = "test";
  tuning::TuneDb db;
  db.record(entry);
  REQUIRE(!db.save(options->tuneDbPath));

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
      PlanOptions{{}, tunedFromDatabase(**jit, modelRegistry(), 1, 0, os)});
  REQUIRE(bool(plan));
  PlannedLaunch tuned = inProj(*plan);
  CHECK(tuned.grid[0] == 13); // 392 columns / 32 (16 without the entry: 25)
  CHECK(llvm::is_contained(tuned.constants, "warps=2"));
  CHECK(log.find("in_proj_conv (rows<=1") != std::string::npos);
  CHECK(log.find("uses block_n=32,warps=2") != std::string::npos);

  // The caller's --set wins over the database.
  auto overridden =
      planDecodeStep(modelRegistry(), c, *layers, 1, 2,
                     PlanOptions{{{"in_proj_conv", {"block_n=8"}}},
                                 tunedFromDatabase(**jit, modelRegistry(), 1, 0, os)});
  REQUIRE(bool(overridden));
  CHECK(inProj(*overridden).grid[0] == 49);
  // Another shape bucket (3 rows: rows<=4) has no entry: the plan's own choice.
  log.clear();
  auto other = planDecodeStep(
      modelRegistry(), c, *layers, 3, 4,
      PlanOptions{{}, tunedFromDatabase(**jit, modelRegistry(), 3, 0, os)});
  REQUIRE(bool(other));
  CHECK(inProj(*other).grid[0] == 25);
  CHECK(log.empty());
  llvm::sys::fs::remove_directories(dir);
}
