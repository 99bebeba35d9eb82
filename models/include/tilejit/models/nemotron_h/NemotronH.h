// NemotronH Mamba2 layers on the host: the geometry read from config.json, a
// safetensors reader, the Hugging Face tensor names of a Mamba layer, and the
// embedded default (deterministic synthetic weights). Geometry:
// docs/numerics.md#geometry.
#ifndef TILEJIT_MODELS_NEMOTRONH_H
#define TILEJIT_MODELS_NEMOTRONH_H

#include "tilejit/models/reference/HostTensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <limits>
#include <memory>

namespace llvm::json {
class Object;
} // namespace llvm::json

namespace tilejit::models {

/// Geometry and layer layout of a NemotronH model; the defaults are the full
/// Nemotron-3-Nano-30B-A3B geometry of docs/numerics.md#geometry.
struct NemotronHConfig {
  int64_t hiddenSize = 2688; ///< hidden_size: in_proj K, out_proj N
  int64_t numHeads = 64;     ///< mamba_num_heads (H)
  int64_t headDim = 64;      ///< mamba_head_dim (P)
  int64_t numGroups = 8;     ///< n_groups (G) of B and C
  int64_t stateSize = 128;   ///< ssm_state_size (N)
  int64_t convKernel = 4;    ///< conv_kernel (K)
  int64_t chunkSize = 128;   ///< chunk_size (Q)
  double eps = 1e-5;         ///< layer_norm_epsilon of the gated norm
  double dtMin = 0.0;        ///< time_step_limit[0], the dt' clamp (R4)
  double dtMax = std::numeric_limits<double>::infinity(); ///< time_step_limit[1]
  /// hybrid_override_pattern, one character per layer: 'M' Mamba,
  /// '*' attention, 'E' MoE, '-' MLP.
  std::string layerPattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";

  int64_t numLayers() const { return int64_t(layerPattern.size()); }
  /// I = H * P.
  int64_t intermediate() const { return numHeads * headDim; }
  /// Conv channels Cd = I + 2 * G * N (the xBC columns).
  int64_t convChannels() const { return intermediate() + 2 * numGroups * stateSize; }
  /// in_proj output columns: z I, xBC Cd, dt H.
  int64_t inProjRows() const { return intermediate() + convChannels() + numHeads; }
  /// Channels per gated-norm group, I / G.
  int64_t normGroupSize() const { return intermediate() / numGroups; }

  bool isMambaLayer(int64_t layer) const;
  /// True for a Mamba layer directly before an attention layer: the quantized
  /// checkpoints keep its in_proj/out_proj in bf16, all others are FP8.
  bool hasBF16Projections(int64_t layer) const;
  /// The indices of the Mamba layers, ascending.
  std::vector<int64_t> mambaLayers() const;

  /// Checks the geometry is usable (positive sizes, H divisible by G, ...).
  llvm::Error validate() const;
  /// Parses a Hugging Face config.json text; `origin` names it in errors.
  /// Python's bare Infinity/NaN literals are accepted.
  static llvm::Expected<NemotronHConfig> fromJson(llvm::StringRef text,
                                                  llvm::StringRef origin);
  static llvm::Expected<NemotronHConfig> fromFile(llvm::StringRef path);
};

/// One projection: a bf16 weight, or an e4m3 weight with the checkpoint's
/// static per-tensor weight and activation scales (docs/numerics.md#r1-fp8-w8a8-linear).
struct Projection {
  bool isFP8 = false;
  Tensor<uint16_t> bf16Weight; ///< [out, in] bf16 bits when !isFP8
  Tensor<uint8_t> fp8Weight;   ///< [out, in] e4m3 codes when isFP8
  float weightScale = 1.0f;    ///< s_w (FP8 only)
  float inputScale = 1.0f;     ///< s_x (FP8 only)

  bool operator==(const Projection &other) const = default;
};

/// The host copy of one Mamba layer's mixer parameters.
struct MambaLayerWeights {
  int64_t layer = -1;          ///< index in the whole model
  Projection inProj;           ///< [inProjRows, hidden]
  Tensor<uint16_t> convWeight; ///< [Cd, K] bf16 (the checkpoint's [Cd, 1, K])
  Tensor<uint16_t> convBias;   ///< [Cd] bf16
  Tensor<float> aLog;          ///< [H]
  Tensor<float> dtBias;        ///< [H]
  Tensor<float> d;             ///< [H]
  Tensor<uint16_t> normWeight; ///< [I] bf16
  Projection outProj;          ///< [hidden, I]

  bool operator==(const MambaLayerWeights &other) const = default;
};

/// One tensor of a safetensors file: dtype name as written ("BF16", "F32",
/// "F8_E4M3", ...), shape, and byte range within the data section.
struct SafetensorsTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// A parsed safetensors file (memory-mapped when large). Every offset is
/// checked against the file size and against dtype x shape when it opens.
class SafetensorsFile {
public:
  static llvm::Expected<SafetensorsFile> open(llvm::StringRef path);
  /// The tensor named `name`, or null.
  const SafetensorsTensor *find(llvm::StringRef name) const;
  /// The raw little-endian bytes of `tensor`.
  llvm::ArrayRef<uint8_t> bytes(const SafetensorsTensor &tensor) const;
  llvm::StringRef path() const { return buffer->getBufferIdentifier(); }
  const llvm::StringMap<SafetensorsTensor> &tensors() const { return entries; }

private:
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  uint64_t dataStart = 0;
  llvm::StringMap<SafetensorsTensor> entries;
};

/// One tensor to write: name, dtype name, shape and raw bytes.
struct SafetensorsBlob {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Writes `tensors` as a safetensors file at `path`.
llvm::Error writeSafetensors(llvm::StringRef path,
                             llvm::ArrayRef<SafetensorsBlob> tensors);

/// The Hugging Face name of a Mamba layer's tensor, e.g.
/// `backbone.layers.4.mixer.` + `in_proj.weight`.
std::string mambaTensorName(int64_t layer, llvm::StringRef suffix);

/// The quantization a checkpoint declares: ModelOpt's hf_quant_config.json or
/// config.json's quantization_config (ModelOpt, compressed-tensors or
/// transformers' "fp8"). tilejit runs FP8 W8A8 with static per-tensor weight
/// and input scales (docs/numerics.md#r1-fp8-w8a8-linear) and bf16; any other
/// scheme (NVFP4, per-channel or block-scaled FP8, dynamic activation scales,
/// integer formats) is refused by name when the checkpoint opens.
struct QuantizationConfig {
  /// Where the declaration came from ("DIR/hf_quant_config.json"); empty when
  /// the checkpoint declares none (each projection's dtype decides alone).
  std::string origin;
  /// Module name patterns kept unquantized (exclude_modules / ignore): exact
  /// names, globs with '*', or "re:" regular expressions.
  std::vector<std::string> excluded;

  bool declared() const { return !origin.empty(); }
  /// True when `module` (e.g. backbone.layers.4.mixer.in_proj) or one of its
  /// parents matches an excluded pattern.
  bool excludes(llvm::StringRef module) const;
  /// Reads hf_quant_config.json in `dir`, else `quantizationConfig` (config.json's
  /// quantization_config, may be null); an unsupported scheme is an error that
  /// names it.
  static llvm::Expected<QuantizationConfig>
  read(llvm::StringRef dir, const llvm::json::Object *quantizationConfig);
};

/// A checkpoint directory: config.json plus model.safetensors, or the shards
/// listed by model.safetensors.index.json. Tensors are found under their
/// published names, or under one prefix a wrapper adds to all of them
/// ("language_model.backbone.layers.0.mixer...", "model.backbone..."); a
/// checkpoint where none or several prefixes hold the Mamba layers is refused
/// when it opens, with the names it holds.
class NemotronHCheckpoint {
public:
  static llvm::Expected<NemotronHCheckpoint> open(llvm::StringRef dir);
  const NemotronHConfig &config() const { return cfg; }
  const QuantizationConfig &quantization() const { return quant; }
  /// What precedes the published tensor names in this checkpoint: empty, or a
  /// wrapper's prefix such as "language_model." (found when it opens).
  const std::string &tensorPrefix() const { return prefix; }
  /// Loads Mamba layer `layer`. A missing, misshapen or wrongly typed tensor,
  /// or an FP8 projection without its scales, is an error naming the tensor
  /// and the expected and actual shape or dtype; nothing is returned then.
  llvm::Expected<MambaLayerWeights> loadMambaLayer(int64_t layer) const;
  /// Loads the first `count` Mamba layers in order, `progress(done, count)`
  /// after each. Refused before any is read when their bytes (from the config:
  /// mambaLayerHostBytes) exceed what the process may allocate.
  llvm::Expected<std::vector<MambaLayerWeights>>
  loadMambaLayers(int64_t count,
                  llvm::function_ref<void(int64_t, int64_t)> progress = {}) const;

private:
  NemotronHConfig cfg;
  QuantizationConfig quant;
  std::string dir;
  std::string prefix;
  std::vector<SafetensorsFile> shards;
  llvm::StringMap<size_t> shardOf;
};

/// The tensors of `weights` under their Hugging Face names (conv1d.weight as
/// [Cd, 1, K]): what a checkpoint holding this layer contains.
std::vector<SafetensorsBlob> exportMambaLayer(const MambaLayerWeights &weights);

/// The default seed of the embedded synthetic weights.
constexpr uint64_t kSyntheticSeed = 0x7117e7'2026ULL;

/// Deterministic synthetic weights of Mamba layer `layer` at `config`'s
/// geometry, FP8 or bf16 projections as the real checkpoint has them
/// (hasBF16Projections). Scales keep activations of unit magnitude in range;
/// A = -exp(A_log) lies in [-16, -1], dt' = softplus(dt_bias) in [1e-3, 1e-1].
llvm::Expected<MambaLayerWeights> syntheticMambaLayer(const NemotronHConfig &config,
                                                      int64_t layer,
                                                      uint64_t seed = kSyntheticSeed);
/// The host bytes one loaded Mamba layer of `config` may take: its tensors
/// with bf16 projections (the larger form), and the copy of its largest tensor
/// a load reads it through.
uint64_t mambaLayerHostBytes(const NemotronHConfig &config);

/// Refuses `count` layers of `config` when their host bytes exceed
/// `allocatable` (what the process may allocate), naming both; `what` says
/// where they come from ("checkpoint /x", "synthetic weights").
llvm::Error checkLayersFitHost(const NemotronHConfig &config, int64_t count,
                               llvm::StringRef what, uint64_t allocatable);

/// Synthetic weights of the first `count` Mamba layers, generated in parallel;
/// `progress(done, count)` is called (serialized) as each layer is finished.
/// Refused before any is generated when they would not fit the host.
llvm::Expected<std::vector<MambaLayerWeights>>
syntheticMambaLayers(const NemotronHConfig &config, int64_t count,
                     uint64_t seed = kSyntheticSeed,
                     llvm::function_ref<void(int64_t, int64_t)> progress = {});

} // namespace tilejit::models

#endif // TILEJIT_MODELS_NEMOTRONH_H
