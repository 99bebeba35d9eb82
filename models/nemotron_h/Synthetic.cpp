// The embedded default: deterministic synthetic Mamba layer weights at any
// geometry, with the real checkpoint's FP8 / bf16 projection pattern. Values
// follow Mamba2's initialization so activations and dt' stay realistic.
#include "tilejit/models/nemotron_h/NemotronH.h"
#include "tilejit/support/HostMemory.h"

#include "tilejit/support/FloatFormats.h"

#include "llvm/Support/ThreadPool.h"

#include <cmath>
#include <mutex>

namespace tilejit::models {
namespace {

/// Activations up to this magnitude quantize to e4m3 without saturating.
constexpr double kActivationRange = 8.0;
constexpr double kE4M3Max = 448.0;

/// Tensors of one layer, each drawn from its own stream so that changing how
/// one is drawn leaves the others as they were.
enum class Stream : uint64_t {
  InProj,
  ConvWeight,
  ConvBias,
  ALog,
  DtBias,
  D,
  Norm,
  OutProj
};

Rng streamFor(uint64_t seed, int64_t layer, Stream stream) {
  Rng mixer(seed ^ (uint64_t(layer) * 0xD1B54A32D192ED03ULL) ^
            (uint64_t(stream) * 0xABC98388FB8FAC03ULL));
  return Rng(mixer.next());
}

/// A [rows, cols] projection whose outputs have about unit variance for inputs
/// of unit variance: weights uniform in +-sqrt(3 / cols).
Projection syntheticProjection(int64_t rows, int64_t cols, bool fp8, Rng rng) {
  const double bound = std::sqrt(3.0 / double(cols));
  Projection p;
  p.isFP8 = fp8;
  if (!fp8) {
    p.bf16Weight = randomBF16({rows, cols}, rng, -bound, bound);
    return p;
  }
  // Codes spread over the whole e4m3 range; the weight scale maps them back.
  p.fp8Weight = Tensor<uint8_t>({rows, cols});
  for (uint8_t &code : p.fp8Weight.data)
    code = f32ToE4M3(float(rng.uniform(-kE4M3Max, kE4M3Max)));
  p.weightScale = float(bound / kE4M3Max);
  p.inputScale = float(kActivationRange / kE4M3Max);
  return p;
}

} // namespace

llvm::Expected<MambaLayerWeights> syntheticMambaLayer(const NemotronHConfig &config,
                                                      int64_t layer, uint64_t seed) {
  if (auto err = config.validate())
    return llvm::createStringError("synthetic weights: %s",
                                   llvm::toString(std::move(err)).c_str());
  if (!config.isMambaLayer(layer))
    return llvm::createStringError(
        "synthetic weights: layer %lld is not a Mamba layer of "
        "'%s'",
        (long long)layer, config.layerPattern.c_str());
  const int64_t H = config.numHeads, Cd = config.convChannels(),
                I = config.intermediate();
  const bool fp8 = !config.hasBF16Projections(layer);
  MambaLayerWeights w;
  w.layer = layer;
  w.inProj = syntheticProjection(config.inProjRows(), config.hiddenSize, fp8,
                                 streamFor(seed, layer, Stream::InProj));
  // PyTorch's default conv1d init: uniform in +-1/sqrt(fan_in), fan_in = K.
  const double convBound = 1.0 / std::sqrt(double(config.convKernel));
  Rng convRng = streamFor(seed, layer, Stream::ConvWeight);
  w.convWeight = randomBF16({Cd, config.convKernel}, convRng, -convBound, convBound);
  Rng biasRng = streamFor(seed, layer, Stream::ConvBias);
  w.convBias = randomBF16({Cd}, biasRng, -convBound, convBound);

  // Mamba2: A uniform in [1, 16] (A = -exp(A_log) in [-16, -1]); dt log-uniform
  // in [1e-3, 1e-1] with dt_bias its inverse softplus; D near 1.
  Rng aRng = streamFor(seed, layer, Stream::ALog);
  w.aLog = Tensor<float>({H});
  for (float &v : w.aLog.data)
    v = float(std::log(aRng.uniform(1.0, 16.0)));
  Rng dtRng = streamFor(seed, layer, Stream::DtBias);
  w.dtBias = Tensor<float>({H});
  for (float &v : w.dtBias.data) {
    double dt = std::exp(dtRng.uniform(std::log(1e-3), std::log(1e-1)));
    v = float(dt + std::log(-std::expm1(-dt)));
  }
  Rng dRng = streamFor(seed, layer, Stream::D);
  w.d = randomF32({H}, dRng, 0.5, 1.5);
  Rng normRng = streamFor(seed, layer, Stream::Norm);
  w.normWeight = randomBF16({I}, normRng, 0.5, 1.5);

  w.outProj = syntheticProjection(config.hiddenSize, I, fp8,
                                  streamFor(seed, layer, Stream::OutProj));
  return w;
}

llvm::Expected<std::vector<MambaLayerWeights>>
syntheticMambaLayers(const NemotronHConfig &config, int64_t count, uint64_t seed,
                     llvm::function_ref<void(int64_t, int64_t)> progress) {
  std::vector<int64_t> layers = config.mambaLayers();
  if (count < 0 || count > int64_t(layers.size()))
    return llvm::createStringError("synthetic weights: %lld Mamba layers requested, the "
                                   "model has %zu",
                                   (long long)count, layers.size());
  if (auto err = config.validate())
    return llvm::createStringError("synthetic weights: %s",
                                   llvm::toString(std::move(err)).c_str());
  if (auto err = checkLayersFitHost(config, count, "synthetic weights",
                                    support::allocatableMemoryBytes()))
    return std::move(err);
  // Each layer draws from its own streams, so the layers are generated in
  // parallel and come out the same in any order.
  std::vector<MambaLayerWeights> result(static_cast<size_t>(count));
  std::mutex mutex;
  int64_t done = 0;
  llvm::DefaultThreadPool pool;
  for (int64_t i = 0; i < count; ++i)
    pool.async([&, i] {
      result[size_t(i)] =
          llvm::cantFail(syntheticMambaLayer(config, layers[size_t(i)], seed));
      std::lock_guard<std::mutex> lock(mutex);
      if (progress)
        progress(++done, count);
    });
  pool.wait();
  return result;
}

} // namespace tilejit::models
