// R6 (docs/numerics.md#r6-gated-group-rmsnorm) and its forms: the gated group RMSNorm
// the plans run (the defaults; with `fp8_out` quantized for an FP8 out_proj), and the
// LayerNorm, bias, gate-after-norm and f16/f32 forms of mamba_ssm's layernorm_fn.
#include "ConvForms.h"
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace tilejit::models {

namespace {

/// The largest norm group (mamba_ssm's kernel takes up to 64 KB of f32 x).
constexpr int64_t kMaxGroup = 1 << 14;

/// Where a program's group lies in the operands. A power-of-two group is a tile
/// of the whole rows at column `col`; any other is a `block`-wide tile (the next
/// power of two) of a view `group` wide starting at `col`, which masks the lanes
/// past the group: they read 0 and are never stored.
struct GroupTile {
  Value rows, row, col;
  int64_t width, group, block;
  int64_t tileRows = 1;   ///< rows of the group a program holds
  bool paramRows = false; ///< weight and bias as [1, block] rows of the tile's layout

  bool padded() const { return block != group; }
  /// A [rows, width] operand of row stride `stride`: its view and this group's offsets.
  std::pair<View, std::vector<Operand>> rowsView(Value ptr, int64_t stride) const {
    if (!padded())
      return {makeView(ptr, {rows, width}, {stride, 1}), {row, col}};
    return {makeView(ptr + col, {rows, group}, {stride, 1}), {row, 0}};
  }
  Value loadRows(Value ptr, int64_t stride) const {
    auto [view, at] = rowsView(ptr, stride);
    return load(view, at, {tileRows, block}).to(DType::F32);
  }
  /// A [width] parameter (weight, bias) over this group, f32: a [block] vector,
  /// or with `paramRows` a [1, block] row in the rows' own layout, so the
  /// product with a row needs no layout conversion through shared memory.
  Value loadChannels(Value ptr) const {
    if (paramRows) {
      auto [view, at] = rowsView(ptr, 0);
      return load(view, {0, at[1]}, {1, block}).to(DType::F32);
    }
    if (!padded())
      return load(makeView(ptr, {width}, {1}), {col}, {group}).to(DType::F32);
    return load(makeView(ptr + col, {group}, {1}), {0}, {block}).to(DType::F32);
  }
};

/// The normalized group x̂ = (v - mean) * rsqrt(var + eps) in f32, where the
/// LayerNorm form centres v on its mean and the RMS form does not (mean 0).
/// Lanes past a padded group hold v = 0, which no sum sees but a centred one.
Value normalizeGroup(const GroupTile &g, Value v, Value eps, bool layerNorm) {
  Value centred = v;
  if (layerNorm) {
    centred = v - expandDims(sum(v, 1) / double(g.group), 1);
    if (g.padded())
      centred = where(expandDims(arange(0, g.block) < g.group, 0), centred, 0.0);
  }
  Value variance = sum(centred * centred, 1) / double(g.group);
  return centred * expandDims(rsqrt(variance + eps), 1);
}

/// A group that is not a power of two is padded to one; its rows must keep the
/// 16-byte alignment of the vector accesses.
ConstantRule groupTiles() {
  return {"group_size is a power of two or a multiple of 8",
          {"group_size"},
          [](const Specialization &s) {
            int64_t g = s.get("group_size");
            return (g & (g - 1)) == 0 || g % 8 == 0;
          }};
}

/// The e4m3 quant divides the bf16 result (R1's activation quant of R6's
/// output), so out_type has no say there.
ConstantRule fp8OutIsBf16Form() {
  return {
      "fp8_out = 0 or out_type = 0 (fp8_out quantizes the bf16 output)",
      {"fp8_out", "out_type"},
      [](const Specialization &s) { return !s.get("fp8_out") || !s.get("out_type"); }};
}

/// Up to 1024 channels a warp per 256, so each thread holds one 16-byte
/// vector of a row's group (more warps would leave lanes idle and add a
/// cross-warp step to the reduction); a group over 4096 channels (a
/// whole-row norm of a one-group model) a warp per 1024, so a thread's share
/// stays in its registers. `warps` overrides it.
int64_t normWarps(const Specialization &spec, int64_t block) {
  if (spec.get("warps"))
    return spec.get("warps");
  return block <= 1024 ? std::max<int64_t>(block / 256, 1)
                       : std::clamp<int64_t>(block / 1024, 4, 16);
}

/// x / s rounded as IEEE division rounds it, without a division per element
/// (Markstein): r = RN(1 / s) once, q = RN(x r) is within an ulp of x / s, the
/// residual x - q s is exact in one FMA, and RN(q + (x - q s) r) is the
/// correctly rounded quotient, except where the residual underflows (quotients
/// far below e4m3's smallest step, which round to a zero of the same sign
/// either way). Where the residual is 0, q is already the quotient (and keeps
/// the sign of a zero x); past 2^20, far beyond e4m3's saturation, q stands,
/// since the residual of an infinite q is NaN.
Value divideByScale(Value x, Value s) {
  Value r = 1.0 / s;
  Value q = x * r;
  Value residual = fma(-q, s, x);
  return where((abs(q) < 1048576.0) & (residual != 0.0), fma(residual, r, q), q);
}

ConstantRule warpsAutoOrPowerOfTwo() {
  return {"warps is 0 or a power of two", {"warps"}, [](const Specialization &s) {
            int64_t w = s.get("warps");
            return (w & (w - 1)) == 0;
          }};
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
  const int64_t tileRows = spec.get("rows_per_program");
  const int64_t block = int64_t(llvm::PowerOf2Ceil(group));
  k.setConfig({{tileRows, block}, normWarps(spec, block), /*stages=*/1, /*vector=*/8});
  k.markInvariant(weight);
  if (bias)
    k.markInvariant(*bias);
  dependentStart(spec);

  GroupTile g{
      rows,     programId(0) * tileRows,    programId(1) * group, width, group, block,
      tileRows, spec.get("param_rows") != 0};
  Value v = g.loadRows(y, yStride);
  std::optional<Value> gate;
  if (z) {
    // z may be columns of a wider row (prefill reads it in place from in_proj's output).
    Value zv = g.loadRows(*z, zStride);
    gate = spec.get("fast_silu") ? siluWithoutDivision(zv) : silu(zv);
    if (!gateAfterNorm)
      v = v * *gate;
  }
  // R6's first rounding point, in y's element type (HF's `.to(input_dtype)`).
  Value normed = normalizeGroup(g, v, eps, layerNorm).to(yType).to(DType::F32);
  Value result = g.loadChannels(weight) * normed;
  if (bias)
    result = result + g.loadChannels(*bias);
  if (gateAfterNorm)
    result = result * *gate;
  if (inputScale) {
    result = result.to(DType::BF16).to(DType::F32);
    result =
        spec.get("quant_fma") ? divideByScale(result, *inputScale) : result / *inputScale;
  }
  auto [outView, at] = g.rowsView(out, width);
  store(outView, at, result.to(outType));
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
        ConstantRange::between(1, kMaxGroup)},
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
       {"rows_per_program",
        1,
        "rows of a group per program (grid rows / this): more bytes in flight per thread",
        {},
        ConstantRange::powersOfTwo(1, 64)},
       {"warps",
        0,
        "warps per program; 0: by the group's width",
        {},
        ConstantRange::between(0, 32)},
       {"param_rows",
        1,
        "1: weight and bias load as [1, block] rows in the rows' layout; 0: as [block] "
        "vectors, converted to it through shared memory",
        {},
        ConstantRange::flag()},
       {"quant_fma",
        0,
        "1: fp8_out's out / s_x as a reciprocal product and one FMA residual step (the "
        "same correctly rounded quotient, no division per element)",
        {},
        ConstantRange::flag()},
       {"fast_silu",
        0,
        "1: silu(z) as z * rsqrt(1 + e^-z)^2, no division (conv_prefill's form)",
        {},
        ConstantRange::flag()},
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
       zeroOrAtLeast("y_stride", "width"), groupTiles(), fp8OutIsBf16Form(),
       warpsAutoOrPowerOfTwo(),
       productAtMost({"rows_per_program", "group_size"}, kMaxGroup,
                     "a program's tile of rows stays in registers")}};
}

} // namespace tilejit::models
