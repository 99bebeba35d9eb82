// Checkpoints whose tensor names a wrapper prefixes (a vision-language model's
// "language_model.", an exporter's "model."): found from the tensors and loaded
// like the published layout; a checkpoint where no prefix, or more than one,
// holds the Mamba layers is refused with the names it holds.
#include "../fixtures/PublishedCheckpoint.h"
#include "CheckpointTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tilejit::models;
using namespace tilejit::models::testing;
namespace fx = tilejit::models::fixtures;

namespace {

/// The open error of a checkpoint of kConfig holding `blobs`.
std::string prefixError(const TempDir &dir, const std::vector<SafetensorsBlob> &blobs) {
  writeText(dir.file("config.json"), kConfig);
  REQUIRE(!writeSafetensors(dir.file("model.safetensors"), blobs));
  auto checkpoint = NemotronHCheckpoint::open(dir.path);
  REQUIRE(!checkpoint);
  return llvm::toString(checkpoint.takeError());
}

} // namespace

TEST_CASE("tensors under a wrapper's prefix are found and load as published",
          "[checkpoint]") {
  TempDir plain;
  REQUIRE(!fx::writePublishedCheckpoint(plain.path, fx::smallPublishedConfig(false),
                                        fx::kSmallQuantConfig));
  auto published = NemotronHCheckpoint::open(plain.path);
  REQUIRE(bool(published));
  CHECK(published->tensorPrefix().empty());
  for (const char *prefix : {"language_model.", "model."}) {
    TempDir dir;
    REQUIRE(!fx::writePublishedCheckpoint(dir.path, fx::smallPublishedConfig(true),
                                          fx::kSmallQuantConfig, prefix));
    auto checkpoint = NemotronHCheckpoint::open(dir.path);
    INFO(prefix << (checkpoint ? "" : ": " + llvm::toString(checkpoint.takeError())));
    REQUIRE(bool(checkpoint));
    CHECK(checkpoint->tensorPrefix() == prefix);
    // The quantization config's exclusions name the modules without the
    // prefix: layer 4 (bf16) and layer 7's out_proj still load as bf16.
    for (int64_t layer : checkpoint->config().mambaLayers()) {
      auto loaded = checkpoint->loadMambaLayer(layer);
      INFO("layer " << layer
                    << (loaded ? "" : ": " + llvm::toString(loaded.takeError())));
      REQUIRE(bool(loaded));
      CHECK(*loaded == llvm::cantFail(published->loadMambaLayer(layer)));
    }
  }
}

TEST_CASE("a missing tensor under a prefix is named with the prefix", "[checkpoint]") {
  std::vector<SafetensorsBlob> blobs = smallTensors();
  for (SafetensorsBlob &blob : blobs)
    blob.name = "language_model." + blob.name;
  blobs.erase(std::find_if(blobs.begin(), blobs.end(), [](const SafetensorsBlob &b) {
    return b.name == "language_model." + mambaTensorName(2, "D");
  }));
  TempDir dir;
  writeText(dir.file("config.json"), kConfig);
  REQUIRE(!writeSafetensors(dir.file("model.safetensors"), blobs));
  auto checkpoint = NemotronHCheckpoint::open(dir.path);
  REQUIRE(bool(checkpoint));
  auto layer = checkpoint->loadMambaLayer(2);
  REQUIRE(!layer);
  CHECK(llvm::toString(layer.takeError()) ==
        dir.path.str().str() +
            ": missing tensor 'language_model.backbone.layers.2.mixer.D'");
}

TEST_CASE("a checkpoint without the Mamba names under any one prefix is refused with "
          "what it holds",
          "[checkpoint]") {
  // Another naming scheme (no "backbone."): what was looked for, and the names seen.
  std::vector<SafetensorsBlob> renamed = smallTensors();
  for (SafetensorsBlob &blob : renamed)
    blob.name.replace(0, std::string("backbone.").size(), "model.");
  renamed.push_back({"lm_head.weight", "BF16", {2, 32}, std::vector<uint8_t>(128)});
  TempDir dir;
  CHECK(prefixError(dir, renamed) ==
        dir.path.str().str() +
            ": no tensor 'backbone.layers.0.mixer.in_proj.weight' (Mamba layer 0 of the "
            "config), under no prefix or any wrapper's "
            "('language_model.backbone.layers.0.mixer.in_proj.weight', "
            "'model.backbone.layers.0.mixer.in_proj.weight', ...); the checkpoint's " +
            std::to_string(renamed.size()) +
            " tensor(s) are named 'lm_head.weight', 'model.layers.*.mixer.A_log', "
            "'model.layers.*.mixer.D', 'model.layers.*.mixer.conv1d.bias', "
            "'model.layers.*.mixer.conv1d.weight', 'model.layers.*.mixer.dt_bias', "
            "'model.layers.*.mixer.in_proj.input_scale', "
            "'model.layers.*.mixer.in_proj.weight', "
            "'model.layers.*.mixer.in_proj.weight_scale', "
            "'model.layers.*.mixer.norm.weight' and 3 more");

  // A second copy of the model under another prefix: which is meant is not said.
  std::vector<SafetensorsBlob> twice = smallTensors();
  for (SafetensorsBlob blob : smallTensors()) {
    blob.name = "mtp." + blob.name;
    twice.push_back(std::move(blob));
  }
  TempDir both;
  CHECK(prefixError(both, twice) ==
        both.path.str().str() +
            ": Mamba layer 0 appears under 2 prefixes "
            "('backbone.layers.0.mixer.in_proj.weight', "
            "'mtp.backbone.layers.0.mixer.in_proj.weight'); tilejit loads one model from "
            "a checkpoint and cannot tell which is meant");

  // A name that merely ends like the published one is no prefix.
  std::vector<SafetensorsBlob> glued = smallTensors();
  for (SafetensorsBlob &blob : glued)
    blob.name = "x" + blob.name;
  TempDir gluedDir;
  CHECK_THAT(prefixError(gluedDir, glued),
             Catch::Contains("no tensor 'backbone.layers.0.mixer.in_proj.weight'"));
}
