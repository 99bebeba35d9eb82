// Loading a model for a session: a checkpoint's first Mamba layers (its own
// config, quantization and tensor prefix) or synthetic weights of a geometry.
#include "tilejit/models/session/Session.h"

#include "tilejit/support/Timing.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit::models {

std::string describeLayerPattern(StringRef pattern) {
  std::string text = formatv("{0} layers:", pattern.size());
  const char *sep = " ";
  for (auto [kind, name] :
       {std::pair{'M', "Mamba"}, {'E', "MoE"}, {'*', "attention"}, {'-', "MLP"}}) {
    if (size_t n = count(pattern, kind)) {
      text += formatv("{0}{1} {2}", sep, n, name);
      sep = ", ";
    }
  }
  return text;
}

std::string LoadedModel::describeLayers() const {
  return describeLayerPattern(config.layerPattern);
}

namespace {

uint64_t projectionBytes(const Projection &p) {
  return p.isFP8 ? p.fp8Weight.data.size() : p.bf16Weight.data.size() * 2;
}

uint64_t layerBytes(const MambaLayerWeights &w) {
  return projectionBytes(w.inProj) + projectionBytes(w.outProj) +
         2 * (w.convWeight.data.size() + w.convBias.data.size() +
              w.normWeight.data.size()) +
         4 * (w.aLog.data.size() + w.dtBias.data.size() + w.d.data.size());
}

/// Counts, bytes: what `model.weights` holds.
void summarize(LoadedModel &model) {
  model.fp8Layers = model.bf16Layers = model.mixedLayers = 0;
  model.weightBytes = 0;
  for (const MambaLayerWeights &w : model.weights) {
    ++(w.inProj.isFP8 != w.outProj.isFP8 ? model.mixedLayers
       : w.inProj.isFP8                  ? model.fp8Layers
                                         : model.bf16Layers);
    model.weightBytes += layerBytes(w);
  }
}

} // namespace

LoadedModel LoadedModel::select(ArrayRef<size_t> indices) const {
  LoadedModel out;
  out.config = config;
  out.source = source;
  out.quantization = quantization;
  out.tensorPrefix = tensorPrefix;
  for (size_t i : indices)
    out.weights.push_back(weights[i]);
  summarize(out);
  return out;
}

Expected<std::shared_ptr<const LoadedModel>> loadModel(const ModelSource &source) {
  const auto start = std::chrono::steady_clock::now();
  auto model = std::make_shared<LoadedModel>();
  std::optional<NemotronHCheckpoint> checkpoint;
  if (!source.checkpoint.empty()) {
    auto opened = NemotronHCheckpoint::open(source.checkpoint);
    if (!opened)
      return opened.takeError();
    checkpoint = std::move(*opened);
    model->config = checkpoint->config();
    model->source = source.checkpoint;
    model->quantization = checkpoint->quantization().origin;
    model->tensorPrefix = checkpoint->tensorPrefix();
  } else {
    model->config = source.geometry;
    model->source = "embedded synthetic NemotronH";
    if (Error err = model->config.validate())
      return std::move(err);
  }
  const int64_t available = int64_t(model->config.mambaLayers().size());
  if (available == 0)
    return createStringError(formatv("{0}: the model has no Mamba layer ({1})",
                                     model->source, model->describeLayers()));
  if (source.layers < 0 || source.layers > available)
    return make_error<ArgumentError>(
        formatv("layers = {0}: the model has {1} Mamba layer(s) ({2})", source.layers,
                available, model->describeLayers()));
  const int64_t count = source.layers ? source.layers : available;
  auto progress = [&](int64_t done, int64_t total) {
    if (source.progress)
      source.progress(done, total);
  };
  auto layers = checkpoint
                    ? checkpoint->loadMambaLayers(count, progress)
                    : syntheticMambaLayers(model->config, count, source.seed, progress);
  if (!layers)
    return layers.takeError();
  model->weights = std::move(*layers);
  summarize(*model);
  model->loadMs = support::msSince(start);
  return std::shared_ptr<const LoadedModel>(std::move(model));
}

Expected<ref::PrefillBatch> makePrefillBatch(ArrayRef<PrefillSequence> sequences) {
  if (sequences.empty())
    return make_error<ArgumentError>("a prefill batch without sequences");
  ref::PrefillBatch batch{{0}, {}, {}};
  for (size_t i = 0; i < sequences.size(); ++i) {
    const PrefillSequence &s = sequences[i];
    if (s.tokens < 1)
      return make_error<ArgumentError>(formatv(
          "prefill sequence {0} has {1} tokens: each needs at least one", i, s.tokens));
    batch.cuSeqlens.push_back(batch.cuSeqlens.back() + s.tokens);
    batch.slots.push_back(s.slot);
    batch.continueFromSlot.push_back(s.continued);
  }
  return batch;
}

} // namespace tilejit::models
