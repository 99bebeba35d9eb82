// R3d (docs/numerics.md#r3d-conv-update-decode): one token per sequence through the
// causal depthwise conv and SiLU; the conv state page [slots, channels, 3] (oldest tap
// first) is shifted in place. A negative slot (with `null_block`, also vLLM's null
// block id) is a padding row: state untouched, output 0. `x_stride` and `x_col` read x in
// place from a wider row (decode's in_proj output, z | xBC | dt); `state_layout` 1 takes
// vLLM's channel-last page ([slots, 3, channels] in memory). With `checked` (tilejit.ops,
// OpChecks.h) a row whose slot is past the page's `num_slots` touches no state, writes
// NaN and records the error; `slots_i64` takes i64 slot tables as they are given. Any
// other value of the constants of tilejit.ops' forms (element types, width, tokens,
// `general`, ...) builds the general form of ConvUpdateForms.cpp instead.
#include "ConvForms.h"
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <cmath>

namespace tilejit::models {

void buildConvUpdate(Kernel &k, const Specialization &spec) {
  if (!convUpdateIsPlanForm(spec))
    return buildConvUpdateForm(k, spec);
  const int64_t channels = spec.get("channels"), block = spec.get("block");
  const int64_t xStride = spec.get("x_stride") ? spec.get("x_stride") : channels;
  const int64_t xCol = spec.get("x_col");
  const bool channelLast = spec.get("state_layout") != 0;
  Value x =
      k.ptrParam("x", DType::BF16,
                 {"?", xStride}); // [batch, x_stride]: x in columns x_col + [0, channels)
  const ParamDim pages = spec.get("checked") ? ParamDim("num_slots") : ParamDim("?");
  Value state = k.ptrParam(
      "conv_state", DType::BF16,
      channelLast ? std::vector<ParamDim>{pages, 3, channels}
                  : std::vector<ParamDim>{pages, channels, 3}); // a page per slot
  const DType slotDType = slotType(spec);
  Value slots = k.ptrParam("slots", slotDType, {"?"});             // [batch]
  Value weight = k.ptrParam("weight", DType::BF16, {channels, 4}); // [channels, 4]
  Value bias = k.ptrParam("bias", DType::BF16, {channels});        // [channels]
  Value out = k.ptrParam("out", DType::BF16, {"?", channels});     // [batch, channels]
  const std::optional<Value> nullBlockId = declareNullBlock(k, spec);
  const OpCheck check = OpCheck::declare(k, spec.get("checked") != 0);
  std::optional<Value> numSlots;
  if (check.enabled)
    numSlots = k.scalarParam("num_slots", DType::I32);
  k.setConfig({{block}, /*warps=*/4, /*stages=*/1, /*vector=*/1});
  k.markInvariant(weight);
  k.markInvariant(bias);
  dependentStart(spec);

  Value seq = programId(0);
  Value slot = load(slots + seq);
  Value cols = programId(1) * block + arange(0, block);
  Value inRange = cols < channels;
  Value seq64 = seq.to(DType::I64);
  Value xt = load(x + seq64 * xStride + (xCol ? cols + xCol : cols), inRange, 0.0);
  ConvOperands conv{state, weight, bias, channels, channelLast};
  Value live = realSlot(slot, nullBlockId);
  std::optional<Value> past;
  if (check.enabled) {
    Value pagesValue = numSlots->to(slotDType);
    past = slot >= pagesValue;
    live = live & (slot < pagesValue);
    check.record(*past & (programId(1) == 0), OpError::SlotOutOfRange, seq);
  }
  Value y = convUpdate(conv, slot, live, cols, inRange, xt);
  if (past)
    y = where(*past, full(y.shape(), std::nan(""), DType::BF16), y);
  store(out + seq64 * channels + cols, y, inRange);
}

/// Tuned per batch size: its tuning database entries are bucketed by rows.
KernelDef convUpdateKernel() {
  std::vector<KernelConstant> constants = {
      {"channels", 6144, "conv channels (I + 2*G*N)", {}, sizeRange()},
      {"block", 256, "channels per program", {128, 512, 1024}, tileRange()},
      {"x_stride",
       0,
       "row stride of x; 0: channels (x read in place from a wider row)",
       {},
       columnsRange()},
      {"x_col", 0, "first x column in that row", {}, columnsRange()},
      stateLayout(),
      slotsI64(),
      checked(),
      dependent()};
  for (auto forms : {convFormConstants(), convUpdateFormConstants()})
    constants.insert(constants.end(), forms.begin(), forms.end());
  // The general form takes every stride as a parameter.
  ConstantRule generalStrides{
      "outside the plans' form (bf16, width 4, one token, SiLU, a bias), x_stride, "
      "x_col and state_layout stay 0 (strides are parameters)",
      {"x_stride", "x_col", "state_layout"},
      [](const Specialization &s) {
        return convUpdateIsPlanForm(s) ||
               (!s.get("x_stride") && !s.get("x_col") && !s.get("state_layout"));
      }};
  return {"conv_update",
          "R3d causal conv1d update (+ SiLU), conv state shifted in place",
          constants,
          buildConvUpdate,
          {zeroOrAtLeast("x_stride", "channels"),
           columnsWithin("x_col", "channels", "x_stride"), slotsI64NeedsChecks(),
           generalStrides},
          {"rows"}};
}

} // namespace tilejit::models
