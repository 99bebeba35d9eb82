// The checkpoint loader targets (models/nemotron_h): `config` (config.json
// text), `safetensors` (one file) and `checkpoint` (a directory holding both:
// the input is a u32 little-endian config length, the config text, then the
// safetensors bytes), each read through the product's own entry points.
// Seeds: the tests' small config, the full model's config, and checkpoints of
// synthetic layers written by writeSafetensors.
#include "FuzzTargets.h"

#include "tilejit/models/nemotron_h/NemotronH.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace tilejit::models;

namespace tilejit::fuzz {

const char *const smallConfig = R"({
  "hidden_size": 32, "mamba_num_heads": 4, "mamba_head_dim": 4, "n_groups": 2,
  "ssm_state_size": 8, "conv_kernel": 4, "chunk_size": 4, "layer_norm_epsilon": 1e-05,
  "hybrid_override_pattern": "M*M-", "num_hidden_layers": 4,
  "time_step_limit": [0.0, Infinity]
})";

namespace {

/// The released model's fields (docs/numerics.md#geometry), transformers' spelling
/// of infinity.
const char *const fullConfig = R"({
  "hidden_size": 2688, "mamba_num_heads": 64, "mamba_head_dim": 64,
  "mamba_n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4, "chunk_size": 128,
  "layer_norm_epsilon": 1e-05, "num_hidden_layers": 52,
  "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
  "time_step_limit": [0.0, {"__float__": "Infinity"}]
})";

/// A Mamba layer touches at most this many layers per input, so that a
/// pattern of thousands of 'M's does not turn one input into a long run.
constexpr int64_t maxLayersPerInput = 4;

llvm::StringRef textOf(llvm::ArrayRef<uint8_t> input) {
  return {reinterpret_cast<const char *>(input.data()), input.size()};
}

std::string scratchFile(llvm::StringRef name) {
  llvm::SmallString<256> path(scratchDir());
  llvm::sys::path::append(path, name);
  return std::string(path);
}

std::string readOrDie(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  check(bool(buffer), "cannot read back a seed file");
  return (*buffer)->getBuffer().str();
}

/// The checkpoint of both Mamba layers of the small config, as a file's bytes.
std::string smallSafetensors(bool withScales) {
  auto config = NemotronHConfig::fromJson(smallConfig, "seed");
  check(bool(config), "the seed config does not parse");
  std::vector<SafetensorsBlob> blobs;
  for (int64_t layer : {0, 2}) {
    auto weights = syntheticMambaLayer(*config, layer, 42);
    check(bool(weights), "no synthetic seed weights");
    for (SafetensorsBlob &blob : exportMambaLayer(*weights))
      if (withScales || !llvm::StringRef(blob.name).ends_with("_scale"))
        blobs.push_back(std::move(blob));
  }
  std::string path = scratchFile("seed.safetensors");
  check(!llvm::errorToBool(writeSafetensors(path, blobs)), "cannot write a seed");
  return readOrDie(path);
}

std::string packCheckpoint(llvm::StringRef config, llvm::StringRef safetensors) {
  std::string packed(4, '\0');
  llvm::support::endian::write32le(packed.data(), uint32_t(config.size()));
  return packed + config.str() + safetensors.str();
}

/// Every tensor's byte range lies inside the file; reading each byte lets
/// ASan check it.
void touchTensors(const SafetensorsFile &file, uint64_t fileBytes) {
  for (const auto &entry : file.tensors()) {
    const SafetensorsTensor &tensor = entry.getValue();
    check(tensor.begin <= tensor.end && tensor.end <= fileBytes,
          "a tensor's range leaves the file");
    unsigned sum = 0;
    for (uint8_t byte : file.bytes(tensor))
      sum += byte;
    (void)sum;
  }
}

} // namespace

void runConfig(llvm::ArrayRef<uint8_t> input) {
  auto config = NemotronHConfig::fromJson(textOf(input), "fuzz");
  if (!config) {
    llvm::consumeError(config.takeError());
    return;
  }
  // A config that validated has a usable geometry: the sizes the loader and the
  // kernels derive from it are positive (and, under UBSan, computed without
  // overflow).
  check(config->intermediate() > 0 && config->convChannels() > 0 &&
            config->inProjRows() > 0 && config->normGroupSize() > 0,
        "a validated config derives a non-positive size");
  for (int64_t layer : config->mambaLayers())
    (void)config->hasBF16Projections(layer);
}

void runSafetensors(llvm::ArrayRef<uint8_t> input) {
  std::string path = scratchFile("fuzz.safetensors");
  writeFileOrDie(path, textOf(input));
  auto file = SafetensorsFile::open(path);
  if (!file) {
    llvm::consumeError(file.takeError());
    return;
  }
  touchTensors(*file, input.size());
}

void runCheckpoint(llvm::ArrayRef<uint8_t> input) {
  if (input.size() < 4)
    return;
  uint32_t configBytes = llvm::support::endian::read32le(input.data());
  llvm::StringRef rest = textOf(input).drop_front(4);
  if (configBytes > rest.size())
    return;
  writeFileOrDie(scratchFile("config.json"), rest.take_front(configBytes));
  writeFileOrDie(scratchFile("model.safetensors"), rest.drop_front(configBytes));
  auto checkpoint = NemotronHCheckpoint::open(scratchDir());
  if (!checkpoint) {
    llvm::consumeError(checkpoint.takeError());
    return;
  }
  const NemotronHConfig &config = checkpoint->config();
  auto file = SafetensorsFile::open(scratchFile("model.safetensors"));
  check(bool(file), "the checkpoint opened, its only file does not");
  std::vector<int64_t> layers = config.mambaLayers();
  if (int64_t(layers.size()) > maxLayersPerInput)
    layers.resize(maxLayersPerInput);
  for (int64_t layer : layers) {
    auto weights = checkpoint->loadMambaLayer(layer);
    if (!weights) {
      llvm::consumeError(weights.takeError());
      continue;
    }
    // A layer that loads holds exactly the file's bytes, at the geometry's
    // shapes (exportMambaLayer writes them back under the same names).
    check(weights->convWeight.shape ==
              std::vector<int64_t>{config.convChannels(), config.convKernel},
          "conv1d.weight loaded at another shape");
    for (const SafetensorsBlob &blob : exportMambaLayer(*weights)) {
      const SafetensorsTensor *tensor = file->find(blob.name);
      check(tensor && tensor->dtype == blob.dtype, "a loaded tensor is not in the file");
      llvm::ArrayRef<uint8_t> bytes = file->bytes(*tensor);
      check(bytes.size() == blob.bytes.size() &&
                std::memcmp(bytes.data(), blob.bytes.data(), bytes.size()) == 0,
            "a loaded tensor differs from the file's bytes");
    }
  }
}

Seeds configSeeds(llvm::StringRef) {
  return {{"small.json", smallConfig}, {"full.json", fullConfig}};
}

Seeds safetensorsSeeds(llvm::StringRef) {
  return {{"small.safetensors", smallSafetensors(true)},
          {"small-no-scales.safetensors", smallSafetensors(false)}};
}

Seeds checkpointSeeds(llvm::StringRef) {
  return {{"small.ckpt", packCheckpoint(smallConfig, smallSafetensors(true))},
          {"small-no-scales.ckpt", packCheckpoint(smallConfig, smallSafetensors(false))},
          {"full-config-small-file.ckpt",
           packCheckpoint(fullConfig, smallSafetensors(true))}};
}

} // namespace tilejit::fuzz
