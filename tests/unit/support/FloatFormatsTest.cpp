// The f32 <-> bf16 / f16 / e4m3fn conversions against values derived by hand
// from the format definitions, and against LLVM's APFloat as an independent
// implementation on sweeps of f32 bit patterns.
#include "tilejit/support/FloatFormats.h"

#include "llvm/ADT/APFloat.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

using namespace tilejit;

namespace {

/// e4m3fn by its definition: sign * 2^(e-7) * (1 + m/8) for e in 1..15
/// (except S.1111.111, NaN), subnormals sign * 2^-6 * (m/8).
double e4m3ByDefinition(unsigned code) {
  double sign = (code & 0x80) ? -1.0 : 1.0;
  unsigned e = (code >> 3) & 0xF, m = code & 0x7;
  if (e == 15 && m == 7)
    return std::numeric_limits<double>::quiet_NaN();
  if (e == 0)
    return sign * std::pow(2.0, -6) * (m / 8.0);
  return sign * std::pow(2.0, int(e) - 7) * (1.0 + m / 8.0);
}

float bits(uint32_t b) { return std::bit_cast<float>(b); }

/// APFloat's rounding of `v` to `semantics`, as bits.
uint64_t apfloatBits(float v, const llvm::fltSemantics &semantics,
                     llvm::RoundingMode mode = llvm::RoundingMode::NearestTiesToEven) {
  llvm::APFloat value(v);
  bool lost;
  value.convert(semantics, mode, &lost);
  return value.bitcastToAPInt().getZExtValue();
}

} // namespace

TEST_CASE("e4m3 decodes all 256 codes as the format defines", "[float-formats]") {
  for (unsigned code = 0; code < 256; ++code) {
    INFO("code 0x" << std::hex << code);
    double want = e4m3ByDefinition(code);
    float got = e4m3ToF32(uint8_t(code));
    if (std::isnan(want)) {
      CHECK(std::isnan(got));
      continue;
    }
    CHECK(double(got) == want);
    CHECK(std::signbit(got) == bool(code & 0x80));
  }
  CHECK(e4m3ToF32(0x7E) == 448.0f);
  CHECK(e4m3ToF32(0x01) == std::ldexp(1.0f, -9));
  CHECK(e4m3ToF32(0x08) == std::ldexp(1.0f, -6));
}

TEST_CASE("e4m3 encoding round-trips every finite code", "[float-formats]") {
  for (unsigned code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F)
      continue;
    INFO("code 0x" << std::hex << code);
    CHECK(f32ToE4M3(float(e4m3ByDefinition(code))) == code);
    CHECK(f32ToE4M3(float(e4m3ByDefinition(code)), Rounding::TowardZero) == code);
  }
}

TEST_CASE("e4m3 rounds halfway values to the even code", "[float-formats]") {
  int ties = 0;
  for (unsigned code = 0; code + 1 < 0x7F; ++code) {
    double lo = e4m3ByDefinition(code), hi = e4m3ByDefinition(code + 1);
    float mid = float((lo + hi) / 2); // exact: f32 has bits to spare
    REQUIRE(double(mid) == (lo + hi) / 2);
    unsigned even = (code & 1) ? code + 1 : code;
    INFO("between 0x" << std::hex << code << " and 0x" << code + 1);
    CHECK(f32ToE4M3(mid) == even);
    CHECK(f32ToE4M3(-mid) == (even | 0x80));
    CHECK(f32ToE4M3(std::nextafter(mid, 0.0f)) == code);
    CHECK(f32ToE4M3(std::nextafter(mid, 1e9f)) == code + 1);
    CHECK(f32ToE4M3(std::nextafter(mid, 1e9f), Rounding::TowardZero) == code);
    ++ties;
  }
  CHECK(ties == 126);
  // Below the smallest subnormal 2^-9: half of it is a tie with zero.
  CHECK(f32ToE4M3(std::ldexp(1.0f, -10)) == 0x00);
  CHECK(f32ToE4M3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(f32ToE4M3(3 * std::ldexp(1.0f, -10)) == 0x02);
  CHECK(f32ToE4M3(1e-30f) == 0x00);
  CHECK(f32ToE4M3(-1e-30f) == 0x80);
  CHECK(f32ToE4M3(bits(0x00000001)) == 0x00);
}

TEST_CASE("e4m3 saturates at +-448 and keeps NaN", "[float-formats]") {
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {448.0f, 449.0f, 464.0f, 479.9f, 480.0f, 1e9f, 3.4e38f, inf}) {
    INFO(v);
    CHECK(f32ToE4M3(v) == 0x7E);
    CHECK(f32ToE4M3(-v) == 0xFE);
    CHECK(f32ToE4M3(v, Rounding::TowardZero) == 0x7E);
  }
  // Just under the 416/448 midpoint stays 416 (0x7D).
  CHECK(f32ToE4M3(431.9f) == 0x7D);
  CHECK(f32ToE4M3(432.0f) == 0x7E); // tie 416 (odd 0x7D) / 448 (even 0x7E)
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  CHECK(f32ToE4M3(qnan) == 0x7F);
  CHECK(f32ToE4M3(-qnan) == 0xFF);
  CHECK(f32ToE4M3(bits(0x7F800001)) == 0x7F); // signalling NaN stays NaN
  CHECK(std::isnan(roundToE4M3(qnan)));
}

TEST_CASE("e4m3 agrees with APFloat on random finite f32 in range", "[float-formats]") {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> any;
  int compared = 0;
  for (int i = 0; i < 200000; ++i) {
    // Spread exponents over the e4m3 range and a little beyond on each side.
    float v = std::ldexp(float(any(rng)) / 4294967296.0f, int(any(rng) % 24) - 14);
    v = (any(rng) & 1) ? -v : v;
    if (std::fabs(v) > 448.0f)
      continue;
    INFO("value " << v);
    CHECK(f32ToE4M3(v) == apfloatBits(v, llvm::APFloat::Float8E4M3FN()));
    CHECK(f32ToE4M3(v, Rounding::TowardZero) ==
          apfloatBits(v, llvm::APFloat::Float8E4M3FN(), llvm::RoundingMode::TowardZero));
    ++compared;
  }
  CHECK(compared > 150000);
}

TEST_CASE("bf16 rounding: ties, overflow, NaN, infinity, denormals", "[float-formats]") {
  // 1 + 2^-8 lies halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81).
  CHECK(f32ToBF16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  // 1 + 3*2^-8 lies halfway between 0x3F81 (odd) and 0x3F82 (even).
  CHECK(f32ToBF16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
  CHECK(f32ToBF16(-(1.0f + 3 * std::ldexp(1.0f, -8))) == 0xBF82);
  CHECK(f32ToBF16(bits(0x3F808001)) == 0x3F81); // just above the tie
  CHECK(f32ToBF16(bits(0x3F80FFFF), Rounding::TowardZero) == 0x3F80);

  const float inf = std::numeric_limits<float>::infinity();
  CHECK(f32ToBF16(inf) == 0x7F80);
  CHECK(f32ToBF16(-inf) == 0xFF80);
  CHECK(f32ToBF16(std::numeric_limits<float>::max()) == 0x7F80); // rounds up to inf
  CHECK(f32ToBF16(std::numeric_limits<float>::max(), Rounding::TowardZero) == 0x7F7F);
  CHECK(f32ToBF16(inf, Rounding::TowardZero) == 0x7F80);

  // NaN stays NaN and keeps its sign, including a signalling NaN whose
  // payload lives only in the low 16 bits (plain truncation would give inf).
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu}) {
    INFO("nan bits 0x" << std::hex << nan);
    uint16_t b = f32ToBF16(bits(nan));
    CHECK(std::isnan(bf16ToF32(b)));
    CHECK(bool(b & 0x8000) == bool(nan & 0x80000000u));
  }

  // Denormals are kept: same exponent range as f32, 16 fewer mantissa bits.
  CHECK(f32ToBF16(bits(0x00010000)) == 0x0001);
  CHECK(f32ToBF16(bits(0x00008000)) == 0x0000); // tie with 0 -> even
  CHECK(f32ToBF16(bits(0x00018000)) == 0x0002); // tie 1/2 -> even
  CHECK(f32ToBF16(bits(0x00010001)) == 0x0001);
  CHECK(f32ToBF16(bits(0x007FFFFF)) == 0x0080); // rounds up to the smallest normal
  CHECK(f32ToBF16(bits(0x80008001)) == 0x8001);
}

TEST_CASE("bf16 and f16 agree with APFloat on random f32 bit patterns",
          "[float-formats]") {
  std::mt19937 rng(42);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 300000; ++i) {
    uint32_t b = any(rng);
    float v = bits(b);
    if (std::isnan(v))
      continue;
    INFO("bits 0x" << std::hex << b);
    CHECK(f32ToBF16(v) == apfloatBits(v, llvm::APFloat::BFloat()));
    CHECK(f32ToBF16(v, Rounding::TowardZero) ==
          apfloatBits(v, llvm::APFloat::BFloat(), llvm::RoundingMode::TowardZero));
    // Most random patterns are far outside f16's range; also draw near it.
    float near = std::ldexp(float(b) / 4294967296.0f, int(b % 48) - 30);
    CHECK(f32ToF16(v) == apfloatBits(v, llvm::APFloat::IEEEhalf()));
    CHECK(f32ToF16(near) == apfloatBits(near, llvm::APFloat::IEEEhalf()));
    CHECK(f32ToF16(near, Rounding::TowardZero) ==
          apfloatBits(near, llvm::APFloat::IEEEhalf(), llvm::RoundingMode::TowardZero));
  }
}

TEST_CASE("f16 boundaries", "[float-formats]") {
  CHECK(f32ToF16(65504.0f) == 0x7BFF);
  CHECK(f32ToF16(65519.0f) == 0x7BFF);
  CHECK(f32ToF16(65520.0f) == 0x7C00); // tie 65504 (odd) / 65536 -> inf
  CHECK(f32ToF16(1e6f, Rounding::TowardZero) == 0x7BFF);
  CHECK(f32ToF16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(f32ToF16(std::ldexp(1.0f, -25)) == 0x0000); // tie with 0 -> even
  CHECK(f32ToF16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);
  CHECK(f32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);
  CHECK(std::isnan(f16ToF32(f32ToF16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(f16ToF32(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(f16ToF32(0x0001) == std::ldexp(1.0f, -24));
}

TEST_CASE("bf16 and f16 decode and re-encode every code exactly", "[float-formats]") {
  for (uint32_t code = 0; code < 0x10000; ++code) {
    uint16_t c = uint16_t(code);
    float b = bf16ToF32(c), h = f16ToF32(c);
    INFO("code 0x" << std::hex << code);
    if (std::isnan(b))
      CHECK(std::isnan(bf16ToF32(f32ToBF16(b))));
    else
      CHECK(f32ToBF16(b) == c);
    if (std::isnan(h))
      CHECK(std::isnan(f16ToF32(f32ToF16(h))));
    else
      CHECK(f32ToF16(h) == c);
    // The decoders agree with APFloat.
    llvm::APFloat ref(llvm::APFloat::IEEEhalf(), llvm::APInt(16, code));
    bool lost;
    ref.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
    if (!std::isnan(h))
      CHECK(h == ref.convertToFloat());
  }
}
