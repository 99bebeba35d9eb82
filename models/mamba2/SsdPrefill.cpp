// R5p (docs/numerics.md#r5p-chunked-ssd-prefill): the chunked SSD of prefill over a
// packed varlen token stream (R9), reading initial states from the SSM page and writing
// final states back (R8). One program owns `block_p` rows of one head's [P, N] state and
// walks every chunk of the stream in order, carrying the state in registers as the f32
// accumulator of the chunk-state product: the stages of R5p (cumsum, chunk state, state
// passing, CB, output) are fused, so no chunk state ever goes to memory. The f32 operands
// of the tensor-core products (the decayed CB mix, the carried state, the decayed dt x)
// enter as hi + lo bf16 pairs. `a_log`, `dt_softplus` and `y_f32` serve callers with
// other conventions (tilejit.ops' mamba_chunk_scan_combined): A itself, dt without
// softplus, f32 y.
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

namespace {

/// v as hi + lo bf16 halves: a tensor-core product of both halves with an
/// exact bf16 operand carries v to ~16 bits instead of bf16's 8. Measured at
/// T = 8192 on the H200 against the f64 R5 (docs/BENCHMARKS.md): plain bf16
/// operands put 287 of 33.5 M y elements outside R5p's 1e-2 band, splitting
/// the state 31, the state and the mix 3.
/// The lo half is null in SsdPrecision::UpstreamBF16 (v rounded once).
std::pair<Value, Value> splitBF16(Value v, bool exact) {
  Value hi = v.to(DType::BF16);
  if (!exact)
    return {hi, Value()};
  return {hi, (v - hi.to(DType::F32)).to(DType::BF16)};
}

std::pair<Value, Value> transposeBoth(std::pair<Value, Value> halves) {
  return {transpose(halves.first, {1, 0}),
          halves.second.valid() ? transpose(halves.second, {1, 0}) : Value()};
}

/// acc + a.hi b (+ a.lo b): the product of a split operand.
Value dotSplit(std::pair<Value, Value> a, Value b, Value acc) {
  acc = dot(a.first, b, acc);
  return a.second.valid() ? dot(a.second, b, acc) : acc;
}
/// acc + a b.hi (+ a b.lo).
Value dotSplit(Value a, std::pair<Value, Value> b, Value acc) {
  acc = dot(a, b.first, acc);
  return b.second.valid() ? dot(a, b.second, acc) : acc;
}

} // namespace

void buildSsdPrefill(Kernel &k, const Specialization &spec) {
  const int64_t heads = spec.get("heads"), headDim = spec.get("head_dim");
  const int64_t stateSize = spec.get("state"), groups = spec.get("groups");
  const int64_t q = spec.get("chunk"), bp = spec.get("block_p");
  const int64_t dtStride = spec.get("dt_stride"), dtCol = spec.get("dt_col");
  const int64_t inner = heads * headDim, channels = inner + 2 * groups * stateSize;
  const bool aIsLog = spec.get("a_log") != 0, softplusDt = spec.get("dt_softplus") != 0;
  const DType yType = spec.get("y_f32") ? DType::F32 : DType::BF16;
  const bool exact = SsdPrecision(spec.get("precision")) == SsdPrecision::Exact;

  Value xBC =
      k.ptrParam("xbc", DType::BF16, {"?", channels}); // [T, channels], after the conv
  Value dtRaw =
      k.ptrParam("dt", DType::BF16,
                 {"?", dtStride}); // [T, dt_stride]: dt at columns dt_col + [0, heads)
  Value aParam = k.ptrParam(aIsLog ? "a_log" : "a", DType::F32, {heads}); // [heads]
  Value dtBias = k.ptrParam("dt_bias", DType::F32, {heads});              // [heads]
  Value dSkip = k.ptrParam("d", DType::F32, {heads});                     // [heads]
  Value cuSeqlens = k.ptrParam("cu_seqlens", DType::I32, {"?"});          // [S + 1]
  Value slots = k.ptrParam("slots", DType::I32, {"?"}); // [S], negative: padding
  Value init = k.ptrParam("init", DType::I32, {"?"});   // [S], 1: continue from the page
  Value chunkSeq = k.ptrParam("chunk_seq", DType::I32, {"chunks"});     // [chunks]
  Value chunkBegin = k.ptrParam("chunk_begin", DType::I32, {"chunks"}); // [chunks]
  Value chunkEnd = k.ptrParam("chunk_end", DType::I32, {"chunks"});     // [chunks]
  Value page =
      k.ptrParam("ssm_state", DType::F32,
                 {"?", heads, headDim, stateSize}); // [slots, heads, head_dim, state]
  Value y = k.ptrParam("y", yType, {"?", inner});   // [T, inner]
  Value numChunks = k.scalarParam("chunks", DType::I32);
  Value dtMin = k.scalarParam("dt_min", DType::F32);
  Value dtMax = k.scalarParam("dt_max", DType::F32);
  k.setConfig({{q, bp, stateSize}, spec.get("warps"), 1});

  Value p0 = programId(0) * bp, h = programId(1);
  Value g = h / (heads / groups);
  Value a = aIsLog ? -exp(load(aParam + h)) : load(aParam + h), bias = load(dtBias + h),
        dCoef = load(dSkip + h);
  Value pageHead = page + h * (headDim * stateSize);
  Value rowIdx = expandDims(arange(0, q), 1), colIdx = expandDims(arange(0, q), 0);
  Value causal = rowIdx >= colIdx;

  forRange(
      0, numChunks, 1, {zeros({bp, stateSize}, DType::F32)},
      [&](Value c, std::vector<Value> carried) -> std::vector<Value> {
        // A spare chunk (sequence -1, no tokens: prefillMetadata's
        // capacity padding) reads and writes nothing.
        Value rawSeq = load(chunkSeq + c);
        Value seq = maximum(rawSeq, 0);
        Value t0 = load(chunkBegin + c), t1 = load(chunkEnd + c);
        Value len = t1 - t0;
        Value slot = load(slots + seq);
        Value live = (slot >= 0) & (rawSeq >= 0);
        Value first = t0 == load(cuSeqlens + seq);
        Value last = t1 == load(cuSeqlens + seq + 1);
        // The page rows of this program; a view of 0 rows reads zeros
        // (a fresh or padding sequence) and touches no memory.
        Value slotPage =
            pageHead + maximum(slot, 0).to(DType::I64) * (heads * headDim * stateSize);
        Value initRows =
            where(live & (load(init + seq) != 0), constant(double(headDim), DType::I32),
                  constant(0, DType::I32));
        Value initial =
            load(makeView(slotPage, {Dim(initRows), stateSize}, {stateSize, 1}), {p0, 0},
                 {bp, stateSize});
        Value s = where(first, initial, carried[0]);

        // This chunk's rows; rows past `len` read zeros and are not written.
        Value rowBase = t0.to(DType::I64);
        auto rowsView = [&](Value base, int64_t cols) {
          return makeView(base, {Dim(len), cols}, {channels, 1});
        };
        Value x = load(rowsView(xBC + rowBase * channels + h * headDim, headDim), {0, p0},
                       {q, bp});
        Value bcBase = xBC + rowBase * channels + inner + g * stateSize;
        Value b = load(rowsView(bcBase, stateSize), {0, 0}, {q, stateSize});
        Value cm = load(rowsView(bcBase + groups * stateSize, stateSize), {0, 0},
                        {q, stateSize});
        // R4 and R5p step 1: dt' (0 on padded rows) and its decay cumsum.
        Value dtTile =
            load(makeView(dtRaw + rowBase * dtStride + dtCol + h, {Dim(len)}, {dtStride}),
                 {0}, {q})
                .to(DType::F32);
        Value dtIn = dtTile + bias;
        Value dt = where(
            arange(0, q) < len,
            minimum(maximum(softplusDt ? softplus(dtIn) : dtIn, dtMin), dtMax), 0.0);
        Value lam = cumsum(dt * a, 0);
        Value lamEnd = sum(dt * a, 0);

        // Steps 4-5: y = exp(L_i) C_i S_in + sum_j<=i CB_ij exp(L_i - L_j) dt_j x_j + D
        // x_i.
        Value cb = dot(cm, transpose(b, {1, 0}), zeros({q, q}, DType::F32));
        Value decay = where(
            causal, exp(minimum(expandDims(lam, 1) - expandDims(lam, 0), 0.0)), 0.0);
        Value mixF = cb * decay * expandDims(dt, 0);
        Value yTile = dotSplit(splitBF16(mixF, exact), x, zeros({q, bp}, DType::F32));
        // Split, then transpose each bf16 half: a transpose feeding a dot
        // operand folds into the operand's one trip through shared memory.
        Value carry =
            dotSplit(cm, transposeBoth(splitBF16(s, exact)), zeros({q, bp}, DType::F32));
        yTile = yTile + carry * expandDims(exp(lam), 1) + x.to(DType::F32) * dCoef;
        View yView =
            makeView(y + rowBase * inner + h * headDim, {Dim(len), headDim}, {inner, 1});
        store(yView, {0, p0}, where(live, yTile, 0.0).to(yType));

        // Steps 2-3: S_out = exp(L_end) S_in + sum_i exp(L_end - L_i) dt_i x_i (x) B_i.
        Value w = exp(minimum(lamEnd - lam, 0.0)) * dt;
        Value next =
            dotSplit(transposeBoth(splitBF16(x.to(DType::F32) * expandDims(w, 1), exact)),
                     b, s * exp(lamEnd));
        ifThen(last & live, [&] {
          store(makeView(slotPage, {headDim, stateSize}, {stateSize, 1}), {p0, 0}, next);
        });
        return {next};
      });
}

} // namespace tilejit::models
