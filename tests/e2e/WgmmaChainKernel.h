// The chained-dot kernel the wgmma register-A tests share (issue 31 part 1):
// o = sum over key blocks j of bf16(exp(scale * q k_j^T)) v_j, the
// attention-shaped chain whose second dot takes the first one's accumulator
// as its A operand, with its f64 host reference.
#ifndef TILEJIT_TESTS_E2E_WGMMACHAINKERNEL_H
#define TILEJIT_TESTS_E2E_WGMMACHAINKERNEL_H

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/support/FloatFormats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace tilejit::testing {

/// q [m, 64], k [t, 64] and vt [64, t] (v transposed, so that both dots read
/// B as K-contiguous rows) in bf16; o [m, 64] in f32. `v_mn_major` 1 takes v
/// itself, [t, 64] (the second dot's B MN-major: N = 64 contiguous). One
/// program per 64 rows of q. `q_in_loop` 1 loads q inside the loop (staged:
/// the first dot reads both operands from shared memory), 0 once before it
/// (both dots take A from registers). `producer` 1 feeds the staged
/// operands by TMA from a producer warpgroup (warp-specialized).
inline void buildWgmmaChain(Kernel &k, const Specialization &spec) {
  constexpr int64_t d = 64, bm = 64, bt = 64;
  Value q = k.ptrParam("q", DType::BF16), key = k.ptrParam("k", DType::BF16);
  const bool vMnMajor = spec.get("v_mn_major") != 0;
  Value vt = k.ptrParam(vMnMajor ? "v" : "vt", DType::BF16);
  Value o = k.ptrParam("o", DType::F32);
  // t is a constant: v^T's row stride must be static for its rows to be staged.
  const int64_t t = spec.get("t");
  Value m = k.scalarParam("m", DType::I32);
  Value scale = k.scalarParam("scale", DType::F32);
  Config config{{bm, bt, d}, spec.get("warps"), spec.get("stages")};
  config.producer = spec.get("producer");
  k.setConfig(config);
  View qv = makeView(q, {m, d}, {d, 1}), kv = makeView(key, {t, d}, {d, 1});
  View vv = vMnMajor ? makeView(vt, {t, d}, {d, 1}) : makeView(vt, {d, t}, {t, 1});
  View ov = makeView(o, {m, d}, {d, 1});
  Value row = programId(0) * bm;
  const bool qInLoop = spec.get("q_in_loop") != 0;
  Value qOutside = qInLoop ? Value() : load(qv, {row, 0}, {bm, d});
  auto acc = forRange(0, t, bt, {zeros({bm, d}, DType::F32)},
                      [&](Value j, std::vector<Value> carried) -> std::vector<Value> {
                        Value qt = qInLoop ? load(qv, {row, 0}, {bm, d}) : qOutside;
                        Value kt = transpose(load(kv, {j, 0}, {bt, d}), {1, 0});
                        Value s = dot(qt, kt, zeros({bm, bt}, DType::F32));
                        Value p = exp(s * scale).to(DType::BF16);
                        Value v = vMnMajor ? load(vv, {j, 0}, {bt, d})
                                           : transpose(load(vv, {0, j}, {d, bt}), {1, 0});
                        return {dot(p, v, carried[0])};
                      });
  store(ov, {row, 0}, acc[0]);
}

inline const KernelDef &wgmmaChainDef() {
  static const KernelDef def = {
      "wgmma_chain",
      "o = sum_j bf16(exp(scale q k_j^T)) v_j: a dot whose A is another's accumulator",
      {{"t",
        1024,
        "keys (a multiple of 8: 16-byte rows of v^T)",
        {},
        ConstantRange::between(8, 1 << 16)},
       {"warps", 4, "warps per program", {}, ConstantRange::between(4, 4)},
       {"stages",
        2,
        "shared-memory buffers of the key loop",
        {},
        ConstantRange::between(2, 4)},
       {"q_in_loop",
        1,
        "1: q loaded (staged) in the loop, 0: once before it",
        {},
        ConstantRange::between(0, 1)},
       {"producer",
        0,
        "1: TMA from a producer warpgroup",
        {},
        ConstantRange::between(0, 1)},
       {"v_mn_major",
        0,
        "0: v^T [64, t] (K-major B), 1: v [t, 64] (MN-major B)",
        {},
        ConstantRange::between(0, 1)}},
      buildWgmmaChain};
  return def;
}

/// The builds the tests compile (and run on the GPU): q staged or in
/// registers, TMA or cp.async, v K- or MN-major.
struct WgmmaChainCase {
  int64_t qInLoop, producer, vMnMajor;
};
inline constexpr WgmmaChainCase kWgmmaChainCases[] = {
    {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}};

/// The [cols, rows] transpose of the row-major [rows, cols] `x`.
inline std::vector<uint16_t> transposed(const std::vector<uint16_t> &x, int64_t rows,
                                        int64_t cols) {
  std::vector<uint16_t> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t[c * rows + r] = x[r * cols + c];
  return t;
}

/// `count` bf16 values uniform in [-1, 1).
inline std::vector<uint16_t> randomBF16(size_t count, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint16_t> v(count);
  for (uint16_t &x : v)
    x = f32ToBF16(u(rng));
  return v;
}

/// The f64 reference of wgmma_chain (p rounded to bf16 as the kernel does),
/// summed over the first `keys` keys (all t when negative), and each
/// output's band: f32 sums (2^-16 of sum|p v|) and up to four terms whose p
/// the f32 and f64 exponents round to neighbouring bf16 values (2^-6 of
/// max|p v|).
struct WgmmaChainReference {
  std::vector<double> o, band;
};
inline WgmmaChainReference wgmmaChainReference(const std::vector<uint16_t> &q,
                                               const std::vector<uint16_t> &k,
                                               const std::vector<uint16_t> &vt, int64_t m,
                                               int64_t t, float scale,
                                               int64_t keys = -1) {
  constexpr int64_t d = 64;
  std::vector<double> o(size_t(m * d), 0.0), sum(o.size(), 0.0), max(o.size(), 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < (keys < 0 ? t : keys); ++j) {
      double s = 0;
      for (int64_t c = 0; c < d; ++c)
        s += double(bf16ToF32(q[r * d + c])) * bf16ToF32(k[j * d + c]);
      double p = bf16ToF32(f32ToBF16(std::exp(float(double(scale) * s))));
      for (int64_t c = 0; c < d; ++c) {
        double term = p * bf16ToF32(vt[c * t + j]);
        o[r * d + c] += term;
        sum[r * d + c] += std::abs(term);
        max[r * d + c] = std::max(max[r * d + c], std::abs(term));
      }
    }
  std::vector<double> band(o.size());
  for (size_t i = 0; i < o.size(); ++i)
    band[i] = std::ldexp(sum[i], -16) + std::ldexp(max[i], -6);
  return {std::move(o), std::move(band)};
}

} // namespace tilejit::testing

#endif // TILEJIT_TESTS_E2E_WGMMACHAINKERNEL_H
