// R5p (docs/numerics.md#r5p-chunked-ssd-prefill): the chunked SSD of prefill over a
// packed varlen token stream (R9), reading initial states from the SSM page and writing
// final states back (R8). A program owns `block_p` rows of one head's [P, N] state and
// walks chunks in order, carrying the state in registers as the f32 accumulator of the
// chunk-state product (cumsum, chunk state, CB and output fused: SsdChunk.cpp).
// ssd_prefill alone walks the whole stream; with span_states = 1 it walks one span
// (PrefillMetadata's windows of consecutive chunks: pieces of a long sequence, or many
// short ones) from the state ssd_state_pass left for it, after ssd_span_state summed
// each span's tail (its chunks from its last sequence start) from zero: the spans run
// in parallel. The constants past the plans' defaults serve tilejit.ops' callers
// (mamba_chunk_scan_combined): A itself, dt without softplus, other element types,
// the gate z, D per (head, p), initial states apart from the states written, and the
// state after each of the caller's chunks.
#include "Parts.h"
#include "Registration.h"
#include "SsdChunk.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <cmath>

namespace tilejit::models {

namespace {

/// ssd_prefill's parameters past SsdInputs', in the plans' order, then those
/// of the options tilejit.ops' callers set.
struct PrefillParams {
  OutputParams out; ///< D, the gate z and y's type
  Value cuSeqlens, slots, init, chunkSeq, chunkBegin, chunkEnd, page, y, numChunks;
  OpCheck check;
  Value status, tokens, sequences;       ///< with `checked`
  Value spanChunk, spanStates, spanTail; ///< with `span_states`
  Value pageOut; ///< where final states go: ssm_state_out (page_out) or the page
  Value chunkStateIndex, chunkStates; ///< with `chunk_states`
  DType stateType;
  bool spans;

  PrefillParams(const Specialization &spec, const SsdShape &g) : out(spec, g) {}
  static PrefillParams declare(Kernel &k, const SsdShape &g, const Specialization &spec,
                               SsdInputs &in);
};

PrefillParams PrefillParams::declare(Kernel &k, const SsdShape &g,
                                     const Specialization &spec, SsdInputs &in) {
  PrefillParams p(spec, g);
  p.spans = spec.get("span_states") != 0;
  p.stateType = elementTypeOf(spec, "state_type");
  const std::vector<ParamDim> stateShape = {"?", g.heads, g.headDim, g.stateSize};
  p.out.declareD(k, g);
  p.cuSeqlens = k.ptrParam("cu_seqlens", DType::I32, {"?"}); // [S + 1]
  p.slots = k.ptrParam("slots", DType::I32, {"?"});          // [S], negative: padding
  p.init = k.ptrParam("init", DType::I32, {"?"}); // [S], 1: continue from the page
  p.chunkSeq = k.ptrParam("chunk_seq", DType::I32, {"chunks"});     // [chunks]
  p.chunkBegin = k.ptrParam("chunk_begin", DType::I32, {"chunks"}); // [chunks]
  p.chunkEnd = k.ptrParam("chunk_end", DType::I32, {"chunks"});     // [chunks]
  // [slots, heads, head_dim, state]
  p.page = k.ptrParam("ssm_state", elementTypeOf(spec, "init_type"), stateShape);
  p.y = k.ptrParam("y", p.out.yType, {"?", g.inner}); // [T, inner]
  p.numChunks = k.scalarParam("chunks", DType::I32);
  in.dtMin = k.scalarParam("dt_min", DType::F32);
  in.dtMax = k.scalarParam("dt_max", DType::F32);
  p.check = OpCheck::declare(k, spec.get("checked") != 0);
  if (p.check.enabled) {
    p.status = k.ptrParam("status", DType::I64, {1}); // check_varlen's verdict
    p.tokens = k.scalarParam("tokens", DType::I32);
    p.sequences = k.scalarParam("sequences", DType::I32);
  }
  if (p.spans) {
    p.spanChunk = k.ptrParam("span_chunk", DType::I32, {"?"}); // [spans + 1]
    // [spans, heads, head_dim, state]: each span's entering state, and the
    // state its tail sequence starts from when that starts in the span
    p.spanStates = k.ptrParam("span_states", DType::F32, stateShape);
    p.spanTail = k.ptrParam("span_tail", DType::F32, stateShape);
  }
  p.out.declareZ(k);
  p.pageOut = spec.get("page_out") ? k.ptrParam("ssm_state_out", p.stateType, stateShape)
                                   : p.page;
  if (spec.get("chunk_states")) {
    // [chunks]: the caller's chunk whose end each chunk's end is, -1 for none
    p.chunkStateIndex = k.ptrParam("chunk_state_index", DType::I32, {"chunks"});
    p.chunkStates = k.ptrParam("chunk_states", p.stateType, stateShape);
  }
  return p;
}

/// Metadata check_varlen refused would place the walk's loads and stores
/// anywhere: the walk is skipped (the returned end is `lo`), and y and the
/// sequences' pages are NaN.
Value skipRefusedWalk(const SsdShape &g, const PrefillParams &p, Value h, Value p0,
                      Value lo, Value hi) {
  Value verdict = load(p.status);
  Value end = where(verdict == int64_t(0), hi, lo);
  ifThen(verdict != int64_t(0), [&] {
    RowSlice yAll =
        rowSlice(p.y, h * g.headDim, p.tokens, g.headDim, g.inner, p.out.yType);
    forRange(0, p.tokens, g.q, {}, [&](Value t, std::vector<Value>) {
      store(yAll.view, {t, yAll.at(p0)}, full({g.q, g.bp}, double(NAN), p.out.yType));
      return std::vector<Value>{};
    });
    forRange(0, p.sequences, 1, {}, [&](Value i, std::vector<Value>) {
      Value slot = load(p.slots + i);
      ifThen(slot >= 0, [&] {
        store(stateView(p.pageOut, slot, h, g, g.headDim), {p0, 0},
              full({g.bp, g.stateTile}, double(NAN), p.stateType));
      });
      return std::vector<Value>{};
    });
  });
  return end;
}

/// One chunk's metadata: the scalars its tile loads and its page reads and
/// writes depend on, the chunk's own (direct) and its sequence's (indirect).
struct ChunkMeta {
  Value rawSeq, t0, t1, slot, seqBegin, seqEnd, init;
  static ChunkMeta of(const std::vector<Value> &v) {
    return {v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
  }
  static std::vector<Value> direct(const PrefillParams &p, Value c) {
    return {load(p.chunkSeq + c), load(p.chunkBegin + c), load(p.chunkEnd + c)};
  }
  static std::vector<Value> indirect(const PrefillParams &p,
                                     const std::vector<Value> &d) {
    Value seq = maximum(d[0], 0);
    return {load(p.slots + seq), load(p.cuSeqlens + seq), load(p.cuSeqlens + seq + 1),
            load(p.init + seq)};
  }
};

/// What ssd_prefill's chunk step reads besides the chunk.
struct PrefillWalk {
  const SsdShape &g;
  const SsdInputs &in;
  const PrefillParams &p;
  Value h, p0, span, dCoef, tailSeq;
};

/// ssd_prefill's step over chunk c from the state `carried`: y of its rows,
/// the page written at its sequence's last chunk; returns the state after it.
Value prefillChunk(const PrefillWalk &w, Value c, const ChunkMeta &m,
                   const std::function<ChunkTiles()> &tiles, Value carried) {
  const SsdShape &g = w.g;
  const PrefillParams &p = w.p;
  const Shape stateTile = {g.bp, g.stateTile};
  // A spare chunk (sequence -1, no tokens: prefillMetadata's capacity
  // padding) reads and writes nothing.
  Value live = (m.slot >= 0) & (m.rawSeq >= 0);
  // A sequence's first chunk starts from its page rows; a view of 0 rows
  // reads zeros (a fresh or padding sequence) and touches no memory. Any
  // other chunk continues from the one before (in a span's first chunk: the
  // state ssd_state_pass left for the span).
  Value later = m.t0 != m.seqBegin;
  Value last = m.t1 == m.seqEnd;
  Value isTail = m.rawSeq == w.tailSeq, notTail = m.rawSeq != w.tailSeq;
  auto rows = [&](Value when) {
    return where(when, constant(double(g.headDim), DType::I32), constant(0, DType::I32));
  };
  // Only a first chunk reads its initial state (a branch, where a select
  // would issue the masked loads at every step). The carried arm comes first:
  // the result takes its layout, the accumulator's, so the common path
  // converts nothing.
  Value s = ifElse(
      later, [&] { return std::vector<Value>{carried}; },
      [&] {
        Value initial = load(stateView(p.page, maximum(m.slot, 0), w.h, g,
                                       Dim(rows(notTail & live & (m.init != 0)))),
                             {w.p0, 0}, stateTile)
                            .to(DType::F32);
        if (p.spans)
          initial = where(isTail,
                          load(stateView(p.spanTail, w.span, w.h, g, Dim(rows(isTail))),
                               {w.p0, 0}, stateTile),
                          initial);
        return std::vector<Value>{initial};
      })[0];
  Value len = m.t1 - m.t0, rowBase = m.t0.to(DType::I64);
  Chunk chunk = chunkOf(g, w.in, rowBase, len, tiles());
  Value yRow = p.y + chunk.rowBase * g.inner;
  RowSlice y =
      rowSlice(yRow, w.h * g.headDim, Dim(chunk.len), g.headDim, g.inner, p.out.yType);
  Value gate = p.out.gate(g, chunk.rowBase, chunk.len, w.h, w.p0, g.q);
  auto output = [&](bool finiteX) {
    Value out = chunkOutput(g, chunk, s, w.dCoef, finiteX);
    return where(live, gate.valid() ? out * gate : out, 0.0).to(p.out.yType);
  };
  store(y.view, {0, y.at(w.p0)}, output(/*finiteX=*/true));
  ifThen(anyNonFinite(chunk),
         [&] { store(y.view, {0, y.at(w.p0)}, output(/*finiteX=*/false)); });
  Value next = stateAfter(g, chunk, s);
  ifThen(last & live, [&] {
    store(stateView(p.pageOut, maximum(m.slot, 0), w.h, g, g.headDim), {w.p0, 0},
          next.to(p.stateType));
  });
  if (p.chunkStates.valid()) {
    Value index = load(p.chunkStateIndex + c);
    ifThen(index >= 0, [&] {
      store(stateView(p.chunkStates, index, w.h, g, g.headDim), {w.p0, 0},
            next.to(p.stateType));
    });
  }
  return next;
}

} // namespace

void buildSsdPrefill(Kernel &k, const Specialization &spec) {
  const SsdShape g(spec);
  SsdInputs in = SsdInputs::declare(k, g);
  const PrefillParams p = PrefillParams::declare(k, g, spec, in);
  k.setConfig({{g.q, g.bp, g.stateTile}, spec.get("warps"), 1});

  Value p0 = programId(0) * g.bp, h = programId(1), span = programId(2);
  in.loadHead(g, h);
  Value dCoef = p.out.skip(g, h, p0);
  Value lo = p.spans ? load(p.spanChunk + span) : constant(0, DType::I32);
  Value hi = p.spans ? load(p.spanChunk + span + 1) : p.numChunks;
  if (p.check.enabled)
    hi = skipRefusedWalk(g, p, h, p0, lo, hi);
  const Shape stateTile = {g.bp, g.stateTile};
  Value entering =
      p.spans ? load(stateView(p.spanStates, span, h, g, g.headDim), {p0, 0}, stateTile)
              : zeros(stateTile, DType::F32);
  // A sequence that goes on past this span (its tail) has its last chunk, and
  // its page write, in another program: it starts from span_tail, never from
  // the page that program may already have written.
  Value tailSeq = p.spans ? load(p.chunkSeq + (hi - 1)) : constant(-1, DType::I32);
  const PrefillWalk w{g, in, p, h, p0, span, dCoef, tailSeq};
  const ChunkWalk walk{
      g,
      in,
      h,
      p0,
      /*withC=*/true,
      [&](Value c) { return ChunkMeta::direct(p, c); },
      [&](const std::vector<Value> &d) { return ChunkMeta::indirect(p, d); },
      [](const std::vector<Value> &d) { return std::pair(d[1], d[2] - d[1]); }};
  walk.walk(lo, hi, {entering},
            [&](Value c, const std::vector<Value> &loaded, std::vector<Value> carried) {
              return std::vector<Value>{prefillChunk(
                  w, c, ChunkMeta::of(loaded), [&] { return walk.tilesFor(loaded); },
                  carried[0])};
            });
}

void buildSsdSpanState(Kernel &k, const Specialization &spec) {
  const SsdShape g(spec);
  SsdInputs in = SsdInputs::declare(k, g);
  Value cuSeqlens = k.ptrParam("cu_seqlens", DType::I32, {"?"});        // [S + 1]
  Value chunkSeq = k.ptrParam("chunk_seq", DType::I32, {"chunks"});     // [chunks]
  Value spanChunk = k.ptrParam("span_chunk", DType::I32, {"?"});        // [spans + 1]
  Value chunkBegin = k.ptrParam("chunk_begin", DType::I32, {"chunks"}); // [chunks]
  Value chunkEnd = k.ptrParam("chunk_end", DType::I32, {"chunks"});     // [chunks]
  // [spans, heads, head_dim, state]: each span's tail state summed from zero
  Value spanStates =
      k.ptrParam("span_states", DType::F32, {"?", g.heads, g.headDim, g.stateSize});
  Value spanDecay = k.ptrParam("span_decay", DType::F32, {"?"}); // [spans * heads]
  in.dtMin = k.scalarParam("dt_min", DType::F32);
  in.dtMax = k.scalarParam("dt_max", DType::F32);
  k.setConfig({{g.q, g.bp, g.stateTile}, spec.get("warps"), 1});

  Value p0 = programId(0) * g.bp, h = programId(1), span = programId(2);
  in.loadHead(g, h);
  // A chunk's metadata: its first token, its sequence and end; its
  // sequence's first token.
  const ChunkWalk walk{
      g,
      in,
      h,
      p0,
      /*withC=*/false,
      [&](Value c) {
        return std::vector<Value>{load(chunkBegin + c), load(chunkSeq + c),
                                  load(chunkEnd + c)};
      },
      [&](const std::vector<Value> &d) {
        return std::vector<Value>{load(cuSeqlens + maximum(d[1], 0))};
      },
      [](const std::vector<Value> &d) { return std::pair(d[0], d[2] - d[0]); }};
  std::vector<Value> out =
      walk.walk(load(spanChunk + span), load(spanChunk + span + 1),
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
  store(stateView(spanStates, span, h, g, g.headDim), {p0, 0}, out[0]);
  // The tail's total decay exponent, sum of dt' A over its tokens.
  ifThen(programId(0) == 0,
         [&] { store(spanDecay + span.to(DType::I64) * g.heads + h, out[1]); });
}

/// ssd_prefill tunes its state rows and warps per prompt length: its tuning
/// database entries are bucketed by tokens.
std::vector<KernelDef> ssdKernels() {
  using R = ConstantRange;
  const std::vector<ConstantRule> rules = ssdRules();
  const std::vector<KernelConstant> constants = ssdConstants();
  std::vector<KernelConstant> prefillConstants = constants;
  prefillConstants.push_back(yF32());
  prefillConstants.push_back(checked());
  prefillConstants.push_back(
      {"span_states",
       0,
       "1: one program walks one span of chunks (span_chunk) from its entering state "
       "(span_states, after ssd_state_pass); 0: the whole stream; pages read and "
       "written at the sequences' first and last chunks either way",
       {},
       R::flag()});
  std::vector<KernelConstant> callerOptions = ssdOutputConstants();
  const std::vector<KernelConstant> stateOptions = {
      elementTypeF32("init_type", "the page read (ssm_state)"),
      elementTypeF32("state_type", "the states written"),
      {"page_out",
       0,
       "1: final states go to ssm_state_out, the page (initial states) is only read",
       {},
       R::flag()},
      {"chunk_states",
       0,
       "1: the state after each chunk whose end chunk_state_index names goes to "
       "chunk_states (vLLM's intermediate states)",
       {},
       R::flag()}};
  callerOptions.insert(callerOptions.end(), stateOptions.begin(), stateOptions.end());
  prefillConstants.insert(prefillConstants.end(), callerOptions.begin(),
                          callerOptions.end());
  std::vector<ConstantRule> prefillRules = rules;
  prefillRules.push_back({"checked walks the whole stream (span_states = 0)",
                          {"checked", "span_states"},
                          [](const Specialization &s) {
                            return !(s.get("checked") && s.get("span_states"));
                          }});
  prefillRules.push_back(ssdStrideRule("z_stride", "heads", "head_dim"));
  prefillRules.push_back(
      {"page_out or state_type = init_type (one page read and written)",
       {"page_out", "state_type", "init_type"},
       [](const Specialization &s) {
         return s.get("page_out") || s.get("state_type") == s.get("init_type");
       }});
  return {{"ssd_prefill",
           "R5p chunked SSD over a packed varlen stream (or one span of it)",
           std::move(prefillConstants),
           buildSsdPrefill,
           std::move(prefillRules),
           {"tokens"}},
          {"ssd_span_state",
           "R5p's chunk states summed over each span's tail (from its last sequence "
           "start) from zero, and the tail's decay",
           constants, buildSsdSpanState, rules},
          ssdChunkScanKernel()};
}

} // namespace tilejit::models
