// Loading a Mamba layer from an open checkpoint (Checkpoint.cpp) under its
// Hugging Face tensor names, and the reverse (exportMambaLayer). Each tensor is
// checked for presence, dtype and shape; the layer is built in a local and
// returned whole.
#include "tilejit/models/nemotron_h/NemotronH.h"
#include "tilejit/support/FloatFormats.h"
#include "tilejit/support/HostMemory.h"

#include "TensorNames.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tilejit::models {

namespace {

/// Reads checkpoint tensors by name, checking dtype and shape.
struct TensorReader {
  const llvm::StringMap<size_t> &shardOf;
  const std::vector<SafetensorsFile> &shards;
  const QuantizationConfig &quant;
  llvm::StringRef dir;
  /// What precedes the published names in this checkpoint (findTensorPrefix).
  llvm::StringRef prefix;

  /// The checkpoint's name of Mamba layer `layer`'s tensor `suffix`.
  std::string name(int64_t layer, llvm::StringRef suffix) const {
    return prefix.str() + mambaTensorName(layer, suffix);
  }

  /// Whether the quantization config leaves `module` unquantized: its
  /// exclusions may name modules with the wrapper's prefix or without it.
  bool excluded(llvm::StringRef module) const {
    return quant.excludes(module) ||
           (!prefix.empty() && quant.excludes(module.drop_front(prefix.size())));
  }

  struct Found {
    const SafetensorsFile *file;
    const SafetensorsTensor *tensor;
  };

  llvm::Expected<Found> find(llvm::StringRef name) const {
    auto it = shardOf.find(name);
    if (it == shardOf.end())
      return llvm::createStringError("%s: missing tensor '%s'", dir.str().c_str(),
                                     name.str().c_str());
    const SafetensorsFile &file = shards[it->second];
    return Found{&file, file.find(name)};
  }

  llvm::Error mismatch(llvm::StringRef name, const Found &found, llvm::StringRef what,
                       llvm::StringRef want, llvm::StringRef got) const {
    return llvm::createStringError("tensor '%s' in %s: expected %s %s, got %s",
                                   name.str().c_str(), found.file->path().str().c_str(),
                                   what.str().c_str(), want.str().c_str(),
                                   got.str().c_str());
  }

  /// The tensor `name` of dtype `dtype` and one of `shapes`, copied out.
  template <typename T>
  llvm::Expected<Tensor<T>> read(llvm::StringRef name, llvm::StringRef dtype,
                                 std::vector<std::vector<int64_t>> shapes) const {
    auto found = find(name);
    if (!found)
      return found.takeError();
    if (found->tensor->dtype != dtype)
      return mismatch(name, *found, "dtype", dtype, found->tensor->dtype);
    bool shapeOk = false;
    std::string wanted;
    for (const auto &shape : shapes) {
      shapeOk |= shape == found->tensor->shape;
      wanted += (wanted.empty() ? "" : " or ") + formatShape(shape);
    }
    if (!shapeOk)
      return mismatch(name, *found, "shape", wanted, formatShape(found->tensor->shape));
    Tensor<T> result(found->tensor->shape);
    llvm::ArrayRef<uint8_t> bytes = found->file->bytes(*found->tensor);
    std::memcpy(result.data.data(), bytes.data(), bytes.size());
    return result;
  }

  /// An f32 tensor of `shape`, stored as F32 or as BF16 (widened exactly, as
  /// the reference loaders do for A_log, D and dt_bias).
  llvm::Expected<Tensor<float>> readWidened(llvm::StringRef name,
                                            std::vector<int64_t> shape) const {
    auto found = find(name);
    if (!found)
      return found.takeError();
    if (found->tensor->dtype == "F32")
      return read<float>(name, "F32", {shape});
    if (found->tensor->dtype != "BF16")
      return mismatch(name, *found, "dtype", "F32 or BF16", found->tensor->dtype);
    auto bf16 = read<uint16_t>(name, "BF16", {shape});
    if (!bf16)
      return bf16.takeError();
    Tensor<float> widened(bf16->shape);
    for (size_t i = 0; i < bf16->data.size(); ++i)
      widened.data[i] = bf16ToF32(bf16->data[i]);
    return widened;
  }

  /// A positive finite f32 scalar (shape [] or [1]).
  llvm::Expected<float> readScale(llvm::StringRef weightName,
                                  llvm::StringRef name) const {
    if (!shardOf.count(name))
      return llvm::createStringError(
          "%s: FP8 tensor '%s' needs its scale '%s', which is missing", dir.str().c_str(),
          weightName.str().c_str(), name.str().c_str());
    auto scale = read<float>(name, "F32", {{}, {1}});
    if (!scale)
      return scale.takeError();
    float value = scale->data[0];
    if (!(value > 0.0f) || !std::isfinite(value))
      return llvm::createStringError(
          "tensor '%s': scale must be positive and finite, got %g", name.str().c_str(),
          double(value));
    return value;
  }

  /// Refuses what a projection's tensors show to be a scheme tilejit does not
  /// run (packed NVFP4, block or per-channel FP8 scales), by name, and a dtype
  /// the checkpoint's quantization config contradicts.
  llvm::Error checkScheme(llvm::StringRef module, const Found &weight,
                          int64_t outputs) const {
    const std::string name = (module + ".weight").str();
    const llvm::StringRef dtype = weight.tensor->dtype;
    if (shardOf.count((module + ".weight_scale_2").str()) || dtype == "U8")
      return llvm::createStringError(
          "tensor '%s' is %s %s%s: NVFP4 projections are not supported (tilejit runs "
          "FP8 W8A8 with static per-tensor scales, and bf16)",
          name.c_str(), dtype.str().c_str(), formatShape(weight.tensor->shape).c_str(),
          shardOf.count((module + ".weight_scale_2").str()) ? " with a weight_scale_2"
                                                            : " (packed 4-bit codes)");
    if (dtype == "F8_E4M3" && shardOf.count((module + ".weight_scale_inv").str()))
      return llvm::createStringError(
          "tensor '%s' has block scales ('%s.weight_scale_inv'): block-scaled FP8 "
          "projections are not supported (tilejit runs one static scale per tensor)",
          name.c_str(), module.str().c_str());
    const std::string scaleName = (module + ".weight_scale").str();
    if (dtype == "F8_E4M3" && shardOf.count(scaleName)) {
      const SafetensorsTensor &scale = *shards[shardOf.lookup(scaleName)].find(scaleName);
      if (!scale.shape.empty() && scale.shape[0] == outputs && outputs > 1)
        return llvm::createStringError(
            "tensor '%s' has shape %s, one scale per output channel: per-channel FP8 "
            "projections are not supported (tilejit runs one static scale per tensor)",
            scaleName.c_str(), formatShape(scale.shape).c_str());
    }
    if (!quant.declared() || (dtype != "BF16" && dtype != "F8_E4M3"))
      return llvm::Error::success();
    const bool excluded = this->excluded(module);
    if (dtype == "BF16" && !excluded)
      return llvm::createStringError(
          "tensor '%s' is BF16, but %s quantizes '%s' to FP8 (no exclusion names it)",
          name.c_str(), quant.origin.c_str(), module.str().c_str());
    if (dtype == "F8_E4M3" && excluded)
      return llvm::createStringError(
          "tensor '%s' is F8_E4M3, but %s excludes '%s' from quantization", name.c_str(),
          quant.origin.c_str(), module.str().c_str());
    return llvm::Error::success();
  }

  /// in_proj or out_proj: an F8_E4M3 weight with both scales, or a BF16 weight.
  llvm::Expected<Projection> readProjection(int64_t layer, const std::string &module,
                                            std::vector<int64_t> shape) const {
    std::string name = this->name(layer, module + ".weight");
    auto found = find(name);
    if (!found)
      return found.takeError();
    if (auto err = checkScheme(this->name(layer, module), *found, shape[0]))
      return std::move(err);
    Projection projection;
    if (found->tensor->dtype == "BF16") {
      auto weight = read<uint16_t>(name, "BF16", {shape});
      if (!weight)
        return weight.takeError();
      projection.bf16Weight = std::move(*weight);
      return projection;
    }
    if (found->tensor->dtype != "F8_E4M3")
      return mismatch(name, *found, "dtype", "F8_E4M3 or BF16", found->tensor->dtype);
    auto weight = read<uint8_t>(name, "F8_E4M3", {shape});
    if (!weight)
      return weight.takeError();
    auto weightScale = readScale(name, this->name(layer, module + ".weight_scale"));
    if (!weightScale)
      return weightScale.takeError();
    auto inputScale = readScale(name, this->name(layer, module + ".input_scale"));
    if (!inputScale)
      return inputScale.takeError();
    // The kernels compute with s_x * s_w and 1 / s_x in f32 (R1): a product
    // or reciprocal that overflows or vanishes there would scale every output
    // to infinity or zero.
    const float product = *inputScale * *weightScale, inverse = 1.0f / *inputScale;
    if (!std::isfinite(product) || product == 0.0f || !std::isfinite(inverse))
      return llvm::createStringError(
          "%s: FP8 tensor '%s': its scales s_x = %g and s_w = %g give s_x * s_w = %g and "
          "1 / s_x = %g in f32, which must be finite and nonzero",
          dir.str().c_str(), name.c_str(), double(*inputScale), double(*weightScale),
          double(product), double(inverse));
    projection.isFP8 = true;
    projection.fp8Weight = std::move(*weight);
    projection.weightScale = *weightScale;
    projection.inputScale = *inputScale;
    return projection;
  }
};

} // namespace

llvm::Expected<MambaLayerWeights>
NemotronHCheckpoint::loadMambaLayer(int64_t layer) const {
  if (!cfg.isMambaLayer(layer))
    return llvm::createStringError(
        "%s: layer %lld is not a Mamba layer (hybrid_override_pattern '%s')", dir.c_str(),
        (long long)layer, cfg.layerPattern.c_str());
  const TensorReader reader{shardOf, shards, quant, dir, prefix};
  const int64_t Cd = cfg.convChannels(), K = cfg.convKernel, H = cfg.numHeads;
  MambaLayerWeights w;
  w.layer = layer;
  auto name = [&](llvm::StringRef suffix) { return reader.name(layer, suffix); };
  auto inProj =
      reader.readProjection(layer, "in_proj", {cfg.inProjRows(), cfg.hiddenSize});
  if (!inProj)
    return inProj.takeError();
  w.inProj = std::move(*inProj);
  auto convWeight =
      reader.read<uint16_t>(name("conv1d.weight"), "BF16", {{Cd, 1, K}, {Cd, K}});
  if (!convWeight)
    return convWeight.takeError();
  w.convWeight = convWeight->reshaped({Cd, K});
  for (auto [suffix, field, dims] :
       {std::tuple{"conv1d.bias", &w.convBias, Cd},
        {"norm.weight", &w.normWeight, cfg.intermediate()}}) {
    auto tensor = reader.read<uint16_t>(name(suffix), "BF16", {{dims}});
    if (!tensor)
      return tensor.takeError();
    *field = std::move(*tensor);
  }
  for (auto [suffix, field] :
       {std::pair{"A_log", &w.aLog}, {"dt_bias", &w.dtBias}, {"D", &w.d}}) {
    auto tensor = reader.readWidened(name(suffix), {H});
    if (!tensor)
      return tensor.takeError();
    *field = std::move(*tensor);
  }
  auto outProj =
      reader.readProjection(layer, "out_proj", {cfg.hiddenSize, cfg.intermediate()});
  if (!outProj)
    return outProj.takeError();
  w.outProj = std::move(*outProj);
  return w;
}

namespace {
/// a * b, or UINT64_MAX when that overflows (a size no host holds).
uint64_t saturatingProduct(std::initializer_list<int64_t> factors) {
  uint64_t product = 1;
  for (int64_t f : factors)
    if (f < 0 || __builtin_mul_overflow(product, uint64_t(f), &product))
      return UINT64_MAX;
  return product;
}
uint64_t saturatingSum(std::initializer_list<uint64_t> terms) {
  uint64_t sum = 0;
  for (uint64_t t : terms)
    if (__builtin_add_overflow(sum, t, &sum))
      return UINT64_MAX;
  return sum;
}
} // namespace

uint64_t mambaLayerHostBytes(const NemotronHConfig &cfg) {
  const uint64_t inProj = saturatingProduct({cfg.inProjRows(), cfg.hiddenSize, 2});
  const uint64_t outProj = saturatingProduct({cfg.hiddenSize, cfg.intermediate(), 2});
  const uint64_t conv = saturatingProduct({cfg.convChannels(), cfg.convKernel + 1, 2});
  const uint64_t small = saturatingSum({saturatingProduct({cfg.intermediate(), 2}),
                                        saturatingProduct({cfg.numHeads, 3 * 4})});
  return saturatingSum({inProj, outProj, conv, small, std::max(inProj, outProj)});
}

llvm::Error checkLayersFitHost(const NemotronHConfig &config, int64_t count,
                               llvm::StringRef what, uint64_t allocatable) {
  const uint64_t perLayer = mambaLayerHostBytes(config);
  uint64_t all = perLayer;
  if (count > 0 && __builtin_mul_overflow(perLayer, uint64_t(count), &all))
    all = UINT64_MAX;
  if (all <= allocatable)
    return llvm::Error::success();
  return llvm::createStringError(
      "%s: %lld Mamba layer(s) need %s of host memory (%s each), more than the %s this "
      "process can allocate: load fewer layers",
      what.str().c_str(), (long long)count, support::formatBytes(all).c_str(),
      support::formatBytes(perLayer).c_str(), support::formatBytes(allocatable).c_str());
}

llvm::Expected<std::vector<MambaLayerWeights>> NemotronHCheckpoint::loadMambaLayers(
    int64_t count, llvm::function_ref<void(int64_t, int64_t)> progress) const {
  const std::vector<int64_t> mamba = cfg.mambaLayers();
  if (count < 0 || count > int64_t(mamba.size()))
    return llvm::createStringError("%s: %lld Mamba layers requested, the model has %zu",
                                   dir.c_str(), (long long)count, mamba.size());
  if (auto err = checkLayersFitHost(cfg, count, "checkpoint " + dir,
                                    support::allocatableMemoryBytes()))
    return std::move(err);
  std::vector<MambaLayerWeights> layers;
  for (int64_t i = 0; i < count; ++i) {
    auto layer = loadMambaLayer(mamba[size_t(i)]);
    if (!layer)
      return layer.takeError();
    layers.push_back(std::move(*layer));
    if (progress)
      progress(i + 1, count);
  }
  return layers;
}

std::vector<SafetensorsBlob> exportMambaLayer(const MambaLayerWeights &w) {
  std::vector<SafetensorsBlob> blobs;
  auto name = [&](llvm::StringRef suffix) { return mambaTensorName(w.layer, suffix); };
  auto addProjection = [&](llvm::StringRef prefix, const Projection &p) {
    std::string weight = prefix.str() + ".weight";
    if (!p.isFP8) {
      blobs.push_back(
          {name(weight), "BF16", p.bf16Weight.shape, bytesOf(p.bf16Weight.data)});
      return;
    }
    blobs.push_back(
        {name(weight), "F8_E4M3", p.fp8Weight.shape, bytesOf(p.fp8Weight.data)});
    blobs.push_back({name(prefix.str() + ".weight_scale"),
                     "F32",
                     {},
                     bytesOf(std::vector<float>{p.weightScale})});
    blobs.push_back({name(prefix.str() + ".input_scale"),
                     "F32",
                     {},
                     bytesOf(std::vector<float>{p.inputScale})});
  };
  addProjection("in_proj", w.inProj);
  blobs.push_back({name("conv1d.weight"),
                   "BF16",
                   {w.convWeight.dim(0), 1, w.convWeight.dim(1)},
                   bytesOf(w.convWeight.data)});
  blobs.push_back(
      {name("conv1d.bias"), "BF16", w.convBias.shape, bytesOf(w.convBias.data)});
  blobs.push_back({name("A_log"), "F32", w.aLog.shape, bytesOf(w.aLog.data)});
  blobs.push_back({name("D"), "F32", w.d.shape, bytesOf(w.d.data)});
  blobs.push_back({name("dt_bias"), "F32", w.dtBias.shape, bytesOf(w.dtBias.data)});
  blobs.push_back(
      {name("norm.weight"), "BF16", w.normWeight.shape, bytesOf(w.normWeight.data)});
  addProjection("out_proj", w.outProj);
  return blobs;
}

} // namespace tilejit::models
