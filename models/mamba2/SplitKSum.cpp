// The reduction of out_proj's split-K partials (its `k_splits`): y = out(s *
// (P_0 + P_1 + ... + P_{S-1})), summed in that order in f32, so that every
// run gives the same bits, then out_proj's epilogue (the scale, bf16 or f32).
// A second launch instead of a last-program reduction in out_proj: the sum
// spreads over all multiprocessors instead of one per tile. With `tail_only`
// (out_proj's tail_splits) the partials hold only the last `tail` rows of y.
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

void buildSplitKSum(Kernel &k, const Specialization &spec) {
  const int64_t width = spec.get("width"), block = spec.get("block");
  const int64_t splits = spec.get("splits");
  const bool tailOnly = spec.get("tail_only") != 0;
  Value partials =
      k.ptrParam("partials", DType::F32, {splits, tailOnly ? "tail" : "rows", width});
  const DType outType = spec.get("out_f32") ? DType::F32 : DType::BF16;
  Value out = k.ptrParam("out", outType, {"rows", width}); // [rows, width]
  Value rows = k.scalarParam("rows", DType::I32);
  // The partials' rows: all of y's, or its last `tail` (grid axis 1 walks them).
  Value partialRows = tailOnly ? k.scalarParam("tail", DType::I32) : rows;
  std::optional<Value> scaleA, scaleB, outputScale;
  if (spec.get("fp8") && spec.get("scale_ptr")) {
    scaleA = k.ptrParam("scale_a", DType::F32, {1});
    scaleB = k.ptrParam("scale_b", DType::F32, {1});
  } else if (spec.get("fp8")) {
    outputScale = k.scalarParam("output_scale", DType::F32); // s_x * s_w
  }
  k.setConfig({{1, block}, /*warps=*/4, /*stages=*/1, vectorWidth(DType::F32)});
  dependentStart(spec);
  Value row = programId(1), col = programId(0) * block;
  View first = makeView(partials, {partialRows, width}, {width, 1});
  Value sum = load(first, {row, col}, {1, block});
  for (int64_t s = 1; s < splits; ++s)
    sum = sum + load(makeView(partials + s * partialRows * width, {partialRows, width},
                              {width, 1}),
                     {row, col}, {1, block});
  if (scaleA)
    outputScale = load(*scaleA) * load(*scaleB);
  if (outputScale)
    sum = sum * *outputScale;
  if (tailOnly)
    row = row + (rows - partialRows);
  store(makeView(out, {rows, width}, {width, 1}), {row, col}, sum.to(outType));
}

/// Tuned per batch size: its tuning database entries are bucketed by rows.
KernelDef splitKSumKernel() {
  using R = ConstantRange;
  return {
      "split_k_sum",
      "out_proj's k_splits partials summed in split order, scaled (R1, R1b)",
      {{"width", 2688, "output columns", {}, sizeRange()},
       {"splits", 2, "partials per output (out_proj's k_splits)", {}, R::between(2, 64)},
       {"block", 1024, "columns per program", {256, 512, 2048}, tileRange()},
       {"fp8", 1, "1: scale the sum by s_x * s_w (an e4m3 out_proj)", {}, R::flag()},
       {"out_f32", 0, "1: store y as f32 instead of bf16", {}, R::flag()},
       {"tail_only",
        0,
        "1: the partials [splits, tail, width] are y's last `tail` rows (out_proj's "
        "tail_splits; grid axis 1: tail)",
        {},
        R::flag()},
       {"scale_ptr",
        0,
        "fp8: 1: s_x and s_w as one-element f32 tensors (scale_a, scale_b)",
        {},
        R::flag()},
       dependent()},
      buildSplitKSum,
      {},
      {"rows"}};
}

} // namespace tilejit::models
