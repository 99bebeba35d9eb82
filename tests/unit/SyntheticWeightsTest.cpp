// The synthetic weights: the full geometry, deterministic per layer and seed,
// activations of moderate size through the f64 mixer, and layers generated in
// parallel equal to the layers one by one.
#include "tilejit/models/reference/Reference.h"

#include "CheckpointTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tilejit::models;
using namespace tilejit::models::testing;
using tilejit::testing::TempDir;

TEST_CASE("the synthetic default: full geometry, deterministic, realistic",
          "[checkpoint]") {
  const NemotronHConfig c;
  auto fp8 = syntheticMambaLayer(c, 0);
  auto bf16 = syntheticMambaLayer(c, 4);
  REQUIRE(bool(fp8));
  REQUIRE(bool(bf16));
  CHECK(fp8->inProj.isFP8);
  CHECK(fp8->outProj.isFP8);
  CHECK(fp8->inProj.fp8Weight.shape == std::vector<int64_t>{10304, 2688});
  CHECK(fp8->outProj.fp8Weight.shape == std::vector<int64_t>{2688, 4096});
  CHECK(!bf16->inProj.isFP8);
  CHECK(bf16->inProj.bf16Weight.shape == std::vector<int64_t>{10304, 2688});
  CHECK(bf16->outProj.bf16Weight.shape == std::vector<int64_t>{2688, 4096});
  CHECK(fp8->convWeight.shape == std::vector<int64_t>{6144, 4});
  CHECK(fp8->convBias.shape == std::vector<int64_t>{6144});
  CHECK(fp8->normWeight.shape == std::vector<int64_t>{4096});
  for (const Tensor<float> *param : {&fp8->aLog, &fp8->dtBias, &fp8->d})
    CHECK(param->shape == std::vector<int64_t>{64});
  for (int64_t h = 0; h < 64; ++h) {
    double A = tilejit::models::ref::decayRate(fp8->aLog(h));
    CHECK((A >= -16.0 && A <= -1.0));
    double dt = tilejit::models::ref::timeStep(0.0, fp8->dtBias(h), 0.0, INFINITY);
    CHECK((dt >= 0.99e-3 && dt <= 1.01e-1));
  }
  // Deterministic; other layers and seeds give other weights.
  auto again = syntheticMambaLayer(c, 0);
  REQUIRE(bool(again));
  CHECK(*again == *fp8);
  auto otherSeed = syntheticMambaLayer(c, 0, 1);
  REQUIRE(bool(otherSeed));
  CHECK(otherSeed->inProj.fp8Weight != fp8->inProj.fp8Weight);
  auto otherLayer = syntheticMambaLayer(c, 2);
  REQUIRE(bool(otherLayer));
  CHECK(otherLayer->aLog != fp8->aLog);
  auto notMamba = syntheticMambaLayer(c, 5);
  REQUIRE(!notMamba);
  CHECK(llvm::toString(notMamba.takeError()) ==
        "synthetic weights: layer 5 is not a Mamba layer of '" + c.layerPattern + "'");

  // Activations stay in range: the mixer on unit-scale input gives finite
  // outputs of moderate magnitude in both projection forms.
  tilejit::models::Rng rng(1);
  Tensor<uint16_t> hidden = randomBF16({2, c.hiddenSize}, rng, -2, 2);
  for (const MambaLayerWeights *w : {&*fp8, &*bf16}) {
    auto state = tilejit::models::ref::PagedState::zeros(c, 2);
    auto out = tilejit::models::ref::mixerDecode(c, *w, hidden, {0, 1}, state);
    REQUIRE(bool(out));
    double sumSquares = 0;
    for (double v : tilejit::models::ref::fromBF16(*out).data) {
      REQUIRE(std::isfinite(v));
      sumSquares += v * v;
    }
    double rms = std::sqrt(sumSquares / double(out->size()));
    CHECK((rms > 0.05 && rms < 20.0));
  }
}

TEST_CASE("synthetic layers generated in parallel equal the layers one by one, with "
          "progress for each",
          "[checkpoint]") {
  NemotronHConfig c = smallConfig();
  c.layerPattern = "MMEMM*M";
  std::vector<int64_t> reported;
  auto layers = syntheticMambaLayers(c, 5, 11, [&](int64_t done, int64_t count) {
    CHECK(count == 5);
    reported.push_back(done);
  });
  REQUIRE(bool(layers));
  CHECK(reported == std::vector<int64_t>{1, 2, 3, 4, 5});
  REQUIRE(layers->size() == 5);
  for (size_t i = 0; i < layers->size(); ++i) {
    auto one = syntheticMambaLayer(c, c.mambaLayers()[i], 11);
    REQUIRE(bool(one));
    CHECK((*layers)[i] == *one);
  }
  auto tooMany = syntheticMambaLayers(c, 6);
  REQUIRE(!tooMany);
  CHECK(llvm::toString(tooMany.takeError()) ==
        "synthetic weights: 6 Mamba layers requested, the model has 5");
}
