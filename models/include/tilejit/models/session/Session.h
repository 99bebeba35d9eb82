// The one front door to a model step: load a model (a checkpoint's Mamba layers
// or synthetic ones), open a session of paged states on a backend (Backend.h),
// plan decode and prefill steps with the backend's plan options, make them
// runnable (on the GPU: weights uploaded once per session, kernels compiled in
// parallel, the step captured as one CUDA graph) and run them on the caller's
// memory and stream. `tilejit run`, the embedding API and the Python package
// are thin shells over it, so the same inputs give the same plan everywhere.
#ifndef TILEJIT_MODELS_SESSION_SESSION_H
#define TILEJIT_MODELS_SESSION_SESSION_H

#include "tilejit/models/plan/Describe.h"
#include "tilejit/models/session/Backend.h"

namespace tilejit::models {

/// Where a model's weights come from.
struct ModelSource {
  /// A checkpoint directory (docs/models.md); empty: synthetic weights of
  /// `geometry` from `seed` (the embedded default: the full NemotronH geometry
  /// and kSyntheticSeed).
  std::string checkpoint;
  NemotronHConfig geometry;
  uint64_t seed = kSyntheticSeed;
  /// The first `layers` Mamba layers; 0: all of the model's.
  int64_t layers = 0;
  /// Called as each layer is read or generated: (done, total).
  std::function<void(int64_t done, int64_t total)> progress;
};

/// A loaded model: its config and the weights of its first Mamba layers.
/// Plans borrow the weights' bytes, so sessions keep it alive.
struct LoadedModel {
  NemotronHConfig config;
  std::vector<MambaLayerWeights> weights;
  /// The checkpoint directory, or "embedded synthetic NemotronH".
  std::string source;
  /// The checkpoint's quantization declaration and tensor prefix (empty when
  /// none; always for synthetic weights).
  std::string quantization, tensorPrefix;
  /// Loaded layers whose projections are FP8 (both), bf16 (both), or mixed.
  int fp8Layers = 0, bf16Layers = 0, mixedLayers = 0;
  uint64_t weightBytes = 0; ///< host bytes of the loaded weights
  double loadMs = 0;

  /// "52 layers: 23 Mamba, 23 MoE, 6 attention".
  std::string describeLayers() const;
  /// The same model restricted to loaded layers `indices` (in that order),
  /// sharing nothing with this one.
  LoadedModel select(llvm::ArrayRef<size_t> indices) const;
};

/// "52 layers: 23 Mamba, 23 MoE, 6 attention" for a layer pattern ('M' Mamba,
/// 'E' MoE, '*' attention, '-' MLP).
std::string describeLayerPattern(llvm::StringRef pattern);

/// Loads `source`. Errors: a checkpoint that cannot be read (naming the file or
/// tensor), an invalid geometry, a model without Mamba layers, more layers
/// than the model has.
llvm::Expected<std::shared_ptr<const LoadedModel>> loadModel(const ModelSource &source);

class ModelSession;

/// A planned step made runnable on its session's backend: a GpuRunner whose
/// weights and pages the session shares, or the interpreter over host buffers
/// whose pages the session holds. Not on a compile-only backend's runtime:
/// there it is compiled and captured, but run() refuses.
class ModelStep {
public:
  ~ModelStep();
  const StepPlan &plan() const;
  /// One step: `hidden` into the plan's input ("act0"), `slots` (one per plan
  /// row; negative: padding) into "slots", the last layer's output into
  /// `out`, queued on `stream` (the GPU returns without waiting; the
  /// interpreter ignores it). The tensors live on the backend's device (the
  /// host on the interpreter). Checked first: a tensor that disagrees with
  /// the plan, a wrong slot count or bad slots are ArgumentErrors and nothing
  /// runs. A compile-only backend refuses to run. A plan that rounds its
  /// pages stochastically takes the step's counter (seed()) as its seed, then
  /// counts the step.
  llvm::Error run(const TensorRef &hidden, llvm::ArrayRef<int32_t> slots,
                  const TensorRef &out, runtime::StreamHandle stream);

  /// The seed the next run() gives stochastic rounding: the steps this
  /// ModelStep ran, unless set. Setting it back replays a step: the same
  /// inputs, pages and seed write the same page bytes.
  int64_t seed() const;
  void setSeed(int64_t seed);

  /// The runner on the GPU (null on the interpreter), the interpreter runner
  /// and its buffers (pages excepted while no step runs) otherwise.
  GpuRunner *gpu() const;
  InterpreterRunner *interpreter() const;
  HostBuffers &host();

  /// Copies non-weight buffer `name` to host memory `dst` of its size, from
  /// the device on the GPU. Errors: an unknown buffer.
  llvm::Error read(llvm::StringRef name, llvm::MutableArrayRef<uint8_t> dst);
  /// Overwrites non-weight buffer `name` (a page, the slots) with `src`.
  /// Writing "slots" checks them first (checkSlots).
  llvm::Error write(llvm::StringRef name, llvm::ArrayRef<uint8_t> src);

  struct State;
  explicit ModelStep(std::unique_ptr<State> state);

private:
  std::unique_ptr<State> state;
};

/// Options of a session.
struct SessionOptions {
  int64_t slots = 1; ///< sequences whose state the session holds
  /// Kernel constants that win over the tuning database and the defaults.
  KernelOverrides overrides;
  /// Whether an override of a kernel a plan does not launch is an error (the
  /// CLI's --set) or left to the plans that launch it (a session's settings
  /// serve its decode and prefill steps alike).
  bool overridesMustApply = false;
  /// Plans give each layer its own intermediates, for checks that read them.
  bool perLayerActivations = false;
  /// R8s: the SSM pages' element type and rounding (PlanOptions::ssmState).
  SsmStateOptions ssmState;
};

/// The paged state of `slots` sequences of one model on one backend, and the
/// steps that advance it: every step shares the session's weights (uploaded
/// once) and pages (zero at the start), so a decode step continues the
/// sequences a prefill step began.
class ModelSession {
public:
  /// Errors: fewer than one slot; an override naming no registered kernel or
  /// constant.
  static llvm::Expected<std::unique_ptr<ModelSession>>
  create(std::shared_ptr<Backend> backend, std::shared_ptr<const LoadedModel> model,
         SessionOptions options);
  ~ModelSession();

  Backend &backend() const;
  const LoadedModel &model() const;
  int64_t slots() const;

  /// The plan of a decode step of `rows` rows, as decode() makes it.
  llvm::Expected<StepPlan> planDecode(int64_t rows) const;
  /// The plan of a prefill forward of `batch`, as prefill() makes it.
  llvm::Expected<PrefillPlan> planPrefill(const ref::PrefillBatch &batch) const;
  /// planDecode made runnable (on the GPU: compiled, loaded and captured).
  llvm::Expected<std::unique_ptr<ModelStep>> decode(int64_t rows);
  /// planPrefill made runnable, its batch metadata uploaded.
  llvm::Expected<std::unique_ptr<ModelStep>> prefill(const ref::PrefillBatch &batch);
  /// `plan` made runnable on this session (its pages the session's), with
  /// `inputs` (e.g. a prefill's metadata) written into its buffers.
  llvm::Expected<std::unique_ptr<ModelStep>> makeStep(StepPlan plan,
                                                      const HostBuffers &inputs = {});

  struct State;

private:
  explicit ModelSession(std::shared_ptr<State> state);
  std::shared_ptr<State> state;
};

/// One sequence of a prefill batch, in packing order: its tokens, the slot it
/// writes (negative: a padding sequence) and whether it continues from that
/// slot's state or starts fresh.
struct PrefillSequence {
  int64_t tokens = 0;
  int64_t slot = 0;
  bool continued = false;
};

/// The R9 batch of `sequences`. Errors (ArgumentError): an empty batch, a
/// sequence without tokens.
llvm::Expected<ref::PrefillBatch>
makePrefillBatch(llvm::ArrayRef<PrefillSequence> sequences);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_SESSION_SESSION_H
