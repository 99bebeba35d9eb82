// How `tilejit tune` runs the example kernels: launch sizes, arguments, grids,
// constraints and check tolerances. A new kernel becomes tunable by giving its
// constants candidate lists (KernelConstant::candidates) and adding a problem here.
#include "Commands.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace tilejit::cli {
namespace {

using tuning::NamedValues;
using tuning::TuneArg;
using tuning::TuneProblem;

// GEMM outputs are bf16 after an f32 sum of K = 4096 N(0,1) products (|c| up to
// a few hundred). Candidates sum in other orders (tile and K-step splits): the f32
// results differ by ~1e-4, which flips at most the final bf16 rounding, one ulp =
// 2^-8 |c| (rtol 2^-7 covers it); atol covers elements near zero. A wrong
// candidate (a dropped or repeated K step) moves c by ~sqrt(32) = 5.7, far
// outside the band for every |c| < 700.
constexpr double gemmAtol = 1e-2, gemmRtol = 1.0 / 128;

TuneProblem gemmProblem(std::string kernel, DType operand, bool transposedB) {
  TuneProblem p;
  p.kernel = std::move(kernel);
  p.shape = {{"m", 4096}};
  p.checkShape = {{"m", 37}};
  p.divides = {{"block_k", "k"}, {"block_n", "n"}};
  p.args = [operand, transposedB](const Specialization &s, const NamedValues &shape) {
    int64_t m = shape.at("m"), n = s.get("n"), k = s.get("k");
    std::vector<TuneArg> args = {TuneArg::input(operand, m * k),
                                 TuneArg::input(operand, k * n),
                                 TuneArg::output(DType::BF16, m * n), TuneArg::integer(m)};
    // The W8A8 product: w is [n, k]; its scale keeps c in bf16's fine range.
    if (transposedB)
      args.push_back(TuneArg::real(0.01));
    return args;
  };
  p.grid = [](const Specialization &s, const NamedValues &shape) {
    return std::array<int64_t, 3>{llvm::divideCeilSigned(shape.at("m"), s.get("block_m")),
                                  llvm::divideCeilSigned(s.get("n"), s.get("block_n")), 1};
  };
  p.atol = gemmAtol;
  p.rtol = gemmRtol;
  return p;
}

/// Row kernels over x[rows, cols] f32 -> out[rows, cols] f32, one row per program.
TuneProblem rowProblem(std::string kernel, int64_t rows, int64_t cols, double atol,
                       double rtol) {
  TuneProblem p;
  p.kernel = std::move(kernel);
  p.shape = {{"rows", rows}, {"cols", cols}};
  p.checkShape = {{"rows", 37}, {"cols", cols}};
  p.covers = {{"block", "cols"}};
  p.args = [](const Specialization &, const NamedValues &shape) {
    int64_t r = shape.at("rows"), c = shape.at("cols");
    return std::vector<TuneArg>{TuneArg::input(DType::F32, r * c),
                                TuneArg::output(DType::F32, r * c), TuneArg::integer(r),
                                TuneArg::integer(c)};
  };
  p.grid = [](const Specialization &, const NamedValues &shape) {
    return std::array<int64_t, 3>{shape.at("rows"), 1, 1};
  };
  p.atol = atol;
  p.rtol = rtol;
  return p;
}

/// The decode in_proj (FP8 GEMV at the default constants), fused with the
/// conv update: rows x rows of x, the e4m3 weight, one conv page slot per row.
/// Outputs (z, xBC after the conv, dt, and the shifted conv page) are bf16:
/// candidates sum K in other orders (f32), which moves a bf16 result by at
/// most an ulp and the conv of it by a fraction of one; StepCheck's bf16
/// band (5e-2 / 1e-2) holds that, while a dropped K step (~1/21 of the sum)
/// or a conv tap off by one token lands outside it.
TuneProblem inProjConvProblem() {
  TuneProblem p;
  p.kernel = "in_proj_conv";
  p.shape = {{"rows", 1}};
  p.checkShape = {{"rows", 3}};
  p.divides = {{"block_k", "hidden"}};
  p.args = [](const Specialization &s, const NamedValues &shape) {
    const int64_t rows = shape.at("rows"), hidden = s.get("hidden"), inner = s.get("inner");
    const int64_t channels = s.get("channels"), heads = s.get("heads");
    const bool fp8 = s.get("fp8") != 0;
    std::vector<int32_t> slots(rows);
    for (int64_t r = 0; r < rows; ++r)
      slots[r] = int32_t(r);
    std::vector<TuneArg> args = {
        TuneArg::input(DType::BF16, rows * hidden),
        TuneArg::input(fp8 ? DType::F8E4M3 : DType::BF16, (inner + channels + heads) * hidden,
                       fp8 ? 8.0 : 0.02),
        TuneArg::int32s(slots),
        TuneArg::state(DType::BF16, rows * channels * 3),
        TuneArg::input(DType::BF16, channels * 4, 0.5),
        TuneArg::input(DType::BF16, channels, 0.1),
        TuneArg::output(DType::BF16, rows * inner),
        TuneArg::output(DType::BF16, rows * channels),
        TuneArg::output(DType::BF16, rows * heads),
        TuneArg::integer(rows)};
    if (fp8) { // s_x keeps x / s_x inside e4m3; s_x * s_w keeps the output O(1)
      args.push_back(TuneArg::real(0.05));
      args.push_back(TuneArg::real(0.05 * 0.01));
    }
    return args;
  };
  p.grid = [](const Specialization &s, const NamedValues &shape) {
    const int64_t cols = s.get("inner") + s.get("channels") + s.get("heads");
    return std::array<int64_t, 3>{llvm::divideCeilSigned(cols, s.get("block_n")),
                                  llvm::divideCeilSigned(shape.at("rows"), s.get("block_m")), 1};
  };
  p.atol = 5e-2;
  p.rtol = 1e-2;
  return p;
}

/// The prefill SSD over one fresh-from-the-page sequence of `tokens` tokens,
/// chunked by the kernel's (untuned) chunk. Candidates change the state rows
/// per program and the warps, which changes how the products split across
/// warps, not what they sum; R5p's bf16 band (5e-2 / 5e-2) holds it, for y
/// and the f32 state alike, while a dropped carry between chunks moves both
/// by O(1) (tests/e2e/SsdPrefillTest.cpp).
TuneProblem ssdPrefillProblem() {
  TuneProblem p;
  p.kernel = "ssd_prefill";
  p.shape = {{"tokens", 8192}};
  p.checkShape = {{"tokens", 100}};
  p.divides = {{"block_p", "head_dim"}};
  p.args = [](const Specialization &s, const NamedValues &shape) {
    const int64_t tokens = shape.at("tokens"), heads = s.get("heads"), p = s.get("head_dim");
    const int64_t n = s.get("state"), inner = heads * p;
    const int64_t channels = inner + 2 * s.get("groups") * n, chunk = s.get("chunk");
    std::vector<int32_t> seq, begin, end;
    for (int64_t t = 0; t < tokens; t += chunk) {
      seq.push_back(0);
      begin.push_back(int32_t(t));
      end.push_back(int32_t(std::min(t + chunk, tokens)));
    }
    const int64_t chunks = int64_t(seq.size());
    return std::vector<TuneArg>{
        TuneArg::input(DType::BF16, tokens * channels),
        TuneArg::input(DType::BF16, tokens * s.get("dt_stride")),
        TuneArg::input(DType::F32, heads),
        TuneArg::input(DType::F32, heads),
        TuneArg::input(DType::F32, heads),
        TuneArg::int32s({0, int32_t(tokens)}),
        TuneArg::int32s({0}),
        TuneArg::int32s({1}),
        TuneArg::int32s(seq),
        TuneArg::int32s(begin),
        TuneArg::int32s(end),
        TuneArg::state(DType::F32, heads * p * n),
        TuneArg::output(DType::BF16, tokens * inner),
        TuneArg::integer(chunks),
        TuneArg::real(0.0),
        TuneArg::real(std::numeric_limits<double>::infinity())};
  };
  p.grid = [](const Specialization &s, const NamedValues &) {
    return std::array<int64_t, 3>{s.get("head_dim") / s.get("block_p"), s.get("heads"), 1};
  };
  p.atol = 5e-2;
  p.rtol = 5e-2;
  return p;
}

} // namespace

llvm::Error registerTuneProblems(tuning::TuneProblemRegistry &registry) {
  TuneProblem add;
  add.kernel = "vector_add";
  add.shape = {{"n", 1 << 26}};
  add.checkShape = {{"n", 1000003}};
  add.args = [](const Specialization &, const NamedValues &shape) {
    int64_t n = shape.at("n");
    return std::vector<TuneArg>{TuneArg::input(DType::F32, n), TuneArg::input(DType::F32, n),
                                TuneArg::output(DType::F32, n), TuneArg::integer(n)};
  };
  add.grid = [](const Specialization &s, const NamedValues &shape) {
    return std::array<int64_t, 3>{llvm::divideCeilSigned(shape.at("n"), s.get("block")), 1, 1};
  };
  // One f32 add per element, the same on the interpreter and the GPU: exact.
  std::vector<TuneProblem> problems = {
      std::move(add),
      gemmProblem("gemm_bf16", DType::BF16, false),
      gemmProblem("gemm_e4m3", DType::F8E4M3, true),
      // exp is ex2.approx on the GPU and exact on the interpreter, and the
      // sums of 1000 terms run in other orders per warp count: 1e-5 relative
      // (docs/BENCHMARKS.md's band). A dropped max or a partial sum is off by
      // a factor, not by 1e-5.
      rowProblem("softmax", 16384, 1000, 1e-7, 1e-5),
      // A 100-term f32 prefix sum in warp-scan order vs index order.
      rowProblem("cumsum", 16384, 100, 1e-5, 1e-5),
      inProjConvProblem(),
      ssdPrefillProblem(),
  };
  for (TuneProblem &p : problems)
    if (llvm::Error err = registry.add(std::move(p)))
      return err;
  return llvm::Error::success();
}

} // namespace tilejit::cli
