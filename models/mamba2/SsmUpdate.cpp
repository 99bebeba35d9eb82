// R5d (reference-math.md): the selective state update of decode. One program
// owns `block_p` rows of one head's [P, N] f32 state in the slot's page, updates
// them in place and writes y from the un-rounded new state. R4's dt' and decay
// are computed per program (a handful of scalar ops). A padding row (negative
// slot) leaves its page alone and writes y = 0.
#include "tilejit/models/Kernels.h"

namespace tilejit::models {

void buildSsmUpdate(Kernel &k, const Specialization &spec) {
  const int64_t heads = spec.get("heads"), headDim = spec.get("head_dim");
  const int64_t stateSize = spec.get("state"), groups = spec.get("groups");
  const int64_t bp = spec.get("block_p");
  const int64_t inner = heads * headDim, channels = inner + 2 * groups * stateSize;

  Value xBC = k.ptrParam("xbc", DType::BF16);      // [rows, channels], after the conv
  Value dtRaw = k.ptrParam("dt", DType::BF16);     // [rows, heads]
  Value aLog = k.ptrParam("a_log", DType::F32);    // [heads]
  Value dtBias = k.ptrParam("dt_bias", DType::F32); // [heads]
  Value dSkip = k.ptrParam("d", DType::F32);       // [heads]
  Value slots = k.ptrParam("slots", DType::I32);   // [rows]
  Value page = k.ptrParam("ssm_state", DType::F32); // [slots, heads, head_dim, state]
  Value y = k.ptrParam("y", DType::BF16);          // [rows, inner]
  Value dtMin = k.scalarParam("dt_min", DType::F32);
  Value dtMax = k.scalarParam("dt_max", DType::F32);
  k.setConfig({{bp, stateSize}, spec.get("warps"), 1, 4});

  Value p0 = programId(0) * bp, h = programId(1), row = programId(2);
  Value g = h / (heads / groups);
  Value slot = load(slots + row);
  Value row64 = row.to(DType::I64);
  // Every operand is a 2-D view tile ([bp, 1] columns, [1, N] rows) so it
  // broadcasts against the [bp, N] state in the state's own layout.
  Value xRow = xBC + row64 * channels;
  View yView = makeView(y + row64 * inner + h * headDim, {headDim, 1}, {1, 1});

  ifThen(slot < 0, [&] { store(yView, {p0, 0}, zeros({bp, 1}, DType::BF16)); });
  ifThen(slot >= 0, [&] {
    // R4: dt' = clamp(softplus(dt + dt_bias)); the decay exp(A dt'), A = -exp(A_log).
    Value dt = minimum(maximum(softplus(load(dtRaw + row64 * heads + h).to(DType::F32) +
                                        load(dtBias + h)),
                               dtMin),
                       dtMax);
    Value decay = exp(-exp(load(aLog + h)) * dt);
    View xView = makeView(xRow + h * headDim, {headDim, 1}, {1, 1});
    View bView = makeView(xRow + inner + g * stateSize, {1, stateSize}, {stateSize, 1});
    View cView =
        makeView(xRow + inner + (groups + g) * stateSize, {1, stateSize}, {stateSize, 1});
    Value x = load(xView, {p0, 0}, {bp, 1}).to(DType::F32);
    Value b = load(bView, {0, 0}, {1, stateSize}).to(DType::F32);
    Value c = load(cView, {0, 0}, {1, stateSize}).to(DType::F32);
    Value base = page + slot.to(DType::I64) * (heads * headDim * stateSize);
    View sView = makeView(base + h * (headDim * stateSize), {headDim, stateSize},
                          {stateSize, 1});
    Value s = load(sView, {p0, 0}, {bp, stateSize});
    s = s * decay + (x * dt) * b;
    store(sView, {p0, 0}, s);
    Value out = expandDims(sum(s * c, 1), 1) + load(dSkip + h) * x;
    store(yView, {p0, 0}, out.to(DType::BF16));
  });
}

} // namespace tilejit::models
