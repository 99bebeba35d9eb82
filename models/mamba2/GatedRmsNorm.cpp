// R6 (docs/numerics.md#r6-gated-group-rmsnorm): out = bf16(w * bf16(v *
// rsqrt(mean_group(v^2) + eps))), v = y * silu(z), with norm groups of `group_size`
// channels. Two rounding points, as vLLM's native path and HF do. With `fp8_out` the
// result is also quantized for an FP8 out_proj, e4m3(out / s_x) (R1's activation quant),
// and only that is stored. Without the gate (`gate` 0: no z), v = y: a plain group
// RMSNorm with the same two rounding points.
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

void buildGatedRmsNorm(Kernel &k, const Specialization &spec) {
  const int64_t width = spec.get("width"), group = spec.get("group_size");
  const int64_t zStride = spec.get("z_stride") ? spec.get("z_stride") : width;
  const bool fp8Out = spec.get("fp8_out") != 0, gated = spec.get("gate") != 0;
  Value y = k.ptrParam("y", DType::BF16, {"rows", width});
  std::optional<Value> z;
  if (gated)
    z = k.ptrParam("z", DType::BF16, {"rows", zStride});
  Value weight = k.ptrParam("weight", DType::BF16, {width});
  Value out = k.ptrParam("out", fp8Out ? DType::F8E4M3 : DType::BF16, {"rows", width});
  Value rows = k.scalarParam("rows", DType::I32);
  Value eps = k.scalarParam("eps", DType::F32);
  std::optional<Value> inputScale;
  if (fp8Out)
    inputScale = k.scalarParam("input_scale", DType::F32); // out_proj's s_x
  k.setConfig({{1, group}, /*warps=*/4, /*stages=*/1, /*vector=*/8});
  k.markInvariant(weight);
  dependentStart(spec);

  Value row = programId(0);
  Value col = programId(1) * group;
  View yView = makeView(y, {rows, width}, {width, 1});
  View outView = makeView(out, {rows, width}, {width, 1});
  View wView = makeView(weight, {width}, {1});

  Value yt = load(yView, {row, col}, {1, group}).to(DType::F32);
  Value v = yt;
  if (z) {
    // z may be columns of a wider row (prefill reads it in place from in_proj's output).
    View zView = makeView(*z, {rows, width}, {zStride, 1});
    v = yt * silu(load(zView, {row, col}, {1, group}).to(DType::F32));
  }
  Value meanSquare = sum(v * v, 1) / double(group);
  Value r = expandDims(rsqrt(meanSquare + eps), 1);
  Value normed = (v * r).to(DType::BF16).to(DType::F32);
  Value w = load(wView, {col}, {group}).to(DType::F32);
  Value result = (w * normed).to(DType::BF16);
  if (inputScale)
    result = (result.to(DType::F32) / *inputScale).to(DType::F8E4M3);
  store(outView, {row, col}, result);
}

KernelDef gatedRmsNormKernel() {
  return {
      "gated_rmsnorm",
      "R6 gated group RMSNorm: bf16(w * bf16(y*silu(z) * rsqrt(mean(v^2)+eps)))",
      {{"width", 4096, "channels per row (I = H*P)", {}, sizeRange()},
       {"group_size", 512, "channels per norm group (I / G)", {}, tileRange()},
       {"fp8_out",
        0,
        "1: store e4m3(out / input_scale) for an FP8 out_proj",
        {},
        ConstantRange::flag()},
       {"z_stride",
        0,
        "row stride of z; 0: width (10304 reads z in place from in_proj's output)",
        {},
        columnsRange()},
       {"gate", 1, "0: no z, v = y (a plain group RMSNorm)", {}, ConstantRange::flag()},
       dependent()},
      buildGatedRmsNorm,
      // A partial last group would be normalized over fewer channels than
      // it divides by.
      {divides("group_size", "width"), zeroOrAtLeast("z_stride", "width")}};
}

} // namespace tilejit::models
