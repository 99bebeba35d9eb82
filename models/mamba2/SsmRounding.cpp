// R8s's stochastic rounding of an f32 state tile into a 16-bit page, and the
// counter-based generator that draws its bits from (seed, slot, element), so
// a replay with the same seed rounds the same way.
#include "SsmUpdate.h"

#include <cfloat>
#include <cmath>

namespace tilejit::models {
namespace {

/// murmur3's 32-bit finalizer on an i32 tile (products wrap mod 2^32, shifts
/// are logical): every input bit flips each output bit with probability near 1/2.
Value mix32(Value h) {
  h = h ^ shr(h, 16);
  h = h * int64_t(int32_t(0x85ebca6b));
  h = h ^ shr(h, 13);
  h = h * int64_t(int32_t(0xc2b2ae35));
  return h ^ shr(h, 16);
}

/// The bf16 neighbour of `v` away from zero with probability (dropped bits) /
/// 2^16: the 16 random bits `u` added to the f32 pattern carry into the kept half
/// exactly that often, then the low half is cut. Both signs round on the
/// magnitude, so the rounding is unbiased either way.
Value stochasticRoundBF16(Value v, Value u) {
  Value pattern = bitcast(v, DType::I32);
  Value kept = shl(shr(pattern + u, 16), 16);
  // NaN and infinities (all exponent bits set) pass as they are; the kept
  // pattern is a bf16 value, so the conversion is exact.
  Value special = (pattern & 0x7F800000) == 0x7F800000;
  return where(special, v, bitcast(kept, DType::F32)).to(DType::BF16);
}

} // namespace

Value roundingKey(Value seed, Value slot) {
  Value words = mix32(shr(seed, 32).to(DType::I32)) ^ seed.to(DType::I32);
  return mix32(mix32(words) ^ slot.to(DType::I32));
}

Value randomU(Value key, Value first, const Shape &shape, int64_t mixes) {
  // A reshaped arange starts in the coalescing layout the state tile has, so
  // the hash runs on the tile's own registers and nothing is converted.
  Value e = reshape(arange(0, shape[0] * shape[1]), shape) + first;
  Value h = shr(e, 1) ^ key;
  for (int64_t i = 1; i < mixes; ++i)
    h = mix32(h);
  // Both elements of a pair hold the same word, so the lowering computes it
  // once: the even element takes its low half, the odd one its high half.
  return shr(h, shl(e & 1, 4)) & 0xFFFF;
}

Value stochasticRound(Value v, DType type, Value u) {
  if (type == DType::BF16)
    return stochasticRoundBF16(v, u);
  // One f16 ulp at |v|, 2^(e - 10) for 2^e <= |v| < 2^(e+1), f16's
  // subnormals sharing the smallest, 2^-24: built from |v|'s f32 exponent
  // field as a pattern, with its inverse, so that q is exact without a
  // division (f16's exponent is not f32's, so the bf16 carry does not apply).
  Value magnitude = bitcast(v, DType::I32) & 0x7FFFFFFF;
  Value a = bitcast(magnitude, DType::F32);
  Value field = maximum(shr(magnitude, 23), 127 - 14) - 10;
  Value ulp = bitcast(shl(field, 23), DType::F32);
  Value q = a * bitcast(shl(254 - field, 23), DType::F32);
  // |v| = (whole + frac) ulp exactly; round up with probability frac. The
  // 16 random bits cover the 13 bits f16 drops.
  Value whole = q.to(DType::I32).to(DType::F32);
  Value uf = u.to(DType::F32) * std::ldexp(1.0, -16);
  Value one = full(v.shape(), 1.0, DType::F32);
  Value rounded =
      (whole + where(uf < q - whole, one, zeros(v.shape(), DType::F32))) * ulp;
  Value sr = where(v < 0.0, -rounded, rounded);
  // NaN and infinities pass as they are (both compares are false for NaN);
  // below 2^-100, where a GPU flushing f32 subnormals would lose |v|,
  // nearest even.
  Value ordinary = (a <= double(FLT_MAX)) & (a >= std::ldexp(1.0, -100));
  return where(ordinary, sr, v).to(type);
}

} // namespace tilejit::models
