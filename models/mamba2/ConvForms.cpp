// The constants and rounding points conv_update and conv_prefill share for
// tilejit.ops' callers (ConvForms.h).
#include "ConvForms.h"
#include "Registration.h"

namespace tilejit::models {

namespace {
constexpr const char *kTypeNames[] = {"x_type", "weight_type", "bias_type", "state_type",
                                      "out_type"};
} // namespace

std::vector<KernelConstant> convFormConstants() {
  using R = ConstantRange;
  return {
      elementType("x_type", "x"),
      elementType("weight_type", "weight"),
      elementType("bias_type", "bias"),
      elementType("state_type", "the conv page"),
      elementType("out_type", "out"),
      {"silu", 1, "1: SiLU after the conv; 0: no activation", {}, R::flag()},
      {"has_bias", 1, "1: a bias parameter; 0: none (a zero bias)", {}, R::flag()},
      {"null_block",
       0,
       "1: a scalar null_block_id; a slot equal to it is padding, like a negative one "
       "(vLLM's reserved null block)",
       {},
       R::flag()}};
}

ConvTypes convTypes(const Specialization &spec) {
  return {elementTypeOf(spec, "x_type"), elementTypeOf(spec, "weight_type"),
          elementTypeOf(spec, "bias_type"), elementTypeOf(spec, "state_type"),
          elementTypeOf(spec, "out_type")};
}

bool convFormIsDefault(const Specialization &spec) {
  for (const char *name : kTypeNames)
    if (spec.get(name) != 0)
      return false;
  return spec.get("silu") && spec.get("has_bias");
}

Value convert(Value v, DType to) {
  if (v.dtype() == to)
    return v;
  if (v.dtype() != DType::F32 && to != DType::F32)
    return v.to(DType::F32).to(to);
  return v.to(to);
}

Value asStateInput(Value x, const ConvTypes &types) { return convert(x, types.state); }

Value siluWithoutDivision(Value x) {
  // silu()'s IEEE division (div.rn.f32: a reciprocal, Newton steps and a
  // slow-path check) is the largest item of a conv's work per element; the
  // GPU's rsqrt.approx (<= 2 ulp) puts x * r * r within ~6 f32 ulp of the
  // quotient, far inside the one-ulp band of a 16-bit output.
  Value r = rsqrt(1.0f + exp(-x));
  return x * r * r;
}

Value convOutput(Value pre, const ConvTypes &types, bool applySilu, bool fastSilu) {
  Value y = applySilu ? (fastSilu ? siluWithoutDivision(pre) : silu(pre)) : pre;
  return convert(convert(y, types.state), types.out);
}

std::optional<Value> declareNullBlock(Kernel &k, const Specialization &spec) {
  if (!spec.get("null_block"))
    return std::nullopt;
  return k.scalarParam("null_block_id", DType::I64);
}

Value realSlot(Value slot, const std::optional<Value> &nullBlockId) {
  Value real = slot >= 0;
  if (nullBlockId)
    real = real & (slot.to(DType::I64) != *nullBlockId);
  return real;
}

Value paddingSlot(Value slot, const std::optional<Value> &nullBlockId) {
  Value padding = slot < 0;
  if (nullBlockId)
    padding = padding | (slot.to(DType::I64) == *nullBlockId);
  return padding;
}

} // namespace tilejit::models
