// How `tilejit tune` runs the decode step's kernels besides in_proj_conv
// (TuneProblems.cpp): quantize_e4m3, out_proj (which also runs decode's
// in_proj GEMM), split_k_sum, conv_update and ssm_update, each keyed by the
// step's rows. Each problem launches the form the decode plans launch (the
// plan's constants come in by --set); its candidates change how the work is
// split over programs and threads, never which buffers the launch reads.
#include "SsmUpdate.h"
#include "tilejit/models/TuneProblems.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace tilejit::models::detail {
namespace {

using tuning::NamedValues;
using tuning::TuneArg;
using tuning::TuneProblem;

std::array<int64_t, 3> rowTiles(int64_t columns, int64_t block, int64_t rows) {
  return {llvm::divideCeilSigned(columns, block), rows, 1};
}

/// R1's static quant of `rows` x `width` bf16 rows. Every element is one
/// rounding of x / s_x whichever program takes it, so the band is one e4m3
/// ulp (2^-3 relative, plus its smallest step): a GPU that rounds a tie
/// otherwise passes, while an element read from another column (N(0, 1) /
/// 0.05 apart, typically 20 units) or never written (NaN) does not.
TuneProblem quantizeProblem() {
  TuneProblem p = decodeRowsProblem("quantize_e4m3");
  p.args = [](const Specialization &s, const NamedValues &shape) {
    const int64_t rows = shape.at("rows"), width = s.get("width");
    return std::vector<TuneArg>{TuneArg::input(DType::BF16, rows * width),
                                TuneArg::output(DType::F8E4M3, rows * width),
                                TuneArg::integer(rows), TuneArg::real(0.05)};
  };
  p.grid = [](const Specialization &s, const NamedValues &shape) {
    return rowTiles(s.get("width"), s.get("block"), shape.at("rows"));
  };
  p.atol = 1.0 / 512;
  p.rtol = 0.125;
  return p;
}

/// split_k_sum over N(0, 1) partials, scaled by 1 where fp8 scales: each
/// output sums its splits in split order whichever program takes it; a
/// dropped split moves it by O(1), outside the bf16 band.
TuneProblem splitKSumProblem() {
  TuneProblem p = decodeRowsProblem("split_k_sum");
  p.args = [](const Specialization &s, const NamedValues &shape) {
    const int64_t rows = shape.at("rows"), width = s.get("width");
    std::vector<TuneArg> args = {
        TuneArg::input(DType::F32, s.get("splits") * rows * width),
        TuneArg::output(s.get("out_f32") ? DType::F32 : DType::BF16, rows * width),
        TuneArg::integer(rows)};
    if (s.get("fp8"))
      args.push_back(TuneArg::real(1.0));
    return args;
  };
  p.grid = [](const Specialization &s, const NamedValues &shape) {
    return rowTiles(s.get("width"), s.get("block"), shape.at("rows"));
  };
  return p;
}

/// The decode conv update (R3d) of one token per row, row r in slot r, x
/// read in place from a row of x_stride: candidates change the channels per
/// program only; a channel off by a tap or a slot moves by O(1).
TuneProblem convUpdateProblem() {
  TuneProblem p = decodeRowsProblem("conv_update");
  p.args = [](const Specialization &s, const NamedValues &shape) {
    const int64_t rows = shape.at("rows"), channels = s.get("channels");
    const int64_t stride = s.get("x_stride") ? s.get("x_stride") : channels;
    std::vector<int32_t> slots(rows);
    for (int64_t r = 0; r < rows; ++r)
      slots[r] = int32_t(r);
    return std::vector<TuneArg>{TuneArg::input(DType::BF16, rows * stride),
                                TuneArg::state(DType::BF16, rows * channels * 3),
                                TuneArg::int32s(slots),
                                TuneArg::input(DType::BF16, channels * 4, 0.5),
                                TuneArg::input(DType::BF16, channels, 0.1),
                                TuneArg::output(DType::BF16, rows * channels)};
  };
  p.grid = [](const Specialization &s, const NamedValues &shape) {
    const auto tiles = rowTiles(s.get("channels"), s.get("block"), shape.at("rows"));
    return std::array<int64_t, 3>{tiles[1], tiles[0], 1};
  };
  return p;
}

/// The decode state update (R5d), row r in slot r, dt read in place at
/// dt_col of a row of dt_stride, unbounded dt. Candidates change the state
/// rows per program and the warps: the f32 state is elementwise (the same
/// bits), y's sum over the state reassociates (an ulp of bf16); a program on
/// the wrong head or rows moves y (|y| ~ 10) and the state by O(1).
TuneProblem ssmUpdateProblem() {
  TuneProblem p = decodeRowsProblem("ssm_update");
  p.divides = {{"block_p", "head_dim"}};
  p.args = [](const Specialization &spec, const NamedValues &shape) {
    const SsuShape s = SsuShape::of(spec);
    const int64_t rows = shape.at("rows");
    std::vector<int32_t> slots(rows);
    for (int64_t r = 0; r < rows; ++r)
      slots[r] = int32_t(r);
    return std::vector<TuneArg>{
        TuneArg::input(s.xType, rows * s.channels),
        TuneArg::input(s.dtType, rows * s.dtStride),
        TuneArg::input(s.aType, s.heads, 0.5),
        TuneArg::input(s.dtBiasType, s.heads, 0.5),
        TuneArg::input(s.dType, s.heads),
        TuneArg::int32s(slots),
        TuneArg::state(s.stateType, rows * s.heads * s.headDim * s.stateSize),
        TuneArg::output(s.yType, rows * s.inner),
        TuneArg::real(0.0),
        TuneArg::real(std::numeric_limits<double>::infinity())};
  };
  p.grid = [](const Specialization &s, const NamedValues &shape) {
    return std::array<int64_t, 3>{s.get("head_dim") / s.get("block_p"), s.get("heads"),
                                  shape.at("rows")};
  };
  return p;
}

/// out_proj as the decode plans launch it for out_proj and (from 64 rows) for
/// in_proj: the GEMV, direct or tensor-core form its --set constants name;
/// with k_splits > 1 into f32 partials, else scaled into y. N(0, 1) operands
/// (the bf16 weight at 1/64, the e4m3 output scaled by 1/64) keep y O(1).
/// Candidates sum K in other orders or tiles (an ulp of bf16, f32 rounding
/// in the partials); a dropped K step (1/32 to 1/8 of the sum) moves y by
/// 0.18 to 0.35 of its spread, outside the band.
TuneProblem outProjProblem() {
  TuneProblem p = decodeRowsProblem("out_proj");
  p.args = [](const Specialization &s, const NamedValues &shape) {
    const int64_t rows = shape.at("rows"), inner = s.get("inner"),
                  hidden = s.get("hidden"), splits = s.get("k_splits");
    const bool fp8 = s.get("fp8") != 0;
    const DType type = fp8 ? DType::F8E4M3 : DType::BF16;
    std::vector<TuneArg> args = {
        TuneArg::input(type, rows * inner),
        TuneArg::input(type, hidden * inner, fp8 ? 1.0 : 1.0 / 64)};
    if (splits > 1)
      args.push_back(TuneArg::output(DType::F32, splits * rows * hidden));
    else
      args.push_back(
          TuneArg::output(s.get("out_f32") ? DType::F32 : DType::BF16, rows * hidden));
    args.push_back(TuneArg::integer(rows));
    if (fp8 && splits == 1)
      args.push_back(TuneArg::real(1.0 / 64));
    return args;
  };
  p.grid = [](const Specialization &s, const NamedValues &shape) {
    return std::array<int64_t, 3>{
        llvm::divideCeilSigned(s.get("hidden"), s.get("block_n")),
        llvm::divideCeilSigned(shape.at("rows"), s.get("block_m")) * s.get("k_splits"),
        1};
  };
  return p;
}

} // namespace

TuneProblem decodeRowsProblem(llvm::StringRef kernel) {
  TuneProblem p;
  p.kernel = kernel.str();
  p.shape = {{"rows", 1}};
  p.checkShape = {{"rows", 3}};
  // StepCheck's bf16 band. A candidate that sums in another order moves a
  // bf16 result by at most an ulp (2^-8 relative, within rtol plus atol at
  // every magnitude), while a skipped program leaves the poison (NaN) and a
  // program on the wrong columns, rows or taps moves a result by O(1).
  p.atol = 5e-2;
  p.rtol = 1e-2;
  return p;
}

std::vector<tuning::TuneProblem> decodeTuneProblems() {
  return {quantizeProblem(), splitKSumProblem(), convUpdateProblem(), ssmUpdateProblem(),
          outProjProblem()};
}

} // namespace tilejit::models::detail
