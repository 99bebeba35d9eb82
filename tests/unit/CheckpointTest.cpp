// Checkpoint loading: small safetensors checkpoints written to a temp dir load
// back exactly, single file, sharded and in the published layout, and every
// malformed layer or file gives its own message with the numbers.
#include "../fixtures/PublishedCheckpoint.h"
#include "CheckpointTestSupport.h"

#include "llvm/Support/FileSystem.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

using namespace tilejit::models;
using namespace tilejit::models::testing;
using tilejit::testing::TempDir;
namespace fx = tilejit::models::fixtures;

TEST_CASE("a checkpoint round-trips, single file and sharded", "[checkpoint]") {
  const NemotronHConfig c = smallConfig();
  std::vector<SafetensorsBlob> blobs = smallTensors();
  TempDir dir;
  writeText(dir.file("config.json"), kConfig);
  REQUIRE(!writeSafetensors(dir.file("model.safetensors"), blobs));
  auto checkpoint = NemotronHCheckpoint::open(dir.path);
  REQUIRE(bool(checkpoint));
  for (int64_t layer : {0, 2}) {
    auto loaded = checkpoint->loadMambaLayer(layer);
    REQUIRE(bool(loaded));
    auto want = syntheticMambaLayer(c, layer, 42);
    REQUIRE(bool(want));
    CHECK(*loaded == *want);
    CHECK(loaded->inProj.isFP8 == (layer == 2));
    CHECK(loaded->convWeight.shape == std::vector<int64_t>{48, 4});
  }
  auto notMamba = checkpoint->loadMambaLayer(1);
  REQUIRE(!notMamba);
  CHECK(llvm::toString(notMamba.takeError()) ==
        dir.path.str().str() +
            ": layer 1 is not a Mamba layer (hybrid_override_pattern 'M*M-')");

  // Two shards and an index.
  TempDir sharded;
  writeText(sharded.file("config.json"), kConfig);
  size_t half = blobs.size() / 2;
  REQUIRE(!writeSafetensors(sharded.file("a.safetensors"), {blobs.data(), half}));
  REQUIRE(!writeSafetensors(sharded.file("b.safetensors"),
                            {blobs.data() + half, blobs.size() - half}));
  std::string index = "{\"weight_map\": {";
  for (size_t i = 0; i < blobs.size(); ++i)
    index += (i ? ", \"" : "\"") + blobs[i].name + "\": \"" + (i < half ? "a" : "b") +
             ".safetensors\"";
  writeText(sharded.file("model.safetensors.index.json"), index + "}}");
  auto shardedCheckpoint = NemotronHCheckpoint::open(sharded.path);
  REQUIRE(bool(shardedCheckpoint));
  auto loaded = shardedCheckpoint->loadMambaLayer(2);
  auto want = syntheticMambaLayer(c, 2, 42);
  REQUIRE(bool(loaded));
  REQUIRE(bool(want));
  CHECK(*loaded == *want);
}

TEST_CASE("each malformed layer names the tensor and what disagrees", "[checkpoint]") {
  TempDir dir;
  const std::string file = dir.file("model.safetensors");
  auto prefix = [&](llvm::StringRef suffix) {
    return "tensor '" + mambaTensorName(2, suffix) + "' in " + file + ": ";
  };
  std::vector<SafetensorsBlob> blobs = smallTensors();

  auto missing = blobs;
  missing.erase(missing.begin() + (&blobNamed(missing, "A_log") - missing.data()));
  CHECK(loadError(dir, missing) ==
        dir.path.str().str() + ": missing tensor '" + mambaTensorName(2, "A_log") + "'");

  auto shape = blobs;
  blobNamed(shape, "D").shape = {2, 2};
  CHECK(loadError(dir, shape) == prefix("D") + "expected shape [4], got [2, 2]");

  auto conv = blobs;
  blobNamed(conv, "conv1d.weight").shape = {48, 2, 2};
  CHECK(loadError(dir, conv) ==
        prefix("conv1d.weight") + "expected shape [48, 1, 4] or [48, 4], got [48, 2, 2]");

  auto dtype = blobs;
  SafetensorsBlob &aLog = blobNamed(dtype, "A_log");
  aLog.dtype = "F16";
  aLog.bytes.resize(aLog.bytes.size() / 2);
  CHECK(loadError(dir, dtype) == prefix("A_log") + "expected dtype F32 or BF16, got F16");

  auto projection = blobs;
  SafetensorsBlob &outProj = blobNamed(projection, "out_proj.weight");
  outProj.dtype = "I8";
  CHECK(loadError(dir, projection) ==
        prefix("out_proj.weight") + "expected dtype F8_E4M3 or BF16, got I8");

  auto noScale = blobs;
  noScale.erase(noScale.begin() +
                (&blobNamed(noScale, "in_proj.input_scale") - noScale.data()));
  CHECK(loadError(dir, noScale) ==
        dir.path.str().str() + ": FP8 tensor '" + mambaTensorName(2, "in_proj.weight") +
            "' needs its scale '" + mambaTensorName(2, "in_proj.input_scale") +
            "', which is missing");

  auto zeroScale = blobs;
  std::memset(blobNamed(zeroScale, "out_proj.weight_scale").bytes.data(), 0, 4);
  CHECK(loadError(dir, zeroScale) == "tensor '" +
                                         mambaTensorName(2, "out_proj.weight_scale") +
                                         "': scale must be positive and finite, got 0");
}

TEST_CASE("malformed safetensors files are refused with the numbers", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  REQUIRE(!writeSafetensors(path, smallTensors()));
  uint64_t size = 0;
  REQUIRE(!llvm::sys::fs::file_size(path, size));

  SECTION("truncated file") {
    std::filesystem::resize_file(path, size - 3);
    CHECK(openError(path).find("run past the end of the data") != std::string::npos);
  }
  SECTION("too short for a header") {
    writeText(path, "abc");
    CHECK(openError(path) == path + ": 3 bytes are too short for a safetensors header");
  }
  SECTION("header length past the end") {
    writeRaw(path, 1000, "{}", 0);
    CHECK(openError(path) ==
          path + ": header length 1000 runs past the end of the file (10 bytes)");
  }
  SECTION("bad JSON header") {
    writeRaw(path, 9, "{\"a\": [1,", 0);
    CHECK(openError(path).find(path + ": invalid JSON header: ") == 0);
  }
  SECTION("offsets past the end") {
    std::string header =
        R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})";
    writeRaw(path, header.size(), header, 12);
    CHECK(openError(path) == path + ": tensor 't': data_offsets [0, 16] run past the end "
                                    "of the data (12 bytes)");
  }
  SECTION("offsets that disagree with dtype and shape") {
    std::string header =
        R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}})";
    writeRaw(path, header.size(), header, 12);
    CHECK(openError(path) ==
          path + ": tensor 't': F32 [4] needs 16 bytes, data_offsets cover 12");
  }
  SECTION("an entry without data_offsets") {
    std::string header = R"({"t": {"dtype": "F32", "shape": [4]}})";
    writeRaw(path, header.size(), header, 16);
    CHECK(openError(path) == path +
                                 ": tensor 't': needs a dtype string, a shape of "
                                 "non-negative integers and data_offsets [begin, end]");
  }
}

TEST_CASE("a published-layout sharded checkpoint loads every Mamba layer, mixed and "
          "BF16 per-head parameters included",
          "[checkpoint]") {
  for (bool blockTypes : {false, true}) {
    TempDir dir;
    REQUIRE(!fx::writePublishedCheckpoint(dir.path, fx::smallPublishedConfig(blockTypes),
                                          fx::kSmallQuantConfig));
    auto checkpoint = NemotronHCheckpoint::open(dir.path);
    INFO((checkpoint ? "" : llvm::toString(checkpoint.takeError())));
    REQUIRE(bool(checkpoint));
    CHECK(checkpoint->quantization().origin == dir.file("hf_quant_config.json"));
    const std::vector<MambaLayerWeights> want =
        fx::smallMambaLayers(checkpoint->config());
    REQUIRE(want.size() == 5);
    for (const MambaLayerWeights &w : want) {
      auto loaded = checkpoint->loadMambaLayer(w.layer);
      INFO("layer " << w.layer
                    << (loaded ? "" : ": " + llvm::toString(loaded.takeError())));
      REQUIRE(bool(loaded));
      CHECK(*loaded == w);
      CHECK(loaded->inProj.isFP8 == (w.layer != 4));
      CHECK(loaded->outProj.isFP8 == (w.layer != 4 && w.layer != 7));
    }
  }
}
