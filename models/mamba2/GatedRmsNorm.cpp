// R6 (docs/numerics.md#r6-gated-group-rmsnorm) and its forms: the gated group RMSNorm
// the plans run (the defaults; with `fp8_out` quantized for an FP8 out_proj), and the
// LayerNorm, bias, gate-after-norm and f16/f32 forms of mamba_ssm's layernorm_fn.
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <algorithm>

namespace tilejit::models {

namespace {

/// The largest norm group (mamba_ssm's kernel takes up to 64 KB of f32 x).
constexpr int64_t kMaxGroup = 1 << 14;

/// The normalized group x̂ = (v - mean) * rsqrt(var + eps) in f32, where the
/// LayerNorm form centres v on its mean and the RMS form does not (mean 0).
Value normalizeGroup(Value v, Value eps, int64_t group, bool layerNorm) {
  Value centred = v;
  if (layerNorm)
    centred = v - expandDims(sum(v, 1) / double(group), 1);
  Value variance = sum(centred * centred, 1) / double(group);
  return centred * expandDims(rsqrt(variance + eps), 1);
}

/// The e4m3 quant divides the bf16 result (R1's activation quant of R6's
/// output), so out_type has no say there.
ConstantRule fp8OutIsBf16Form() {
  return {
      "fp8_out = 0 or out_type = 0 (fp8_out quantizes the bf16 output)",
      {"fp8_out", "out_type"},
      [](const Specialization &s) { return !s.get("fp8_out") || !s.get("out_type"); }};
}

} // namespace

void buildGatedRmsNorm(Kernel &k, const Specialization &spec) {
  const int64_t width = spec.get("width"), group = spec.get("group_size");
  const int64_t zStride = spec.get("z_stride") ? spec.get("z_stride") : width;
  const int64_t yStride = spec.get("y_stride") ? spec.get("y_stride") : width;
  const bool fp8Out = spec.get("fp8_out") != 0, gated = spec.get("gate") != 0;
  const bool hasBias = spec.get("bias") != 0, layerNorm = spec.get("layer_norm") != 0;
  const bool gateAfterNorm = gated && spec.get("norm_before_gate") != 0;
  const DType yType = elementTypeOf(spec, "y_type");
  const DType outType = fp8Out ? DType::F8E4M3 : elementTypeOf(spec, "out_type");
  Value y = k.ptrParam("y", yType, {"rows", yStride});
  std::optional<Value> z, bias;
  if (gated)
    z = k.ptrParam("z", elementTypeOf(spec, "z_type"), {"rows", zStride});
  Value weight = k.ptrParam("weight", elementTypeOf(spec, "weight_type"), {width});
  if (hasBias)
    bias = k.ptrParam("bias", elementTypeOf(spec, "bias_type"), {width});
  Value out = k.ptrParam("out", outType, {"rows", width});
  Value rows = k.scalarParam("rows", DType::I32);
  Value eps = k.scalarParam("eps", DType::F32);
  std::optional<Value> inputScale;
  if (fp8Out)
    inputScale = k.scalarParam("input_scale", DType::F32); // out_proj's s_x
  // A group over 4096 channels (a whole-row norm of a one-group model) takes a
  // warp per 1024 channels, so a thread's share stays in its registers.
  const int64_t warps = std::clamp<int64_t>(group / 1024, 4, 16);
  k.setConfig({{1, group}, warps, /*stages=*/1, /*vector=*/8});
  k.markInvariant(weight);
  if (bias)
    k.markInvariant(*bias);
  dependentStart(spec);

  Value row = programId(0);
  Value col = programId(1) * group;
  View yView = makeView(y, {rows, width}, {yStride, 1});
  View outView = makeView(out, {rows, width}, {width, 1});
  View wView = makeView(weight, {width}, {1});

  Value v = load(yView, {row, col}, {1, group}).to(DType::F32);
  std::optional<Value> gate;
  if (z) {
    // z may be columns of a wider row (prefill reads it in place from in_proj's output).
    View zView = makeView(*z, {rows, width}, {zStride, 1});
    gate = silu(load(zView, {row, col}, {1, group}).to(DType::F32));
    if (!gateAfterNorm)
      v = v * *gate;
  }
  // R6's first rounding point, in y's element type (HF's `.to(input_dtype)`).
  Value normed = normalizeGroup(v, eps, group, layerNorm).to(yType).to(DType::F32);
  Value result = load(wView, {col}, {group}).to(DType::F32) * normed;
  if (bias)
    result = result + load(makeView(*bias, {width}, {1}), {col}, {group}).to(DType::F32);
  if (gateAfterNorm)
    result = result * *gate;
  if (inputScale)
    result = result.to(DType::BF16).to(DType::F32) / *inputScale;
  store(outView, {row, col}, result.to(outType));
}

KernelDef gatedRmsNormKernel() {
  return {
      "gated_rmsnorm",
      "R6 gated group RMSNorm: bf16(w * bf16(y*silu(z) * rsqrt(mean(v^2)+eps)))",
      {{"width", 4096, "channels per row (I = H*P)", {}, sizeRange()},
       {"group_size",
        512,
        "channels per norm group (I / G), one tile",
        {},
        ConstantRange::powersOfTwo(1, kMaxGroup)},
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
       {"y_stride",
        0,
        "row stride of y; 0: width (tilejit.ops' x rows of a wider tensor)",
        {},
        columnsRange()},
       {"gate", 1, "0: no z, v = y (a plain group RMSNorm)", {}, ConstantRange::flag()},
       {"norm_before_gate",
        0,
        "1: out = (w * norm(y) + b) * silu(z), mamba_ssm's default; 0: norm(y * silu(z))",
        {},
        ConstantRange::flag()},
       {"layer_norm",
        0,
        "1: LayerNorm (centre each group on its mean); 0: RMSNorm",
        {},
        ConstantRange::flag()},
       {"bias", 0, "1: add a bias [width] after the weight", {}, ConstantRange::flag()},
       elementType("y_type", "y"),
       elementType("z_type", "z"),
       elementType("weight_type", "weight"),
       elementType("bias_type", "bias"),
       elementType("out_type", "out (fp8_out stores e4m3 instead)"),
       dependent()},
      buildGatedRmsNorm,
      // A partial last group would be normalized over fewer channels than
      // it divides by.
      {divides("group_size", "width"), zeroOrAtLeast("z_stride", "width"),
       zeroOrAtLeast("y_stride", "width"), fp8OutIsBf16Form()}};
}

} // namespace tilejit::models
