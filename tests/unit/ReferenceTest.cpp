// The f64 reference (docs/numerics.md, R1-R9) against hand-computed cases and
// against itself across op boundaries; every check names the counterfactual it
// separates (docs/numerics.md#how-a-band-is-tested) and shows the separation exceeds its
// band.
#include "tilejit/models/reference/Reference.h"

#include "tilejit/support/FloatFormats.h"

#include "llvm/ADT/APFloat.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::ref;

namespace {

/// bf16 bits of values that must be exactly representable.
Tensor<uint16_t> exactBF16(std::vector<int64_t> shape, std::vector<double> values) {
  Tensor<uint16_t> t(std::move(shape));
  REQUIRE(int64_t(values.size()) == t.size());
  for (size_t i = 0; i < values.size(); ++i) {
    t.data[i] = bf16Bits(values[i]);
    REQUIRE(bf16Value(t.data[i]) == values[i]);
  }
  return t;
}

/// Elementwise |got - want| <= atol + rtol |want|, counting what was examined.
struct Comparison {
  int64_t examined = 0, failures = 0;
  double worst = 0.0; // largest |got - want|
};

Comparison compare(llvm::ArrayRef<double> got, llvm::ArrayRef<double> want, double atol,
                   double rtol) {
  REQUIRE(got.size() == want.size());
  Comparison c;
  for (size_t i = 0; i < got.size(); ++i, ++c.examined) {
    double diff = std::fabs(got[i] - want[i]);
    c.worst = std::max(c.worst, diff);
    if (!(diff <= atol + rtol * std::fabs(want[i])))
      ++c.failures;
  }
  return c;
}

double maxAbsDiff(llvm::ArrayRef<double> a, llvm::ArrayRef<double> b) {
  return compare(a, b, 0.0, 0.0).worst;
}

} // namespace

TEST_CASE("f64 rounding points round once, not through f32", "[reference]") {
  // 1 + 2^-8 is the bf16 midpoint between 1 and 1 + 2^-7: ties go to even.
  CHECK(bf16Bits(1.0 + 0x1p-8) == 0x3F80);
  CHECK(bf16Bits(1.0 + 3 * 0x1p-8) == 0x3F82);
  // Just above the midpoint: one correct rounding goes up; the counterfactual
  // float(v) first lands on the midpoint and then ties down to 1.0.
  const double above = 1.0 + 0x1p-8 + 0x1p-40;
  CHECK(bf16Bits(above) == 0x3F81);
  CHECK(f32ToBF16(float(above)) == 0x3F80);
  // e4m3: ulp 1/8 at 1; 1.0625 is a tie (to even 1.0), just above rounds up.
  CHECK(e4m3Code(1.0625) == 0x38);
  CHECK(e4m3Code(1.0625 + 1e-12) == 0x39);
  CHECK(f32ToE4M3(float(1.0625 + 1e-12)) == 0x38);
  // Saturation, never NaN, from finite input.
  CHECK(e4m3Code(500.0) == 0x7E);
  CHECK(e4m3Code(-1e30) == 0xFE);

  // Against APFloat's single rounding of the double, on random doubles.
  Rng rng(7);
  for (int i = 0; i < 20000; ++i) {
    double v = rng.uniform(-1.0, 1.0) * std::ldexp(1.0, int(rng.uniform(-20, 20)));
    llvm::APFloat wide(v);
    bool lost;
    wide.convert(llvm::APFloat::BFloat(), llvm::RoundingMode::NearestTiesToEven, &lost);
    REQUIRE(bf16Bits(v) == wide.bitcastToAPInt().getZExtValue());
    double small = rng.uniform(-440.0, 440.0);
    llvm::APFloat narrow(small);
    narrow.convert(llvm::APFloat::Float8E4M3FN(), llvm::RoundingMode::NearestTiesToEven,
                   &lost);
    REQUIRE(e4m3Code(small) == narrow.bitcastToAPInt().getZExtValue());
  }
}

TEST_CASE("R1 quantizes the activation with the static input scale", "[reference]") {
  // x = 1.296875 (bf16 of 1.3), s_x = 0.5: x / s_x = 2.59375 lies between the
  // e4m3 neighbours 2.5 and 2.75, so a_q = 2.5; w = 1, s_w = 1:
  // y = 0.5 * 1 * 2.5 = 1.25. A W8A16 oracle would give 1.296875.
  Tensor<uint16_t> x = exactBF16({1, 1}, {1.296875});
  Tensor<uint8_t> w({1, 1}, e4m3Code(1.0));
  auto y = linearFP8(x, w, 1.0f, 0.5f);
  REQUIRE(bool(y));
  CHECK(y->data[0] == 1.25);

  // Two outputs: a_q = [3, -4] (x = [1.5, -2], s_x = 0.5), W = [[1, .5], [-2, .25]],
  // s_w = .25: acc = [1, -7], y = 0.125 * acc = [0.125, -0.875].
  x = exactBF16({1, 2}, {1.5, -2.0});
  Tensor<uint8_t> w2({2, 2});
  w2.data = {e4m3Code(1.0), e4m3Code(0.5), e4m3Code(-2.0), e4m3Code(0.25)};
  y = linearFP8(x, w2, 0.25f, 0.5f);
  REQUIRE(bool(y));
  CHECK(y->data == std::vector<double>{0.125, -0.875});
}

TEST_CASE("R1 separates W8A8 from W8A16 and from a dropped input scale", "[reference]") {
  Rng rng(11);
  const int64_t M = 4, K = 512, N = 64;
  Tensor<uint16_t> x = randomBF16({M, K}, rng, -3.0, 3.0);
  Tensor<uint8_t> w({N, K});
  for (uint8_t &code : w.data)
    code = e4m3Code(rng.uniform(-448.0, 448.0));
  const float sw = 0.002f, sx = 8.0f / 448.0f;
  auto y = linearFP8(x, w, sw, sx);
  REQUIRE(bool(y));
  REQUIRE(y->size() == M * N);
  double rms = 0.0;
  for (double v : y->data)
    rms += v * v / double(y->size());
  rms = std::sqrt(rms);

  // W8A16: dequantized weight, unquantized activation.
  Tensor<double> w8a16({M, N});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k)
        acc += bf16Value(x(m, k)) * e4m3Value(w(n, k)) * sw;
      w8a16(m, n) = acc;
    }
  // The kernel band is ~1 bf16 ulp (2^-8 relative); the activation
  // quantization error is far larger.
  CHECK(maxAbsDiff(y->data, w8a16.data) > 1e-2 * rms);
  // A dropped input scale (s_x = 1 instead of the checkpoint's amax / 448)
  // saturates activations beyond 448: wrong by a large part of the output.
  Tensor<uint16_t> large = randomBF16({M, K}, rng, -1000.0, 1000.0);
  auto calibrated = linearFP8(large, w, sw, 1024.0f / 448.0f);
  auto dropped = linearFP8(large, w, sw, 1.0f);
  REQUIRE(bool(calibrated));
  REQUIRE(bool(dropped));
  double largeRms = 0.0;
  for (double v : calibrated->data)
    largeRms += v * v / double(calibrated->size());
  CHECK(maxAbsDiff(calibrated->data, dropped->data) > 0.5 * std::sqrt(largeRms));

  // The rounded outputs of an f32 emulation (f32 divide, f32 accumulate) stay
  // within 1 bf16 ulp of the reference's.
  Tensor<double> emulated({M, N});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k)
        acc += e4m3ToF32(f32ToE4M3(bf16ToF32(x(m, k)) / sx)) * e4m3ToF32(w(n, k));
      emulated(m, n) = bf16ToF32(f32ToBF16((sx * sw) * acc));
    }
  Tensor<uint16_t> want = toBF16(*y);
  for (int64_t i = 0; i < want.size(); ++i)
    CHECK(std::abs(int(bf16Bits(emulated.data[i])) - int(want.data[i])) <= 1);

  // Shape mismatch is an error naming both shapes.
  auto bad = linearFP8(x, Tensor<uint8_t>({N, K + 1}), sw, sx);
  REQUIRE(!bad);
  CHECK(llvm::toString(bad.takeError()) ==
        "linearFP8: weight has shape [64, 513], expected [64, 512]");
}

TEST_CASE("R3 taps: w[c, K-1] multiplies the current token", "[reference]") {
  // C = 1, w = [1, 2, 3, 4], bias 0.5, fresh, x = [1, -1]:
  // pre0 = 0.5 + 4*1 = 4.5; pre1 = 0.5 + 3*1 + 4*(-1) = -0.5 (reversed taps
  // would give 1.5 and 0.5); the new state is [0, 1, -1], oldest first.
  Tensor<uint16_t> w = exactBF16({1, 4}, {1, 2, 3, 4});
  Tensor<uint16_t> b = exactBF16({1}, {0.5});
  auto r = convPrefill(exactBF16({2, 1}, {1, -1}), w, b, nullptr);
  REQUIRE(bool(r));
  CHECK(r->out.data == std::vector<double>{silu(4.5), silu(-0.5)});
  CHECK(fromBF16(r->state).data == std::vector<double>{0, 1, -1});
}

TEST_CASE("R3 prefill of L tokens equals L successive R3d updates", "[reference]") {
  Rng rng(3);
  const int64_t C = 24, K = 4, L = 7;
  Tensor<uint16_t> w = randomBF16({C, K}, rng, -0.5, 0.5);
  Tensor<uint16_t> b = randomBF16({C}, rng, -0.5, 0.5);
  Tensor<uint16_t> xBC = randomBF16({L, C}, rng, -2.0, 2.0);
  Tensor<uint16_t> init = randomBF16({C, K - 1}, rng, -2.0, 2.0);

  auto prefill = convPrefill(xBC, w, b, &init);
  REQUIRE(bool(prefill));
  Tensor<uint16_t> state = init.reshaped({1, C, K - 1});
  for (int64_t t = 0; t < L; ++t) {
    auto out = convUpdate(sliceRows(xBC, t, t + 1), w, b, state);
    REQUIRE(bool(out));
    // Same summation order: bit-identical f64 results.
    REQUIRE(out->data == sliceRows(prefill->out, t, t + 1).data);
  }
  CHECK(state.data == prefill->state.data);

  // Counterfactual: a dropped initial state changes the first K-1 outputs by
  // far more than a bf16 band.
  auto fresh = convPrefill(xBC, w, b, nullptr);
  REQUIRE(bool(fresh));
  CHECK(maxAbsDiff(sliceRows(fresh->out, 0, K - 1).data,
                   sliceRows(prefill->out, 0, K - 1).data) > 5e-2);
  CHECK(sliceRows(fresh->out, K - 1, L).data == sliceRows(prefill->out, K - 1, L).data);

  // L = 2 < K - 1: the new state keeps the oldest tap of the old state.
  auto shortSeq = convPrefill(sliceRows(xBC, 0, 2), w, b, &init);
  REQUIRE(bool(shortSeq));
  for (int64_t c = 0; c < C; ++c) {
    CHECK(shortSeq->state(c, 0) == init(c, 2));
    CHECK(shortSeq->state(c, 1) == xBC(0, c));
    CHECK(shortSeq->state(c, 2) == xBC(1, c));
  }
}

TEST_CASE("R4 discretization: softplus threshold and the dt clamp", "[reference]") {
  CHECK(timeStep(0.0, 0.0, 0.0, INFINITY) == Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(timeStep(15.0, 6.0, 0.0, INFINITY) == 21.0); // above 20: identity
  CHECK(timeStep(-100.0, 0.0, 0.01, 1.0) == 0.01);
  CHECK(timeStep(5.0, 0.0, 0.0, 1.0) == 1.0);
  CHECK(decayRate(0.0f) == -1.0);
}

TEST_CASE("R5 on a hand-computed case: 2 tokens, P = N = 2", "[reference]") {
  // H = G = 1, dt = 0, dt_bias = 21 so dt' = 21 (softplus identity above 20);
  // A_log = log(ln2 / 21), so a = exp(A dt') = exp(-ln 2) = 1/2 (to f32 A_log).
  // x0 = [1, 2], B0 = [1, 0], C0 = [1, 1]; x1 = [.5, -1], B1 = [0, 1], C1 = [2, 1];
  // D = .5, S starts at 0.
  // t0: S = 21 x0 B0^T = [[21, 0], [42, 0]]; y0 = S C0 + D x0 = [21.5, 43].
  // t1: S = S/2 + 21 x1 B1^T = [[10.5, 10.5], [21, -21]];
  //     y1 = S C1 + D x1 = [21 + 10.5 + .25, 42 - 21 - .5] = [31.75, 20.5].
  SsmParams params{Tensor<float>({1}, float(std::log(std::log(2.0) / 21.0))),
                   Tensor<float>({1}, 21.0f), Tensor<float>({1}, 0.5f)};
  auto r = ssmScan(exactBF16({2, 1, 2}, {1, 2, 0.5, -1}), exactBF16({2, 1}, {0, 0}),
                   exactBF16({2, 1, 2}, {1, 0, 0, 1}), exactBF16({2, 1, 2}, {1, 1, 2, 1}),
                   params, nullptr);
  REQUIRE(bool(r));
  Comparison y = compare(r->y.data, {21.5, 43, 31.75, 20.5}, 0.0, 1e-5);
  CHECK(y.examined == 4);
  CHECK(y.failures == 0);
  Comparison s = compare(r->state.data, {10.5, 10.5, 21, -21}, 0.0, 1e-5);
  CHECK(s.examined == 4);
  CHECK(s.failures == 0);
}

TEST_CASE("R5 head h reads group h / (H / G), not h mod G", "[reference]") {
  // H = 4, G = 2, P = N = 1, one token from zeros, dt' = 21, D = 0, x = C = 1:
  // y[h] = 21 * B[group(h)]. B = [1, 0] puts 21 on heads 0 and 1 (groups 0, 0,
  // 1, 1); the h mod G counterfactual would put it on heads 0 and 2.
  SsmParams params{Tensor<float>({4}, 0.0f), Tensor<float>({4}, 21.0f),
                   Tensor<float>({4}, 0.0f)};
  auto r = ssmScan(exactBF16({1, 4, 1}, {1, 1, 1, 1}), exactBF16({1, 4}, {0, 0, 0, 0}),
                   exactBF16({1, 2, 1}, {1, 0}), exactBF16({1, 2, 1}, {1, 1}), params,
                   nullptr);
  REQUIRE(bool(r));
  CHECK(r->y.data == std::vector<double>{21, 21, 0, 0});
}

namespace {

/// Random R5 operands: T tokens, H heads of P, G groups of N; A_log in
/// [0, 2.77] (A in [-16, -1]), dt_bias in [-4, -1] (dt' about 7e-3..0.5).
struct SsmCase {
  Tensor<uint16_t> x, dt, B, C;
  SsmParams params;
  Tensor<float> init;

  SsmCase(Rng &rng, int64_t T, int64_t H, int64_t P, int64_t G, int64_t N)
      : x(randomBF16({T, H, P}, rng, -1, 1)), dt(randomBF16({T, H}, rng, -1, 1)),
        B(randomBF16({T, G, N}, rng, -1, 1)), C(randomBF16({T, G, N}, rng, -1, 1)),
        params{randomF32({H}, rng, 0, 2.77), randomF32({H}, rng, -4, -1),
               randomF32({H}, rng, 0.5, 1.5)},
        init(randomF32({H, P, N}, rng, -1, 1)) {}
};

Tensor<float> toF32(const Tensor<double> &t) {
  Tensor<float> result(t.shape);
  for (int64_t i = 0; i < t.size(); ++i)
    result.data[i] = float(t.data[i]);
  return result;
}

} // namespace

TEST_CASE("R5d one step equals R5 on one token", "[reference]") {
  Rng rng(5);
  const int64_t H = 4, P = 3, G = 2, N = 5;
  SsmCase c(rng, 1, H, P, G, N);
  auto scan = ssmScan(c.x, c.dt, c.B, c.C, c.params, &c.init);
  REQUIRE(bool(scan));
  Tensor<float> state = c.init.reshaped({1, H, P, N});
  auto y = ssmUpdate(c.x, c.dt, c.B, c.C, c.params, state);
  REQUIRE(bool(y));
  CHECK(y->data == scan->y.data);
  CHECK(state.data == toF32(scan->state).data);
}

TEST_CASE("R5 carries its state; a dropped carry separates", "[reference]") {
  Rng rng(9);
  const int64_t T = 12, H = 4, P = 3, G = 2, N = 5, split = 5;
  SsmCase c(rng, T, H, P, G, N);
  auto whole = ssmScan(c.x, c.dt, c.B, c.C, c.params, &c.init);
  REQUIRE(bool(whole));
  // Split after `split` tokens, carrying the f32-stored state.
  auto first =
      ssmScan(sliceRows(c.x, 0, split), sliceRows(c.dt, 0, split),
              sliceRows(c.B, 0, split), sliceRows(c.C, 0, split), c.params, &c.init);
  REQUIRE(bool(first));
  Tensor<float> carried = toF32(first->state);
  auto second =
      ssmScan(sliceRows(c.x, split, T), sliceRows(c.dt, split, T),
              sliceRows(c.B, split, T), sliceRows(c.C, split, T), c.params, &carried);
  REQUIRE(bool(second));
  Comparison state = compare(second->state.data, whole->state.data, 1e-6, 1e-6);
  CHECK(state.examined == H * P * N);
  CHECK(state.failures == 0);
  // T successive R5d steps match the scan within the f32 state band (1e-3/3e-4).
  Tensor<float> stepped = c.init.reshaped({1, H, P, N});
  std::vector<double> steppedY;
  for (int64_t t = 0; t < T; ++t) {
    auto y =
        ssmUpdate(sliceRows(c.x, t, t + 1), sliceRows(c.dt, t, t + 1),
                  sliceRows(c.B, t, t + 1), sliceRows(c.C, t, t + 1), c.params, stepped);
    REQUIRE(bool(y));
    steppedY.insert(steppedY.end(), y->data.begin(), y->data.end());
  }
  Comparison y = compare(steppedY, whole->y.data, 1e-3, 3e-4);
  CHECK(y.examined == T * H * P);
  CHECK(y.failures == 0);

  // Counterfactual: the STATE against a zeroed twin (no initial state).
  auto zeroed = ssmScan(c.x, c.dt, c.B, c.C, c.params, nullptr);
  REQUIRE(bool(zeroed));
  CHECK(compare(zeroed->state.data, whole->state.data, 1e-3, 3e-4).failures > 0);
  CHECK(compare(zeroed->y.data, whole->y.data, 1e-3, 3e-4).failures > 0);
}

TEST_CASE("R6 applies the inner rounding point, per group", "[reference]") {
  // y = [3, 4], z = [20, 20] (silu(20) = 20 (1 - 2e-9)), w = 1, one group:
  // v = [60, 80], r = 1/sqrt(5000); v r = [0.848528, 1.131371] rounds to bf16
  // [217 * 2^-8, 145 * 2^-7] = [0.84765625, 1.1328125].
  auto out = gatedRmsNorm(exactBF16({1, 2}, {3, 4}), exactBF16({1, 2}, {20, 20}),
                          exactBF16({2}, {1, 1}), 2, 1e-5);
  REQUIRE(bool(out));
  CHECK(out->data == std::vector<double>{0.84765625, 1.1328125});

  // Counterfactual: per-group (8 x 512) vs whole-row normalization of random
  // data differ by more than the bf16 band's 1e-2.
  Rng rng(13);
  const int64_t T = 4, I = 4096, group = 512;
  Tensor<uint16_t> y = randomBF16({T, I}, rng, -2, 2), z = randomBF16({T, I}, rng, -3, 3);
  Tensor<uint16_t> w = randomBF16({I}, rng, 0.5, 1.5);
  auto grouped = gatedRmsNorm(y, z, w, group, 1e-5);
  auto whole = gatedRmsNorm(y, z, w, I, 1e-5);
  REQUIRE(bool(grouped));
  REQUIRE(bool(whole));
  REQUIRE(grouped->size() == T * I);
  CHECK(maxAbsDiff(grouped->data, whole->data) > 1e-2);

  auto bad = gatedRmsNorm(y, z, w, 500, 1e-5);
  REQUIRE(!bad);
  CHECK(llvm::toString(bad.takeError()) ==
        "gatedRmsNorm: group size 500 does not divide the row width 4096");
}

TEST_CASE("R9 cu_seqlens validation and chunk metadata", "[reference]") {
  auto chunks = varlenChunks({0, 5, 6, 14}, 14, 4);
  REQUIRE(bool(chunks));
  CHECK(chunks->chunkSequence == std::vector<int64_t>{0, 0, 1, 2, 2});
  CHECK(chunks->chunkBegin == std::vector<int64_t>{0, 4, 5, 6, 10});
  CHECK(chunks->chunkEnd == std::vector<int64_t>{4, 5, 6, 10, 14});
  int64_t covered = 0;
  for (int64_t k = 0; k < chunks->numChunks(); ++k) {
    int64_t length = chunks->chunkEnd[k] - chunks->chunkBegin[k];
    CHECK((length > 0 && length <= 4));
    CHECK(chunks->chunkBegin[k] == covered);
    covered = chunks->chunkEnd[k];
  }
  CHECK(covered == 14);

  auto message = [](llvm::Expected<VarlenChunks> r) {
    REQUIRE(!r);
    return llvm::toString(r.takeError());
  };
  CHECK(message(varlenChunks({0, 3, 3, 5}, 5, 4)) ==
        "varlen: sequence 1 is empty or negative (cu_seqlens[1] = 3, cu_seqlens[2] = 3); "
        "empty sequences are refused");
  CHECK(message(varlenChunks({1, 5}, 5, 4)) == "varlen: cu_seqlens[0] is 1, expected 0");
  CHECK(message(varlenChunks({0, 5}, 6, 4)) ==
        "varlen: cu_seqlens ends at 5 but the batch holds 6 tokens");
  CHECK(message(varlenChunks({0}, 0, 4)) ==
        "varlen: cu_seqlens needs at least 2 entries (one sequence), got 1");
  CHECK(message(varlenChunks({0, 5}, 5, 6)) ==
        "varlen: chunk size 6 is not a power of two");
}

TEST_CASE("R5p-m's yardstick stays within bf16 roundings of R5, shows them, and checks "
          "its operands",
          "[reference]") {
  Rng rng(9);
  const int64_t T = 40, H = 4, P = 3, G = 2, N = 5;
  SsmCase c(rng, T, H, P, G, N);
  auto scan = ssmScan(c.x, c.dt, c.B, c.C, c.params, &c.init);
  auto yard = ssdYardstick(c.x, c.dt, c.B, c.C, c.params, &c.init, 16);
  auto truncated =
      ssdYardstick(c.x, c.dt, c.B, c.C, c.params, &c.init, 16, Rounding::TowardZero);
  REQUIRE(bool(scan));
  REQUIRE(bool(yard));
  REQUIRE(bool(truncated));
  auto worst = [&](const Tensor<double> &got, const Tensor<double> &want) {
    double w = 0;
    for (int64_t i = 0; i < want.size(); ++i)
      w = std::max(w,
                   std::abs(got.data[i] - want.data[i]) / (1 + std::abs(want.data[i])));
    return w;
  };
  // A few bf16 roundings (2^-9 relative each) per output and state element.
  CHECK(worst(yard->y, scan->y) > 0);
  CHECK(worst(yard->y, scan->y) < 0.05);
  CHECK(worst(yard->state, scan->state) < 0.05);
  CHECK(worst(truncated->y, scan->y) > worst(yard->y, scan->y));
  auto refused = [&](const Tensor<float> &init, int64_t chunk) {
    auto r = ssdYardstick(c.x, c.dt, c.B, c.C, c.params, &init, chunk);
    return r ? std::string() : llvm::toString(r.takeError());
  };
  CHECK(refused(c.init, 0) == "ssdYardstick: chunk 0 is not positive");
  CHECK(refused(Tensor<float>({H, P, N + 1}), 16).find("initialState") !=
        std::string::npos);
}
