// The constants of the ssm_update kernel (SsmUpdate.cpp) decoded once, and
// its registration's tables (SsmUpdateConstants.cpp).
#ifndef TILEJIT_MODELS_MAMBA2_SSMUPDATE_H
#define TILEJIT_MODELS_MAMBA2_SSMUPDATE_H

#include "tilejit/Builder/KernelRegistry.h"

namespace tilejit::models {

/// Bits of the `per_p` constant: which per-head parameters vary over p (A
/// over p and n), as mamba_ssm's untied form (tie_hdim false) passes them.
constexpr int64_t kPerPDt = 1, kPerPDtBias = 2, kPerPD = 4, kPerPA = 8;

/// What one specialization of ssm_update reads and writes.
struct SsuShape {
  int64_t heads, headDim, stateSize, groups, bp, inner, channels;
  bool aIsLog, softplusDt, split, gated, varlen, spec, padId, dstSlots, checked;
  int64_t perP;
  /// Row strides in elements (dt's own default: heads, or heads * head_dim
  /// per p); 2-D slot tables' row strides (0: one slot per row).
  int64_t dtStride, dtCol, xStride, bStride, cStride, zStride, slotsStride, dstStride;
  DType xType, dtType, bType, cType, zType, dType, dtBiasType, aType, stateType, yType;
  DType slotType, cuType, acceptedType;

  static SsuShape of(const Specialization &spec);
};

std::vector<KernelConstant> ssmUpdateConstants();
std::vector<ConstantRule> ssmUpdateRules();

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_SSMUPDATE_H
