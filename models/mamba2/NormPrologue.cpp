// out_proj's gated-norm prologue (NormPrologue.h): R6 then R1's activation
// quant (docs/numerics.md#r6-gated-group-rmsnorm) with gated_rmsnorm's
// operations, rounding points and per-group sums in index order.
#include "NormPrologue.h"
#include "Registration.h"

namespace tilejit::models {

NormPrologue::NormPrologue(Kernel &k, const Specialization &spec, int64_t inner, bool fp8)
    : inner(inner), groupSize(spec.get("group_size")),
      zStride(spec.get("z_stride") ? spec.get("z_stride") : inner), fp8(fp8) {
  y = k.ptrParam("y", DType::BF16, {"rows", inner});
  z = k.ptrParam("z", DType::BF16, {"rows", zStride});
  weight = k.ptrParam("norm_weight", DType::BF16, {inner});
  eps = k.scalarParam("eps", DType::F32);
  if (fp8)
    inputScale = k.scalarParam("input_scale", DType::F32); // out_proj's s_x
  k.markInvariant(weight);
}

Value NormPrologue::rstd(int64_t m, Value row, int64_t group) {
  auto [it, fresh] = rstds.try_emplace({m, group});
  if (!fresh)
    return it->second;
  // The whole group of the row, as gated_rmsnorm reads it (from L2: every
  // program of the row reads it again).
  auto groupOf = [&](Value ptr, int64_t stride) {
    View rowView = makeView(ptr + row.to(DType::I64) * stride, {inner}, {1});
    return load(rowView, {group * groupSize}, {groupSize}).to(DType::F32);
  };
  Value v = groupOf(y, inner) * silu(groupOf(z, zStride));
  Value variance = sum(v * v, 0) / double(groupSize);
  it->second = rsqrt(variance + eps);
  return it->second;
}

ActivationSource NormPrologue::source() {
  return [this](int64_t m, Value row, int64_t k0, int64_t len, const StepLoad &loadStep) {
    // A step lies in one group (the rules): its sums are one scalar.
    assert(k0 / groupSize == (k0 + len - 1) / groupSize && "a step spans two groups");
    Value scale = rstd(m, row, k0 / groupSize);
    Value rowY = y + row.to(DType::I64) * inner, rowZ = z + row.to(DType::I64) * zStride;
    Value v = loadStep(rowY).to(DType::F32) * silu(loadStep(rowZ).to(DType::F32));
    // R6's rounding points: the normalized value and the weighted one in bf16.
    Value normed = (v * scale).to(DType::BF16).to(DType::F32);
    Value result = (loadStep(weight).to(DType::F32) * normed).to(DType::BF16);
    if (!inputScale)
      return result.to(DType::F32);
    return (result.to(DType::F32) / *inputScale).to(DType::F8E4M3).to(DType::F32);
  };
}

std::vector<KernelConstant> NormPrologue::constants() {
  return {{"norm_prologue",
           0,
           "GEMV (block_m 1 or chunked): 1: compute the activation from y, z and the "
           "norm weight (gated_rmsnorm folded in)",
           {},
           ConstantRange::flag()},
          {"group_size",
           512,
           "norm_prologue: channels per norm group",
           {},
           ConstantRange::between(1, 1 << 14)},
          {"z_stride",
           0,
           "norm_prologue: row stride of z; 0: inner (z read in place from in_proj's "
           "output)",
           {},
           columnsRange()}};
}

std::vector<ConstantRule> NormPrologue::rules() {
  auto on = [](const Specialization &s) { return s.get("norm_prologue") != 0; };
  return {{"norm_prologue = 0 or a GEMV (block_m = 1 or chunked, not direct)",
           {"norm_prologue", "block_m", "chunked", "direct"},
           [on](const Specialization &s) {
             return !on(s) ||
                    ((s.get("block_m") == 1 || s.get("chunked")) && !s.get("direct"));
           }},
          {"norm_prologue = 0 or group_size a power of two dividing inner",
           {"norm_prologue", "group_size", "inner"},
           [on](const Specialization &s) {
             int64_t g = s.get("group_size");
             return !on(s) || ((g & (g - 1)) == 0 && s.get("inner") % g == 0);
           }},
          {"norm_prologue = 0 or block_k divides group_size (a K step in one group)",
           {"norm_prologue", "block_k", "group_size"},
           [on](const Specialization &s) {
             return !on(s) || s.get("group_size") % s.get("block_k") == 0;
           }},
          zeroOrAtLeast("z_stride", "inner")};
}

} // namespace tilejit::models
