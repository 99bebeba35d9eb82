// The embedding API (embed/) on the interpreter: a prefill then decode steps of a
// published-layout checkpoint give exactly what the same plans give run directly
// with the pages carried from one to the other, and each refusal names its
// numbers. (The GPU path is the same plans on GpuRunner: GpuSharedStateTest.cpp,
// and examples/embed on the H200.)
#include "tilejit/embed/Embed.h"
#include "tilejit/embed/Format.h"

#include "../fixtures/PublishedCheckpoint.h"
#include "../unit/TempDir.h"
#include "ModelTestSupport.h"
#include "tilejit/models/nemotron_h/Planner.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;
namespace embed = tilejit::embed;
namespace fx = tilejit::models::fixtures;

namespace {

/// The reduced published-layout checkpoint (5 Mamba layers of 10) in `dir`.
std::string writeCheckpoint(const tilejit::testing::TempDir &dir) {
  REQUIRE(!fx::writePublishedCheckpoint(dir.path, fx::smallPublishedConfig(false),
                                        fx::kSmallQuantConfig));
  return std::string(dir.path);
}

std::vector<uint16_t> randomBits(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<uint16_t> out(n);
  for (uint16_t &v : out)
    v = f32ToBF16(uniform(rng));
  return out;
}

embed::TensorView hostView(std::vector<uint16_t> &data, int64_t rows, int64_t cols) {
  return {embed::DType::BF16, {rows, cols}, embed::kHost, data.data()};
}

/// The head_dim of 16 takes ssd_prefill blocks of 16 rows.
const std::vector<std::string> kSmallSettings = {"ssd_prefill.block_p=16"};

template <typename T> std::string messageOf(const embed::Result<T> &result) {
  return result ? std::string("(no error)") : result.error().message();
}
std::string messageOf(const embed::Status &status) {
  return status ? std::string("(no error)") : status.error().message();
}

} // namespace

TEST_CASE("embedding API on the interpreter: a prefill then decode steps equal the plans "
          "run directly with the pages carried",
          "[e2e][interp][embed]") {
  tilejit::testing::TempDir dir;
  const std::string path = writeCheckpoint(dir);
  auto engine = embed::Engine::open({embed::Backend::Interpreter});
  REQUIRE(engine);
  CHECK(engine->backend() == embed::Backend::Interpreter);
  CHECK(engine->device() == embed::kHost);
  int progressCalls = 0;
  auto model = embed::Model::load({path, 2, [&](int done, int total) {
                                     CHECK(total == 2);
                                     CHECK(done == ++progressCalls);
                                   }});
  REQUIRE(model);
  CHECK(progressCalls == 2);
  const embed::ModelInfo &info = model->info();
  CHECK(info.describeLayers() == "10 layers: 5 Mamba, 4 MoE, 1 attention");
  CHECK(info.loadedLayers == std::vector<int64_t>{0, 2});
  CHECK(info.mambaLayers == 5);
  CHECK(info.fp8Layers == 2);
  CHECK(info.quantization.find("hf_quant_config.json") != std::string::npos);
  auto session = embed::Session::create(*engine, *model, {3, kSmallSettings});
  REQUIRE(session);

  // Two fresh sequences (slots 2 and 0) prefilled, then two decode steps.
  auto prefill = session->prefill({{7, 2, false}, {4, 0, false}});
  INFO(messageOf(prefill));
  REQUIRE(prefill);
  CHECK(prefill->tokens() == 11);
  auto decode = session->decode(2);
  REQUIRE(decode);
  const int64_t hidden = info.hiddenSize;
  std::vector<uint16_t> prefillIn = randomBits(size_t(11 * hidden), 1),
                        prefillOut(size_t(11 * hidden));
  REQUIRE(
      prefill->run(hostView(prefillIn, 11, hidden), hostView(prefillOut, 11, hidden)));
  std::vector<std::vector<uint16_t>> decodeIn, decodeOut;
  const std::vector<int32_t> slots = {2, 0};
  for (uint32_t step = 0; step < 2; ++step) {
    decodeIn.push_back(randomBits(size_t(2 * hidden), 10 + step));
    decodeOut.emplace_back(size_t(2 * hidden));
    REQUIRE(decode->run(hostView(decodeIn.back(), 2, hidden), slots,
                        hostView(decodeOut.back(), 2, hidden)));
  }

  // The same plans, run directly, the prefill's pages handed to the decode.
  auto checkpoint = NemotronHCheckpoint::open(path);
  REQUIRE(bool(checkpoint));
  std::vector<MambaLayerWeights> weights = {
      llvm::cantFail(checkpoint->loadMambaLayer(0)),
      llvm::cantFail(checkpoint->loadMambaLayer(2))};
  const NemotronHConfig &c = checkpoint->config();
  PlanOptions options{{{"ssd_prefill", {{"block_p", 16}}}}};
  ref::PrefillBatch batch{{0, 7, 11}, {2, 0}, {false, false}};
  auto prefillPlan = planPrefill(modelRegistry(), c, weights, batch, 11, 3, options);
  REQUIRE(bool(prefillPlan));
  auto decodePlan = planDecodeStep(modelRegistry(), c, weights, 2, 3);
  REQUIRE(bool(decodePlan));
  InterpreterRunner runner(modelRegistry());
  HostBuffers p = allocateHostBuffers(prefillPlan->plan);
  prefillPlan->writeInputs(p);
  p["act0"] = bytesOf(prefillIn);
  REQUIRE(!runner.run(prefillPlan->plan, p));
  CHECK(p["act2"] == bytesOf(prefillOut));
  HostBuffers d = allocateHostBuffers(*decodePlan), fresh = d;
  for (const auto &[name, buffer] : decodePlan->buffers)
    if (buffer.role == PlanBuffer::Role::State)
      d[name] = p[name];
  for (size_t step = 0; step < 2; ++step) {
    d["act0"] = bytesOf(decodeIn[step]);
    d["slots"] = bytesOf(slots);
    REQUIRE(!runner.run(*decodePlan, d));
    CHECK(d["act2"] == bytesOf(decodeOut[step]));
  }
  // Had the decode not continued the prefill's state, its first step would differ.
  fresh["act0"] = bytesOf(decodeIn[0]);
  fresh["slots"] = bytesOf(slots);
  REQUIRE(!runner.run(*decodePlan, fresh));
  CHECK(fresh["act2"] != bytesOf(decodeOut[0]));
  CHECK(engine->stats().bytesUploaded == 0);
}

TEST_CASE("embedding API: each refusal is an error value naming its numbers",
          "[e2e][interp][embed]") {
  tilejit::testing::TempDir dir;
  const std::string path = writeCheckpoint(dir);
  auto engine = embed::Engine::open({embed::Backend::Interpreter});
  REQUIRE(engine);

  auto tooMany = embed::Model::load({path, 6});
  REQUIRE(!tooMany);
  CHECK(tooMany.error().kind() == embed::ErrorKind::InvalidArgument);
  CHECK(tooMany.error().message() ==
        "layers = 6: the model has 5 Mamba layer(s) (10 layers: 5 Mamba, 4 MoE, 1 "
        "attention)");
  // The published config with every Mamba layer made an MLP layer.
  tilejit::testing::TempDir noMamba;
  REQUIRE(!writeSafetensors(noMamba.file("model.safetensors"),
                            {fx::bf16Zeros("lm_head.weight", {2, 200})}));
  {
    std::string text = fx::smallPublishedConfig(false);
    text.replace(text.find(fx::kSmallPattern), 10, "-E-E-*E-E-");
    std::error_code ec;
    llvm::raw_fd_ostream os(noMamba.file("config.json"), ec);
    REQUIRE(!ec);
    os << text;
  }
  auto none = embed::Model::load({std::string(noMamba.path)});
  REQUIRE(!none);
  CHECK(none.error().kind() == embed::ErrorKind::Checkpoint);
  CHECK(none.error().message() ==
        std::string(noMamba.path) +
            ": the model has no Mamba layer (10 layers: 4 MoE, 1 attention, 5 MLP)");
  auto missing = embed::Model::load({dir.file("nothing-here")});
  REQUIRE(!missing);
  CHECK(missing.error().kind() == embed::ErrorKind::Checkpoint);
  CHECK(missing.error().message().find("config.json") != std::string::npos);

  auto model = embed::Model::load({path, 1});
  REQUIRE(model);
  CHECK(messageOf(embed::Session::create(*engine, *model, {0})) ==
        "a session of 0 slot(s): it needs at least one");
  CHECK(messageOf(embed::Session::create(*engine, *model, {1, {"block_p=16"}})) ==
        "setting 'block_p=16': expected KERNEL.CONSTANT=VALUE");
  CHECK(messageOf(embed::Session::create(*engine, *model, {1, {"no_such_kernel.x=1"}}))
            .find("no_such_kernel") != std::string::npos);
  CHECK(messageOf(embed::Session::create(*engine, *model, {1, {}, "f64"})) ==
        "ssm state: 'f64' is not a page type (f32, bf16 or f16)");
  CHECK(messageOf(embed::Session::create(*engine, *model, {1, {}, "f32", true}))
            .find("stochastic rounding needs a 16-bit page") != std::string::npos);
  auto bf16Pages = embed::Session::create(*engine, *model, {2, {}, "bf16", true});
  REQUIRE(bf16Pages);
  auto described = bf16Pages->describeDecode(1);
  REQUIRE(described);
  CHECK(described->find("state bf16 [2, ") != std::string::npos);
  CHECK(described->find("buffer ssm_seed input i64 [1]") != std::string::npos);
  auto session = embed::Session::create(*engine, *model, {2, kSmallSettings});
  REQUIRE(session);
  CHECK(messageOf(session->decode(0)) ==
        "a decode step of 0 row(s): it needs at least one");
  // Sized from the count before anything is allocated (issue #33: std::bad_alloc).
  CHECK(messageOf(session->decode(int64_t(1) << 40)) ==
        "decode plan: rows = 1099511627776; it must be in [1, 2147483647] (the kernels "
        "take it as i32)");
  auto huge = embed::Session::create(*engine, *model, {int64_t(1) << 40, kSmallSettings});
  REQUIRE(huge);
  CHECK(messageOf(huge->decode(1)) ==
        "decode plan: slots = 1099511627776; it must be in [1, 2147483647] (the kernels "
        "take it as i32)");
  CHECK(messageOf(session->prefill({})) == "a prefill batch without sequences");
  CHECK(messageOf(session->prefill({{3, 0, false}, {0, 1, false}})) ==
        "prefill sequence 1 has 0 tokens: each needs at least one");
  CHECK(
      messageOf(session->prefill({{3, 5, false}})).find("uses slot 5, outside [0, 2)") !=
      std::string::npos);

  auto decode = session->decode(1);
  REQUIRE(decode);
  const int64_t hidden = model->info().hiddenSize;
  std::vector<uint16_t> in(size_t(2 * hidden)), out(size_t(2 * hidden));
  embed::Status wrongShape =
      decode->run(hostView(in, 2, hidden), {0}, hostView(out, 1, hidden));
  REQUIRE(!wrongShape);
  CHECK(wrongShape.error().kind() == embed::ErrorKind::InvalidArgument);
  CHECK(wrongShape.error().message().find("hidden") != std::string::npos);
  CHECK(
      messageOf(decode->run(hostView(in, 1, hidden), {0, 1}, hostView(out, 1, hidden))) ==
      "2 slot(s) for a step of 1 row(s)");
  CHECK(messageOf(decode->run(hostView(in, 1, hidden), {9}, hostView(out, 1, hidden)))
            .find("row 0 uses slot 9, but the pages hold 2 slots") != std::string::npos);

  auto buffer = engine->allocate(100);
  REQUIRE(buffer);
  CHECK(messageOf(buffer->view(embed::DType::BF16, {10, 200})) ==
        "a view of bf16[10, 200] needs 4000 bytes; the buffer holds 100");
  CHECK(messageOf(buffer->view(embed::DType::F32, {-1})) ==
        "a view of shape [-1]: extent -1 is negative");
  CHECK(messageOf(engine->upload(*buffer, in.data(), 200)) ==
        "upload of 200 bytes: the buffer holds 100");
  CHECK(messageOf(engine->download(in.data(), *buffer, 101)) ==
        "download of 101 bytes: the buffer holds 100");
  auto view = buffer->view(embed::DType::BF16, {5, 10});
  REQUIRE(view);
  CHECK(fmt::format("{}", *view) == "bf16[5, 10] on the host");
  CHECK(fmt::format("{}", tooMany.error()) ==
        "invalid argument: layers = 6: the model has 5 Mamba layer(s) (10 layers: 5 "
        "Mamba, 4 MoE, 1 attention)");
  CHECK(fmt::format("{}", embed::Status()) == "ok");
}

TEST_CASE("embedding API: Backend::Gpu without a GPU is an error saying why",
          "[e2e][embed]") {
  auto engine = embed::Engine::open({embed::Backend::Gpu});
  if (engine) {
    CHECK(engine->backend() == embed::Backend::Gpu);
    CHECK(engine->describe().rfind("gpu: ", 0) == 0);
    return;
  }
  CHECK(engine.error().kind() == embed::ErrorKind::Device);
  CHECK(engine.error().message().rfind("no GPU 0: ", 0) == 0);
  auto fallback = embed::Engine::open({embed::Backend::Auto});
  REQUIRE(fallback);
  CHECK(fallback->backend() == embed::Backend::Interpreter);
  CHECK(fallback->describe().rfind("interpreter (no GPU: ", 0) == 0);
}
