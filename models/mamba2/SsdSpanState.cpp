// ssd_span_state (docs/numerics.md#r5p-chunked-ssd-prefill): each span's tail state
// (R5p steps 2-3 over the span's chunks from its last sequence start) summed from
// zero, and the tail's decay exponent, for ssd_state_pass. Two forms:
// - the chunk walk (window = 0): one program per block of state rows walks the
//   span's chunks, carrying the state as the accumulator of each chunk's product
//   and decaying it between chunks;
// - the tail as one product over its tokens (window > 0): the state is
//   sum_t exp(L_end - L_t) dt_t x_t (x) B_t, so with each token's weight known the
//   tail is a GEMM over K = its tokens, taken in windows of `window` tokens from the
//   tail's end backwards (the decay of the windows after a window is then a running
//   sum). Its K loop loads B at an offset of the loop index, so tile-pipeline-dots
//   stages B and, on sm_90a with 64 rows on 4 warps, the product runs on wgmma with
//   the weighted x^T as A from registers. With hi + lo halves each half takes a loop
//   of its own: a staged load feeds one dot.
#include "Parts.h"
#include "Registration.h"
#include "SsdChunk.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

namespace {

struct SpanStateParams {
  Value cuSeqlens, chunkSeq, spanChunk, chunkBegin, chunkEnd, spanStates, spanDecay;
};

/// The window form's state for head h, rows p0.. of the span's tail: returns
/// {state, decay exponent}.
std::pair<Value, Value> tailByWindows(const SsdShape &g, const SsdInputs &in,
                                      const SpanStateParams &p, Value h, Value p0,
                                      Value span, int64_t window) {
  Value lo = load(p.spanChunk + span), hi = load(p.spanChunk + span + 1);
  // A span's chunks are consecutive tokens of whole chunks, never spare ones;
  // its tail starts at the last chunk's sequence start, or at the span's start.
  Value last = maximum(hi - 1, lo);
  Value first = maximum(load(p.chunkBegin + lo),
                        load(p.cuSeqlens + maximum(load(p.chunkSeq + last), 0)));
  Value len = where(hi > lo, load(p.chunkEnd + last) - first, constant(0, DType::I32));
  Value rowBase = first.to(DType::I64);
  const Dim rows(len);
  Value group = h / (g.heads / g.groups);
  RowSlice xs = g.splitXBC ? rowSlice(in.x + rowBase * g.xStride, h * g.headDim, rows,
                                      g.headDim, g.xStride, g.xType)
                           : rowSlice(in.x + rowBase * g.channels, h * g.headDim, rows,
                                      g.headDim, g.channels, g.xType);
  RowSlice bs = g.splitXBC
                    ? rowSlice(in.b + rowBase * g.bStride, group * g.stateSize, rows,
                               g.stateSize, g.bStride, g.bcType)
                    : rowSlice(in.x + rowBase * g.channels + g.inner, group * g.stateSize,
                               rows, g.stateSize, g.channels, g.xType);
  Value windows = (len + (window - 1)) / window;
  // One pass over the windows from the last: the window's rows, their weights
  // exp(L_end - L_t) dt_t given the decay after the window (carried), and the
  // product of one half of (x w)^T with B.
  auto pass = [&](bool loHalf, Value acc) {
    return forRange(
        0, windows, 1, {acc, constant(0.0, DType::F32)},
        [&](Value i, std::vector<Value> carried) {
          // Never negative, also for the iterations past the end whose B
          // copies tile-pipeline-dots issues ahead.
          Value t0 = maximum((windows - 1 - i) * window, 0);
          Value dt = chunkDt(g, in, h, rowBase + t0.to(DType::I64), len - t0, window);
          Value da = dt * in.a;
          // L_wend - L_t within the window: its total less the inclusive cumsum.
          Value total = sum(da, 0);
          Value w = exp(minimum(carried[1] + (total - cumsum(da, 0)), 0.0)) * dt;
          Value xw = load(xs.view, {t0, xs.at(p0)}, {window, g.bp}).to(DType::F32) *
                     expandDims(w, 1);
          Halves a = splitBF16(xw, g.exactMix);
          Value half = loHalf ? a.second : a.first;
          Value b = load(bs.view, {t0, 0}, {window, g.stateTile});
          return std::vector<Value>{dot(transpose(half, {1, 0}), b, carried[0]),
                                    carried[1] + total};
        });
  };
  std::vector<Value> out = pass(false, zeros({g.bp, g.stateTile}, DType::F32));
  if (g.exactMix)
    out[0] = pass(true, out[0])[0];
  return {out[0], out[1]};
}

/// The chunk walk's state: {state, decay exponent}.
std::pair<Value, Value> tailByChunks(const SsdShape &g, const SsdInputs &in,
                                     const SpanStateParams &p, Value h, Value p0,
                                     Value span) {
  // A chunk's metadata: its first token, its sequence and end; its
  // sequence's first token.
  const ChunkWalk walk{
      g,
      in,
      h,
      p0,
      /*withC=*/false,
      [&](Value c) {
        return std::vector<Value>{load(p.chunkBegin + c), load(p.chunkSeq + c),
                                  load(p.chunkEnd + c)};
      },
      [&](const std::vector<Value> &d) {
        return std::vector<Value>{load(p.cuSeqlens + maximum(d[1], 0))};
      },
      [](const std::vector<Value> &d) { return std::pair(d[0], d[2] - d[0]); }};
  std::vector<Value> out =
      walk.walk(load(p.spanChunk + span), load(p.spanChunk + span + 1),
                {zeros({g.bp, g.stateTile}, DType::F32), constant(0.0, DType::F32)},
                [&](Value, const std::vector<Value> &m, std::vector<Value> carried) {
                  // The tail: from the span's last sequence start (or its first chunk).
                  Value first = m[0] == m[3];
                  Value s = where(first, 0.0, carried[0]);
                  Value lam = where(first, 0.0, carried[1]);
                  Chunk chunk =
                      chunkOf(g, in, m[0].to(DType::I64), m[2] - m[0], walk.tilesFor(m));
                  return std::vector<Value>{stateAfter(g, chunk, s), lam + chunk.lamEnd};
                });
  return {out[0], out[1]};
}

} // namespace

void buildSsdSpanState(Kernel &k, const Specialization &spec) {
  const SsdShape g(spec);
  SsdInputs in = SsdInputs::declare(k, g);
  SpanStateParams p;
  p.cuSeqlens = k.ptrParam("cu_seqlens", DType::I32, {"?"});        // [S + 1]
  p.chunkSeq = k.ptrParam("chunk_seq", DType::I32, {"chunks"});     // [chunks]
  p.spanChunk = k.ptrParam("span_chunk", DType::I32, {"?"});        // [spans + 1]
  p.chunkBegin = k.ptrParam("chunk_begin", DType::I32, {"chunks"}); // [chunks]
  p.chunkEnd = k.ptrParam("chunk_end", DType::I32, {"chunks"});     // [chunks]
  // [spans, heads, head_dim, state]: each span's tail state summed from zero
  p.spanStates =
      k.ptrParam("span_states", DType::F32, {"?", g.heads, g.headDim, g.stateSize});
  p.spanDecay = k.ptrParam("span_decay", DType::F32, {"?"}); // [spans * heads]
  in.dtMin = k.scalarParam("dt_min", DType::F32);
  in.dtMax = k.scalarParam("dt_max", DType::F32);
  const int64_t window = spec.get("window");
  k.setConfig({{window ? window : g.q, g.bp, g.stateTile}, spec.get("warps"), 1});

  Value p0 = programId(0) * g.bp, h = programId(1), span = programId(2);
  in.loadHead(g, h);
  auto [state, decay] = window ? tailByWindows(g, in, p, h, p0, span, window)
                               : tailByChunks(g, in, p, h, p0, span);
  store(stateView(p.spanStates, span, h, g, g.headDim), {p0, 0}, state);
  // The tail's total decay exponent, sum of dt' A over its tokens.
  ifThen(programId(0) == 0,
         [&] { store(p.spanDecay + span.to(DType::I64) * g.heads + h, decay); });
}

} // namespace tilejit::models
