// How `tilejit tune` runs the example kernels (ExampleKernels.cpp registers
// them): launch sizes, arguments, grids, constraints and check tolerances.
#include "tilejit/models/TuneProblems.h"

#include "llvm/Support/MathExtras.h"

namespace tilejit::models {
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
    std::vector<TuneArg> args = {
        TuneArg::input(operand, m * k), TuneArg::input(operand, k * n),
        TuneArg::output(DType::BF16, m * n), TuneArg::integer(m)};
    // The W8A8 product: w is [n, k]; its scale keeps c in bf16's fine range.
    if (transposedB)
      args.push_back(TuneArg::real(0.01));
    return args;
  };
  p.grid = [](const Specialization &s, const NamedValues &shape) {
    return std::array<int64_t, 3>{llvm::divideCeilSigned(shape.at("m"), s.get("block_m")),
                                  llvm::divideCeilSigned(s.get("n"), s.get("block_n")),
                                  1};
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

} // namespace

llvm::Error registerExampleTuneProblems(tuning::TuneProblemRegistry &registry) {
  TuneProblem add;
  add.kernel = "vector_add";
  add.shape = {{"n", 1 << 26}};
  add.checkShape = {{"n", 1000003}};
  add.args = [](const Specialization &, const NamedValues &shape) {
    int64_t n = shape.at("n");
    return std::vector<TuneArg>{TuneArg::input(DType::F32, n),
                                TuneArg::input(DType::F32, n),
                                TuneArg::output(DType::F32, n), TuneArg::integer(n)};
  };
  add.grid = [](const Specialization &s, const NamedValues &shape) {
    return std::array<int64_t, 3>{llvm::divideCeilSigned(shape.at("n"), s.get("block")),
                                  1, 1};
  };
  // One f32 add per element, the same on the interpreter and the GPU: exact.
  return registry.addAll({
      std::move(add),
      gemmProblem("gemm_bf16", DType::BF16, false),
      gemmProblem("gemm_e4m3", DType::F8E4M3, true),
      // exp is ex2.approx on the GPU and exact on the interpreter, and the
      // sums of 1000 terms run in other orders per warp count: 1e-5 relative
      // (the band of docs/BENCHMARKS.md, "Example kernels"). A dropped max or a
      // partial sum is off by a factor, not by 1e-5.
      rowProblem("softmax", 16384, 1000, 1e-7, 1e-5),
      // A 100-term f32 prefix sum in warp-scan order vs index order.
      rowProblem("cumsum", 16384, 100, 1e-5, 1e-5),
  });
}

} // namespace tilejit::models
