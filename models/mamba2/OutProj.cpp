// Decode out_proj (reference-math.md R1 / R1b): y = bf16(s * (a x W^T)) with the
// activation already quantized to e4m3 by the gated norm (FP8 layers), or bf16
// activations and weights (the bf16 layers). One program: `block_n` outputs of
// one row.
#include "Parts.h"
#include "tilejit/models/Kernels.h"

namespace tilejit::models {

void buildOutProj(Kernel &k, const Specialization &spec) {
  const int64_t inner = spec.get("inner"), hidden = spec.get("hidden");
  const int64_t bn = spec.get("block_n"), bk = spec.get("block_k");
  const bool fp8 = spec.get("fp8") != 0;
  const DType type = fp8 ? DType::F8E4M3 : DType::BF16;

  Value a = k.ptrParam("a", type);           // [rows, inner]
  Value weight = k.ptrParam("weight", type); // [hidden, inner]
  Value out = k.ptrParam("out", DType::BF16); // [rows, hidden]
  Value rows = k.scalarParam("rows", DType::I32);
  std::optional<Value> outputScale;
  if (fp8)
    outputScale = k.scalarParam("output_scale", DType::F32); // s_x * s_w
  k.setConfig({{bn, bk}, spec.get("warps"), 1, vectorWidth(type)});

  Value n0 = programId(0) * bn, row = programId(1);
  ProjectionOperands p{makeView(weight, {hidden, inner}, {inner, 1}), a, inner, std::nullopt};
  Value acc = projectRow(p, row, n0, bn, bk, spec.get("loads_in_flight"));
  if (outputScale)
    acc = acc * *outputScale;
  store(makeView(out, {rows, hidden}, {hidden, 1}), {row, n0},
        expandDims(acc.to(DType::BF16), 0));
}

} // namespace tilejit::models
