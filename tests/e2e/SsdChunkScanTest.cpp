// The SSD's chunk-parallel schedule (ssd_span_state over one-chunk spans,
// ssd_state_pass writing the pages, ssd_chunk_scan) on the interpreter against the
// sequential f64 R5 (ref::ssmScan), at SsdPrefillTest's reduced geometry: chunk and
// row-block sizes, varlen batches whose sequences start mid-chunk, initial states,
// padding, R5p-m's upstream mode and NaN that never flows backwards.
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/nemotron_h/PrefillMetadata.h"

#include "mlir/IR/MLIRContext.h"

#include "ModelTestSupport.h"
#include "SsdTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;
using namespace tilejit::models::testing::ssd;
using interp::Arg;

namespace {

constexpr int64_t kBlockP = 16;

/// Builds `kernel` at the test geometry plus `extra` and runs it over `grid`.
void runKernel(llvm::StringRef kernel, ConstantValues extra, std::array<int64_t, 3> grid,
               std::vector<Arg> args) {
  ConstantValues constants = {{"heads", H}, {"head_dim", P}, {"state", N}};
  for (auto &[name, value] : extra)
    constants[name] = value;
  runOnInterpreter(modelRegistry(), kernel, constants, {grid[0], grid[1], grid[2]},
                   std::move(args));
}

/// The chunked schedule with chunk q, block_m rows per program and the pass
/// walking `unroll` chunks a step; y (f32) poisoned first, `page` read and
/// written in place.
std::vector<float> runChunked(const SsdInputs &in, const Batch &batch, int64_t q,
                              int64_t blockM, Tensor<float> &page,
                              SsdPrecision precision = SsdPrecision::Exact,
                              int64_t unroll = 1) {
  const int64_t tokens = in.xBC.dim(0), slots = page.dim(0);
  ref::PrefillBatch prefill{batch.cu, batch.slots, {}};
  for (int32_t carry : batch.init)
    prefill.continueFromSlot.push_back(carry != 0);
  auto meta = prefillMetadata(prefill, tokens, slots, q, 0, /*spanChunks=*/1);
  REQUIRE(bool(meta));
  const int64_t chunks = meta->numChunks(), state = H * P * N;
  REQUIRE(meta->numSpans() == chunks);
  std::vector<float> states(chunks * state), tail(chunks * state), decay(chunks * H);
  std::vector<float> y(tokens * I, NAN);
  const ConstantValues ssd = {{"groups", G},
                              {"chunk", q},
                              {"dt_stride", H},
                              {"dt_col", 0},
                              {"block_p", kBlockP},
                              {"warps", 4},
                              {"precision", int64_t(precision)}};
  auto dtMin = Arg::floatScalar(float(in.params.dtMin));
  auto dtMax = Arg::floatScalar(float(in.params.dtMax));
  runKernel(
      "ssd_span_state", ssd, {P / kBlockP, H, chunks},
      {Arg::readOnlyBuffer(in.xBC.data), Arg::readOnlyBuffer(in.dt.data),
       Arg::readOnlyBuffer(in.params.aLog.data),
       Arg::readOnlyBuffer(in.params.dtBias.data), Arg::readOnlyBuffer(meta->cuSeqlens),
       Arg::readOnlyBuffer(meta->chunkSequence), Arg::readOnlyBuffer(meta->spanChunk),
       Arg::readOnlyBuffer(meta->chunkBegin), Arg::readOnlyBuffer(meta->chunkEnd),
       Arg::buffer(states), Arg::buffer(decay), dtMin, dtMax});
  runKernel("ssd_state_pass", {{"block", 256}, {"write_page", 1}, {"unroll", unroll}},
            {P * N / 256, H, 1},
            {Arg::readOnlyBuffer(meta->spanSlot), Arg::readOnlyBuffer(meta->spanFlags),
             Arg::readOnlyBuffer(decay), Arg::buffer(states), Arg::buffer(tail),
             Arg::buffer(page.data), Arg::intScalar(chunks), Arg::buffer(page.data)});
  ConstantValues scan = ssd;
  scan["block_m"] = blockM;
  scan["y_f32"] = 1;
  runKernel("ssd_chunk_scan", scan, {(q / blockM) * (P / kBlockP), chunks, H},
            {Arg::readOnlyBuffer(in.xBC.data), Arg::readOnlyBuffer(in.dt.data),
             Arg::readOnlyBuffer(in.params.aLog.data),
             Arg::readOnlyBuffer(in.params.dtBias.data),
             Arg::readOnlyBuffer(in.params.d.data), Arg::readOnlyBuffer(meta->cuSeqlens),
             Arg::readOnlyBuffer(meta->slots), Arg::readOnlyBuffer(meta->chunkSequence),
             Arg::readOnlyBuffer(meta->chunkBegin), Arg::readOnlyBuffer(meta->chunkEnd),
             Arg::readOnlyBuffer(states), Arg::readOnlyBuffer(tail), Arg::buffer(y),
             dtMin, dtMax});
  return y;
}

/// Elements of f32 y outside `band` around `want`, over [begin, end) tokens.
int64_t outside(const std::vector<float> &y, const std::vector<double> &want, Band band,
                int64_t begin, int64_t end, int64_t *checked) {
  int64_t bad = 0;
  for (int64_t i = begin * I; i < end * I; ++i)
    bad += !band.holds(y[i], want[i]);
  *checked += (end - begin) * I;
  return bad;
}

} // namespace

TEST_CASE("ssd_chunk_scan: one sequence of 300 tokens from a page, chunk 32 to 128, "
          "row blocks of 16 to 64 and the pass 1 to 4 chunks a step, against the "
          "sequential f64 R5",
          "[e2e][interp][prefill]") {
  const int64_t T = 300;
  const Batch batch{{0, T}, {1}, {1}};
  const auto [in, page0, want, wantY] = referenceCase(batch, 3, 61);
  // 10, 5, 5 and 3 chunks: the unrolled walks end mid-step.
  for (auto [q, bm, unroll] : std::vector<std::array<int64_t, 3>>{
           {32, 16, 4}, {64, 32, 1}, {64, 64, 2}, {128, 32, 1}}) {
    INFO("chunk " << q << ", block_m " << bm << ", unroll " << unroll);
    Tensor<float> page = page0;
    std::vector<float> y =
        runChunked(in, batch, q, bm, page, SsdPrecision::Exact, unroll);
    int64_t checked = 0;
    CHECK(outside(y, wantY, kLongY, 0, T, &checked) == 0);
    CHECK(checked == T * I);
    checkPages(page, want, page0, {0, 2});
  }
}

TEST_CASE("ssd_chunk_scan: a varlen batch whose sequences start mid-chunk, fresh, "
          "continued and padding",
          "[e2e][interp][prefill]") {
  const Batch batch{{0, 5, 40, 41, 140, 300}, {4, 0, 2, -1, 5}, {1, 0, 1, 1, 1}};
  const int64_t T = batch.cu.back();
  const auto [in, page0, want, wantY] = referenceCase(batch, 7, 71);
  Tensor<float> page = page0;
  // 8 chunks of 64: a sequence's start and end chunks in every step of 4.
  std::vector<float> y = runChunked(in, batch, 64, 32, page, SsdPrecision::Exact, 4);
  int64_t checked = 0, bad = 0, zeros = 0;
  for (size_t s = 0; s + 1 < batch.cu.size(); ++s) {
    const int64_t begin = batch.cu[s], end = batch.cu[s + 1];
    bad += outside(y, wantY, end - begin > 256 ? kLongY : kShortY, begin, end, &checked);
    if (batch.slots[s] < 0)
      for (int64_t i = begin * I; i < end * I; ++i)
        zeros += y[i] == 0.0f;
  }
  CHECK(bad == 0);
  CHECK(checked == T * I);
  CHECK(zeros == 99 * I);
  checkPages(page, want, page0, {1, 3, 6});
}

TEST_CASE("ssd_chunk_scan: precision=1 is held to R5p-m's yardstick",
          "[e2e][interp][prefill]") {
  const int64_t T = 300, q = 64;
  const YardstickCase r(T, q, 81);
  const auto &[in, page0, want, initial, batch, wantY, yard, yardWorst] = r;
  Tensor<float> page = page0;
  std::vector<float> fast =
      runChunked(in, batch, q, 32, page, SsdPrecision::UpstreamBF16);
  const std::vector<double> got(fast.begin(), fast.end());
  int64_t checked = 0, yardOutside = 0;
  for (int64_t i = 0; i < T * I; ++i)
    yardOutside += !kLongY.holds(yard[i], wantY[i]);
  const double fastWorst = worstY(got, wantY, kLongY);
  INFO("upstream: worst " << fastWorst << "; yardstick " << yardWorst);
  CHECK(outside(fast, wantY, kLongY, 0, T, &checked) <= yardOutside);
  CHECK(fastWorst <= 1.25 * yardWorst);
  Tensor<float> exactPage = page0;
  std::vector<float> exact = runChunked(in, batch, q, 32, exactPage);
  CHECK(worstY(std::vector<double>(exact.begin(), exact.end()), wantY, kLongY) <
        fastWorst / 4);
}

TEST_CASE("ssd_chunk_scan: a NaN in x reaches y from its own token on, never before",
          "[e2e][interp][prefill]") {
  const int64_t T = 200, bad = 150, p = 3, h = 1;
  SsdInputs in = randomInputs(T, 91);
  Batch batch{{0, T}, {1}, {0}};
  in.xBC(bad, h * P + p) = kPoisonBF16;
  Tensor<float> page({2, H, P, N});
  std::vector<float> y = runChunked(in, batch, 64, 32, page);
  int64_t nanBefore = 0, nanAfter = 0, finiteElsewhere = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < I; ++c) {
      const bool isNan = std::isnan(y[t * I + c]);
      if (c == h * P + p)
        (t < bad ? nanBefore : nanAfter) += isNan;
      else
        finiteElsewhere += std::isfinite(y[t * I + c]);
    }
  CHECK(nanBefore == 0);
  CHECK(nanAfter == T - bad);
  CHECK(finiteElsewhere == T * (I - 1));
}

TEST_CASE("ssd_chunk_scan: a row block larger than the chunk is refused naming both",
          "[e2e][prefill]") {
  const KernelDef *def = modelRegistry().find("ssd_chunk_scan");
  REQUIRE(def);
  auto spec = def->specialize({{"chunk", 32}, {"block_m", 64}});
  REQUIRE(!spec);
  CHECK(llvm::toString(spec.takeError()) ==
        "kernel 'ssd_chunk_scan': block_m = 64, chunk = 32 breaks the rule block_m <= "
        "chunk");
}
