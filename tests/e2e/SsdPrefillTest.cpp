// ssd_prefill (R5p over R9 varlen streams, R8 pages) on the interpreter against
// the sequential f64 R5 (ref::ssmScan), at a reduced geometry: chunk-size
// invariance, varlen batches with short, continued, fresh and padding
// sequences, and a prefill split in two legs. Each band names the
// counterfactual it separates, and each counterfactual is shown to land
// outside it.
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/reference/HostTensor.h"
#include "tilejit/models/reference/Reference.h"
#include "tilejit/support/FloatFormats.h"

#include "mlir/IR/MLIRContext.h"

#include "ModelTestSupport.h"
#include "SsdTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;
using namespace tilejit::models::testing::ssd;

TEST_CASE(
    "ssd_prefill: one sequence of 300 tokens is chunk-size invariant (Q = 32, 64, 128) "
    "against the sequential f64 R5",
    "[e2e][interp][prefill]") {
  const int64_t T = 300;
  const Batch batch{{0, T}, {1}, {1}};
  const auto [in, page0, want, wantY] = referenceCase(batch, 3, 21);

  for (int64_t q : {32, 64, 128}) {
    INFO("Q = " << q);
    Tensor<float> page = page0;
    std::vector<uint16_t> y = runSsd(in, batch, q, page);
    int64_t checked = 0;
    CHECK(outsideY(y, wantY, kLongY, &checked) == 0);
    CHECK(checked == T * I);
    checkPages(page, want, page0, {0, 2}); // slots 0 and 2 are not in the batch
  }

  // The counterfactuals the bands separate. A dropped carry between chunks:
  // the same tokens scanned as independent 32-token pieces, each from zero.
  std::vector<double> noCarry(T * I, 0.0);
  for (int64_t b = 0; b < T; b += 32) {
    Batch piece{{0, std::min<int64_t>(32, T - b)}, {0}, {0}};
    SsdInputs part{sliceRows(in.xBC, b, b + piece.cu[1]),
                   sliceRows(in.dt, b, b + piece.cu[1]), in.params};
    Tensor<float> scratch({1, H, P, N});
    std::vector<double> yPiece = reference(part, piece, scratch);
    std::copy(yPiece.begin(), yPiece.end(), noCarry.begin() + b * I);
  }
  int64_t separated = 0;
  for (int64_t i = 0; i < T * I; ++i)
    separated += !kLongY.holds(noCarry[i], wantY[i]);
  CHECK(separated > T * I / 4);
  // A dropped initial state (the sequence started from zeros): y and the state.
  Batch fresh{{0, T}, {1}, {0}};
  Tensor<float> freshPage = page0;
  std::vector<double> freshY = reference(in, fresh, freshPage);
  separated = 0;
  for (int64_t i = 0; i < 32 * I; ++i) // the first chunk, where the state matters most
    separated += !kLongY.holds(freshY[i], wantY[i]);
  CHECK(separated > 32 * I / 4);
}

TEST_CASE(
    "ssd_prefill: a varlen batch with short, fresh, continued and padding sequences",
    "[e2e][interp][prefill]") {
  // Lengths 5 and 1 (shorter than a chunk), 35, 99 (padding) and 160 (several
  // chunks); chunk 32.
  const Batch batch{{0, 5, 40, 41, 140, 300}, {4, 0, 2, -1, 5}, {1, 0, 1, 1, 1}};
  const int64_t T = batch.cu.back();
  const auto [in, page0, want, wantY] = referenceCase(batch, 7, 31);
  Tensor<float> page = page0;
  std::vector<uint16_t> y = runSsd(in, batch, 32, page);

  int64_t checked = 0, bad = 0, zeros = 0;
  for (size_t s = 0; s + 1 < batch.cu.size(); ++s) {
    const int64_t begin = batch.cu[s], end = batch.cu[s + 1];
    std::vector<uint16_t> got(y.begin() + begin * I, y.begin() + end * I);
    std::vector<double> ref(wantY.begin() + begin * I, wantY.begin() + end * I);
    bad += outsideY(got, ref, end - begin > 256 ? kLongY : kShortY, &checked);
    if (batch.slots[s] < 0)
      for (uint16_t v : got)
        zeros += v == 0;
  }
  CHECK(bad == 0);
  CHECK(checked == T * I);
  CHECK(zeros == 99 * I); // padding rows are exactly 0
  // Slots 1, 3 and 6 are in no live sequence (the padding one names none).
  checkPages(page, want, page0, {1, 3, 6});
}

TEST_CASE("ssd_prefill: a prefill split in two legs carrying the state equals the whole",
          "[e2e][interp][prefill]") {
  const int64_t T = 300, split = 137;
  SsdInputs in = randomInputs(T, 41);
  Rng rng(42);
  const Tensor<float> page0 = randomF32({2, H, P, N}, rng, -1, 1);

  Tensor<float> whole = page0;
  std::vector<uint16_t> yWhole = runSsd(in, {{0, T}, {1}, {1}}, 64, whole);
  Tensor<float> legs = page0;
  SsdInputs first{sliceRows(in.xBC, 0, split), sliceRows(in.dt, 0, split), in.params};
  SsdInputs second{sliceRows(in.xBC, split, T), sliceRows(in.dt, split, T), in.params};
  std::vector<uint16_t> y1 = runSsd(first, {{0, split}, {1}, {1}}, 64, legs);
  std::vector<uint16_t> y2 = runSsd(second, {{0, T - split}, {1}, {1}}, 64, legs);

  // Against the f64 whole: the legs' outputs and the final state.
  Tensor<float> want = page0;
  std::vector<double> wantY = reference(in, {{0, T}, {1}, {1}}, want);
  y1.insert(y1.end(), y2.begin(), y2.end());
  int64_t checked = 0;
  CHECK(outsideY(y1, wantY, kLongY, &checked) == 0);
  CHECK(outsideY(yWhole, wantY, kLongY, &checked) == 0);
  CHECK(checked == 2 * T * I);
  checked = 0;
  CHECK(outsideState(legs, want, &checked) == 0);
  CHECK(outsideState(whole, want, &checked) == 0);
  CHECK(checked == 2 * 2 * H * P * N);
  // The second leg without the first's state (a dropped carry between legs)
  // is outside the state band.
  Tensor<float> dropped = page0;
  reference(second, {{0, T - split}, {1}, {0}}, dropped);
  int64_t separated = 0;
  for (int64_t i = H * P * N; i < 2 * H * P * N; ++i)
    separated += !kState.holds(dropped.data[i], want.data[i]);
  CHECK(separated > H * P * N / 4);
}

TEST_CASE("ssd_prefill: precision=1 (upstream bf16 operands) and 2 (split state) are "
          "held to R5p-m: no more elements outside R5p's band and at most 1.25x the "
          "worst error of the same chunked algorithm with bf16 operands",
          "[e2e][interp][prefill]") {
  const int64_t T = 300, q = 32;
  const YardstickCase r(T, q, 51);
  const auto &[in, page0, want, initial, batch, wantY, yard, yardWorst] = r;

  // f32 outputs: bf16 rounding of y would hide the operands' roundings.
  auto outside = [&](const std::vector<double> &got) {
    REQUIRE(got.size() == size_t(T * I));
    int64_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
      bad += !kLongY.holds(got[i], wantY[i]);
    return bad;
  };
  auto widen = [](const std::vector<float> &v) {
    return std::vector<double>(v.begin(), v.end());
  };

  Tensor<float> page = page0;
  const std::vector<double> fast =
      widen(runSsd<float>(in, batch, q, page, SsdPrecision::UpstreamBF16));
  const double fastWorst = worstY(fast, wantY, kLongY);
  INFO("upstream mode: " << outside(fast) << " outside, worst " << fastWorst
                         << "; yardstick: " << outside(yard) << " outside, worst "
                         << yardWorst);
  CHECK(outside(fast) <= outside(yard));
  CHECK(fastWorst <= 1.25 * yardWorst);
  // The final state stays in R5p's state band (the carried state is f32).
  int64_t checked = 0;
  CHECK(outsideState(page, want, &checked) == 0);

  // The mode takes effect: the exact mode's outputs differ and err far less.
  Tensor<float> exactPage = page0;
  const std::vector<double> exact =
      widen(runSsd<float>(in, batch, q, exactPage, SsdPrecision::Exact));
  int64_t differ = 0;
  for (size_t i = 0; i < exact.size(); ++i)
    differ += exact[i] != fast[i];
  CHECK(differ > T * I / 2);
  const double exactWorst = worstY(exact, wantY, kLongY);
  INFO("exact mode: worst " << exactWorst);
  CHECK(exactWorst < fastWorst / 4);
  // The split state mode (the mix and dt x single bf16) is held to the same
  // yardstick, and its roundings show: it errs more than exact, less than
  // upstream (whose extra rounding is the state's).
  Tensor<float> splitPage = page0;
  const std::vector<double> split =
      widen(runSsd<float>(in, batch, q, splitPage, SsdPrecision::SplitState));
  const double splitWorst = worstY(split, wantY, kLongY);
  INFO("split state mode: " << outside(split) << " outside, worst " << splitWorst);
  CHECK(outside(split) <= outside(yard));
  CHECK(splitWorst <= 1.25 * yardWorst);
  CHECK(outsideState(splitPage, want, &checked) == 0);
  CHECK(exactWorst < splitWorst);
  CHECK(splitWorst < fastWorst);
  // The margin separates a state carried in bf16 by truncation.
  const double extra =
      worstY(bf16Yardstick(in, initial, q, Rounding::TowardZero), wantY, kLongY);
  INFO("state carried in truncated bf16: worst " << extra);
  CHECK(extra > 1.25 * yardWorst);
}
