// Checks a decode backend against the sequential f64 reference over carried
// steps: mixer outputs, both state pages, untouched slots, padding rows.
// Inside the mixer every op after in_proj sees bf16 values that may differ from
// the reference's by one bf16 ulp or one e4m3 activation code (R1 allows both),
// and carried steps and layers feed them on; so every comparison uses the bf16
// band of docs/numerics.md#r7-the-mixer (atol 5e-2 / rtol 1e-2 for outputs and conv taps,
// 1e-2 / 1e-2 for the f32 SSM state, whose values are O(1)). What each band
// separates: a dropped carry, a dropped input scale, an unshifted conv state
// (see DecodeStepTest). Each op alone is held to its own tighter band in the
// per-kernel tests.
#ifndef TILEJIT_MODELS_DECODECHECK_H
#define TILEJIT_MODELS_DECODECHECK_H

#include "tilejit/models/DecodeRun.h"
#include "tilejit/models/PrefillPlan.h"
#include "tilejit/models/Reference.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>

namespace tilejit::models {

/// What checkDecodeSteps found. Counts are elements compared / outside the band;
/// the output counts cover every layer's output after the last step, each
/// against the reference fed that layer's input as the backend computed it.
struct DecodeCheck {
  static constexpr double kOutAtol = 5e-2, kOutRtol = 1e-2;
  static constexpr double kStateAtol = 1e-2, kStateRtol = 1e-2;
  int64_t outChecked = 0, outBad = 0;
  double outMaxError = 0; ///< max |got - want| / (atol + rtol |want|) of the output
  /// Per layer: the SSM state against its band, the conv taps against the
  /// bf16 band (and how many are not bit-identical).
  struct Layer {
    int64_t layer = 0;
    int64_t ssmChecked = 0, ssmBad = 0;
    double ssmMaxError = 0;
    int64_t convChecked = 0, convBad = 0, convNotIdentical = 0;
    double convMaxError = 0;
  };
  std::vector<Layer> layers;
  int64_t untouchedSlotsDiffering = 0; ///< slots no row uses that changed
  int64_t paddingNonZero = 0;          ///< output elements of padding rows not 0
  /// The pages before the first step, and of both sides after the last.
  std::vector<ref::PagedState> initial, got, want;
  std::vector<uint16_t> gotOut, wantOut;

  bool ok() const;
  void print(llvm::raw_ostream &os) const;
};

/// Runs one step of the backend over host buffers (upload, run, download).
using DecodeStepFn = std::function<llvm::Error(HostBuffers &)>;

/// From random pages and `steps` random hidden batches, runs `runStep` and the
/// reference in lockstep through `layers` with row slots `slots` (negative:
/// padding) and compares after the last step.
llvm::Expected<DecodeCheck> checkDecodeSteps(const NemotronHConfig &config,
                                             const std::vector<MambaLayerWeights> &layers,
                                             const DecodePlan &plan,
                                             llvm::ArrayRef<int32_t> slots, int steps,
                                             uint64_t seed, const DecodeStepFn &runStep);

/// As checkDecodeSteps for a prefill plan of `batch`: `steps` forwards of
/// fresh hidden states through the same batch layout, each sequence
/// continuing from its slot where the batch says so (a second step then
/// continues from the state the first wrote). Padding sequences' rows must
/// come out 0 and their slots untouched.
llvm::Expected<DecodeCheck> checkPrefillSteps(const NemotronHConfig &config,
                                              const std::vector<MambaLayerWeights> &layers,
                                              const PrefillPlan &plan,
                                              const ref::PrefillBatch &batch, int steps,
                                              uint64_t seed, const DecodeStepFn &runStep);

/// One buffer of two backends' runs compared element by element.
struct BufferAgreement {
  std::string name;
  std::string type;           ///< "bf16", "e4m3" or "f32"
  int64_t elements = 0, identical = 0, outside = 0;
  double maxError = 0;        ///< max |a - b| / (atol + rtol |b|)
};

/// Compares every non-weight buffer of `plan` after runs on two backends
/// (e.g. the GPU against the interpreter) in the band of its type: bf16
/// activations and conv taps 5e-2/1e-2, e4m3 codes within one code, the f32
/// state 1e-2/1e-2 (the bands of DecodeCheck, for the same reasons).
std::vector<BufferAgreement> compareBackends(const DecodePlan &plan, const HostBuffers &a,
                                             const HostBuffers &b,
                                             const std::vector<MambaLayerWeights> &layers);

/// `rows` slots for a decode batch over `numSlots` slots: distinct, in random
/// order, with every third row (from row 1) padding when rows > 1.
std::vector<int32_t> randomDecodeSlots(int64_t rows, int64_t numSlots, uint64_t seed);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_DECODECHECK_H
