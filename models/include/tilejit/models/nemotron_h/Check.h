// Checks a NemotronH step backend (the GPU, the interpreter) against the
// sequential f64 reference over carried steps, and two backends against each
// other (on plan/Compare.h). The bands and what each separates are
// docs/numerics.md's:
// - Every op is held against the reference fed the backend's own input to it
//   (its intermediates of the last step), so a difference one op legitimately
//   makes never moves the next op's band: the projections' outputs per output
//   in R1's band (exact sums) or R1h's (reduced sums: e4m3 wgmma), chosen from
//   the launch's compiled metadata, never from the arch name; the e4m3 codes of
//   the gated norm through their decoded values.
// - Each layer's output, its SSM state and conv taps against the reference fed
//   that layer's input as the backend computed it, in the bf16 band (atol 5e-2 /
//   rtol 1e-2; the f32 state 1e-2 / 1e-2), since carried steps feed the
//   differences on; untouched slots byte-identical; padding rows zero.
// Next to each band the check prints, and asserts, the share of outputs it
// rejects under the defects it guards against: a dropped K step, a weight
// column scaled by 1 + 1/8, a dropped input_scale, a dropped carry.
#ifndef TILEJIT_MODELS_NEMOTRON_H_CHECK_H
#define TILEJIT_MODELS_NEMOTRON_H_CHECK_H

#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/models/plan/Compare.h"
#include "tilejit/models/reference/Reference.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <functional>

namespace tilejit::models {

/// One projection's outputs against the f64 linear of the codes the backend fed
/// it, per output: |got - want| <= 1 bf16 ulp(want) + s * sum_k |a_k w_k| * f,
/// f = 2^-8 for reduced sums (R1h), K * 2^-24 (f32 accumulation in any order)
/// for exact ones, plus what a one-code difference of an in-kernel activation
/// quant moves (R1: the reciprocal may round a quotient to the other code).
struct ProjectionCheck {
  std::string what; ///< "layer 0 in_proj (z, dt)"
  runtime::SumPrecision sums = runtime::SumPrecision::Exact;
  int64_t checked = 0, outside = 0;
  double worst = 0; ///< max |got - want| / band
  /// The share of the sampled outputs the band rejects under each defect: a
  /// K step (32 columns) dropped, the one whose sum moves that output most (so
  /// the defect separates on any input, not only where the last step happens
  /// to be large), one output's weights (a column of W^T)
  /// scaled by 1 + 1/8, the input scale dropped from the quant and the output
  /// scale; negative when it does not apply (a bf16 projection has no scale;
  /// sampled rows whose values the dropped scale does not move, as a power-of-
  /// two s_x short of saturation leaves them, are left out of that share).
  double droppedKStep = -1, scaledColumn = -1, droppedInputScale = -1;
  int64_t sampled = 0;

  /// The smallest shares each separation must reach for the band to count. A
  /// reduced band is wider (2^-8 of sum|a w| is about 13 % of |y| for random
  /// signs at K = 2688), so it rejects each defect on a far smaller share of
  /// the outputs than an exact one (bench/r1h_separation.py; its shares at the
  /// NemotronH shapes: docs/BENCHMARKS.md, "e4m3 wgmma accumulation") and its
  /// floors are lower; with thousands of outputs a defect still puts many
  /// outside.
  struct Floors {
    double droppedKStep, scaledColumn, droppedInputScale;
  };
  static constexpr Floors kExactFloors{0.5, 0.5, 0.5}, kReducedFloors{0.01, 0.02, 0.5};
  const Floors &floors() const {
    return sums == runtime::SumPrecision::Reduced ? kReducedFloors : kExactFloors;
  }
  bool separates() const;
  bool ok() const { return checked > 0 && outside == 0 && separates(); }
  void print(llvm::raw_ostream &os) const;
};

/// The operands of one linear as a backend saw them: activation codes (e4m3)
/// or values (bf16) [M, K], the weight [N, K] and the output scale.
struct LinearOperands {
  const Projection *projection = nullptr;
  Tensor<uint8_t> codes; ///< [M, K] e4m3, when the projection is FP8
  Tensor<uint16_t> bf16; ///< [M, K] bf16, when it is not
  /// Codes an in-kernel quant may have computed instead of `codes` (the
  /// reciprocal's rounding, R1); empty when the codes are the backend's own.
  Tensor<uint8_t> alternative;
  /// The bf16 input the codes were quantized from (for the dropped-input-
  /// scale defect); empty when unknown.
  Tensor<uint16_t> unquantized;
};

/// Holds `got` (bf16 bits [M, columns.size()]) to the per-output band of
/// `ops` over weight rows `columns` (all when empty); rows where `skipRow`
/// is true (padding) are not compared.
ProjectionCheck checkProjection(std::string what, const LinearOperands &ops,
                                llvm::ArrayRef<int64_t> columns,
                                const Tensor<uint16_t> &got,
                                const std::vector<bool> &skipRow,
                                runtime::SumPrecision sums);

/// The gated norm's output against R6 fed the backend's y and z: bf16 in R6's
/// bf16 band, e4m3 codes (before an FP8 out_proj) through their decoded
/// values, within R6's band plus one e4m3 step at the reference value.
struct NormCheck {
  int64_t layer = 0;
  bool e4m3 = false;
  int64_t checked = 0, outside = 0;
  /// e4m3: the outputs the band rejects when the quant drops the out_proj
  /// input scale (codes of the unscaled value, decoded as usual). The guard of
  /// that defect where a reduced out_proj band cannot see it (R1h).
  int64_t droppedScale = 0;
  bool scaleShows = true; ///< StepCheck::scaleShows of the out_proj input scale
  double worst = 0;
};

/// Prefill: one layer's SSD output y (bf16) against the sequential f64 R5 fed
/// the backend's own xBC, dt and pages, in R5p's bf16 band per sequence
/// (kShortY up to kShortTokens tokens, kLongY beyond). The exact mode puts no
/// element outside it; a reduced mode (R5p-m) is held instead to R5p-m's
/// yardstick on the same inputs (ref::ssdYardstick at the plan's chunk, its y
/// rounded to bf16 as the kernel's is): no more elements outside the band and
/// a worst error at most kMaxWorstRatio times the yardstick's.
struct SsdCheck {
  static constexpr double kShortAtol = 5e-2, kShortRtol = 5e-2;
  static constexpr double kLongAtol = 1e-2, kLongRtol = 1e-2;
  static constexpr int64_t kShortTokens = 256;
  static constexpr double kMaxWorstRatio = 1.25;
  int64_t layer = 0;
  SsdPrecision precision = SsdPrecision::Exact;
  int64_t checked = 0, outside = 0, yardOutside = 0;
  double worst = 0, yardWorst = 0; ///< max |got - want| / band
  bool ok() const;
  void print(llvm::raw_ostream &os) const;
};

/// What checkDecodeSteps / checkPrefillSteps found. Counts are elements
/// compared / outside the band; the output counts cover every layer's output
/// after the last step, each against the reference fed that layer's input as
/// the backend computed it.
struct StepCheck {
  static constexpr double kOutAtol = kBF16Atol, kOutRtol = kBF16Rtol;
  static constexpr double kStateAtol = kF32Atol, kStateRtol = kF32Rtol;
  /// A dropped SSM carry must put at least this share of the carried state
  /// outside its band, over the (slot, head) pairs that keep at least
  /// kMinCarryKept of their initial state (the twin: the reference from zero
  /// SSM pages). Such a head moves each element by at least a quarter of its
  /// initial value (uniform in [-1, 1]), over the band (about 0.02) on some 92 %
  /// of them whatever the inputs; heads that decayed their state away cannot
  /// show the defect, so they are left out (and no such head at all is said,
  /// not failed). An honest run puts none of the state outside.
  static constexpr double kMinDroppedCarry = 0.5, kMinCarryKept = 0.25;
  int64_t outChecked = 0, outBad = 0;
  double outMaxError = 0; ///< max |got - want| / (atol + rtol |want|) of the output
  /// Prefill with a reduced-precision SSD (R5p-m): the same counts for the
  /// layers computed with R5p-m's yardstick in place of the f64 SSD. Outputs
  /// outside the band pass only if no more than the yardstick's, and no worse
  /// than SsdCheck::kMaxWorstRatio times its worst.
  bool yardOut = false;
  int64_t yardOutChecked = 0, yardOutBad = 0;
  double yardOutMaxError = 0;
  /// Per layer: the SSM state against its band, the conv taps against the
  /// bf16 band (and how many are not bit-identical), and the share of the
  /// state a dropped carry puts outside the band.
  struct Layer {
    int64_t layer = 0;
    int64_t ssmChecked = 0, ssmBad = 0;
    double ssmMaxError = 0;
    int64_t convChecked = 0, convBad = 0, convNotIdentical = 0;
    double convMaxError = 0;
    /// The share a dropped carry puts outside, over `carryHeads` (slot, head)
    /// pairs that keep kMinCarryKept of their state; -1 when none does.
    double droppedCarry = -1;
    int64_t carryHeads = 0;
    /// R8s: the page's element type; a 16-bit page's state band adds
    /// `pageUlps` (one per step) units in its last place at the reference value.
    DType pageType = DType::F32;
    int64_t pageUlps = 0;
  };
  std::vector<Layer> layers;
  std::vector<ProjectionCheck> projections; ///< in_proj and out_proj of each layer
  std::vector<NormCheck> norms;
  std::vector<SsdCheck> ssds; ///< prefill: each layer's SSD output
  /// Prefill FP8 layers: the activation quant's codes against e4m3(x / s_x),
  /// where the reciprocal's code is allowed too, and how many of them a
  /// dropped input_scale (e4m3(x)) would change: at least this share, where
  /// s_x lies at least one e4m3 step (a factor 9/8) from 1 (scaleShows). A
  /// scale nearer 1 moves each code by one step at most, which the
  /// reciprocal's allowance takes: the defect cannot show, and is not held.
  static constexpr double kMinDroppedInputScale = 0.5;
  static bool scaleShows(double scale) {
    return std::abs(std::log2(scale)) >= std::log2(9.0 / 8.0);
  }
  bool quantScaleShows = true;
  int64_t quantChecked = 0, quantBad = 0, quantDroppedScale = 0;
  int64_t untouchedSlotsDiffering = 0; ///< slots no row uses that changed
  int64_t paddingNonZero = 0;          ///< output elements of padding rows not 0
  /// The pages before the first step, and of both sides after the last.
  std::vector<ref::PagedState> initial, got, want;
  std::vector<uint16_t> gotOut, wantOut;

  bool ok() const;
  bool outputsOk() const;
  void print(llvm::raw_ostream &os) const;
};

/// From random pages and `steps` random hidden batches, runs `runStep` and the
/// reference in lockstep through `layers` with row slots `slots` (negative:
/// padding) and compares after the last step. `plan` must be made with
/// per-layer activations (PlanOptions), so every layer's intermediates can be
/// read after the step.
llvm::Expected<StepCheck> checkDecodeSteps(const NemotronHConfig &config,
                                           const std::vector<MambaLayerWeights> &layers,
                                           const StepPlan &plan, const LaunchSums &sums,
                                           llvm::ArrayRef<int32_t> slots, int steps,
                                           uint64_t seed, const StepFn &runStep);

/// As checkDecodeSteps for a prefill plan of `batch`: `steps` forwards of
/// fresh hidden states through the same batch layout, each sequence
/// continuing from its slot where the batch says so (a second step then
/// continues from the state the first wrote). Padding sequences' rows must
/// come out 0 and their slots untouched.
llvm::Expected<StepCheck> checkPrefillSteps(const NemotronHConfig &config,
                                            const std::vector<MambaLayerWeights> &layers,
                                            const PrefillPlan &plan,
                                            const LaunchSums &sums,
                                            const ref::PrefillBatch &batch, int steps,
                                            uint64_t seed, const StepFn &runStep);

/// What compareWithInterpreter found.
struct BackendComparison {
  std::vector<BufferAgreement> buffers;
  /// The projections whose GPU sums are reduced: the GPU's output and the
  /// interpreter's, each against the f64 linear of the launch's own codes
  /// (R1h and R1), with the separations of the band.
  std::vector<ProjectionCheck> projections;

  bool ok() const;
  void print(llvm::raw_ostream &os) const;
};

/// Runs the runner's plan launch by launch on the GPU and on `interpreter`
/// from the same `buffers`, each interpreter launch fed the GPU's buffers as
/// they were before that launch, and compares every buffer each launch wrote:
/// bf16 in the bf16 band, f32 states 1e-2 / 1e-2, e4m3 codes within one code.
/// A projection whose GPU sums are reduced is held per output to the f64
/// linear of its own codes instead (R1h), the interpreter's output too (R1).
llvm::Expected<BackendComparison> compareWithInterpreter(GpuRunner &gpu,
                                                         InterpreterRunner &interpreter,
                                                         HostBuffers buffers);

/// Planted defects for testing the checks (`tilejit run --plant-defect`): each
/// changes only what the backend runs, never the reference.
enum class Defect { None, DropKStep, ScaleColumn, DropInputScale, DropCarry };
/// "none", "drop-k-step", "scale-column", "drop-input-scale", "drop-carry".
llvm::StringRef defectName(Defect defect);
llvm::Expected<Defect> parseDefect(llvm::StringRef name);
/// The weights the backend runs with `defect` planted: the last 32 K columns
/// of every projection zeroed, the first output's weights (row 0, a column of
/// W^T) scaled by 9/8, or the input scales set to 1.
std::vector<MambaLayerWeights> plantWeightDefect(std::vector<MambaLayerWeights> layers,
                                                 Defect defect);
/// A step function that, with DropCarry, zeroes every state page before the
/// backend's first step (the reference keeps them).
StepFn plantCarryDefect(StepFn runStep, const StepPlan &plan, Defect defect);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_NEMOTRON_H_CHECK_H
