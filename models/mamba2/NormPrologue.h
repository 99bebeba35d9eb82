// out_proj's gated-norm prologue (`norm_prologue` = 1): the decode GEMVs
// compute R6's normalized, gated (and for FP8, e4m3-quantized) activation
// from y and z themselves, so the gated_rmsnorm launch leaves the step.
#ifndef TILEJIT_MODELS_MAMBA2_NORMPROLOGUE_H
#define TILEJIT_MODELS_MAMBA2_NORMPROLOGUE_H

#include "Parts.h"

#include <map>

namespace tilejit::models {

/// The parameters of the fused norm (y, z, norm weight, eps and, for FP8,
/// out_proj's s_x) and the activation source that applies it.
class NormPrologue {
public:
  /// Declares y, z, norm_weight, eps (and input_scale when `fp8`) in that order.
  NormPrologue(Kernel &k, const Specialization &spec, int64_t inner, bool fp8);

  /// The activation of R6 then R1's quant, as the separate kernels compute
  /// it. A row's group sums are formed at its first use, which the GEMVs
  /// place after their wait for the kernels before.
  ActivationSource source();

  /// The constants that select the prologue and shape its norm, and its rules.
  static std::vector<KernelConstant> constants();
  static std::vector<ConstantRule> rules();

private:
  Value rstd(int64_t m, Value row, int64_t group);

  Value y, z, weight, eps;
  std::optional<Value> inputScale;
  int64_t inner, groupSize, zStride;
  bool fp8;
  std::map<std::pair<int64_t, int64_t>, Value> rstds; ///< by (tile row, group)
};

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_NORMPROLOGUE_H
