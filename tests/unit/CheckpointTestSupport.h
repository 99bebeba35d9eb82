// The small checkpoint the checkpoint tests write and read back: its config,
// its synthetic tensors, and helpers that write raw files and collect errors.
#ifndef TILEJIT_TESTS_UNIT_CHECKPOINTTESTSUPPORT_H
#define TILEJIT_TESTS_UNIT_CHECKPOINTTESTSUPPORT_H

#include "TempDir.h"
#include "tilejit/models/nemotron_h/NemotronH.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cstring>

namespace tilejit::models::testing {

using tilejit::testing::TempDir;

/// H = 4, P = 4, G = 2, N = 8, hidden 32; layers "M*M-": layer 0 keeps bf16
/// projections, layer 2 is FP8.
inline const char *const kConfig = R"({
  "hidden_size": 32, "mamba_num_heads": 4, "mamba_head_dim": 4, "n_groups": 2,
  "ssm_state_size": 8, "conv_kernel": 4, "chunk_size": 4, "layer_norm_epsilon": 1e-05,
  "hybrid_override_pattern": "M*M-", "num_hidden_layers": 4,
  "time_step_limit": [0.0, Infinity]
})";

inline void writeText(const std::string &path, llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  REQUIRE(!ec);
  os << text;
}

inline NemotronHConfig smallConfig() {
  auto config = NemotronHConfig::fromJson(kConfig, "config.json");
  REQUIRE(bool(config));
  return *config;
}

/// Both Mamba layers of the small model, synthetic.
inline std::vector<SafetensorsBlob> smallTensors() {
  std::vector<SafetensorsBlob> blobs;
  for (int64_t layer : {0, 2}) {
    auto w = syntheticMambaLayer(smallConfig(), layer, 42);
    REQUIRE(bool(w));
    for (SafetensorsBlob &blob : exportMambaLayer(*w))
      blobs.push_back(std::move(blob));
  }
  return blobs;
}

inline SafetensorsBlob &blobNamed(std::vector<SafetensorsBlob> &blobs,
                                  llvm::StringRef suffix) {
  for (SafetensorsBlob &blob : blobs)
    if (blob.name == mambaTensorName(2, suffix))
      return blob;
  FAIL("no tensor " << suffix.str());
  return blobs.front();
}

/// Writes config.json and `blobs` into `dir` and loads Mamba layer 2.
inline std::string loadError(const TempDir &dir,
                             const std::vector<SafetensorsBlob> &blobs) {
  writeText(dir.file("config.json"), kConfig);
  REQUIRE(!writeSafetensors(dir.file("model.safetensors"), blobs));
  auto checkpoint = NemotronHCheckpoint::open(dir.path);
  if (!checkpoint)
    return llvm::toString(checkpoint.takeError());
  auto layer = checkpoint->loadMambaLayer(2);
  REQUIRE(!layer);
  return llvm::toString(layer.takeError());
}

/// A raw safetensors file: header length, header text, then `data` bytes.
inline void writeRaw(const std::string &path, uint64_t headerBytes,
                     llvm::StringRef header, size_t data) {
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &headerBytes, 8);
  writeText(path, bytes + header.str() + std::string(data, '\0'));
}

inline std::string openError(const std::string &path) {
  auto file = SafetensorsFile::open(path);
  REQUIRE(!file);
  return llvm::toString(file.takeError());
}

} // namespace tilejit::models::testing

#endif // TILEJIT_TESTS_UNIT_CHECKPOINTTESTSUPPORT_H
