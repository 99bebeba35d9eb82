// The SSD tests' shared inputs, f64 references and bands (SsdPrefillTest.cpp,
// SsdChunkScanTest.cpp): R5p at a reduced geometry, each band with the
// counterfactual it separates.
#ifndef TILEJIT_TESTS_E2E_SSDTESTSUPPORT_H
#define TILEJIT_TESTS_E2E_SSDTESTSUPPORT_H

#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/reference/HostTensor.h"
#include "tilejit/models/reference/Reference.h"
#include "tilejit/support/FloatFormats.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <type_traits>

namespace tilejit::models::testing::ssd {

// Reduced geometry: 2 heads per group as in NemotronH (8), P and N small
// enough for the interpreter, all tile dims multiples of 16.
constexpr int64_t H = 4, P = 32, N = 32, G = 2, I = H * P, Cd = I + 2 * G * N;
constexpr uint16_t kPoisonBF16 = 0x7fc1;

/// One layer's SSM inputs over a packed stream of T tokens.
struct SsdInputs {
  Tensor<uint16_t> xBC; ///< [T, Cd] after the conv
  Tensor<uint16_t> dt;  ///< [T, H]
  ref::SsmParams params;
};

inline SsdInputs randomInputs(int64_t tokens, uint64_t seed) {
  Rng rng(seed);
  SsdInputs in{
      randomBF16({tokens, Cd}, rng, -1, 1), randomBF16({tokens, H}, rng, -4, -1), {}};
  // A = -exp(A_log) in [-1.6, -0.14] and dt' ~ 0.01..0.3: a chunk of 32 keeps
  // a visible share of the state it inherits, so a dropped carry shows.
  in.params.aLog = randomF32({H}, rng, -2, 0.5);
  in.params.dtBias = randomF32({H}, rng, -1, 0);
  in.params.d = randomF32({H}, rng, -1, 1);
  return in;
}

/// A packed batch: sequence s covers [cu[s], cu[s+1]) with page slot slots[s]
/// (negative: padding) and continues from it when init[s].
struct Batch {
  std::vector<int64_t> cu, slots;
  std::vector<int32_t> init;
};

/// The sequential f64 R5 of every sequence, as the kernel's page would hold
/// it: y [T, I] (padding rows 0) and the final states in `page`.
inline std::vector<double> reference(const SsdInputs &in, const Batch &batch,
                                     Tensor<float> &page) {
  const int64_t tokens = in.xBC.dim(0);
  std::vector<double> y(tokens * I, 0.0);
  for (size_t s = 0; s + 1 < batch.cu.size(); ++s) {
    const int64_t begin = batch.cu[s], end = batch.cu[s + 1], slot = batch.slots[s];
    if (slot < 0)
      continue;
    Tensor<uint16_t> rows = sliceRows(in.xBC, begin, end);
    const int64_t len = end - begin;
    Tensor<float> initial({H, P, N});
    std::memcpy(initial.data.data(), page.data.data() + slot * H * P * N, H * P * N * 4);
    auto scan = ref::ssmScan(sliceColumns(rows, 0, I).reshaped({len, H, P}),
                             sliceRows(in.dt, begin, end),
                             sliceColumns(rows, I, I + G * N).reshaped({len, G, N}),
                             sliceColumns(rows, I + G * N, Cd).reshaped({len, G, N}),
                             in.params, batch.init[s] ? &initial : nullptr);
    REQUIRE(bool(scan));
    std::copy(scan->y.data.begin(), scan->y.data.end(), y.begin() + begin * I);
    for (int64_t i = 0; i < H * P * N; ++i)
      page.data[slot * H * P * N + i] = float(scan->state.data[i]);
  }
  return y;
}

/// R5p-m's yardstick (ref::ssdYardstick) of one sequence covering all of `in`
/// from `initial` (chunks of q), as y [T, I].
inline std::vector<double> bf16Yardstick(const SsdInputs &in,
                                         const Tensor<float> &initial, int64_t q,
                                         Rounding stateRounding = Rounding::NearestEven) {
  const int64_t T = in.xBC.dim(0);
  auto yard = ref::ssdYardstick(sliceColumns(in.xBC, 0, I).reshaped({T, H, P}), in.dt,
                                sliceColumns(in.xBC, I, I + G * N).reshaped({T, G, N}),
                                sliceColumns(in.xBC, I + G * N, Cd).reshaped({T, G, N}),
                                in.params, &initial, q, stateRounding);
  REQUIRE(bool(yard));
  return yard->y.data;
}

/// R5p's bf16 output band for sequences up to 256 tokens, and 1e-2 beyond.
struct Band {
  double atol, rtol;
  bool holds(double got, double want) const {
    return std::abs(got - want) <= atol + rtol * std::abs(want);
  }
};
constexpr Band kShortY{5e-2, 5e-2}, kLongY{1e-2, 1e-2}, kState{8e-3, 5e-3};

/// Elements of `got` (bf16) outside `band` around `want`; counts every element.
inline int64_t outsideY(const std::vector<uint16_t> &got, const std::vector<double> &want,
                        Band band, int64_t *checked) {
  REQUIRE(got.size() == want.size());
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    bad += !band.holds(bf16ToF32(got[i]), want[i]);
  *checked += int64_t(got.size());
  return bad;
}

/// The largest |got - want| / band of `got` (bf16 codes or values).
inline double worstY(const std::vector<double> &got, const std::vector<double> &want,
                     Band band) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) /
                                (band.atol + band.rtol * std::abs(want[i])));
  return worst;
}
inline int64_t outsideState(const Tensor<float> &got, const Tensor<float> &want,
                            int64_t *checked) {
  REQUIRE(got.data.size() == want.data.size());
  int64_t bad = 0;
  for (size_t i = 0; i < got.data.size(); ++i)
    bad += !kState.holds(got.data[i], want.data[i]);
  *checked += int64_t(got.data.size());
  return bad;
}

/// A batch's random inputs, random pages of `slots` slots before the run
/// (page0), and the f64 reference's pages (want) and y.
struct ReferenceCase {
  SsdInputs in;
  Tensor<float> page0, want;
  std::vector<double> wantY;
};
inline ReferenceCase referenceCase(const Batch &batch, int64_t slots, uint64_t seed) {
  ReferenceCase r{randomInputs(batch.cu.back(), seed), {}, {}, {}};
  Rng rng(seed + 1);
  r.page0 = randomF32({slots, H, P, N}, rng, -1, 1);
  r.want = r.page0;
  r.wantY = reference(r.in, batch, r.want);
  return r;
}

/// R5p-m's case: one sequence of `tokens` continued from page slot 1, its f64
/// reference and the yardstick (bf16 operands) at chunk q.
struct YardstickCase {
  SsdInputs in;
  Tensor<float> page0, want, initial;
  Batch batch;
  std::vector<double> wantY, yard;
  double yardWorst;

  YardstickCase(int64_t tokens, int64_t q, uint64_t seed)
      : initial({H, P, N}), batch{{0, tokens}, {1}, {1}} {
    ReferenceCase r = referenceCase(batch, 2, seed);
    in = std::move(r.in), page0 = std::move(r.page0), want = std::move(r.want);
    wantY = std::move(r.wantY);
    std::memcpy(initial.data.data(), page0.data.data() + H * P * N, H * P * N * 4);
    yard = bf16Yardstick(in, initial, q);
    yardWorst = worstY(yard, wantY, kLongY);
  }
};

/// The pages after a run: every slot within the state band of the f64
/// reference's, and the `untouched` slots (in no live sequence) byte-identical
/// to `before`.
inline void checkPages(const Tensor<float> &page, const Tensor<float> &want,
                       const Tensor<float> &before,
                       std::initializer_list<int64_t> untouched) {
  int64_t checked = 0;
  CHECK(outsideState(page, want, &checked) == 0);
  CHECK(checked == int64_t(want.data.size()));
  const int64_t slot = H * P * N;
  for (int64_t s : untouched)
    CHECK(std::memcmp(page.data.data() + s * slot, before.data.data() + s * slot,
                      slot * sizeof(float)) == 0);
}

/// Runs ssd_prefill's single walk with chunk `q` on the interpreter; y is
/// poisoned first, `page` updated in place. Out: uint16_t (bf16 y, the plans'
/// output) or float (y_f32=1). `extra` constants are set besides; `spare`
/// chunks of no sequence (prefillMetadata's capacity padding) follow the
/// batch's.
template <typename Out = uint16_t>
inline std::vector<Out> runSsd(const SsdInputs &in, const Batch &batch, int64_t q,
                               Tensor<float> &page,
                               SsdPrecision precision = SsdPrecision::Exact,
                               const ConstantValues &extra = {}, int64_t spare = 0) {
  const int64_t tokens = in.xBC.dim(0);
  auto chunks = ref::varlenChunks(batch.cu, tokens, q);
  REQUIRE(bool(chunks));
  auto i32 = [](const std::vector<int64_t> &v) {
    return std::vector<int32_t>(v.begin(), v.end());
  };
  std::vector<int32_t> cu = i32(batch.cu), slots = i32(batch.slots);
  std::vector<int32_t> seq = i32(chunks->chunkSequence), begin = i32(chunks->chunkBegin),
                       end = i32(chunks->chunkEnd);
  seq.resize(seq.size() + spare, -1);
  begin.resize(seq.size(), 0);
  end.resize(seq.size(), 0);
  constexpr bool f32 = std::is_same_v<Out, float>;
  std::vector<Out> y(tokens * I, f32 ? Out(NAN) : Out(kPoisonBF16));
  const int64_t bp = 16;
  ConstantValues constants = {{"heads", H},  {"head_dim", P},
                              {"state", N},  {"groups", G},
                              {"chunk", q},  {"dt_stride", H},
                              {"dt_col", 0}, {"block_p", bp},
                              {"warps", 4},  {"precision", int64_t(precision)},
                              {"y_f32", f32}};
  constants.insert(extra.begin(), extra.end());
  runOnInterpreter(
      modelRegistry(), "ssd_prefill", constants, {P / bp, H, 1},
      {interp::Arg::readOnlyBuffer(in.xBC.data), interp::Arg::readOnlyBuffer(in.dt.data),
       interp::Arg::readOnlyBuffer(in.params.aLog.data),
       interp::Arg::readOnlyBuffer(in.params.dtBias.data),
       interp::Arg::readOnlyBuffer(in.params.d.data), interp::Arg::readOnlyBuffer(cu),
       interp::Arg::readOnlyBuffer(slots), interp::Arg::readOnlyBuffer(batch.init),
       interp::Arg::readOnlyBuffer(seq), interp::Arg::readOnlyBuffer(begin),
       interp::Arg::readOnlyBuffer(end), interp::Arg::buffer(page.data),
       interp::Arg::buffer(y), interp::Arg::intScalar(int32_t(seq.size())),
       interp::Arg::floatScalar(float(in.params.dtMin)),
       interp::Arg::floatScalar(float(in.params.dtMax))});
  return y;
}

} // namespace tilejit::models::testing::ssd

#endif // TILEJIT_TESTS_E2E_SSDTESTSUPPORT_H
