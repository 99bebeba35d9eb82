// Checks a decode backend against the sequential f64 reference over carried
// steps: mixer outputs, both state pages, untouched slots, padding rows. The
// bands are reference-math.md's (R5d f32 for the SSM state, bf16 5e-2/1e-2
// for the output) and R1's rare 1-ulp flips for the raw conv taps.
#ifndef TILEJIT_MODELS_DECODECHECK_H
#define TILEJIT_MODELS_DECODECHECK_H

#include "tilejit/models/DecodeRun.h"
#include "tilejit/models/Reference.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>

namespace tilejit::models {

/// What checkDecodeSteps found. Counts are elements compared / outside the band.
struct DecodeCheck {
  int64_t outChecked = 0, outBad = 0;
  double outMaxError = 0; ///< max |got - want| / (atol + rtol |want|) of the output
  int64_t ssmChecked = 0, ssmBad = 0;
  double ssmMaxError = 0;
  int64_t convChecked = 0, convOffByOne = 0, convBad = 0; ///< bad: > 1 bf16 ulp
  int64_t untouchedSlotsDiffering = 0; ///< slots no row uses that changed
  int64_t paddingNonZero = 0;          ///< output elements of padding rows not 0
  /// The pages and output of both sides after the last step.
  std::vector<ref::PagedState> got, want;
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

/// `rows` slots for a decode batch over `numSlots` slots: distinct, in random
/// order, with every third row (from row 1) padding when rows > 1.
std::vector<int32_t> randomDecodeSlots(int64_t rows, int64_t numSlots, uint64_t seed);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_DECODECHECK_H
