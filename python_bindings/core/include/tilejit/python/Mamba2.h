// The NemotronH Mamba2 mixer for `tilejit.mamba2`: the decode step and the text
// of the plans a decode or prefill step runs, both a thin shell over the models'
// front door (models::ModelSession, models::ModelStep). Plain C++ like Core.h.
#ifndef TILEJIT_PYTHON_MAMBA2_H
#define TILEJIT_PYTHON_MAMBA2_H

#include "tilejit/python/Core.h"

#include <tuple>

namespace tilejit::python {

class Runtime;

/// Geometry of a NemotronH model (models::NemotronHConfig).
struct MambaGeometry {
  int64_t hiddenSize = 0, numHeads = 0, headDim = 0, numGroups = 0, stateSize = 0,
          convKernel = 0;
  double eps = 0, dtMin = 0, dtMax = 0;
  /// One character per layer: 'M' Mamba, '*' attention, 'E' MoE, '-' MLP.
  std::string layerPattern;
};
/// The full Nemotron-3-Nano-30B-A3B geometry (docs/numerics.md#geometry).
MambaGeometry fullMambaGeometry();

/// What a decode step runs: the first `layers` Mamba layers of `geometry`
/// with synthetic weights (models::syntheticMambaLayers, `seed`), `rows` rows
/// per step over pages of `slots` slots.
struct DecodeStepOptions {
  MambaGeometry geometry;
  int64_t layers = 1, rows = 1, slots = 1;
  uint64_t seed = 0;
  /// On the interpreter: plan for this arch's device ("sm_121a"); empty: the
  /// tiles every arch runs. A runtime's steps plan for its own arch.
  std::string planArch;
  /// The SSM pages' element type ("f32", "bf16" or "f16") and whether decode
  /// rounds into a 16-bit page stochastically (docs/numerics.md R8s).
  std::string ssmStateDtype = "f32";
  bool stochasticRounding = false;
};

/// One sequence of a prefill batch: its tokens, its slot (negative: padding)
/// and whether it continues from that slot's state.
struct PrefillSequence {
  int64_t tokens = 0;
  int64_t slot = 0;
  bool continued = false;
};

/// The parameters of one layer a reference needs besides the weight buffers.
struct DecodeLayerInfo {
  int64_t layer = 0; ///< index in the whole model
  bool fp8 = false;  ///< e4m3 projections with static scales, else bf16
  float inWeightScale = 1, inInputScale = 1, outWeightScale = 1, outInputScale = 1;
};

/// An array or tensor handed to the decode step, described without a copy:
/// its element type ("bf16", "e4m3", "f32", "i32", or the caller's name for
/// another type), shape, strides in elements (empty: row-major), device (a
/// CUDA ordinal; -1 the host) and address. Checked against the plan
/// (models::checkPlanTensor) before anything runs.
struct TensorArg {
  std::string dtype;
  std::vector<int64_t> shape, strides;
  int device = -1;
  uint64_t address = 0;
};

/// The NemotronH Mamba2 decode mixer step (docs/numerics.md#r7-the-mixer, R3d/R5d)
/// over a models::ModelStep: on the interpreter over host buffers, or on the
/// GPU (one CUDA graph, pages resident on the device). Buffers are named as
/// the plan names them ("act0", "slots", "l<layer>.conv_page", ...).
class DecodeStep {
public:
  ~DecodeStep();
  bool onDevice() const;
  int64_t rows() const;
  int64_t numSlots() const;
  MambaGeometry geometry() const;
  std::vector<DecodeLayerInfo> layers() const;
  /// A buffer's name, role ("weight", "state", "activation", "input"), size in
  /// bytes, element type and shape.
  using BufferInfo =
      std::tuple<std::string, std::string, size_t, std::string, std::vector<int64_t>>;
  /// Every buffer of the plan.
  std::vector<BufferInfo> buffers() const;
  /// A host copy of weight buffer `name`. Errors: ErrorKind::Argument.
  std::vector<uint8_t> weight(const std::string &name) const;
  /// Copies non-weight buffer `name` into the host array `dst` (from the
  /// device on the GPU). Errors: ErrorKind::Argument for an unknown name or
  /// an array that disagrees with the plan's type, shape or layout.
  void read(const std::string &name, const TensorArg &dst);
  /// Overwrites non-weight buffer `name` (e.g. a page) with the host array `src`.
  void write(const std::string &name, const TensorArg &src);
  /// The check read and write make: `t` is a host array matching non-weight
  /// buffer `name`. Errors: ErrorKind::Argument with the numbers.
  void checkHost(const std::string &name, const TensorArg &t) const;
  /// One step: `hidden` [rows, hiddenSize] bf16 and `slots` [rows] (negative:
  /// padding) in, the last layer's output [rows, hiddenSize] bf16 into `out`;
  /// pages carried in place. The interpreter takes host arrays; the GPU takes
  /// device tensors and runs on `stream` (a CUstream; 0 the legacy default)
  /// without waiting and without host copies (GpuRunner::step). Errors:
  /// ErrorKind::Argument for a tensor that disagrees with the plan (type,
  /// shape, layout, device) or bad slots, with nothing run.
  void step(const TensorArg &hidden, const std::vector<int32_t> &slots,
            const TensorArg &out, uint64_t stream);
  /// The device address of non-weight buffer `name` on the GPU (0 on the
  /// interpreter).
  uint64_t deviceAddress(const std::string &name) const;

  struct State;
  explicit DecodeStep(std::unique_ptr<State> state);

private:
  std::unique_ptr<State> state;
};

/// The decode step of `options` on `runtime`'s GPU (the weights uploaded and
/// every kernel compiled there), or on the CPU interpreter when `runtime` is
/// null. Errors: ErrorKind::Argument for an invalid geometry, layer count,
/// rows or slots; ErrorKind::Device for a runtime that cannot launch.
std::shared_ptr<DecodeStep> createDecodeStep(const DecodeStepOptions &options,
                                             const std::shared_ptr<Runtime> &runtime);

/// The plan a decode step of `options` runs, or with `prefill` sequences the
/// plan of a prefill forward of them, on `runtime` (its arch and tuning
/// database) or, when null, on the interpreter (for options.planArch): the
/// text of models::describePlan, the same `tilejit run --dry-run` and the
/// embedding API print. Nothing is compiled. Errors: as createDecodeStep.
std::string describePlan(const DecodeStepOptions &options,
                         const std::vector<PrefillSequence> &prefill,
                         const std::shared_ptr<Runtime> &runtime);

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_MAMBA2_H
