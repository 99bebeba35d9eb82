// Loading a model: models::loadModel (a checkpoint's Mamba layers, or the
// embedded synthetic weights) and the plain description callers read.
#include "EmbedInternal.h"

namespace tilejit::embed {

std::string ModelInfo::describeLayers() const {
  return models::describeLayerPattern(layerPattern);
}

Result<Model> Model::load(const ModelOptions &options) {
  models::ModelSource source;
  source.checkpoint = options.checkpoint;
  source.layers = options.layers;
  if (options.progress)
    source.progress = [&options](int64_t done, int64_t total) {
      options.progress(int(done), int(total));
    };
  auto loaded = models::loadModel(source);
  if (!loaded)
    return toError(ErrorKind::Checkpoint, loaded.takeError());
  auto state = std::make_shared<State>();
  state->model = std::move(*loaded);
  const models::LoadedModel &m = *state->model;
  const models::NemotronHConfig &config = m.config;
  ModelInfo &info = state->info;
  info.source = m.source;
  info.hiddenSize = config.hiddenSize;
  info.numHeads = config.numHeads;
  info.headDim = config.headDim;
  info.numGroups = config.numGroups;
  info.stateSize = config.stateSize;
  info.convKernel = config.convKernel;
  info.chunkSize = config.chunkSize;
  info.layerPattern = config.layerPattern;
  info.mambaLayers = int64_t(config.mambaLayers().size());
  info.quantization = m.quantization;
  info.tensorPrefix = m.tensorPrefix;
  for (const models::MambaLayerWeights &w : m.weights)
    info.loadedLayers.push_back(w.layer);
  info.fp8Layers = m.fp8Layers;
  info.bf16Layers = m.bf16Layers;
  info.mixedLayers = m.mixedLayers;
  info.weightBytes = m.weightBytes;
  info.loadMs = m.loadMs;
  return Model(std::move(state));
}

const ModelInfo &Model::info() const { return state->info; }

} // namespace tilejit::embed
