// R8s's stochastic rounding of an f32 state tile into a 16-bit page, and the
// counter-based generator that draws its bits from (seed, slot, element), so
// a replay with the same seed rounds the same way. Built from the builder's
// i64 add, multiply, divide and and (xor and shifts composed from them).
#include "SsmUpdate.h"

#include <cfloat>
#include <cmath>

namespace tilejit::models {
namespace {

constexpr int64_t kLow32 = 0xFFFFFFFFLL;

/// a ^ b for a, b in [0, 2^32).
Value xor32(Value a, Value b) { return a + b - (a & b) * 2; }

/// a >> k for a in [0, 2^32).
Value shr(Value a, int k) { return a / (int64_t(1) << k); }

/// murmur3's 32-bit finalizer: every input bit flips each output bit with
/// probability near 1/2.
Value mix32(Value h) {
  h = xor32(h, shr(h, 16));
  h = (h * int64_t(0x85ebca6b)) & kLow32;
  h = xor32(h, shr(h, 13));
  h = (h * int64_t(0xc2b2ae35)) & kLow32;
  return xor32(h, shr(h, 16));
}

} // namespace

Value randomBits(Value key, Value seed, int64_t mixes) {
  Value s = mix32(seed & kLow32);
  Value h = mix32(xor32(key & kLow32, s));
  h = mix32(xor32(h, shr(key, 32) & kLow32));
  for (int64_t i = 2; i < mixes; ++i)
    h = mix32(xor32(h, s));
  return h;
}

Value stochasticRound(Value v, DType type, Value bits) {
  // The power of two 2^e <= |v| < 2^(e+1), found exactly by binary search:
  // up from 1 for |v| >= 1, down from 1 otherwise.
  Value a = abs(v), up = full(v.shape(), 1.0, DType::F32), down = up;
  for (int k = 64; k >= 1; k /= 2) {
    double step = std::ldexp(1.0, k);
    up = where(a >= up * step, up * step, up);
    Value lower = down * (1.0 / step);
    down = where(lower > a, lower, down);
  }
  Value scale = where(a >= 1.0, up, down * 0.5);
  // One ulp of `type` at |v| (f16's subnormals share the smallest).
  const bool half = type == DType::F16;
  Value ulp = scale * std::ldexp(1.0, half ? -10 : -7);
  if (half)
    ulp = maximum(ulp, std::ldexp(1.0, -24));
  // |v| = (whole + frac) ulp exactly; round up with probability frac. The
  // 16 random bits cover every dropped bit (16 for bf16, 13 for f16).
  Value q = a / ulp;
  Value whole = q.to(DType::I32).to(DType::F32);
  Value u = (bits & 0xFFFF).to(DType::F32) * std::ldexp(1.0, -16);
  Value one = full(v.shape(), 1.0, DType::F32);
  Value rounded = (whole + where(u < q - whole, one, zeros(v.shape(), DType::F32))) * ulp;
  Value sr = where(v < 0.0, -rounded, rounded);
  // NaN and infinities pass as they are (both compares are false for NaN);
  // below 2^-100, where a flushed f32 ulp would make q NaN, nearest even.
  Value ordinary = (a <= double(FLT_MAX)) & (a >= std::ldexp(1.0, -100));
  return where(ordinary, sr, v).to(type);
}

} // namespace tilejit::models
