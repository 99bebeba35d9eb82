// R5d (docs/numerics.md#r5d-state-update-decode): the selective state update of decode.
// One program owns `block_p` rows of one head's [P, N] f32 state in the slot's page,
// updates them in place and writes y from the un-rounded new state. R4's dt' and decay
// are computed per program (a handful of scalar ops). A padding row (negative slot)
// leaves its page alone and writes y = 0.
#include "tilejit/models/Kernels.h"

namespace tilejit::models {

void buildSsmUpdate(Kernel &k, const Specialization &spec) {
  const int64_t heads = spec.get("heads"), headDim = spec.get("head_dim");
  const int64_t stateSize = spec.get("state"), groups = spec.get("groups");
  const int64_t bp = spec.get("block_p");
  const int64_t inner = heads * headDim, channels = inner + 2 * groups * stateSize;

  Value xBC = k.ptrParam("xbc", DType::BF16, {"?", channels});      // [rows, channels], after the conv
  Value dtRaw = k.ptrParam("dt", DType::BF16, {"?", heads});     // [rows, heads]
  Value aLog = k.ptrParam("a_log", DType::F32, {heads});    // [heads]
  Value dtBias = k.ptrParam("dt_bias", DType::F32, {heads}); // [heads]
  Value dSkip = k.ptrParam("d", DType::F32, {heads});       // [heads]
  Value slots = k.ptrParam("slots", DType::I32, {"?"});   // [rows]
  Value page = k.ptrParam("ssm_state", DType::F32, {"?", heads, headDim, stateSize}); // [slots, heads, head_dim, state]
  Value y = k.ptrParam("y", DType::BF16, {"?", inner});          // [rows, inner]
  Value dtMin = k.scalarParam("dt_min", DType::F32);
  Value dtMax = k.scalarParam("dt_max", DType::F32);
  // Four elements per thread: the f32 state (16 bytes) and the bf16 operands
  // (8 bytes) then share one layout.
  k.setConfig({{bp, stateSize}, spec.get("warps"), 1, 4});

  Value p0 = programId(0) * bp, h = programId(1), row = programId(2);
  Value g = h / (heads / groups);
  Value slot = load(slots + row);
  Value row64 = row.to(DType::I64);
  Value xRow = xBC + row64 * channels + h * headDim;
  View yView = makeView(y + row64 * inner + h * headDim, {headDim}, {1});

  ifThen(slot < 0, [&] { store(yView, {p0}, zeros({bp}, DType::BF16)); });
  ifThen(slot >= 0, [&] {
    // R4: dt' = clamp(softplus(dt + dt_bias)); the decay exp(A dt'), A = -exp(A_log).
    Value dt = minimum(maximum(softplus(load(dtRaw + row64 * heads + h).to(DType::F32) +
                                        load(dtBias + h)),
                               dtMin),
                       dtMax);
    Value decay = exp(-exp(load(aLog + h)) * dt);
    // x, B and C are read as [bp, N] views with a zero stride (x[p] along n,
    // B[n] and C[n] along p): every operand arrives in the state's layout, so
    // nothing passes through shared memory.
    auto broadcastView = [&](Value base, int64_t pStride, int64_t nStride) {
      return makeView(base, {headDim, stateSize}, {pStride, nStride});
    };
    Value bcOffset = xBC + row64 * channels + inner + g * stateSize;
    Value x = load(broadcastView(xRow, 1, 0), {p0, 0}, {bp, stateSize}).to(DType::F32);
    Value b = load(broadcastView(bcOffset, 0, 1), {p0, 0}, {bp, stateSize}).to(DType::F32);
    Value c = load(broadcastView(bcOffset + groups * stateSize, 0, 1), {p0, 0},
                   {bp, stateSize})
                  .to(DType::F32);
    Value base = page + slot.to(DType::I64) * (heads * headDim * stateSize);
    View sView = makeView(base + h * (headDim * stateSize), {headDim, stateSize},
                          {stateSize, 1});
    Value s = load(sView, {p0, 0}, {bp, stateSize}) * decay + (x * dt) * b;
    store(sView, {p0, 0}, s);
    Value xp = load(makeView(xRow, {headDim}, {1}), {p0}, {bp}).to(DType::F32);
    store(yView, {p0}, (sum(s * c, 1) + load(dSkip + h) * xp).to(DType::BF16));
  });
}

} // namespace tilejit::models
