// The registration of ssm_update: its constants (the plans' kernel by default;
// tilejit.ops' selective_state_update sets the rest), the rules between them
// and their decoding into an SsuShape.
#include "Parts.h"
#include "Registration.h"
#include "SsmUpdate.h"

namespace tilejit::models {
namespace {

using R = ConstantRange;

KernelConstant flag(llvm::StringRef name, llvm::StringRef help) {
  return {name.str(), 0, help.str(), {}, R::flag()};
}

/// An element type whose default is f32 (A, D, dt_bias and the page are f32
/// in every plan).
KernelConstant f32ElementType(llvm::StringRef name, llvm::StringRef operand) {
  KernelConstant c = elementType(name, operand);
  c.defaultValue = 2;
  return c;
}

KernelConstant stride(llvm::StringRef name, llvm::StringRef help) {
  return {name.str(), 0, help.str(), {}, columnsRange()};
}

ConstantRule rule(std::string text, std::vector<std::string> names,
                  std::function<bool(const Specialization &)> holds) {
  return {std::move(text), std::move(names), std::move(holds)};
}

/// A row stride that is 0 (the operand's own width) or at least that width.
ConstantRule strideCovers(const std::string &name,
                          std::function<int64_t(const Specialization &)> width,
                          const std::string &widthText) {
  return rule(name + " is 0 or at least " + widthText, {name},
              [name, width](const Specialization &s) {
                return s.get(name) == 0 || s.get(name) >= width(s);
              });
}

int64_t dtWidth(const Specialization &s) {
  return s.get("heads") * (s.get("per_p") & kPerPDt ? s.get("head_dim") : 1);
}

} // namespace

SsuShape SsuShape::of(const Specialization &spec) {
  SsuShape s;
  s.heads = spec.get("heads");
  s.headDim = spec.get("head_dim");
  s.stateSize = spec.get("state");
  s.groups = spec.get("groups");
  s.bp = spec.get("block_p");
  s.inner = s.heads * s.headDim;
  s.channels = s.inner + 2 * s.groups * s.stateSize;
  s.aIsLog = spec.get("a_log") != 0;
  s.softplusDt = spec.get("dt_softplus") != 0;
  s.split = spec.get("split") != 0;
  s.gated = spec.get("gate") != 0;
  s.varlen = spec.get("varlen") != 0;
  s.spec = spec.get("spec") != 0;
  s.padId = spec.get("pad_id") != 0;
  s.dstSlots = spec.get("dst_slots") != 0;
  s.checked = spec.get("checked") != 0;
  s.perP = spec.get("per_p");
  s.stochastic = spec.get("stochastic") != 0;
  s.mixes = spec.get("random_mixes");
  auto orDefault = [&](llvm::StringRef name, int64_t width) {
    return spec.get(name) ? spec.get(name) : width;
  };
  s.dtStride = orDefault("dt_stride", dtWidth(spec));
  s.dtCol = spec.get("dt_col");
  s.xStride = orDefault("x_stride", s.inner);
  s.bStride = orDefault("b_stride", s.groups * s.stateSize);
  s.cStride = orDefault("c_stride", s.groups * s.stateSize);
  s.zStride = orDefault("z_stride", s.inner);
  s.slotsStride = spec.get("slots_stride");
  s.dstStride = spec.get("dst_stride");
  s.xType = elementTypeOf(spec, "x_type");
  s.dtType = elementTypeOf(spec, "dt_type");
  s.bType = elementTypeOf(spec, "b_type");
  s.cType = elementTypeOf(spec, "c_type");
  s.zType = elementTypeOf(spec, "z_type");
  s.dType = elementTypeOf(spec, "d_type");
  s.dtBiasType = elementTypeOf(spec, "dt_bias_type");
  s.aType = elementTypeOf(spec, "a_type");
  s.stateType = elementTypeOf(spec, "state_type");
  s.yType = spec.get("y_f32") ? DType::F32 : elementTypeOf(spec, "y_type");
  s.slotType = models::slotType(spec);
  s.cuType = spec.get("cu_seqlens_i64") ? DType::I64 : DType::I32;
  s.acceptedType = spec.get("accepted_i64") ? DType::I64 : DType::I32;
  return s;
}

std::vector<KernelConstant> ssmUpdateConstants() {
  return {
      {"heads", 64, "SSM heads (H)", {}, sizeRange()},
      {"head_dim", 64, "head dim (P)", {}, sizeRange()},
      {"state", 128, "state size (N)", {}, tileRange()},
      {"groups", 8, "B/C groups (G)", {}, sizeRange()},
      {"block_p", 16, "state rows (p) per program", {8, 32}, tileRange()},
      {"warps", 4, "warps per program", {2, 8}, warpsRange()},
      aLog(),
      dtSoftplus(),
      stride("dt_stride", "row stride of dt; 0: its width (heads, or heads * head_dim "
                          "with per_p's dt bit)"),
      {"dt_col", 0, "first dt column in that row", {}, columnsRange()},
      yF32(),
      flag("dst_slots", "1: read the state from slots, write it to dst_slots"),
      slotsI64(),
      checked(),
      dependent(),
      elementType("y_type", "y (y_f32 = 1 is f32)"),
      elementType("x_type", "x (and B, C in one xBC row)"),
      elementType("dt_type", "dt"),
      elementType("b_type", "B"),
      elementType("c_type", "C"),
      elementType("z_type", "z"),
      f32ElementType("d_type", "D"),
      f32ElementType("dt_bias_type", "dt_bias"),
      f32ElementType("a_type", "A (or A_log)"),
      f32ElementType("state_type", "the SSM page (R8s: 16-bit pages round once "
                                   "to nearest even)"),
      flag("split", "1: x, B and C are separate operands with their own row strides; "
                    "0: column ranges of one xBC row"),
      stride("x_stride", "row stride of x with split; 0: heads * head_dim"),
      stride("b_stride", "row stride of B with split; 0: groups * state"),
      stride("c_stride", "row stride of C with split; 0: groups * state"),
      flag("gate", "1: y = (C.S + D x) * silu(z), z an operand"),
      stride("z_stride", "row stride of z; 0: heads * head_dim"),
      {"per_p",
       0,
       "bits: 1 dt, 2 dt_bias, 4 D vary over p ([heads, head_dim]); 8 A over "
       "p and n ([heads, head_dim, state]); clear: one per head",
       {},
       R::between(0, 15)},
      flag("varlen", "1: a program's sequence is the rows cu_seqlens[i] .. [i + 1], "
                     "stepped in order"),
      flag("cu_seqlens_i64", "1: cu_seqlens is i64"),
      flag("spec", "1: speculative decoding: read the slot at column "
                   "max(num_accepted_tokens[i] - 1, 0), store each token's state to its "
                   "dst_slots column"),
      flag("accepted_i64", "1: num_accepted_tokens is i64"),
      stride("slots_stride", "row stride of a 2-D slots table; 0: one slot per row"),
      stride("dst_stride", "row stride of a 2-D dst_slots table; 0: one slot per row"),
      flag("stochastic",
           "R8s: round a 16-bit page stochastically (bits from "
           "(seed, slot, element); parameter seed) instead of to nearest even"),
      {"random_mixes",
       2,
       "rounds of the counter-based hash behind stochastic's bits: one folds the "
       "slot into the program's key, the others act on each element pair's word",
       {},
       R::between(2, 16)},
      flag("pad_id", "1: a slot equal to the parameter pad_slot is padding too (vLLM's "
                     "null_block_id); negative slots always are")};
}

std::vector<ConstantRule> ssmUpdateRules() {
  std::vector<ConstantRule> rules = pageRules();
  rules.push_back(rule("dt_col + dt's width <= dt_stride (dt's width: heads, or "
                       "heads * head_dim with per_p's dt bit)",
                       {"dt_col", "dt_stride", "per_p"}, [](const Specialization &s) {
                         int64_t row =
                             s.get("dt_stride") ? s.get("dt_stride") : dtWidth(s);
                         return s.get("dt_col") + dtWidth(s) <= row;
                       }));
  rules.push_back(slotsI64NeedsChecks());
  rules.push_back(
      rule("one xBC row (split 0) has one element type and no strides of its own",
           {"split", "x_type", "b_type", "c_type", "x_stride", "b_stride", "c_stride"},
           [](const Specialization &s) {
             return s.get("split") ||
                    (s.get("b_type") == s.get("x_type") &&
                     s.get("c_type") == s.get("x_type") && !s.get("x_stride") &&
                     !s.get("b_stride") && !s.get("c_stride"));
           }));
  auto inner = [](const Specialization &s) { return s.get("heads") * s.get("head_dim"); };
  auto bc = [](const Specialization &s) { return s.get("groups") * s.get("state"); };
  rules.push_back(strideCovers("x_stride", inner, "heads * head_dim"));
  rules.push_back(strideCovers("z_stride", inner, "heads * head_dim"));
  rules.push_back(strideCovers("b_stride", bc, "groups * state"));
  rules.push_back(strideCovers("c_stride", bc, "groups * state"));
  rules.push_back(
      rule("y_f32 = 1 needs y_type = 0", {"y_f32", "y_type"},
           [](const Specialization &s) { return !s.get("y_f32") || !s.get("y_type"); }));
  rules.push_back(rule("spec needs dst_slots (the tokens' states go to its columns)",
                       {"spec", "dst_slots"}, [](const Specialization &s) {
                         return !s.get("spec") || s.get("dst_slots");
                       }));
  rules.push_back(rule("stochastic needs a 16-bit page (state_type 0 or 1)",
                       {"stochastic", "state_type"}, [](const Specialization &s) {
                         return !s.get("stochastic") || s.get("state_type") != 2;
                       }));
  return rules;
}

} // namespace tilejit::models
