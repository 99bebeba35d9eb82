// R5p (docs/numerics.md#r5p-chunked-ssd-prefill): the chunked SSD of prefill over a
// packed varlen token stream (R9), reading initial states from the SSM page and writing
// final states back (R8). A program owns `block_p` rows of one head's [P, N] state and
// walks chunks in order, carrying the state in registers as the f32 accumulator of the
// chunk-state product (cumsum, chunk state, CB and output fused). ssd_prefill alone
// walks the whole stream; with span_states = 1 it walks one span (PrefillMetadata's
// windows of consecutive chunks: pieces of a long sequence, or many short ones) from
// the state ssd_state_pass left for it, after ssd_span_state summed each span's tail
// (its chunks from its last sequence start) from zero: the spans run in parallel. The
// f32 operands of the tensor-core products (the decayed CB mix, the carried state, the
// decayed dt x) enter as hi + lo bf16 pairs (SsdPrecision::Exact) or as single bf16
// values (SsdPrecision::UpstreamBF16). `a_log`, `dt_softplus` and `y_f32` serve callers
// with other conventions (tilejit.ops' mamba_chunk_scan_combined): A itself, dt without
// softplus, f32 y.
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <cmath>

namespace tilejit::models {

namespace {

/// v as hi + lo bf16 halves: a tensor-core product of both halves with an
/// exact bf16 operand carries v to ~16 bits instead of bf16's 8. Plain bf16
/// operands put y elements outside R5p's band at T = 8192 on the H200;
/// splitting the state alone, or the state and the mix, leaves some outside,
/// splitting all three none (docs/BENCHMARKS.md, "The SSD", its precision
/// figures).
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

namespace {

/// The constants the SSD kernels share.
struct SsdShape {
  int64_t heads, headDim, stateSize, groups, q, bp, dtStride, dtCol, inner, channels;
  bool aIsLog, softplusDt, exact;
  explicit SsdShape(const Specialization &spec)
      : heads(spec.get("heads")), headDim(spec.get("head_dim")),
        stateSize(spec.get("state")), groups(spec.get("groups")), q(spec.get("chunk")),
        bp(spec.get("block_p")), dtStride(spec.get("dt_stride")),
        dtCol(spec.get("dt_col")), inner(heads * headDim),
        channels(inner + 2 * groups * stateSize), aIsLog(spec.get("a_log") != 0),
        softplusDt(spec.get("dt_softplus") != 0),
        exact(SsdPrecision(spec.get("precision")) == SsdPrecision::Exact) {}
};

/// The per-token inputs every chunk reads and the head's scalars.
struct SsdInputs {
  Value xBC, dtRaw, aParam, dtBias, dtMin, dtMax;
  Value a, bias; ///< head h's A and dt bias, loaded once by loadHead

  void loadHead(const SsdShape &g, Value h) {
    a = g.aIsLog ? -exp(load(aParam + h)) : load(aParam + h);
    bias = load(dtBias + h);
  }

  /// Declares the parameters in the kernels' order (xbc, dt, a_log, dt_bias).
  static SsdInputs declare(Kernel &k, const SsdShape &g) {
    SsdInputs in;
    in.xBC = k.ptrParam("xbc", DType::BF16, {"?", g.channels}); // [T, channels]
    // [T, dt_stride]: dt at columns dt_col + [0, heads)
    in.dtRaw = k.ptrParam("dt", DType::BF16, {"?", g.dtStride});
    in.aParam = k.ptrParam(g.aIsLog ? "a_log" : "a", DType::F32, {g.heads});
    in.dtBias = k.ptrParam("dt_bias", DType::F32, {g.heads});
    return in;
  }
};

/// One chunk's tiles for the `bp` state rows from p0 of head h; rows past len
/// read zeros.
struct Chunk {
  Value len, rowBase, x, b, cm, dt, lam, lamEnd;
};

Chunk loadChunk(const SsdShape &g, const SsdInputs &in, Value h, Value p0, Value t0,
                Value t1, bool withC) {
  Chunk c;
  c.len = t1 - t0;
  c.rowBase = t0.to(DType::I64);
  Value group = h / (g.heads / g.groups);
  auto rowsView = [&](Value base, int64_t cols) {
    return makeView(base, {Dim(c.len), cols}, {g.channels, 1});
  };
  c.x = load(rowsView(in.xBC + c.rowBase * g.channels + h * g.headDim, g.headDim),
             {0, p0}, {g.q, g.bp});
  Value bcBase = in.xBC + c.rowBase * g.channels + g.inner + group * g.stateSize;
  c.b = load(rowsView(bcBase, g.stateSize), {0, 0}, {g.q, g.stateSize});
  if (withC)
    c.cm = load(rowsView(bcBase + g.groups * g.stateSize, g.stateSize), {0, 0},
                {g.q, g.stateSize});
  // R4 and R5p step 1: dt' (0 on padded rows) and its decay cumsum.
  Value dtTile = load(makeView(in.dtRaw + c.rowBase * g.dtStride + g.dtCol + h,
                               {Dim(c.len)}, {g.dtStride}),
                      {0}, {g.q})
                     .to(DType::F32);
  Value dtIn = dtTile + in.bias;
  c.dt = where(arange(0, g.q) < c.len,
               minimum(maximum(g.softplusDt ? softplus(dtIn) : dtIn, in.dtMin), in.dtMax),
               0.0);
  c.lam = cumsum(c.dt * in.a, 0);
  c.lamEnd = sum(c.dt * in.a, 0);
  return c;
}

/// Steps 2-3: S_out = exp(L_end) S_in + sum_i exp(L_end - L_i) dt_i x_i (x) B_i.
Value stateAfter(const SsdShape &g, const Chunk &c, Value s) {
  Value w = exp(minimum(c.lamEnd - c.lam, 0.0)) * c.dt;
  return dotSplit(
      transposeBoth(splitBF16(c.x.to(DType::F32) * expandDims(w, 1), g.exact)), c.b,
      s * exp(c.lamEnd));
}

/// Steps 4-5: y = exp(L_i) C_i S_in + sum_j<=i CB_ij exp(L_i - L_j) dt_j x_j + D x_i.
/// A NaN or Inf entering at token t changes no output before t (R5 is
/// sequential): the upper triangle of the mix is selected away, never
/// multiplied by zero. A product of tiles adds 0 x NaN = NaN, so a chunk
/// whose x is not all finite (`finiteX` false) takes the mix product with x
/// finite (a non-finite x as 0) and lets each non-finite x reach y from its
/// own token on through `poison`, the running sum of NaN markers down each
/// column; the scan costs a fifth of the kernel, so finite chunks skip it.
Value chunkOutput(const SsdShape &g, const Chunk &c, Value s, Value dCoef, bool finiteX) {
  Value causal = expandDims(arange(0, g.q), 1) >= expandDims(arange(0, g.q), 0);
  Value cb = dot(c.cm, transpose(c.b, {1, 0}), zeros({g.q, g.q}, DType::F32));
  Value decay = exp(minimum(expandDims(c.lam, 1) - expandDims(c.lam, 0), 0.0));
  Value mixF = where(causal, cb * decay * expandDims(c.dt, 0), 0.0);
  Value xF = c.x.to(DType::F32);
  Value yTile;
  if (finiteX) {
    yTile = dotSplit(splitBF16(mixF, g.exact), c.x, zeros({g.q, g.bp}, DType::F32));
  } else {
    Value finite = abs(xF) < double(INFINITY);
    Value poison = cumsum(where(finite, zeros({g.q, g.bp}, DType::F32),
                                full({g.q, g.bp}, double(NAN), DType::F32)),
                          0);
    yTile = dotSplit(splitBF16(mixF, g.exact),
                     where(finite, c.x, zeros({g.q, g.bp}, DType::BF16)),
                     zeros({g.q, g.bp}, DType::F32)) +
            poison;
  }
  // Split, then transpose each bf16 half: a transpose feeding a dot
  // operand folds into the operand's one trip through shared memory.
  Value carry = dotSplit(c.cm, transposeBoth(splitBF16(s, g.exact)),
                         zeros({g.q, g.bp}, DType::F32));
  return yTile + carry * expandDims(exp(c.lam), 1) + xF * dCoef;
}

/// Whether some x of the chunk is not finite (a scalar).
Value anyNonFinite(const Chunk &c) {
  const Shape shape = c.x.shape();
  Value bad = where(abs(c.x.to(DType::F32)) < double(INFINITY), zeros(shape, DType::F32),
                    full(shape, 1.0, DType::F32));
  return max(max(bad, 1), 0) > 0.0;
}

/// The [rows, state] view of a [.., heads, head_dim, state] tensor's entry
/// `index` (a page slot or a span), head h.
View stateView(Value base, Value index, Value h, const SsdShape &g, Dim rows) {
  Value at = base + (index.to(DType::I64) * g.heads + h.to(DType::I64)) *
                        (g.headDim * g.stateSize);
  return makeView(at, {rows, g.stateSize}, {g.stateSize, 1});
}

} // namespace

void buildSsdPrefill(Kernel &k, const Specialization &spec) {
  const SsdShape g(spec);
  const bool spans = spec.get("span_states") != 0;
  const DType yType = spec.get("y_f32") ? DType::F32 : DType::BF16;
  SsdInputs in = SsdInputs::declare(k, g);
  Value dSkip = k.ptrParam("d", DType::F32, {g.heads});          // [heads]
  Value cuSeqlens = k.ptrParam("cu_seqlens", DType::I32, {"?"}); // [S + 1]
  Value slots = k.ptrParam("slots", DType::I32, {"?"});          // [S], negative: padding
  Value init = k.ptrParam("init", DType::I32, {"?"}); // [S], 1: continue from the page
  Value chunkSeq = k.ptrParam("chunk_seq", DType::I32, {"chunks"});     // [chunks]
  Value chunkBegin = k.ptrParam("chunk_begin", DType::I32, {"chunks"}); // [chunks]
  Value chunkEnd = k.ptrParam("chunk_end", DType::I32, {"chunks"});     // [chunks]
  // [slots, heads, head_dim, state]
  Value page =
      k.ptrParam("ssm_state", DType::F32, {"?", g.heads, g.headDim, g.stateSize});
  Value y = k.ptrParam("y", yType, {"?", g.inner}); // [T, inner]
  Value numChunks = k.scalarParam("chunks", DType::I32);
  in.dtMin = k.scalarParam("dt_min", DType::F32);
  in.dtMax = k.scalarParam("dt_max", DType::F32);
  const OpCheck check = OpCheck::declare(k, spec.get("checked") != 0);
  Value status, tokens, sequences;
  if (check.enabled) {
    status = k.ptrParam("status", DType::I64, {1}); // check_varlen's verdict
    tokens = k.scalarParam("tokens", DType::I32);
    sequences = k.scalarParam("sequences", DType::I32);
  }
  Value spanChunk, spanStates, spanTail;
  if (spans) {
    spanChunk = k.ptrParam("span_chunk", DType::I32, {"?"}); // [spans + 1]
    // [spans, heads, head_dim, state]: each span's entering state, and the
    // state its tail sequence starts from when that starts in the span
    spanStates =
        k.ptrParam("span_states", DType::F32, {"?", g.heads, g.headDim, g.stateSize});
    spanTail =
        k.ptrParam("span_tail", DType::F32, {"?", g.heads, g.headDim, g.stateSize});
  }
  k.setConfig({{g.q, g.bp, g.stateSize}, spec.get("warps"), 1});

  Value p0 = programId(0) * g.bp, h = programId(1), span = programId(2);
  in.loadHead(g, h);
  Value dCoef = load(dSkip + h);
  Value lo = spans ? load(spanChunk + span) : constant(0, DType::I32);
  Value hi = spans ? load(spanChunk + span + 1) : numChunks;
  if (check.enabled) {
    // Metadata check_varlen refused would place the walk's loads and stores
    // anywhere: the walk is skipped, and y and the sequences' pages are NaN.
    Value verdict = load(status);
    hi = where(verdict == int64_t(0), hi, lo);
    ifThen(verdict != int64_t(0), [&] {
      View yAll = makeView(y + h * g.headDim, {tokens, g.headDim}, {g.inner, 1});
      forRange(0, tokens, g.q, {}, [&](Value t, std::vector<Value>) {
        store(yAll, {t, p0}, full({g.q, g.bp}, double(NAN), yType));
        return std::vector<Value>{};
      });
      forRange(0, sequences, 1, {}, [&](Value i, std::vector<Value>) {
        Value slot = load(slots + i);
        ifThen(slot >= 0, [&] {
          store(stateView(page, slot, h, g, g.headDim), {p0, 0},
                full({g.bp, g.stateSize}, double(NAN), DType::F32));
        });
        return std::vector<Value>{};
      });
    });
  }
  Value entering = spans ? load(stateView(spanStates, span, h, g, g.headDim), {p0, 0},
                                {g.bp, g.stateSize})
                         : zeros({g.bp, g.stateSize}, DType::F32);
  // A sequence that goes on past this span (its tail) has its last chunk, and
  // its page write, in another program: it starts from span_tail, never from
  // the page that program may already have written.
  Value tailSeq = spans ? load(chunkSeq + (hi - 1)) : constant(-1, DType::I32);

  forRange(lo, hi, 1, {entering}, [&](Value c, std::vector<Value> carried) {
    // A spare chunk (sequence -1, no tokens: prefillMetadata's capacity
    // padding) reads and writes nothing.
    Value rawSeq = load(chunkSeq + c);
    Value seq = maximum(rawSeq, 0);
    Value t0 = load(chunkBegin + c), t1 = load(chunkEnd + c);
    Value slot = load(slots + seq);
    Value live = (slot >= 0) & (rawSeq >= 0);
    // A sequence's first chunk starts from its page rows; a view of 0 rows
    // reads zeros (a fresh or padding sequence) and touches no memory. Any
    // other chunk continues from the one before (in a span's first chunk: the
    // state ssd_state_pass left for the span).
    Value first = t0 == load(cuSeqlens + seq);
    Value last = t1 == load(cuSeqlens + seq + 1);
    Value isTail = rawSeq == tailSeq, notTail = rawSeq != tailSeq;
    auto rows = [&](Value when) {
      return where(when, constant(double(g.headDim), DType::I32),
                   constant(0, DType::I32));
    };
    Value initial =
        load(stateView(page, maximum(slot, 0), h, g,
                       Dim(rows(first & notTail & live & (load(init + seq) != 0)))),
             {p0, 0}, {g.bp, g.stateSize});
    if (spans)
      initial = where(isTail,
                      load(stateView(spanTail, span, h, g, Dim(rows(first & isTail))),
                           {p0, 0}, {g.bp, g.stateSize}),
                      initial);
    Value s = where(first, initial, carried[0]);
    Chunk chunk = loadChunk(g, in, h, p0, t0, t1, /*withC=*/true);
    View yView = makeView(y + chunk.rowBase * g.inner + h * g.headDim,
                          {Dim(chunk.len), g.headDim}, {g.inner, 1});
    store(yView, {0, p0},
          where(live, chunkOutput(g, chunk, s, dCoef, /*finiteX=*/true), 0.0).to(yType));
    ifThen(anyNonFinite(chunk), [&] {
      store(
          yView, {0, p0},
          where(live, chunkOutput(g, chunk, s, dCoef, /*finiteX=*/false), 0.0).to(yType));
    });
    Value next = stateAfter(g, chunk, s);
    ifThen(last & live, [&] {
      store(stateView(page, maximum(slot, 0), h, g, g.headDim), {p0, 0}, next);
    });
    return std::vector<Value>{next};
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
  k.setConfig({{g.q, g.bp, g.stateSize}, spec.get("warps"), 1});

  Value p0 = programId(0) * g.bp, h = programId(1), span = programId(2);
  in.loadHead(g, h);
  std::vector<Value> out =
      forRange(load(spanChunk + span), load(spanChunk + span + 1), 1,
               {zeros({g.bp, g.stateSize}, DType::F32), constant(0.0, DType::F32)},
               [&](Value c, std::vector<Value> carried) {
                 // The tail: from the span's last sequence start (or its first chunk).
                 Value t0 = load(chunkBegin + c);
                 Value first = t0 == load(cuSeqlens + maximum(load(chunkSeq + c), 0));
                 Value s = where(first, 0.0, carried[0]);
                 Value lam = where(first, 0.0, carried[1]);
                 Chunk chunk =
                     loadChunk(g, in, h, p0, t0, load(chunkEnd + c), /*withC=*/false);
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
  std::vector<ConstantRule> rules = pageRules();
  // dt is read at columns dt_col + [0, heads) of rows dt_stride apart.
  rules.push_back({"dt_col + heads <= dt_stride",
                   {"dt_col", "heads", "dt_stride"},
                   [](const Specialization &s) {
                     return s.get("dt_col") + s.get("heads") <= s.get("dt_stride");
                   }});
  const std::vector<KernelConstant> constants = {
      {"heads", 64, "SSM heads (H)", {}, sizeRange()},
      {"head_dim", 64, "head dim (P)", {}, sizeRange()},
      {"state", 128, "state size (N)", {}, tileRange()},
      {"groups", 8, "B/C groups (G)", {}, sizeRange()},
      {"chunk",
       32,
       "tokens per chunk (R5p is invariant to it; the varlen metadata must use it)",
       {},
       R::powersOfTwo(1, 256)},
      {"dt_stride",
       10304,
       "row stride of dt (in_proj's output row: z | xBC | dt)",
       {},
       sizeRange()},
      {"dt_col", 10240, "first dt column in that row", {}, columnsRange()},
      {"block_p", 32, "state rows (p) per program", {16, 64}, tileRange()},
      {"warps", 4, "warps per program", {8}, warpsRange()},
      {"precision",
       int64_t(SsdPrecision::Exact),
       "R5p-m operands of the tensor-core products: 0 exact (hi + lo bf16 "
       "pairs), 1 upstream (single bf16)",
       {},
       R::flag()},
      aLog(),
      dtSoftplus()};
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
  std::vector<ConstantRule> prefillRules = rules;
  prefillRules.push_back({"checked walks the whole stream (span_states = 0)",
                          {"checked", "span_states"},
                          [](const Specialization &s) {
                            return !(s.get("checked") && s.get("span_states"));
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
           constants, buildSsdSpanState, rules}};
}

} // namespace tilejit::models
