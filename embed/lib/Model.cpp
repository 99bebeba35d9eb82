// Loading a model: a checkpoint's Mamba layers (the config's own layer count and
// kinds, its quantization, its tensor prefix) or the embedded synthetic weights.
#include "EmbedInternal.h"
#include "tilejit/embed/Format.h"

#include <algorithm>
#include <chrono>

namespace tilejit::embed {

std::string ModelInfo::describeLayers() const {
  std::string text = fmt::format("{} layers:", layerPattern.size());
  const char *sep = " ";
  for (auto [kind, name] :
       {std::pair{'M', "Mamba"}, {'E', "MoE"}, {'*', "attention"}, {'-', "MLP"}}) {
    if (auto n = std::count(layerPattern.begin(), layerPattern.end(), kind)) {
      text += fmt::format("{}{} {}", sep, n, name);
      sep = ", ";
    }
  }
  return text;
}

namespace {

uint64_t projectionBytes(const models::Projection &p) {
  return p.isFP8 ? p.fp8Weight.data.size() : p.bf16Weight.data.size() * 2;
}

uint64_t layerBytes(const models::MambaLayerWeights &w) {
  return projectionBytes(w.inProj) + projectionBytes(w.outProj) +
         2 * (w.convWeight.data.size() + w.convBias.data.size() +
              w.normWeight.data.size()) +
         4 * (w.aLog.data.size() + w.dtBias.data.size() + w.d.data.size());
}

} // namespace

Result<Model> Model::load(const ModelOptions &options) {
  const auto start = std::chrono::steady_clock::now();
  auto state = std::make_shared<State>();
  std::optional<models::NemotronHCheckpoint> checkpoint;
  if (!options.checkpoint.empty()) {
    auto opened = models::NemotronHCheckpoint::open(options.checkpoint);
    if (!opened)
      return toError(ErrorKind::Checkpoint, opened.takeError());
    checkpoint = std::move(*opened);
    state->config = checkpoint->config();
  }
  const models::NemotronHConfig &config = state->config;
  ModelInfo &info = state->info;
  info.source = checkpoint ? options.checkpoint : "embedded synthetic NemotronH";
  info.hiddenSize = config.hiddenSize;
  info.numHeads = config.numHeads;
  info.headDim = config.headDim;
  info.numGroups = config.numGroups;
  info.stateSize = config.stateSize;
  info.convKernel = config.convKernel;
  info.chunkSize = config.chunkSize;
  info.layerPattern = config.layerPattern;
  const std::vector<int64_t> mamba = config.mambaLayers();
  info.mambaLayers = int64_t(mamba.size());
  if (mamba.empty())
    return Error(ErrorKind::Checkpoint,
                 fmt::format("{}: the model has no Mamba layer ({})", info.source,
                             info.describeLayers()));
  if (options.layers < 0 || options.layers > info.mambaLayers)
    return Error(ErrorKind::InvalidArgument,
                 fmt::format("layers = {}: the model has {} Mamba layer(s) ({})",
                             options.layers, info.mambaLayers, info.describeLayers()));
  const int count = options.layers ? options.layers : int(info.mambaLayers);
  auto progress = [&](int64_t done, int64_t total) {
    if (options.progress)
      options.progress(int(done), int(total));
  };
  if (checkpoint) {
    info.quantization = checkpoint->quantization().origin;
    info.tensorPrefix = checkpoint->tensorPrefix();
    auto layers = checkpoint->loadMambaLayers(count, progress);
    if (!layers)
      return toError(ErrorKind::Checkpoint, layers.takeError());
    state->weights = std::move(*layers);
  } else {
    auto layers =
        models::syntheticMambaLayers(config, count, models::kSyntheticSeed, progress);
    if (!layers)
      return toError(ErrorKind::Checkpoint, layers.takeError());
    state->weights = std::move(*layers);
  }
  for (const models::MambaLayerWeights &w : state->weights) {
    info.loadedLayers.push_back(w.layer);
    ++(w.inProj.isFP8 != w.outProj.isFP8 ? info.mixedLayers
       : w.inProj.isFP8                  ? info.fp8Layers
                                         : info.bf16Layers);
    info.weightBytes += layerBytes(w);
  }
  info.loadMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
          .count();
  return Model(std::move(state));
}

const ModelInfo &Model::info() const { return state->info; }

} // namespace tilejit::embed
