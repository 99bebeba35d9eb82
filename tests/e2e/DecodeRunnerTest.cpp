// The GPU runner of a decode plan on the fake device: weights upload once and
// the captured step replays without uploading or compiling; bad slots are
// refused before any copy; a step on caller-owned device tensors copies device
// to device on the caller's stream, and every bad tensor or slot list is
// refused with its numbers before anything is copied or launched.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/runtime/Jit.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

/// A decode plan of 3 rows over 4 slots and its GPU runner on a fake device.
struct FakeDecoder {
  NemotronHConfig c = smallConfig();
  std::vector<MambaLayerWeights> layers;
  StepPlan plan;
  runtime::FakeDevice *fake = nullptr;
  std::unique_ptr<runtime::JitRuntime> jit;
  std::unique_ptr<GpuRunner> decoder;

  FakeDecoder() {
    auto made = syntheticMambaLayers(c, 2);
    REQUIRE(bool(made));
    layers = std::move(*made);
    auto planned = planDecodeStep(modelRegistry(), c, layers, 3, 4);
    REQUIRE(bool(planned));
    plan = std::move(*planned);
    auto options = runtime::RuntimeOptions::fromEnvironment();
    REQUIRE(bool(options));
    options->useDiskCache = false;
    auto device = std::make_unique<runtime::FakeDevice>();
    fake = device.get();
    auto runtime = runtime::JitRuntime::create(
        std::move(device), JitCompiler::fromEnvironment(), std::move(*options));
    REQUIRE(bool(runtime));
    jit = std::move(*runtime);
    std::string log;
    llvm::raw_string_ostream os(log);
    auto runner = GpuRunner::create(*jit, modelRegistry(), plan, os);
    INFO((runner ? log : llvm::toString(runner.takeError())));
    REQUIRE(bool(runner));
    decoder = std::move(*runner);
  }
};

/// A caller's device tensors for the hidden rows and the output, filled with
/// recognizable bytes, and the caller's stream.
struct CallerTensors {
  size_t bytes = 0;
  std::optional<runtime::DeviceBuffer> hidden, out;
  std::optional<runtime::Stream> stream;
  std::vector<uint8_t> hiddenPattern, outPattern;

  /// With `seed`, the runner's output buffer holds outPattern ("act2", which
  /// the fake device's launches leave as it is) and the slots {2, -1, 0}.
  CallerTensors(FakeDecoder &d, bool seed) : bytes(d.plan.buffers.at("act0").bytes) {
    REQUIRE(d.plan.buffers.at("act2").shape == std::vector<int64_t>{3, d.c.hiddenSize});
    auto h = d.jit->allocate(bytes), o = d.jit->allocate(bytes);
    auto s = runtime::Stream::create(d.jit->device());
    REQUIRE((h && o && s));
    hidden.emplace(std::move(*h));
    out.emplace(std::move(*o));
    stream.emplace(std::move(*s));
    hiddenPattern.resize(bytes), outPattern.resize(bytes);
    for (size_t i = 0; i < bytes; ++i)
      hiddenPattern[i] = uint8_t(i * 7 + 1), outPattern[i] = uint8_t(i * 13 + 5);
    REQUIRE(!hidden->upload(hiddenPattern));
    if (seed)
      REQUIRE(!d.decoder->upload(HostBuffers{
          {"slots", bytesOf(std::vector<int32_t>{2, -1, 0})}, {"act2", outPattern}}));
  }
  static TensorRef ref(const runtime::DeviceBuffer &b) {
    return TensorRef{"bf16", {3, 200}, {200, 1}, 0, b.address()};
  }
  TensorRef hiddenRef() const { return ref(*hidden); }
  TensorRef outRef() const { return ref(*out); }
};

} // namespace

TEST_CASE("GPU decoder on the fake device: weights upload once, bad slots are refused "
          "before any copy",
          "[e2e][decode][jit]") {
  FakeDecoder d;
  size_t weightBytes = 0;
  for (const auto &[name, buffer] : d.plan.buffers)
    weightBytes += buffer.role == PlanBuffer::Role::Weight ? buffer.bytes : 0;
  CHECK(d.jit->stats().snapshot().bytesUploaded == weightBytes);

  // Valid slots and random pages go up; duplicated slots are refused by the
  // host check before a single byte is copied, so the device keeps the pages.
  HostBuffers good = allocateHostBuffers(d.plan);
  Rng rng(4);
  good["l0.ssm_page"] =
      bytesOf(randomF32({4, d.c.numHeads, d.c.headDim, d.c.stateSize}, rng, -1, 1).data);
  good["slots"] = bytesOf(std::vector<int32_t>{2, -1, 0});
  REQUIRE(!d.decoder->upload(good));
  HostBuffers bad = allocateHostBuffers(d.plan);
  bad["slots"] = bytesOf(std::vector<int32_t>{1, -1, 1});
  std::string message = llvm::toString(d.decoder->upload(bad));
  CHECK(message.find("slot 1 appears twice in one batch (row 2)") != std::string::npos);
  bad["slots"] = bytesOf(std::vector<int32_t>{0, 9, -1});
  message = llvm::toString(d.decoder->upload(bad));
  CHECK(message.find("row 1 uses slot 9, but the pages hold 4 slots") !=
        std::string::npos);
  HostBuffers back = allocateHostBuffers(d.plan);
  REQUIRE(!d.decoder->download(back));
  CHECK(back["l0.ssm_page"] == good["l0.ssm_page"]);
  CHECK(back["slots"] == good["slots"]);
  // The captured step replays; nothing more is uploaded or compiled.
  const auto before = d.jit->stats().snapshot();
  REQUIRE(!d.decoder->step());
  CHECK(d.jit->stats().snapshot().bytesUploaded == before.bytesUploaded);
  CHECK(d.jit->stats().snapshot().modulesCompiled == before.modulesCompiled);
}

TEST_CASE("GPU decoder on the fake device: a step on caller-owned tensors copies device "
          "to device on the caller's stream",
          "[e2e][decode][jit]") {
  FakeDecoder d;
  // The fake device records launches without running them, so the graph
  // leaves "act2" (the output) as seeded: the step must copy the caller's
  // hidden into "act0" and "act2" into the caller's out, device to device,
  // with no host copy.
  CallerTensors caller(d, /*seed=*/true);
  const auto copiesBefore = d.fake->copiedBytes();
  const size_t launchesBefore = d.fake->launches().size();
  REQUIRE(!d.decoder->step(caller.hiddenRef(), std::vector<int32_t>{2, -1, 0},
                           caller.outRef(), caller.stream->handle()));
  auto copies = d.fake->copiedBytes();
  CHECK(copies.toDevice == copiesBefore.toDevice); // the slots were on the device already
  CHECK(copies.toHost == copiesBefore.toHost);
  CHECK(copies.onDevice == copiesBefore.onDevice + 2 * caller.bytes);
  auto launches = d.fake->launches();
  REQUIRE(launches.size() == launchesBefore + d.plan.launches.size());
  for (size_t i = launchesBefore; i < launches.size(); ++i) {
    CHECK(launches[i].fromGraph);
    CHECK(launches[i].config.stream == caller.stream->handle());
  }
  std::vector<uint8_t> gotOut(caller.bytes);
  REQUIRE(!caller.out->download(gotOut));
  CHECK(gotOut == caller.outPattern);
  HostBuffers input{{"act0", {}}};
  REQUIRE(!d.decoder->download(input));
  CHECK(input["act0"] == caller.hiddenPattern);
  // New slots go up once: 4 bytes per row, nothing else through the host.
  const auto beforeNewSlots = d.fake->copiedBytes();
  for (int repeat = 0; repeat < 2; ++repeat) {
    REQUIRE(!d.decoder->step(caller.hiddenRef(), std::vector<int32_t>{0, -1, 3},
                             caller.outRef(), caller.stream->handle()));
    CHECK(d.fake->copiedBytes().toDevice ==
          beforeNewSlots.toDevice + 3 * sizeof(int32_t));
    CHECK(d.fake->copiedBytes().toHost == beforeNewSlots.toHost);
  }
}

TEST_CASE("GPU decoder on the fake device: each bad tensor or slot list is refused with "
          "its numbers before anything is copied or launched",
          "[e2e][decode][jit]") {
  FakeDecoder d;
  CallerTensors caller(d, /*seed=*/true);
  REQUIRE(!d.decoder->step(caller.hiddenRef(), std::vector<int32_t>{0, -1, 3},
                           caller.outRef(), caller.stream->handle()));
  struct Bad {
    TensorRef hidden, out;
    std::vector<int32_t> slots;
    const char *message;
  };
  auto with = [](TensorRef t, auto change) {
    change(t);
    return t;
  };
  const TensorRef hiddenRef = caller.hiddenRef(), outRef = caller.outRef();
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
       "3] (elements) for shape [3, 200], expected [200, 1]"},
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
  const auto copiesBefore = d.fake->copiedBytes();
  const size_t launchesBefore = d.fake->launches().size();
  for (const Bad &bad : cases) {
    std::string text = llvm::toString(
        d.decoder->step(bad.hidden, bad.slots, bad.out, caller.stream->handle()));
    INFO(text);
    CHECK(text.find(bad.message) != std::string::npos);
  }
  // An extent-1 dimension may have any stride (torch gives [1, 200] strides
  // such as [7, 1] after slicing); the other dimensions may not.
  auto onePlan = planDecodeStep(modelRegistry(), d.c, d.layers, 1, 4);
  REQUIRE(bool(onePlan));
  CHECK(
      !checkPlanTensor(*onePlan, "act0", "hidden", {"bf16", {1, 200}, {7, 1}, 0, 16}, 0));
  CHECK(llvm::toString(checkPlanTensor(*onePlan, "act0", "hidden",
                                       {"bf16", {1, 200}, {7, 2}, 0, 16}, 0))
            .find("strides [7, 2] (elements) for shape [1, 200], expected [200, 1]") !=
        std::string::npos);
  CHECK(d.fake->copiedBytes().toDevice == copiesBefore.toDevice);
  CHECK(d.fake->copiedBytes().onDevice == copiesBefore.onDevice);
  CHECK(d.fake->launches().size() == launchesBefore);
  std::vector<uint8_t> outAfter(caller.bytes);
  REQUIRE(!caller.out->download(outAfter));
  CHECK(outAfter == caller.outPattern);
}
