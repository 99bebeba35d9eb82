// Bit-exact scalar conversions between f32 and the narrow float formats the
// kernels use (bf16, f16, OCP float8 e4m3fn). No MLIR dependency: the
// interpreter, the f64 reference and the runtime share these routines.
#ifndef TILEJIT_SUPPORT_FLOATFORMATS_H
#define TILEJIT_SUPPORT_FLOATFORMATS_H

#include <cstdint>

namespace tilejit {

/// How a narrowing conversion rounds a value that is not representable.
enum class Rounding {
  /// IEEE round to nearest, ties to even (PTX `.rn`).
  NearestEven,
  /// Round toward zero, i.e. truncate the magnitude (PTX `.rz`).
  TowardZero,
};

// Shared conventions of the f32 -> narrow conversions below:
// - Denormal inputs and outputs are honoured (no flush to zero): an f32 value
//   below the target's smallest normal rounds to the target's subnormal grid.
// - NaN becomes a quiet NaN of the same sign. bf16 and f16 keep the top
//   payload bits that fit; e4m3 has a single NaN per sign (S.1111.111). The GPU
//   may return a canonical NaN instead: only NaN-ness is part of the contract.
// - Overflow: bf16 and f16 follow IEEE (+-inf under NearestEven, the largest
//   finite value under TowardZero); +-inf maps to +-inf. e4m3fn has no
//   infinity and every conversion to it saturates (PTX `.satfinite`): finite
//   values beyond +-448 and +-inf become +-448.

/// f32 -> bfloat16 (1 sign, 8 exponent bits, bias 127, 7 mantissa bits).
uint16_t f32ToBF16(float value, Rounding rounding = Rounding::NearestEven);
/// bfloat16 -> f32, exact.
float bf16ToF32(uint16_t bits);

/// f32 -> IEEE binary16 (1 sign, 5 exponent bits, bias 15, 10 mantissa bits;
/// largest finite 65504, values from 65520 up round to inf under NearestEven).
uint16_t f32ToF16(float value, Rounding rounding = Rounding::NearestEven);
/// IEEE binary16 -> f32, exact.
float f16ToF32(uint16_t bits);

/// f32 -> OCP float8 e4m3fn (1 sign, 4 exponent bits, bias 7, 3 mantissa
/// bits; largest finite 448, smallest subnormal 2^-9, no infinity, NaN is
/// S.1111.111), saturating to +-448 as described above.
uint8_t f32ToE4M3(float value, Rounding rounding = Rounding::NearestEven);
/// OCP float8 e4m3fn -> f32, exact (0x7F and 0xFF decode to NaN).
float e4m3ToF32(uint8_t bits);

/// The value of `value` rounded to bf16, f16 or e4m3 and widened back to f32:
/// what a tile of that element type holds after an operation.
float roundToBF16(float value, Rounding rounding = Rounding::NearestEven);
float roundToF16(float value, Rounding rounding = Rounding::NearestEven);
float roundToE4M3(float value, Rounding rounding = Rounding::NearestEven);

} // namespace tilejit

#endif // TILEJIT_SUPPORT_FLOATFORMATS_H
