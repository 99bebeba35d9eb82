// The constants of the ssm_update kernel (SsmUpdate.cpp) decoded once, and
// its registration's tables (SsmUpdateConstants.cpp).
#ifndef TILEJIT_MODELS_MAMBA2_SSMUPDATE_H
#define TILEJIT_MODELS_MAMBA2_SSMUPDATE_H

#include "tilejit/Builder/Builder.h"
#include "tilejit/Builder/KernelRegistry.h"

namespace tilejit::models {

/// Bits of the `per_p` constant: which per-head parameters vary over p (A
/// over p and n), as mamba_ssm's untied form (tie_hdim false) passes them.
constexpr int64_t kPerPDt = 1, kPerPDtBias = 2, kPerPD = 4, kPerPA = 8;

/// What one specialization of ssm_update reads and writes.
struct SsuShape {
  int64_t heads, headDim, stateSize, groups, bp, inner, channels;
  bool aIsLog, softplusDt, split, gated, varlen, spec, padId, dstSlots, checked;
  /// R8s's stochastic rounding (`mixes` rounds of the hash from the slot to an
  /// element's bits), else nearest even.
  bool stochastic;
  int64_t mixes;
  int64_t perP;
  /// Row strides in elements (dt's own default: heads, or heads * head_dim
  /// per p); 2-D slot tables' row strides (0: one slot per row).
  int64_t dtStride, dtCol, xStride, bStride, cStride, zStride, slotsStride, dstStride;
  DType xType, dtType, bType, cType, zType, dType, dtBiasType, aType, stateType, yType;
  DType slotType, cuType, acceptedType;

  static SsuShape of(const Specialization &spec);
};

/// The i32 scalar that keys one program's draws: the i64 `seed`'s two words
/// and the `slot`, each folded in by a round of the hash.
Value roundingKey(Value seed, Value slot);
/// 16 random bits (an i32 tile of values below 2^16) for each element of a
/// 2-D tile of `shape` whose element (r, c) is number first + r * shape[1] + c
/// of its slot: elements 2i and 2i + 1 share one 32-bit word, `key` ^ i after
/// `mixes` - 1 (>= 1) rounds of the hash. The same key and element give the
/// same bits.
Value randomU(Value key, Value first, const Shape &shape, int64_t mixes);
/// R8s's stochastic rounding of the f32 tile `v` to `type` (bf16 or f16):
/// the neighbour away from zero with probability (|v| - |lower|) / ulp,
/// decided by the 16 bits `u`; NaN and infinities as they are (f16:
/// |v| < 2^-100 to nearest even).
Value stochasticRound(Value v, DType type, Value u);

std::vector<KernelConstant> ssmUpdateConstants();
std::vector<ConstantRule> ssmUpdateRules();

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_SSMUPDATE_H
