// How `tilejit tune` runs the Mamba2 kernels (registered next to each kernel;
// the other decode kernels' problems in DecodeTuneProblems.cpp):
// launch sizes, arguments, grids, constraints and check tolerances. A kernel
// becomes tunable by giving its constants candidate lists
// (KernelConstant::candidates), declaring its tuning key (the launch sizes of
// its problem) and adding its problem here.
#include "tilejit/models/TuneProblems.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace tilejit::models {
namespace {

using tuning::NamedValues;
using tuning::TuneArg;
using tuning::TuneProblem;

/// The decode in_proj (FP8 GEMV at the default constants), fused with the
/// conv update: rows x rows of x, the e4m3 weight, one conv page slot per row.
/// Outputs (z, xBC after the conv, dt, and the shifted conv page) are bf16:
/// candidates sum K in other orders (f32), which moves a bf16 result by at
/// most an ulp and the conv of it by a fraction of one; StepCheck's bf16
/// band (5e-2 / 1e-2) holds that, while a dropped K step (~1/21 of the sum)
/// or a conv tap off by one token lands outside it.
TuneProblem inProjConvProblem() {
  TuneProblem p = detail::decodeRowsProblem("in_proj_conv");
  p.args = [](const Specialization &s, const NamedValues &shape) {
    const int64_t rows = shape.at("rows"), hidden = s.get("hidden"),
                  inner = s.get("inner");
    const int64_t channels = s.get("channels"), heads = s.get("heads");
    const bool fp8 = s.get("fp8") != 0;
    std::vector<int32_t> slots(rows);
    for (int64_t r = 0; r < rows; ++r)
      slots[r] = int32_t(r);
    // The skinny form's FP8 in_proj reads x already quantized (e4m3 codes).
    std::vector<TuneArg> args = {
        s.get("quantized_input") ? TuneArg::input(DType::F8E4M3, rows * hidden)
                                 : TuneArg::input(DType::BF16, rows * hidden),
        TuneArg::input(fp8 ? DType::F8E4M3 : DType::BF16,
                       (inner + channels + heads) * hidden, fp8 ? 8.0 : 0.02),
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
    return std::array<int64_t, 3>{
        llvm::divideCeilSigned(cols, s.get("block_n")),
        llvm::divideCeilSigned(shape.at("rows"), s.get("block_m")), 1};
  };
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
    const int64_t tokens = shape.at("tokens"), heads = s.get("heads"),
                  p = s.get("head_dim");
    const int64_t n = s.get("state"), inner = heads * p;
    const int64_t channels = inner + 2 * s.get("groups") * n, chunk = s.get("chunk");
    std::vector<int32_t> seq, begin, end;
    for (int64_t t = 0; t < tokens; t += chunk) {
      seq.push_back(0);
      begin.push_back(int32_t(t));
      end.push_back(int32_t(std::min(t + chunk, tokens)));
    }
    const int64_t chunks = int64_t(seq.size());
    return std::vector<TuneArg>{TuneArg::input(DType::BF16, tokens * channels),
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
    return std::array<int64_t, 3>{s.get("head_dim") / s.get("block_p"), s.get("heads"),
                                  1};
  };
  p.atol = 5e-2;
  p.rtol = 5e-2;
  return p;
}

} // namespace

llvm::Error registerModelTuneProblems(tuning::TuneProblemRegistry &registry) {
  std::vector<TuneProblem> problems = detail::decodeTuneProblems();
  problems.push_back(inProjConvProblem());
  problems.push_back(ssdPrefillProblem());
  return registry.addAll(std::move(problems));
}

} // namespace tilejit::models
