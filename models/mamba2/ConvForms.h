// What conv_update and conv_prefill share for tilejit.ops' callers (vLLM's
// causal_conv1d ops): element types, activation, bias and null-block constants
// and the rounding points of vLLM's mixed-type conv.
#ifndef TILEJIT_MODELS_MAMBA2_CONVFORMS_H
#define TILEJIT_MODELS_MAMBA2_CONVFORMS_H

#include "Parts.h"

#include <optional>

namespace tilejit::models {

/// The element types of a conv kernel's operands.
struct ConvTypes {
  DType x, weight, bias, state, out;
};

/// The constants both conv kernels take for tilejit.ops: the five element
/// types, `silu`, `has_bias` and `null_block`. Their defaults build the plans'
/// kernels (bf16 everywhere, SiLU, a bias, negative slots as padding only).
std::vector<KernelConstant> convFormConstants();
ConvTypes convTypes(const Specialization &spec);
/// Whether `spec` keeps the types, `silu` and `has_bias` at their defaults
/// (`null_block` is a scalar comparison every form of the kernels takes).
bool convFormIsDefault(const Specialization &spec);

/// `v` as element type `to`: 16-bit to 16-bit goes through f32 (exact), so
/// every conversion rounds at most once.
Value convert(Value v, DType to);
/// An input as the conv uses it: vLLM converts x to the state's type first
/// (`x.to(conv_state.dtype)`), so a token is rounded to the state type, and
/// that is the value both the page and the sum see.
Value asStateInput(Value x, const ConvTypes &types);
/// A conv output from the f32 sum `pre`: the activation (SiLU when `applySilu`,
/// `fastSilu` its division-free form), rounded to the state type (vLLM's
/// output buffer) and then to the output's (vLLM returns it as x's type).
Value convOutput(Value pre, const ConvTypes &types, bool applySilu,
                 bool fastSilu = false);

/// The scalar `null_block_id` parameter with `null_block`, declared by the
/// caller at its place among the scalars.
std::optional<Value> declareNullBlock(Kernel &k, const Specialization &spec);
/// Whether `slot` names a state page: not negative (tilejit's padding) and,
/// with a null block, not vLLM's null block id.
Value realSlot(Value slot, const std::optional<Value> &nullBlockId);
/// The opposite of realSlot: a padding row's slot.
Value paddingSlot(Value slot, const std::optional<Value> &nullBlockId);

/// silu(x) as x * r * r with r = rsqrt(1 + e^-x), no IEEE division; see
/// conv_prefill's `fast_silu`.
Value siluWithoutDivision(Value x);

/// The general form of conv_update (ConvUpdateForms.cpp): any width, tokens
/// per row, varlen rows, speculative decoding, 2-D slot tables with prefix
/// caching, strides as parameters.
std::vector<KernelConstant> convUpdateFormConstants();
bool convUpdateIsPlanForm(const Specialization &spec);
void buildConvUpdateForm(Kernel &k, const Specialization &spec);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_CONVFORMS_H
