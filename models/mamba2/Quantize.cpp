// R1's static activation quant on its own: a_q = e4m3(x * (1 / s_x)) for a
// prefill in_proj, whose GEMM then reads e4m3 operands from memory (the wgmma
// path stages both operands through shared memory; a quant fused into the A
// load would keep the GEMM off it). Memory-bound: 3 bytes per element.
// `scale_ptr` 1 reads s_x from device memory (a one-element f32 tensor, as
// PyTorch callers hold it) instead of a launch argument. `flat` 1 tiles the
// rows as one stream (rows * width must stay an exact i32 offset).
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

void buildQuantizeE4m3(Kernel &k, const Specialization &spec) {
  const int64_t width = spec.get("width"), block = spec.get("block");
  Value x = k.ptrParam("x", DType::BF16, {"rows", width});       // [rows, width]
  Value out = k.ptrParam("out", DType::F8E4M3, {"rows", width}); // [rows, width]
  Value rows = k.scalarParam("rows", DType::I32);
  Value scale = spec.get("scale_ptr") ? load(k.ptrParam("input_scale", DType::F32, {1}))
                                      : k.scalarParam("input_scale", DType::F32); // s_x
  auto quantize = [&](Value v) {
    return (v.to(DType::F32) * (1.0 / scale)).to(DType::F8E4M3);
  };
  if (spec.get("flat")) {
    // The rows are contiguous: one stream of rows * width elements, `block`
    // a program, so no program masks the ragged end of a row. Viewed as rows
    // of 8 (width % 8 == 0), each a 16-byte vector whose mask is uniform.
    constexpr int64_t lane = 8;
    k.setConfig({{block / lane, lane}, spec.get("warps"), /*stages=*/1, lane});
    Value vectors = rows * (width / lane), at = programId(0) * (block / lane);
    store(makeView(out, {vectors, lane}, {lane, 1}), {at, 0},
          quantize(load(makeView(x, {vectors, lane}, {lane, 1}), {at, 0},
                        {block / lane, lane})));
    return;
  }
  k.setConfig({{1, block}, spec.get("warps"), /*stages=*/1, vectorWidth(DType::BF16)});
  Value row = programId(1), col = programId(0) * block;
  Value v = load(makeView(x, {rows, width}, {width, 1}), {row, col}, {1, block});
  store(makeView(out, {rows, width}, {width, 1}), {row, col}, quantize(v));
}

/// Tuned per batch size: its tuning database entries are bucketed by rows.
KernelDef quantizeE4m3Kernel() {
  return {
      "quantize_e4m3",
      "R1's static activation quant: e4m3(x * (1 / s_x)), bf16 in",
      {{"width", 2688, "columns per row", {}, sizeRange()},
       {"block", 1024, "columns per program", {256, 512, 2048}, tileRange()},
       {"flat",
        0,
        "1: grid (ceil(rows * width / block), 1): the rows as one contiguous stream; 0: "
        "(ceil(width / block), rows)",
        {},
        ConstantRange::flag()},
       {"warps", 4, "warps per program", {}, warpsRange()},
       {"scale_ptr",
        0,
        "1: input_scale is a one-element f32 tensor",
        {},
        ConstantRange::flag()}},
      buildQuantizeE4m3,
      {{"flat = 0, or width % 8 == 0 and block >= 8 (16-byte vectors of the stream)",
        {"flat", "width", "block"},
        [](const Specialization &s) {
          return !s.get("flat") || (s.get("width") % 8 == 0 && s.get("block") >= 8);
        }}},
      {"rows"}};
}

} // namespace tilejit::models
