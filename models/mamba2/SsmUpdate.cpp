// R5d (docs/numerics.md#r5d-state-update-decode): the selective state update of decode.
// One program owns `block_p` rows of one head's [P, N] f32 state in the slot's page,
// updates them in place and writes y from the un-rounded new state. R4's dt' and decay
// are computed per program (a handful of scalar ops). A padding row (negative
// slot) leaves its page alone and writes y = 0. The constants after the
// geometry serve callers with other conventions (tilejit.ops'
// selective_state_update): A itself instead of A_log, dt without softplus, dt
// rows of any stride, an f32 y, and a second slot list the new state is
// written to (read from `slots`, written to `dst_slots`). `dt_col` reads dt in
// place from decode's in_proj output row (z | xBC | dt). With `checked`
// (tilejit.ops, OpChecks.h) a row whose slot is past the page's `num_slots`
// touches no state, writes NaN and records the error; `slots_i64` takes i64
// slot tables as they are given.
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <cmath>

namespace tilejit::models {

void buildSsmUpdate(Kernel &k, const Specialization &spec) {
  const int64_t heads = spec.get("heads"), headDim = spec.get("head_dim");
  const int64_t stateSize = spec.get("state"), groups = spec.get("groups");
  const int64_t bp = spec.get("block_p");
  const int64_t inner = heads * headDim, channels = inner + 2 * groups * stateSize;
  const bool aIsLog = spec.get("a_log") != 0, softplusDt = spec.get("dt_softplus") != 0;
  const int64_t dtStride = spec.get("dt_stride") ? spec.get("dt_stride") : heads;
  const int64_t dtCol = spec.get("dt_col");
  const DType yType = spec.get("y_f32") ? DType::F32 : DType::BF16;
  const bool dstSlots = spec.get("dst_slots") != 0;

  Value xBC =
      k.ptrParam("xbc", DType::BF16, {"?", channels}); // [rows, channels], after the conv
  Value dtRaw = k.ptrParam(
      "dt", DType::BF16, {"?", dtStride}); // [rows, dt_stride]: dt at dt_col + [0, heads)
  Value aParam = k.ptrParam(aIsLog ? "a_log" : "a", DType::F32, {heads}); // [heads]
  Value dtBias = k.ptrParam("dt_bias", DType::F32, {heads});              // [heads]
  Value dSkip = k.ptrParam("d", DType::F32, {heads});                     // [heads]
  const DType slotDType = slotType(spec);
  Value slots = k.ptrParam("slots", slotDType, {"?"}); // [rows]
  std::optional<Value> dstSlotList;
  if (dstSlots)
    dstSlotList = k.ptrParam("dst_slots", slotDType, {"?"}); // [rows]
  // [slots, heads, head_dim, state]; checked: num_slots of them
  Value page = k.ptrParam("ssm_state", DType::F32,
                          {spec.get("checked") ? ParamDim("num_slots") : ParamDim("?"),
                           heads, headDim, stateSize});
  Value y = k.ptrParam("y", yType, {"?", inner}); // [rows, inner]
  Value dtMin = k.scalarParam("dt_min", DType::F32);
  Value dtMax = k.scalarParam("dt_max", DType::F32);
  const OpCheck check = OpCheck::declare(k, spec.get("checked") != 0);
  std::optional<Value> numSlots;
  if (check.enabled)
    numSlots = k.scalarParam("num_slots", DType::I32);
  // Four elements per thread: the f32 state (16 bytes) and the bf16 operands
  // (8 bytes) then share one layout.
  k.setConfig({{bp, stateSize}, spec.get("warps"), 1, 4});
  for (Value invariant : {aParam, dtBias, dSkip})
    k.markInvariant(invariant);
  dependentStart(spec);

  Value p0 = programId(0) * bp, h = programId(1), row = programId(2);
  Value g = h / (heads / groups);
  Value slot = load(slots + row);
  Value dstSlot = dstSlotList ? load(*dstSlotList + row) : slot;
  Value row64 = row.to(DType::I64);
  Value xRow = xBC + row64 * channels + h * headDim;
  View yView = makeView(y + row64 * inner + h * headDim, {headDim}, {1});

  Value padding = dstSlotList ? (slot < 0) | (dstSlot < 0) : slot < 0;
  Value live = dstSlotList ? (slot >= 0) & (dstSlot >= 0) : slot >= 0;
  ifThen(padding, [&] { store(yView, {p0}, zeros({bp}, yType)); });
  if (check.enabled) {
    Value pages = numSlots->to(slotDType);
    Value srcPast = live & (slot >= pages), dstPast = live & (dstSlot >= pages);
    Value past = srcPast | dstPast;
    live = live & (slot < pages) & (dstSlot < pages);
    ifThen(past, [&] { store(yView, {p0}, full({bp}, std::nan(""), yType)); });
    // One program of the row records: the others would store the same word.
    Value recorder = (programId(0) == 0) & (h == 0);
    check.record(recorder & srcPast, OpError::SlotOutOfRange, row);
    check.record(recorder & dstPast & (slot < pages), OpError::DstSlotOutOfRange, row);
  }
  ifThen(live, [&] {
    // R4: dt' = clamp(softplus(dt + dt_bias)); the decay exp(A dt'), A = -exp(A_log).
    Value dtIn = load(dtRaw + row64 * dtStride + (dtCol ? h + dtCol : h)).to(DType::F32) +
                 load(dtBias + h);
    Value dt = minimum(maximum(softplusDt ? softplus(dtIn) : dtIn, dtMin), dtMax);
    Value decay = aIsLog ? exp(-exp(load(aParam + h)) * dt) : exp(load(aParam + h) * dt);
    // x, B and C are read as [bp, N] views with a zero stride (x[p] along n,
    // B[n] and C[n] along p): every operand arrives in the state's layout, so
    // nothing passes through shared memory.
    auto broadcastView = [&](Value base, int64_t pStride, int64_t nStride) {
      return makeView(base, {headDim, stateSize}, {pStride, nStride});
    };
    Value bcOffset = xBC + row64 * channels + inner + g * stateSize;
    Value x = load(broadcastView(xRow, 1, 0), {p0, 0}, {bp, stateSize}).to(DType::F32);
    Value b =
        load(broadcastView(bcOffset, 0, 1), {p0, 0}, {bp, stateSize}).to(DType::F32);
    Value c =
        load(broadcastView(bcOffset + groups * stateSize, 0, 1), {p0, 0}, {bp, stateSize})
            .to(DType::F32);
    auto stateView = [&](Value slotOf) {
      Value base = page + slotOf.to(DType::I64) * (heads * headDim * stateSize);
      return makeView(base + h * (headDim * stateSize), {headDim, stateSize},
                      {stateSize, 1});
    };
    View src = stateView(slot);
    Value s = load(src, {p0, 0}, {bp, stateSize}) * decay + (x * dt) * b;
    store(dstSlotList ? stateView(dstSlot) : src, {p0, 0}, s);
    Value xp = load(makeView(xRow, {headDim}, {1}), {p0}, {bp}).to(DType::F32);
    store(yView, {p0}, (sum(s * c, 1) + load(dSkip + h) * xp).to(yType));
  });
}

KernelDef ssmUpdateKernel() {
  std::vector<ConstantRule> rules = pageRules();
  rules.push_back(zeroOrAtLeast("dt_stride", "heads"));
  rules.push_back(columnsWithin("dt_col", "heads", "dt_stride"));
  rules.push_back(slotsI64NeedsChecks());
  return {"ssm_update",
          "R5d selective state update, SSM page updated in place",
          {{"heads", 64, "SSM heads (H)", {}, sizeRange()},
           {"head_dim", 64, "head dim (P)", {}, sizeRange()},
           {"state", 128, "state size (N)", {}, tileRange()},
           {"groups", 8, "B/C groups (G)", {}, sizeRange()},
           {"block_p", 16, "state rows (p) per program", {}, tileRange()},
           {"warps", 4, "warps per program", {}, warpsRange()},
           aLog(),
           dtSoftplus(),
           {"dt_stride", 0, "row stride of dt; 0: heads", {}, columnsRange()},
           {"dt_col", 0, "first dt column in that row", {}, columnsRange()},
           yF32(),
           {"dst_slots",
            0,
            "1: read the state from slots, write it to dst_slots",
            {},
            ConstantRange::flag()},
           slotsI64(),
           checked(),
           dependent()},
          buildSsmUpdate,
          std::move(rules)};
}

} // namespace tilejit::models
