// A checkpoint's quantization: every scheme but FP8 W8A8 with static per-tensor
// scales (and bf16) is refused by name, from its config or its tensors, and the
// declaration is cross-checked against each projection's dtype.
#include "../fixtures/PublishedCheckpoint.h"
#include "CheckpointTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit::models;
using namespace tilejit::models::testing;
using tilejit::testing::TempDir;

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
