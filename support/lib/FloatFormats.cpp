// Bit-exact f32 <-> bf16 / f16 / e4m3fn conversions. One integer rounding
// routine serves every narrow format, so the three cannot drift apart; the
// behaviour at NaN, infinity and overflow is documented in FloatFormats.h.
#include "tilejit/support/FloatFormats.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tilejit {
namespace {

/// A binary floating-point format narrower than f32, described by its codes
/// (the sign bit excluded).
struct NarrowFormat {
  int mantissaBits;
  int exponentBits;
  int bias;
  uint32_t maxFinite; // code of the largest finite magnitude
  bool hasInfinity;   // IEEE-style all-ones exponent (else e4m3fn: NaN only)
  uint32_t quietNaN;  // code of the quiet NaN without payload
};

constexpr NarrowFormat kBF16{7, 8, 127, 0x7F7F, true, 0x7FC0};
constexpr NarrowFormat kF16{10, 5, 15, 0x7BFF, true, 0x7E00};
constexpr NarrowFormat kE4M3{3, 4, 7, 0x7E, false, 0x7F};

constexpr int kF32MantissaBits = 23;

uint32_t signBitOf(const NarrowFormat &fmt) {
  return 1u << (fmt.mantissaBits + fmt.exponentBits);
}

uint32_t infinityOf(const NarrowFormat &fmt) {
  return ((1u << fmt.exponentBits) - 1) << fmt.mantissaBits;
}

uint32_t narrow(float value, const NarrowFormat &fmt, Rounding rounding) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t sign = (bits >> 31) ? signBitOf(fmt) : 0;
  uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) {
    if (!fmt.hasInfinity)
      return sign | fmt.quietNaN;
    uint32_t payload = (magnitude & 0x7FFFFF) >> (kF32MantissaBits - fmt.mantissaBits);
    return sign | fmt.quietNaN | payload;
  }
  if (magnitude == 0x7F800000)
    return sign | (fmt.hasInfinity ? infinityOf(fmt) : fmt.maxFinite);

  // magnitude = mantissa * 2^(exponent - 23), with the implicit bit made
  // explicit for normals; f32 subnormals share the exponent of the smallest
  // normal.
  int field = int(magnitude >> kF32MantissaBits);
  int exponent = (field ? field : 1) - 127;
  uint32_t mantissa = (magnitude & 0x7FFFFF) | (field ? 0x800000u : 0u);

  // The result's quantum is 2^(scaleExponent - mantissaBits); below the
  // target's smallest normal exponent the quantum stops shrinking
  // (subnormals).
  int minExponent = 1 - fmt.bias;
  int scaleExponent = std::max(exponent, minExponent);
  int shift = scaleExponent - fmt.mantissaBits - (exponent - kF32MantissaBits);
  uint32_t quanta = 0;
  if (shift < 25) { // otherwise mantissa < 2^24 <= half a quantum: rounds to 0
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    quanta = mantissa >> shift;
    if (rounding == Rounding::NearestEven &&
        (rest > half || (rest == half && (quanta & 1))))
      ++quanta;
  }
  // For normals quanta lies in [2^m, 2^(m+1)] and adding it to the biased
  // exponent minus one yields the code, a carry into the exponent included;
  // for subnormals the exponent term is zero and the code is quanta itself.
  uint32_t code = (uint32_t(scaleExponent + fmt.bias - 1) << fmt.mantissaBits) + quanta;
  if (code > fmt.maxFinite) {
    bool toInfinity = fmt.hasInfinity && rounding == Rounding::NearestEven;
    code = toInfinity ? infinityOf(fmt) : fmt.maxFinite;
  }
  return sign | code;
}

float widen(uint32_t code, const NarrowFormat &fmt) {
  uint32_t sign = (code & signBitOf(fmt)) ? 0x80000000u : 0u;
  uint32_t exponentMask = (1u << fmt.exponentBits) - 1;
  uint32_t field = (code >> fmt.mantissaBits) & exponentMask;
  uint32_t mantissa = code & ((1u << fmt.mantissaBits) - 1);
  int shiftTo32 = kF32MantissaBits - fmt.mantissaBits;
  if (fmt.hasInfinity && field == exponentMask)
    return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << shiftTo32));
  if (!fmt.hasInfinity && (code & ~signBitOf(fmt)) == fmt.quietNaN)
    return std::bit_cast<float>(sign | 0x7FC00000u);
  float magnitude = field == 0
                        ? std::ldexp(float(mantissa), 1 - fmt.bias - fmt.mantissaBits)
                        : std::ldexp(float(mantissa | (1u << fmt.mantissaBits)),
                                     int(field) - fmt.bias - fmt.mantissaBits);
  return sign ? -magnitude : magnitude;
}

} // namespace

uint16_t f32ToBF16(float value, Rounding rounding) {
  return uint16_t(narrow(value, kBF16, rounding));
}

float bf16ToF32(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

uint16_t f32ToF16(float value, Rounding rounding) {
  return uint16_t(narrow(value, kF16, rounding));
}

float f16ToF32(uint16_t bits) { return widen(bits, kF16); }

uint8_t f32ToE4M3(float value, Rounding rounding) {
  return uint8_t(narrow(value, kE4M3, rounding));
}

float e4m3ToF32(uint8_t bits) { return widen(bits, kE4M3); }

float roundToBF16(float value, Rounding rounding) {
  return bf16ToF32(f32ToBF16(value, rounding));
}

float roundToF16(float value, Rounding rounding) {
  return f16ToF32(f32ToF16(value, rounding));
}

float roundToE4M3(float value, Rounding rounding) {
  return e4m3ToF32(f32ToE4M3(value, rounding));
}

} // namespace tilejit
