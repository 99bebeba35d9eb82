// The rounding points of docs/numerics.md#notation-and-rounding-points applied to f64
// values, and the scalar activations. bf16/e4m3 encoding itself is FloatFormats'
// (bit-exact).
#include "Checks.h"
#include "tilejit/models/reference/Reference.h"

#include "tilejit/support/FloatFormats.h"

#include <bit>
#include <cfloat>
#include <cmath>

namespace tilejit::models::ref {
namespace {

/// `v` rounded to f32 with round-to-odd: truncate, and set the last bit when
/// inexact. f32 keeps more than two bits beyond bf16 and e4m3, so a following
/// RNE conversion then equals one correct RNE rounding of `v` (Boldo and
/// Melquiond); plain float(v) would round twice.
float toF32RoundToOdd(double v) {
  float nearest = float(v);
  if (std::isnan(v) || double(nearest) == v)
    return nearest;
  if (std::isinf(nearest)) // finite v beyond the f32 range truncates to FLT_MAX
    return std::copysign(FLT_MAX, float(v));
  float other = double(nearest) > v ? std::nextafter(nearest, -INFINITY)
                                    : std::nextafter(nearest, INFINITY);
  return (std::bit_cast<uint32_t>(nearest) & 1) ? nearest : other;
}

} // namespace

uint16_t bf16Bits(double v) { return f32ToBF16(toF32RoundToOdd(v)); }
uint8_t e4m3Code(double v) { return f32ToE4M3(toF32RoundToOdd(v)); }
double bf16Value(uint16_t bits) { return bf16ToF32(bits); }
double e4m3Value(uint8_t code) { return e4m3ToF32(code); }

Tensor<uint16_t> toBF16(const Tensor<double> &t) {
  Tensor<uint16_t> result(t.shape);
  for (int64_t i = 0; i < t.size(); ++i)
    result.data[i] = bf16Bits(t.data[i]);
  return result;
}

Tensor<double> fromBF16(const Tensor<uint16_t> &t) {
  Tensor<double> result(t.shape);
  for (int64_t i = 0; i < t.size(); ++i)
    result.data[i] = bf16Value(t.data[i]);
  return result;
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }

double softplus(double v) { return v > 20.0 ? v : std::log1p(std::exp(v)); }

namespace detail {

llvm::Error shapeError(llvm::StringRef op, llvm::StringRef operand,
                       llvm::ArrayRef<int64_t> got, llvm::ArrayRef<int64_t> want) {
  return llvm::createStringError("%s: %s has shape %s, expected %s", op.str().c_str(),
                                 operand.str().c_str(), formatShape(got).c_str(),
                                 formatShape(want).c_str());
}

} // namespace detail
} // namespace tilejit::models::ref
