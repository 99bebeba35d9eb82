// The model-free half of checking a plan's steps: the bands two computations of
// one value agree within, one buffer compared between two backends, a backend's
// step as a function over host buffers, and the slots of a random decode batch.
// The checks that know a model (the NemotronH ones: nemotron_h/Check.h) build
// on these.
#ifndef TILEJIT_MODELS_PLAN_COMPARE_H
#define TILEJIT_MODELS_PLAN_COMPARE_H

#include "tilejit/models/plan/Runners.h"

#include <functional>

namespace tilejit::models {

/// The band of a bf16 value against another computation of it, |a - b| <=
/// atol + rtol |b| (docs/numerics.md): carried steps feed the differences on.
constexpr double kBF16Atol = 5e-2, kBF16Rtol = 1e-2;
/// The band of an f32 state.
constexpr double kF32Atol = 1e-2, kF32Rtol = 1e-2;

/// Counts one comparison of `got` with `want` in the band atol + rtol |want|:
/// `checked` always, `outside` when it misses (NaN does), and `worst` the
/// largest ratio of the error to the band.
void countInBand(double got, double want, double atol, double rtol, int64_t &checked,
                 int64_t &outside, double &worst);

/// One buffer one launch wrote, compared between two backends run in
/// lockstep (each launch fed the first backend's buffers).
struct BufferAgreement {
  size_t launch = 0;
  std::string kernel, role;
  int64_t layer = -1;
  std::string name;
  std::string type; ///< tensorTypeName of the buffer's element type
  int64_t elements = 0, identical = 0, outside = 0;
  double maxError = 0; ///< max |a - b| / band
};

/// Two backends' versions `a` and `b` of `buffer` in its type's band: bf16
/// kBF16Atol / kBF16Rtol, f32 and f16 (a 16-bit SSM page) kF32Atol / kF32Rtol,
/// e4m3 codes within one code, integers equal.
BufferAgreement compareBuffer(const PlanBuffer &buffer, const std::vector<uint8_t> &a,
                              const std::vector<uint8_t> &b);

/// Runs one step of a backend over host buffers (upload, run, download).
using StepFn = std::function<llvm::Error(HostBuffers &)>;

/// How each launch of a checked plan adds its products (GpuRunner::
/// launchSums); empty: every launch exact (the interpreter).
using LaunchSums = std::vector<runtime::SumPrecision>;
LaunchSums launchSumsOf(const GpuRunner &runner);

/// A step through the GPU runner from and back to host buffers.
StepFn hostRoundTrip(GpuRunner &runner);

/// `rows` slots for a decode batch over `numSlots` slots: distinct, in random
/// order, with every third row (from row 1) padding when rows > 1 and
/// `padding` (checks want padding rows; timing wants every row live).
std::vector<int32_t> randomDecodeSlots(int64_t rows, int64_t numSlots, uint64_t seed,
                                       bool padding = true);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PLAN_COMPARE_H
