// Checkpoint loading: small safetensors checkpoints written to a temp dir load
// back exactly, every malformed input gives its own message, and the synthetic
// default has the real model's geometry and FP8/bf16 pattern, deterministically.
#include "tilejit/models/reference/Reference.h"

#include "../fixtures/PublishedCheckpoint.h"
#include "CheckpointTestSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>

using namespace tilejit::models;
using namespace tilejit::models::testing;
using tilejit::testing::TempDir;

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

namespace {

namespace fx = tilejit::models::fixtures;

/// The error of opening a checkpoint, or of loading Mamba layer `layer` from it.
std::string checkpointError(const TempDir &dir, int64_t layer) {
  auto checkpoint = NemotronHCheckpoint::open(dir.path);
  if (!checkpoint)
    return llvm::toString(checkpoint.takeError());
  auto loaded = checkpoint->loadMambaLayer(layer);
  REQUIRE(!loaded);
  return llvm::toString(loaded.takeError());
}

/// The reduced published config with `quantization` as its quantization_config.
std::string withQuantizationConfig(const std::string &quantization) {
  std::string text = fx::smallPublishedConfig(false);
  return "{\"quantization_config\": " + quantization + ", " + text.substr(1);
}

const char *const kNotSupported =
    " are not supported: tilejit runs FP8 W8A8 projections with static per-tensor "
    "scales, and bf16 ones";

} // namespace

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

TEST_CASE("an unsupported quantization is named, from its config or its tensors",
          "[checkpoint]") {
  auto quantFileError = [](const std::string &algorithm) {
    TempDir dir;
    std::string quant = fx::kSmallQuantConfig;
    quant.replace(quant.find("\"FP8\""), 5, "\"" + algorithm + "\"");
    REQUIRE(
        !fx::writePublishedCheckpoint(dir.path, fx::smallPublishedConfig(false), quant));
    std::string error = checkpointError(dir, 0);
    std::string origin = dir.file("hf_quant_config.json") + ": ";
    REQUIRE(error.rfind(origin, 0) == 0);
    return error.substr(origin.size());
  };
  CHECK(quantFileError("NVFP4") ==
        std::string("NVFP4 projections (quant_algo NVFP4)") + kNotSupported);
  CHECK(
      quantFileError("FP8_PER_CHANNEL_PER_TOKEN") ==
      std::string("per-channel FP8 projections (quant_algo FP8_PER_CHANNEL_PER_TOKEN)") +
          kNotSupported);
  CHECK(quantFileError("W4A16_AWQ") ==
        std::string("projections quantized as W4A16_AWQ (quant_algo W4A16_AWQ)") +
            kNotSupported);

  auto configError = [](const std::string &quantization) {
    TempDir dir;
    REQUIRE(!fx::writePublishedCheckpoint(dir.path, withQuantizationConfig(quantization),
                                          ""));
    std::string error = checkpointError(dir, 0);
    std::string origin = dir.file("config.json") + " quantization_config: ";
    REQUIRE(error.rfind(origin, 0) == 0);
    return error.substr(origin.size());
  };
  const std::string fp8Tensor = R"("weights": {"num_bits": 8, "type": "float", )"
                                R"("strategy": "tensor", "dynamic": false})";
  auto compressed = [&](const std::string &weights, const std::string &inputs) {
    return R"({"quant_method": "compressed-tensors", "format": "float-quantized", )"
           R"("config_groups": {"group_0": {"targets": ["Linear"], )" +
           weights + (inputs.empty() ? "" : ", " + inputs) +
           R"(}}, "ignore": ["lm_head"]})";
  };
  const std::string staticInputs = R"("input_activations": {"num_bits": 8, "type": )"
                                   R"("float", "strategy": "tensor", "dynamic": false})";
  CHECK(configError(compressed(R"("weights": {"num_bits": 8, "type": "float", )"
                               R"("strategy": "channel", "dynamic": false})",
                               staticInputs)) ==
        std::string("per-channel FP8 projections (compressed-tensors group group_0)") +
            kNotSupported);
  CHECK(configError(compressed(R"("weights": {"num_bits": 4, "type": "float", )"
                               R"("strategy": "tensor_group", "group_size": 16})",
                               staticInputs)) ==
        std::string("NVFP4 projections (compressed-tensors group group_0)") +
            kNotSupported);
  CHECK(configError(compressed(fp8Tensor, R"("input_activations": {"num_bits": 8, )"
                                          R"("type": "float", "strategy": "token", )"
                                          R"("dynamic": true})")) ==
        std::string("FP8 projections with dynamic activation scales (compressed-tensors "
                    "group group_0)") +
            kNotSupported);
  CHECK(configError(R"({"quant_method": "fp8", "activation_scheme": "dynamic", )"
                    R"("weight_block_size": [128, 128]})") ==
        std::string("block-scaled FP8 projections (weight_block_size)") + kNotSupported);
  CHECK(configError(R"({"quant_method": "gptq", "bits": 4})") ==
        std::string("projections quantized by quant_method 'gptq'") + kNotSupported);

  // The tensors themselves: packed NVFP4, per-channel and block FP8 scales.
  TempDir dir;
  std::vector<SafetensorsBlob> nvfp4 = smallTensors();
  SafetensorsBlob &weight = blobNamed(nvfp4, "in_proj.weight");
  weight.dtype = "U8";
  weight.shape[1] /= 2;
  weight.bytes.resize(weight.bytes.size() / 2);
  nvfp4.push_back(
      {mambaTensorName(2, "in_proj.weight_scale_2"), "F32", {}, {0, 0, 128, 63}});
  CHECK(loadError(dir, nvfp4) ==
        "tensor '" + mambaTensorName(2, "in_proj.weight") +
            "' is U8 [68, 16] with a weight_scale_2: NVFP4 projections are not supported "
            "(tilejit runs FP8 W8A8 with static per-tensor scales, and bf16)");
  std::vector<SafetensorsBlob> perChannel = smallTensors();
  SafetensorsBlob &scale = blobNamed(perChannel, "out_proj.weight_scale");
  scale.shape = {32, 1};
  scale.bytes = bytesOf(std::vector<float>(32, 0.5f));
  CHECK(loadError(dir, perChannel) ==
        "tensor '" + mambaTensorName(2, "out_proj.weight_scale") +
            "' has shape [32, 1], one scale per output channel: per-channel FP8 "
            "projections "
            "are not supported (tilejit runs one static scale per tensor)");
  std::vector<SafetensorsBlob> block = smallTensors();
  block.push_back(
      {mambaTensorName(2, "in_proj.weight_scale_inv"), "F32", {1, 1}, {0, 0, 128, 63}});
  CHECK(loadError(dir, block) ==
        "tensor '" + mambaTensorName(2, "in_proj.weight") + "' has block scales ('" +
            mambaTensorName(2, "in_proj") +
            ".weight_scale_inv'): block-scaled FP8 projections "
            "are not supported (tilejit runs one static scale per "
            "tensor)");
}

TEST_CASE("the quantization config is cross-checked against each projection's dtype",
          "[checkpoint]") {
  {
    TempDir dir;
    std::string quant = fx::kSmallQuantConfig;
    quant.replace(quant.find("\"backbone.layers.4.mixer*\", "), 28, "");
    REQUIRE(
        !fx::writePublishedCheckpoint(dir.path, fx::smallPublishedConfig(false), quant));
    CHECK(checkpointError(dir, 4) ==
          "tensor 'backbone.layers.4.mixer.in_proj.weight' is BF16, but " +
              dir.file("hf_quant_config.json") +
              " quantizes 'backbone.layers.4.mixer.in_proj' to FP8 (no exclusion names "
              "it)");
  }
  {
    TempDir dir;
    std::string quant = fx::kSmallQuantConfig;
    quant.replace(quant.find("\"lm_head\""), 9,
                  "\"re:backbone\\\\.layers\\\\.0\\\\..*\"");
    REQUIRE(
        !fx::writePublishedCheckpoint(dir.path, fx::smallPublishedConfig(false), quant));
    CHECK(checkpointError(dir, 0) ==
          "tensor 'backbone.layers.0.mixer.in_proj.weight' is F8_E4M3, but " +
              dir.file("hf_quant_config.json") +
              " excludes 'backbone.layers.0.mixer.in_proj' from quantization");
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
