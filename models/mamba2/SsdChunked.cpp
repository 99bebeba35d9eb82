// R5p (reference-math.md) as three launches over a packed varlen stream (R9)
// whose chunk-local work is parallel over (chunk, head) programs:
//   ssd_chunk_state    S_loc[c] = sum_i exp(L_end - L_i) dt'_i x_i (x) B_i      (R5p 1-2)
//   ssd_state_passing  S_in[c+1] = exp(L_end[c]) S_in[c] + S_loc[c], pages in/out (R5p 3)
//   ssd_chunk_scan     y_i = exp(L_i) C_i S_in[c] + sum_j<=i CB_ij exp(L_i - L_j) dt'_j x_j
//                            + D x_i                                              (R5p 4-5)
// The chunk states travel through one f32 scratch [chunks, H, P, N] that
// state passing overwrites in place with S_in. Only state passing walks the
// chunks in order, and it is elementwise. The f32 operands of the
// tensor-core products enter as hi + lo bf16 pairs (see SsdPrefill.cpp).
#include "tilejit/models/Kernels.h"

namespace tilejit::models {
namespace {

std::pair<Value, Value> splitBF16(Value v) {
  Value hi = v.to(DType::BF16);
  return {hi, (v - hi.to(DType::F32)).to(DType::BF16)};
}

/// The geometry constants the three kernels share.
struct SsdGeometry {
  int64_t heads, headDim, state, groups, q, bp, dtStride, dtCol, inner, channels;

  explicit SsdGeometry(const Specialization &s)
      : heads(s.get("heads")), headDim(s.get("head_dim")), state(s.get("state")),
        groups(s.get("groups")), q(s.get("chunk")), bp(s.get("block_p")),
        dtStride(s.get("dt_stride")), dtCol(s.get("dt_col")), inner(heads * headDim),
        channels(inner + 2 * groups * state) {}
};

/// One chunk of one head as the chunk-parallel kernels see it: rows past
/// `len` read zeros and have dt' = 0, so they add nothing.
struct SsdChunk {
  Value rowBase, len;
  Value x;       ///< [q, bp] bf16
  Value b, cm;   ///< [q, N] bf16 (B and C of the head's group)
  Value dt;      ///< [q] f32, R4's dt'
  Value lam;     ///< [q] f32, the inclusive cumsum of dt' A
  Value lamEnd;  ///< f32 scalar, L at the chunk's end
};

SsdChunk loadChunk(const SsdGeometry &g, Value xBC, Value dtRaw, Value aLog, Value dtBias,
                   Value chunkBegin, Value chunkEnd, Value dtMin, Value dtMax, Value c,
                   Value h, Value p0, bool withC) {
  SsdChunk ch;
  Value t0 = load(chunkBegin + c);
  ch.len = load(chunkEnd + c) - t0;
  ch.rowBase = t0.to(DType::I64);
  Value grp = h / (g.heads / g.groups);
  auto rows = [&](Value base, int64_t cols) {
    return makeView(base, {Dim(ch.len), cols}, {g.channels, 1});
  };
  ch.x = load(rows(xBC + ch.rowBase * g.channels + h * g.headDim, g.headDim), {0, p0},
              {g.q, g.bp});
  Value bcBase = xBC + ch.rowBase * g.channels + g.inner + grp * g.state;
  ch.b = load(rows(bcBase, g.state), {0, 0}, {g.q, g.state});
  if (withC)
    ch.cm = load(rows(bcBase + g.groups * g.state, g.state), {0, 0}, {g.q, g.state});
  Value raw = load(makeView(dtRaw + ch.rowBase * g.dtStride + g.dtCol + h, {Dim(ch.len)},
                            {g.dtStride}),
                   {0}, {g.q})
                  .to(DType::F32);
  Value a = -exp(load(aLog + h));
  ch.dt = where(arange(0, int(g.q)) < ch.len,
                minimum(maximum(softplus(raw + load(dtBias + h)), dtMin), dtMax), 0.0);
  ch.lam = cumsum(ch.dt * a, 0);
  ch.lamEnd = sum(ch.dt * a, 0);
  return ch;
}

/// The scratch's [P, N] state of chunk c, head h.
Value stateOf(const SsdGeometry &g, Value states, Value c, Value h) {
  return states + (c.to(DType::I64) * g.heads + h.to(DType::I64)) * (g.headDim * g.state);
}

} // namespace

void buildSsdChunkState(Kernel &k, const Specialization &spec) {
  const SsdGeometry g(spec);
  Value xBC = k.ptrParam("xbc", DType::BF16);
  Value dtRaw = k.ptrParam("dt", DType::BF16);
  Value aLog = k.ptrParam("a_log", DType::F32);
  Value dtBias = k.ptrParam("dt_bias", DType::F32);
  Value chunkBegin = k.ptrParam("chunk_begin", DType::I32);
  Value chunkEnd = k.ptrParam("chunk_end", DType::I32);
  Value states = k.ptrParam("states", DType::F32); // [chunks, H, P, N]: S_loc out
  Value decay = k.ptrParam("decay", DType::F32);   // [chunks, H]: exp(L_end) out
  Value dtMin = k.scalarParam("dt_min", DType::F32);
  Value dtMax = k.scalarParam("dt_max", DType::F32);
  k.setConfig({{g.q, g.bp, g.state}, spec.get("warps"), 1});

  Value c = programId(0), h = programId(1), p0 = programId(2) * g.bp;
  SsdChunk ch = loadChunk(g, xBC, dtRaw, aLog, dtBias, chunkBegin, chunkEnd, dtMin, dtMax, c,
                          h, p0, false);
  Value w = exp(minimum(ch.lamEnd - ch.lam, 0.0)) * ch.dt;
  auto [xw, xwLo] = splitBF16(transpose(ch.x.to(DType::F32) * expandDims(w, 1), {1, 0}));
  Value local = dot(xwLo, ch.b, dot(xw, ch.b, zeros({g.bp, g.state}, DType::F32)));
  store(makeView(stateOf(g, states, c, h), {g.headDim, g.state}, {g.state, 1}), {p0, 0},
        local);
  ifThen(programId(2) == 0, [&] {
    store(makeView(decay + c.to(DType::I64) * g.heads + h.to(DType::I64), {1}, {1}), {0},
          full({1}, exp(ch.lamEnd), DType::F32));
  });
}

void buildSsdStatePassing(Kernel &k, const Specialization &spec) {
  const int64_t heads = spec.get("heads"), block = spec.get("block");
  const int64_t perHead = spec.get("head_dim") * spec.get("state");
  Value states = k.ptrParam("states", DType::F32); // S_loc in, S_in out
  Value decay = k.ptrParam("decay", DType::F32);
  Value cuSeqlens = k.ptrParam("cu_seqlens", DType::I32);
  Value slots = k.ptrParam("slots", DType::I32);
  Value init = k.ptrParam("init", DType::I32);
  Value chunkSeq = k.ptrParam("chunk_seq", DType::I32);
  Value chunkBegin = k.ptrParam("chunk_begin", DType::I32);
  Value chunkEnd = k.ptrParam("chunk_end", DType::I32);
  Value page = k.ptrParam("ssm_state", DType::F32); // [slots, H, P, N]
  Value numChunks = k.scalarParam("chunks", DType::I32);
  k.setConfig({{block}, spec.get("warps"), 1, 4});

  Value e0 = programId(0) * block, h = programId(1);
  forRange(0, numChunks, 1, {zeros({block}, DType::F32)},
           [&](Value c, std::vector<Value> carried) -> std::vector<Value> {
             Value seq = load(chunkSeq + c);
             Value slot = load(slots + seq);
             Value live = slot >= 0;
             Value first = load(chunkBegin + c) == load(cuSeqlens + seq);
             Value last = load(chunkEnd + c) == load(cuSeqlens + seq + 1);
             Value slotPage =
                 page + maximum(slot, 0).to(DType::I64) * (heads * perHead) + h * perHead;
             // A view of 0 elements reads zeros: a fresh or padding sequence.
             Value initElems = where(live & (load(init + seq) != 0),
                                     constant(double(perHead), DType::I32),
                                     constant(0, DType::I32));
             Value initial = load(makeView(slotPage, {Dim(initElems)}, {1}), {e0}, {block});
             Value s = where(first, initial, carried[0]);
             Value head = c.to(DType::I64) * heads + h.to(DType::I64);
             View here = makeView(states + head * perHead, {perHead}, {1});
             Value local = load(here, {e0}, {block});
             // The same thread reads S_loc and writes S_in of each element.
             store(here, {e0}, s);
             Value next = s * load(decay + head) + local;
             ifThen(last & live,
                    [&] { store(makeView(slotPage, {perHead}, {1}), {e0}, next); });
             return {next};
           });
}

void buildSsdChunkScan(Kernel &k, const Specialization &spec) {
  const SsdGeometry g(spec);
  Value xBC = k.ptrParam("xbc", DType::BF16);
  Value dtRaw = k.ptrParam("dt", DType::BF16);
  Value aLog = k.ptrParam("a_log", DType::F32);
  Value dtBias = k.ptrParam("dt_bias", DType::F32);
  Value dSkip = k.ptrParam("d", DType::F32);
  Value slots = k.ptrParam("slots", DType::I32);
  Value chunkSeq = k.ptrParam("chunk_seq", DType::I32);
  Value chunkBegin = k.ptrParam("chunk_begin", DType::I32);
  Value chunkEnd = k.ptrParam("chunk_end", DType::I32);
  Value states = k.ptrParam("states", DType::F32); // S_in of each chunk
  Value y = k.ptrParam("y", DType::BF16);          // [T, inner]
  Value dtMin = k.scalarParam("dt_min", DType::F32);
  Value dtMax = k.scalarParam("dt_max", DType::F32);
  k.setConfig({{g.q, g.bp, g.state}, spec.get("warps"), 1});

  Value c = programId(0), h = programId(1), p0 = programId(2) * g.bp;
  SsdChunk ch = loadChunk(g, xBC, dtRaw, aLog, dtBias, chunkBegin, chunkEnd, dtMin, dtMax, c,
                          h, p0, true);
  Value causal = expandDims(arange(0, int(g.q)), 1) >= expandDims(arange(0, int(g.q)), 0);
  Value cb = dot(ch.cm, transpose(ch.b, {1, 0}), zeros({g.q, g.q}, DType::F32));
  Value decayTile = where(
      causal, exp(minimum(expandDims(ch.lam, 1) - expandDims(ch.lam, 0), 0.0)), 0.0);
  auto [mix, mixLo] = splitBF16(cb * decayTile * expandDims(ch.dt, 0));
  Value yTile = dot(mixLo, ch.x, dot(mix, ch.x, zeros({g.q, g.bp}, DType::F32)));
  Value sIn = load(makeView(stateOf(g, states, c, h), {g.headDim, g.state}, {g.state, 1}),
                   {p0, 0}, {g.bp, g.state});
  auto [sHi, sLo] = splitBF16(transpose(sIn, {1, 0}));
  Value carry = dot(ch.cm, sLo, dot(ch.cm, sHi, zeros({g.q, g.bp}, DType::F32)));
  yTile = yTile + carry * expandDims(exp(ch.lam), 1) + ch.x.to(DType::F32) * load(dSkip + h);
  Value live = load(slots + load(chunkSeq + c)) >= 0;
  store(makeView(y + ch.rowBase * g.inner + h * g.headDim, {Dim(ch.len), g.headDim},
                 {g.inner, 1}),
        {0, p0}, where(live, yTile, 0.0).to(DType::BF16));
}

} // namespace tilejit::models
