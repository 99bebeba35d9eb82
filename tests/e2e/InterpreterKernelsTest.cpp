// Every registered kernel on the interpreter against an f64 reference, on sizes
// that are not multiples of its tile. Outputs are poisoned first and every
// element is checked (counts asserted). Each band names what it separates.
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/reference/HostTensor.h"
#include "tilejit/models/reference/Reference.h"
#include "tilejit/support/FloatFormats.h"

#include "mlir/IR/MLIRContext.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tilejit;
using interp::Arg;
using models::Rng;
using models::Tensor;

namespace {

const KernelRegistry &registry() {
  static KernelRegistry r = [] {
    KernelRegistry reg;
    llvm::cantFail(models::registerModelKernels(reg));
    llvm::cantFail(models::registerExampleKernels(reg));
    return reg;
  }();
  return r;
}

/// Builds a registered kernel with `constants` and runs it on the interpreter.
void runKernel(llvm::StringRef name, const ConstantValues &constants, interp::Grid grid,
               std::vector<Arg> args) {
  models::testing::runOnInterpreter(registry(), name, constants, grid, std::move(args));
}

/// |got - want| <= atol + rtol |want| for every element; returns the count.
template <typename Got>
int64_t expectClose(const std::vector<Got> &got, const std::vector<double> &want,
                    double atol, double rtol, double (*value)(Got)) {
  REQUIRE(got.size() == want.size());
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = value(got[i]);
    if (!(std::abs(g - want[i]) <= atol + rtol * std::abs(want[i])))
      ++bad;
  }
  CHECK(bad == 0);
  return int64_t(got.size());
}

double f32Value(float v) { return v; }
double bf16Value(uint16_t v) { return bf16ToF32(v); }
constexpr float kPoison = NAN;
constexpr uint16_t kPoisonBF16 = 0x7fc1;

} // namespace

TEST_CASE("vector_add on the interpreter: exact, with a ragged tail", "[e2e][interp]") {
  const int n = 3001; // 3 programs of 1024, the last one masked
  Rng rng(1);
  std::vector<float> x(n), y(n), out(n, kPoison);
  for (int i = 0; i < n; ++i)
    x[i] = float(rng.uniform(-4, 4)), y[i] = float(rng.uniform(-4, 4));
  runKernel("vector_add", {}, {3, 1, 1},
            {Arg::readOnlyBuffer(x), Arg::readOnlyBuffer(y), Arg::buffer(out),
             Arg::intScalar(n)});
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = double(x[i] + y[i]); // f32 add: exact band
  CHECK(expectClose(out, want, 0, 0, f32Value) == n);
}

TEST_CASE("softmax on the interpreter against f64", "[e2e][interp]") {
  const int rows = 5, cols = 1000;
  Rng rng(2);
  std::vector<float> x(rows * cols), out(rows * cols, kPoison);
  for (float &v : x)
    v = float(rng.uniform(-8, 8));
  runKernel("softmax", {}, {rows, 1, 1},
            {Arg::readOnlyBuffer(x), Arg::buffer(out), Arg::intScalar(rows),
             Arg::intScalar(cols)});
  std::vector<double> want(rows * cols);
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c)
      m = std::max(m, double(x[r * cols + c]));
    for (int c = 0; c < cols; ++c)
      s += std::exp(x[r * cols + c] - m);
    for (int c = 0; c < cols; ++c)
      want[r * cols + c] = std::exp(x[r * cols + c] - m) / s;
  }
  // f32 exp and a 1000-term f32 sum: ~1e-6 relative; dropping the padding mask
  // (1024 - 1000 zero columns would add e^-m each) or the max shift fails it.
  CHECK(expectClose(out, want, 1e-9, 1e-5, f32Value) == rows * cols);
}

TEST_CASE("cumsum on the interpreter against f64", "[e2e][interp]") {
  const int rows = 3, cols = 100;
  Rng rng(3);
  std::vector<float> x(rows * cols), out(rows * cols, kPoison);
  for (float &v : x)
    v = float(rng.uniform(-1, 1));
  runKernel("cumsum", {}, {rows, 1, 1},
            {Arg::readOnlyBuffer(x), Arg::buffer(out), Arg::intScalar(rows),
             Arg::intScalar(cols)});
  std::vector<double> want(rows * cols);
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    for (int c = 0; c < cols; ++c)
      want[r * cols + c] = s += x[r * cols + c];
  }
  // f32 prefix sums of <= 100 terms of magnitude <= 1: error < 1e-5; an
  // exclusive scan is off by a whole element (~0.5).
  CHECK(expectClose(out, want, 1e-5, 0, f32Value) == rows * cols);
}

TEST_CASE("gemm_bf16 and gemm_e4m3 on the interpreter against f64", "[e2e][interp]") {
  const int m = 70, n = 256, k = 128; // 70 rows: the second 64-row tile is partial
  ConstantValues constants = {{"n", 256},      {"k", 128},      {"block_m", 64},
                              {"block_n", 64}, {"block_k", 32}, {"warps", 4}};
  Rng rng(4);
  SECTION("bf16") {
    Tensor<uint16_t> a = models::randomBF16({m, k}, rng, -1, 1);
    Tensor<uint16_t> b = models::randomBF16({k, n}, rng, -1, 1);
    std::vector<uint16_t> c(m * n, kPoisonBF16);
    runKernel("gemm_bf16", constants, {2, n / 64, 1},
              {Arg::readOnlyBuffer(a.data), Arg::readOnlyBuffer(b.data), Arg::buffer(c),
               Arg::intScalar(m)});
    std::vector<double> want(m * n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int q = 0; q < k; ++q)
          s += double(bf16ToF32(a(i, q))) * bf16ToF32(b(q, j));
        want[i * n + j] = bf16ToF32(f32ToBF16(float(s)));
      }
    // f32 accumulation of 128 exact products, then one bf16 rounding: at most
    // 1 bf16 ulp apart (2^-7 relative) from the f64 sum rounded once.
    CHECK(expectClose(c, want, 1e-6, 0x1p-7, bf16Value) == m * n);
  }
  SECTION("e4m3") {
    std::vector<uint8_t> a(m * k), w(n * k);
    for (auto &v : a)
      v = f32ToE4M3(float(rng.uniform(-8, 8)));
    for (auto &v : w)
      v = f32ToE4M3(float(rng.uniform(-8, 8)));
    std::vector<uint16_t> c(m * n, kPoisonBF16);
    const double scale = 0.01;
    runKernel("gemm_e4m3", constants, {2, n / 64, 1},
              {Arg::readOnlyBuffer(a), Arg::readOnlyBuffer(w), Arg::buffer(c),
               Arg::intScalar(m), Arg::floatScalar(scale)});
    std::vector<double> want(m * n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int q = 0; q < k; ++q)
          s += double(e4m3ToF32(a[i * k + q])) * e4m3ToF32(w[j * k + q]);
        want[i * n + j] = bf16ToF32(f32ToBF16(float(float(s) * float(scale))));
      }
    // Same band as bf16; w is [N, K], so a kernel reading it as [K, N] fails.
    CHECK(expectClose(c, want, 1e-6, 0x1p-7, bf16Value) == m * n);
  }
}

TEST_CASE("gated_rmsnorm (R6) on the interpreter against the f64 reference",
          "[e2e][interp]") {
  const int rows = 3, width = 4096, group = 512;
  Rng rng(5);
  Tensor<uint16_t> y = models::randomBF16({rows, width}, rng, -2, 2);
  Tensor<uint16_t> z = models::randomBF16({rows, width}, rng, -2, 2);
  Tensor<uint16_t> w = models::randomBF16({width}, rng, 0.5, 1.5);
  std::vector<uint16_t> out(rows * width, kPoisonBF16);
  const double eps = 1e-5;
  runKernel("gated_rmsnorm", {}, {rows, width / group, 1},
            {Arg::readOnlyBuffer(y.data), Arg::readOnlyBuffer(z.data),
             Arg::readOnlyBuffer(w.data), Arg::buffer(out), Arg::intScalar(rows),
             Arg::floatScalar(eps)});
  auto want = models::ref::gatedRmsNorm(y, z, w, group, eps);
  REQUIRE(bool(want));
  std::vector<double> wantBF16(want->data.size());
  for (size_t i = 0; i < wantBF16.size(); ++i)
    wantBF16[i] = models::ref::bf16Value(models::ref::bf16Bits(want->data[i]));
  // f32 vs f64 before two bf16 roundings: at most 1 bf16 ulp apart.
  CHECK(expectClose(out, wantBF16, 0, 0x1p-7, bf16Value) == rows * width);
  // The counterfactual the band separates: normalizing the whole row.
  auto wholeRow = models::ref::gatedRmsNorm(y, z, w, width, eps);
  REQUIRE(bool(wholeRow));
  double maxDiff = 0;
  for (size_t i = 0; i < want->data.size(); ++i)
    maxDiff = std::max(maxDiff, std::abs(want->data[i] - wholeRow->data[i]) /
                                    (std::abs(want->data[i]) + 1e-30));
  CHECK(maxDiff > 4 * 0x1p-7);
}

TEST_CASE(
    "gated_rmsnorm reads z in place from a wider row (z_stride, as prefill's in_proj "
    "output holds it)",
    "[e2e][interp]") {
  const int rows = 2, width = 1024, group = 256, stride = 1536;
  Rng rng(15);
  Tensor<uint16_t> y = models::randomBF16({rows, width}, rng, -2, 2);
  Tensor<uint16_t> wide = models::randomBF16({rows, stride}, rng, -2, 2);
  Tensor<uint16_t> w = models::randomBF16({width}, rng, 0.5, 1.5);
  std::vector<uint16_t> out(rows * width, kPoisonBF16);
  runKernel("gated_rmsnorm",
            {{"width", width}, {"group_size", group}, {"z_stride", stride}},
            {rows, width / group, 1},
            {Arg::readOnlyBuffer(y.data), Arg::readOnlyBuffer(wide.data),
             Arg::readOnlyBuffer(w.data), Arg::buffer(out), Arg::intScalar(rows),
             Arg::floatScalar(1e-5)});
  auto want =
      models::ref::gatedRmsNorm(y, models::sliceColumns(wide, 0, width), w, group, 1e-5);
  REQUIRE(bool(want));
  std::vector<double> wantBF16(want->data.size());
  for (size_t i = 0; i < wantBF16.size(); ++i)
    wantBF16[i] = models::ref::bf16Value(models::ref::bf16Bits(want->data[i]));
  // The band of the test above; z read with the wrong stride (its rows packed)
  // would gate row 1 with columns of row 0 and fail it everywhere.
  CHECK(expectClose(out, wantBF16, 0, 0x1p-7, bf16Value) == rows * width);
}

TEST_CASE(
    "quantize_e4m3 (R1's activation quant) on the interpreter: every code within one "
    "of the f64 quotient's",
    "[e2e][interp]") {
  const int rows = 3, width = 1000; // a masked tail in each row's only program
  const float scale = 0.0125f;
  Rng rng(16);
  Tensor<uint16_t> x =
      models::randomBF16({rows, width}, rng, -7, 7); // up to +-560: saturates
  std::vector<uint8_t> out(rows * width, 0x7f);      // poison: NaN
  runKernel("quantize_e4m3", {{"width", 1000}, {"block", 512}}, {2, rows, 1},
            {Arg::readOnlyBuffer(x.data), Arg::buffer(out), Arg::intScalar(rows),
             Arg::floatScalar(scale)});
  // R1: dividing or multiplying by the reciprocal may move a quotient on a
  // rounding boundary by one code; never more, and rarely.
  int64_t exact = 0, adjacent = 0, saturated = 0;
  for (int i = 0; i < rows * width; ++i) {
    double q = models::ref::bf16Value(x.data[i]) / double(scale);
    uint8_t want = models::ref::e4m3Code(q);
    exact += out[i] == want;
    adjacent += out[i] != want &&
                std::abs(models::ref::e4m3Value(out[i]) - models::ref::e4m3Value(want)) <=
                    std::abs(models::ref::e4m3Value(want)) * 0x1p-3 + 0x1p-9;
    saturated += std::abs(models::ref::e4m3Value(out[i])) == 448;
  }
  CHECK(exact + adjacent == rows * width);
  CHECK(adjacent < rows * width / 100);
  CHECK(saturated > 0);
  // Counterfactual: a dropped scale (e4m3(x)) agrees with almost no code.
  int64_t sameWithoutScale = 0;
  for (int i = 0; i < rows * width; ++i)
    sameWithoutScale +=
        out[i] == models::ref::e4m3Code(models::ref::bf16Value(x.data[i]));
  CHECK(sameWithoutScale < rows * width / 10);
}

TEST_CASE("conv_update (R3d) on the interpreter against the f64 reference",
          "[e2e][interp]") {
  const int batch = 3, channels = 6144, slots = 5;
  Rng rng(6);
  Tensor<uint16_t> xt = models::randomBF16({batch, channels}, rng, -2, 2);
  Tensor<uint16_t> page = models::randomBF16({slots, channels, 3}, rng, -2, 2);
  Tensor<uint16_t> weight = models::randomBF16({channels, 4}, rng, -1, 1);
  Tensor<uint16_t> bias = models::randomBF16({channels}, rng, -0.2, 0.2);
  std::vector<int32_t> slotIdx = {2, -1, 4};
  Tensor<uint16_t> refPage = page;
  std::vector<uint16_t> out(batch * channels, kPoisonBF16);
  runKernel("conv_update", {}, {batch, channels / 256, 1},
            {Arg::readOnlyBuffer(xt.data), Arg::buffer(page.data),
             Arg::readOnlyBuffer(slotIdx), Arg::readOnlyBuffer(weight.data),
             Arg::readOnlyBuffer(bias.data), Arg::buffer(out)});
  auto want = models::ref::convUpdatePaged(xt, weight, bias, {2, -1, 4}, refPage);
  REQUIRE(bool(want));
  std::vector<double> wantBF16(want->data.size());
  for (size_t i = 0; i < wantBF16.size(); ++i)
    wantBF16[i] = models::ref::bf16Value(models::ref::bf16Bits(want->data[i]));
  CHECK(expectClose(out, wantBF16, 0, 0x1p-7, bf16Value) == batch * channels);
  // The padding row is zero; the state page (slots 2 and 4 shifted, 0, 1 and 3
  // untouched) is byte-identical to the reference's.
  for (int c = 0; c < channels; ++c)
    REQUIRE(out[channels + c] == 0);
  CHECK(page.data == refPage.data);
  CHECK(page.data.size() == size_t(slots * channels * 3));
}

TEST_CASE("read_bytes on the interpreter: one partial sum per program against f64",
          "[e2e][interp]") {
  const int n = 20000, perProgram = 2048 * 4,
            programs = (n + perProgram - 1) / perProgram;
  Rng rng(8);
  std::vector<float> x(n), sums(programs, kPoison);
  for (float &v : x)
    v = float(rng.uniform(-1, 1));
  runKernel("read_bytes", {}, {programs, 1, 1},
            {Arg::readOnlyBuffer(x), Arg::buffer(sums), Arg::intScalar(n)});
  std::vector<double> want(programs, 0);
  for (int i = 0; i < n; ++i)
    want[i / perProgram] += x[i];
  // f32 sums of 8192 terms in [-1, 1] whose partial sums stay below ~100:
  // at most 8192 roundings of 2^-24 * 100 = 5e-2 from f64. Dropping one
  // 2048-word step moves a sum by ~sqrt(2048 / 3) = 26.
  CHECK(expectClose(sums, want, 5e-2, 0, f32Value) == programs);
}
