// config.json: the geometry and layer kinds it gives (hybrid_override_pattern
// or layers_block_type), their disagreements named, and the published
// Nemotron-3-Nano config equal to the built-in full geometry.
#include "../fixtures/PublishedCheckpoint.h"
#include "CheckpointTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tilejit::models;
using namespace tilejit::models::testing;
using tilejit::testing::TempDir;
namespace fx = tilejit::models::fixtures;

TEST_CASE("config.json gives the geometry; Infinity parses", "[checkpoint]") {
  NemotronHConfig c = smallConfig();
  CHECK(c.intermediate() == 16);
  CHECK(c.convChannels() == 16 + 2 * 2 * 8);
  CHECK(c.inProjRows() == 16 + 48 + 4);
  CHECK(c.normGroupSize() == 8);
  CHECK(std::isinf(c.dtMax));
  CHECK(c.mambaLayers() == std::vector<int64_t>{0, 2});

  auto error = [](llvm::StringRef text) {
    auto r = NemotronHConfig::fromJson(text, "cfg");
    REQUIRE(!r);
    return llvm::toString(r.takeError());
  };
  std::string noHeads = kConfig;
  noHeads.replace(noHeads.find("\"mamba_num_heads\""), 17, "\"heads\"");
  CHECK(error(noHeads) == "cfg: missing integer 'mamba_num_heads'");
  std::string layers = kConfig;
  layers.replace(layers.find("\"num_hidden_layers\": 4"), 22, "\"num_hidden_layers\": 5");
  CHECK(error(layers) == "cfg: hybrid_override_pattern has 4 layers, num_hidden_layers "
                         "says 5");
  std::string groups = kConfig;
  groups.replace(groups.find("\"n_groups\": 2"), 13, "\"n_groups\": 3");
  CHECK(error(groups) == "cfg: mamba_num_heads 4 is not a multiple of n_groups 3");
  CHECK(error("{\"hidden_size\": ").find("cfg: invalid JSON") == 0);
}

TEST_CASE("the full NemotronH geometry and its 17 FP8 / 6 bf16 layers", "[checkpoint]") {
  NemotronHConfig c; // the defaults are the real model
  CHECK(!c.validate());
  CHECK(c.numLayers() == 52);
  CHECK(c.inProjRows() == 10304);
  CHECK(c.convChannels() == 6144);
  CHECK(c.mambaLayers() == std::vector<int64_t>{0,  2,  4,  7,  9,  11, 14, 16,
                                                18, 21, 23, 25, 28, 30, 32, 35,
                                                37, 39, 41, 44, 46, 48, 50});
  std::vector<int64_t> bf16;
  for (int64_t layer : c.mambaLayers())
    if (c.hasBF16Projections(layer))
      bf16.push_back(layer);
  CHECK(bf16 == std::vector<int64_t>{4, 11, 18, 25, 32, 41});
}

TEST_CASE("the published Nemotron-3-Nano config is the built-in geometry",
          "[checkpoint]") {
  auto published = NemotronHConfig::fromJson(fx::kNano30BConfig, "config.json");
  REQUIRE(bool(published));
  const NemotronHConfig builtIn;
  CHECK(published->hiddenSize == builtIn.hiddenSize);
  CHECK(published->numHeads == builtIn.numHeads);
  CHECK(published->headDim == builtIn.headDim);
  CHECK(published->numGroups == builtIn.numGroups);
  CHECK(published->stateSize == builtIn.stateSize);
  CHECK(published->chunkSize == builtIn.chunkSize);
  CHECK(published->layerPattern == builtIn.layerPattern);
  CHECK(published->mambaLayers().size() == 23);
  CHECK(std::isinf(published->dtMax));
}

TEST_CASE("layer kinds from hybrid_override_pattern or layers_block_type",
          "[checkpoint]") {
  auto pattern = NemotronHConfig::fromJson(fx::smallPublishedConfig(false), "cfg");
  auto blockTypes = NemotronHConfig::fromJson(fx::smallPublishedConfig(true), "cfg");
  REQUIRE(bool(pattern));
  REQUIRE(bool(blockTypes));
  CHECK(pattern->layerPattern == fx::kSmallPattern);
  CHECK(blockTypes->layerPattern == fx::kSmallPattern);
  CHECK(blockTypes->mambaLayers() == std::vector<int64_t>{0, 2, 4, 7, 9});

  auto error = [](const std::string &text) {
    auto r = NemotronHConfig::fromJson(text, "cfg");
    REQUIRE(!r);
    return llvm::toString(r.takeError());
  };
  std::string both = fx::smallPublishedConfig(true);
  both.insert(1, "\"hybrid_override_pattern\": \"MEMEM*EMEE\", ");
  CHECK(error(both) == "cfg: hybrid_override_pattern 'MEMEM*EMEE' disagrees with "
                       "layers_block_type ('MEMEM*EMEM')");
  std::string unknown = fx::smallPublishedConfig(true);
  unknown.replace(unknown.find("\"attention\""), 11, "\"retention\"");
  CHECK(error(unknown) == "cfg: layers_block_type[5] is \"retention\", expected "
                          "\"mamba\", \"attention\", \"moe\" or \"mlp\"");
  std::string counted = fx::smallPublishedConfig(true);
  counted.insert(1, "\"num_hidden_layers\": 52, ");
  CHECK(error(counted) ==
        "cfg: layers_block_type has 10 layers, num_hidden_layers says 52");
  std::string neither = fx::smallPublishedConfig(true);
  neither.replace(neither.find("\"layers_block_type\""), 19, "\"block_types\"");
  CHECK(error(neither) ==
        "cfg: missing the layer kinds: neither 'hybrid_override_pattern' "
        "nor 'layers_block_type'");
}
