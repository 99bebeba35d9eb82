// Checkpoints and configs a careless or hostile user could hand the loader
// (issue #23): tensors whose bytes overlap, leave gaps or are named twice, an
// index naming files outside the checkpoint or tensors its shards lack, files
// that are FIFOs or nest JSON a million deep, configs whose eps or dt clamp is
// not finite, and FP8 scales whose product or reciprocal is not finite in f32.
// Each is an error naming its numbers; none loads, hangs or crashes.
#include "../fixtures/PublishedCheckpoint.h"
#include "CheckpointTestSupport.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>

using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

/// Two F32 [4] tensors at `first` and `second`, over `data` bytes of data.
std::string twoTensors(const std::string &path, std::pair<int, int> first,
                       std::pair<int, int> second, size_t data) {
  std::string header = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [)" +
                       std::to_string(first.first) + ", " + std::to_string(first.second) +
                       R"(]}, "b": {"dtype": "F32", "shape": [4], "data_offsets": [)" +
                       std::to_string(second.first) + ", " +
                       std::to_string(second.second) + "]}}";
  writeRaw(path, header.size(), header, data);
  return openError(path);
}

/// The error of opening the reduced published checkpoint written with
/// `exclusions` as hf_quant_config.json's exclude_modules (any JSON), or of
/// loading its first Mamba layer; empty when both succeed.
std::string quantConfigError(const TempDir &dir, const std::string &exclusions) {
  std::string quant = fixtures::kSmallQuantConfig;
  const std::string key = "\"exclude_modules\": ";
  size_t from = quant.find(key) + key.size(), to = quant.find("]", from) + 1;
  quant.replace(from, to - from, exclusions);
  REQUIRE(!fixtures::writePublishedCheckpoint(
      dir.path, fixtures::smallPublishedConfig(false), quant));
  auto checkpoint = NemotronHCheckpoint::open(dir.path);
  if (!checkpoint)
    return llvm::toString(checkpoint.takeError());
  auto layer = checkpoint->loadMambaLayer(0);
  return layer ? std::string() : llvm::toString(layer.takeError());
}

std::string configError(llvm::StringRef from, llvm::StringRef to) {
  std::string text = kConfig;
  size_t at = text.find(from.str());
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to.str());
  auto config = NemotronHConfig::fromJson(text, "cfg");
  REQUIRE(!config);
  return llvm::toString(config.takeError());
}

} // namespace

TEST_CASE("tensors whose bytes overlap, leave gaps or are named twice are refused",
          "[checkpoint][badinput]") {
  TempDir dir;
  const std::string path = dir.file("x.safetensors");
  CHECK(twoTensors(path, {0, 16}, {8, 24}, 24) ==
        path + ": data_offsets of tensors 'a' [0, 16] and 'b' [8, 24] overlap");
  // Two names for one range: each would load the other's bytes.
  CHECK(twoTensors(path, {0, 16}, {0, 16}, 16) ==
        path + ": data_offsets of tensors 'a' [0, 16] and 'b' [0, 16] overlap");
  CHECK(twoTensors(path, {0, 16}, {20, 36}, 36) ==
        path + ": data bytes [16, 20) belong to no tensor (before 'b' [20, 36])");
  CHECK(twoTensors(path, {16, 32}, {0, 16}, 40) ==
        path +
            ": the tensors cover 32 bytes of data, the file holds 40 after its header");
  std::string twice =
      R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
      R"( "t": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}})";
  writeRaw(path, twice.size(), twice, 32);
  CHECK(openError(path) == path + ": invalid JSON header: [1:63, byte=63]: duplicate key "
                                  "\"t\" in one object");
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  writeRaw(path, deep.size(), deep, 0);
  CHECK(openError(path) == path + ": invalid JSON header: [1:64, byte=64]: arrays and "
                                  "objects nest deeper than 64 levels");
}

TEST_CASE("an index cannot reach outside its directory or misplace a tensor",
          "[checkpoint][badinput]") {
  TempDir dir;
  writeText(dir.file("config.json"), kConfig);
  std::vector<SafetensorsBlob> blobs = smallTensors();
  REQUIRE(!writeSafetensors(dir.file("a.safetensors"), blobs));
  auto openWith = [&](const std::string &index) {
    writeText(dir.file("model.safetensors.index.json"), index);
    auto checkpoint = NemotronHCheckpoint::open(dir.path);
    REQUIRE(!checkpoint);
    return llvm::toString(checkpoint.takeError());
  };
  const std::string indexPath = dir.file("model.safetensors.index.json");
  CHECK(openWith(R"({"weight_map": {"w": "../../../../etc/passwd"}})") ==
        indexPath +
            ": weight_map entry 'w' names '../../../../etc/passwd', a path through "
            "'..': only files inside '" +
            dir.path.str().str() + "' are read");
  CHECK(openWith(R"({"weight_map": {"w": "/etc/passwd"}})") ==
        indexPath +
            ": weight_map entry 'w' names '/etc/passwd', an absolute path: only "
            "files inside '" +
            dir.path.str().str() + "' are read");
  CHECK(openWith(R"({"weight_map": {"backbone.nothing": "a.safetensors"}})") ==
        dir.path.str().str() + ": the index places tensor 'backbone.nothing' in " +
            dir.file("a.safetensors") + ", which does not hold it");
  CHECK(openWith(std::string(1000000, '{')) ==
        indexPath +
            ": invalid JSON: [1:64, byte=64]: arrays and objects nest deeper than "
            "64 levels");
}

TEST_CASE("a config or shard that is a FIFO is refused without blocking",
          "[checkpoint][badinput]") {
  TempDir dir;
  REQUIRE(::mkfifo(dir.file("config.json").c_str(), 0644) == 0);
  auto checkpoint = NemotronHCheckpoint::open(dir.path);
  REQUIRE(!checkpoint);
  CHECK(llvm::toString(checkpoint.takeError()) ==
        "config '" + dir.file("config.json") + "' is a FIFO, not a regular file");
  TempDir other;
  writeText(other.file("config.json"), kConfig);
  REQUIRE(::mkfifo(other.file("model.safetensors").c_str(), 0644) == 0);
  checkpoint = NemotronHCheckpoint::open(other.path);
  REQUIRE(!checkpoint);
  CHECK(llvm::toString(checkpoint.takeError()) == "safetensors file '" +
                                                      other.file("model.safetensors") +
                                                      "' is a FIFO, not a regular file");
  CHECK_THAT(configError("\"num_hidden_layers\": 4",
                         "\"num_hidden_layers\": 4, \"x\": " + std::string(1000000, '[')),
             Catch::StartsWith("cfg: invalid JSON: [") &&
                 Catch::EndsWith("arrays and objects nest deeper than 64 levels"));
}

TEST_CASE("a config whose eps or dt clamp is not finite in f32 is refused",
          "[checkpoint][badinput]") {
  CHECK(configError("\"time_step_limit\": [0.0, Infinity]",
                    "\"time_step_limit\": [Infinity, Infinity]") ==
        "cfg: time_step_limit [inf, inf] is not a range in [0, inf) with a finite lower "
        "end");
  CHECK(
      configError("\"time_step_limit\": [0.0, Infinity]",
                  "\"time_step_limit\": [1e300, Infinity]") ==
      "cfg: time_step_limit [1e+300, inf] is not a range in [0, inf) with a finite lower "
      "end");
  CHECK(configError("1e-05", "1e400") ==
        "cfg: layer_norm_epsilon must be positive and finite in f32, got inf");
  // Below f32's smallest subnormal: 0 in the kernel, rsqrt(0) of a zero row.
  CHECK(configError("1e-05", "1e-50") ==
        "cfg: layer_norm_epsilon must be positive and finite in f32, got 1e-50");
}

TEST_CASE("FP8 scales whose product or reciprocal is not finite in f32 are refused",
          "[checkpoint][badinput]") {
  TempDir dir;
  auto withScales = [&](float input, float weight) {
    std::vector<SafetensorsBlob> blobs = smallTensors();
    std::memcpy(blobNamed(blobs, "in_proj.input_scale").bytes.data(), &input, 4);
    std::memcpy(blobNamed(blobs, "in_proj.weight_scale").bytes.data(), &weight, 4);
    return loadError(dir, blobs);
  };
  const std::string weight = mambaTensorName(2, "in_proj.weight");
  CHECK(
      withScales(1e30f, 1e30f) ==
      dir.path.str().str() + ": FP8 tensor '" + weight +
          "': its scales s_x = 1e+30 and s_w = 1e+30 give s_x * s_w = inf and 1 / s_x = "
          "1e-30 in f32, which must be finite and nonzero");
  // A subnormal s_x: its reciprocal overflows.
  CHECK(
      withScales(0x1p-130f, 1.0f) ==
      dir.path.str().str() + ": FP8 tensor '" + weight +
          "': its scales s_x = 7.34684e-40 and s_w = 1 give s_x * s_w = 7.34684e-40 and "
          "1 / s_x = inf in f32, which must be finite and nonzero");
}

TEST_CASE("exclusion patterns the regex compiler would recurse or blow up on are refused",
          "[checkpoint][badinput]") {
  TempDir dir;
  const std::string quant = dir.file("hf_quant_config.json");
  // 100,000 nested groups overflowed the stack inside the regex compiler.
  std::string nested = "re:" + std::string(100000, '(') + "a" + std::string(100000, ')');
  CHECK(quantConfigError(dir, "[\"" + nested + "\"]") ==
        quant + ": exclude_modules entry '" + nested.substr(0, 64) +
            "...' is a regular expression tilejit does not compile: it is 200001 "
            "characters "
            "long, over 1024");
  std::string deep = "re:" + std::string(17, '(') + "a" + std::string(17, ')');
  CHECK(
      quantConfigError(dir, "[\"" + deep + "\"]") ==
      quant + ": exclude_modules entry '" + deep +
          "' is a regular expression tilejit does not compile: its groups nest 17 deep, "
          "over 16");
  // Each bounded repetition copies its group: five nested {255} are 255^5 copies.
  CHECK(quantConfigError(dir, R"x(["re:((((((a){255}){255}){255}){255}){255})"])x") ==
        quant +
            ": exclude_modules entry 're:((((((a){255}){255}){255}){255}){255})' is a "
            "regular expression tilejit does not compile: it has 5 bounded repetitions "
            "({m,n}), over 4");
  // Escaped and bracketed parentheses are literals, not groups: 18 of each
  // stay inside the bounds, as does the fixture's own list (the counterfactual).
  const std::string kept =
      R"("lm_head", "backbone.layers.4.mixer*", )"
      R"("backbone.layers.5.mixer*", "backbone.layers.7.mixer.out_proj", )"
      R"("*.mixer.gate")";
  std::string escaped = "\"re:", bracketed = "\"re:[";
  for (int i = 0; i < 18; ++i)
    escaped += "\\\\(", bracketed += "(";
  CHECK(quantConfigError(dir, "[" + escaped + "\", " + bracketed + "]x\", " + kept +
                                  "]") == "");
  CHECK(quantConfigError(dir, "[" + kept + "]") == "");
}

TEST_CASE("an exclusion list that is not a list is refused, never ignored",
          "[checkpoint][badinput]") {
  TempDir dir;
  const std::string quant = dir.file("hf_quant_config.json");
  // A single pattern as a string used to be ignored, quantizing what it names.
  CHECK(quantConfigError(dir, R"("backbone.layers.4.mixer*")") ==
        quant + ": exclude_modules must be a list of module patterns, got a string");
  CHECK(quantConfigError(dir, "7") ==
        quant + ": exclude_modules must be a list of module patterns, got a number");
  CHECK(quantConfigError(dir, R"({"a": 1})") ==
        quant + ": exclude_modules must be a list of module patterns, got an object");
}
