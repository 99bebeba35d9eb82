// R5p's outputs chunk-parallel (docs/numerics.md#r5p-chunked-ssd-prefill): a program
// computes y for `block_m` rows of one chunk from the state the chunk enters with
// (ssd_span_state and ssd_state_pass over one-chunk spans), with no walk over chunks.
#include "Parts.h"
#include "Registration.h"
#include "SsdChunk.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

namespace {

/// ssd_chunk_scan's parameters past SsdInputs', and the options tilejit.ops'
/// callers set (as ssd_prefill's).
struct ScanParams {
  OutputParams out; ///< D, the gate z and y's type
  Value cuSeqlens, slots, chunkSeq, chunkBegin, chunkEnd, states, tail, y;

  ScanParams(Kernel &k, const SsdShape &g, const Specialization &spec, SsdInputs &in)
      : out(spec, g) {
    const std::vector<ParamDim> stateShape = {"?", g.heads, g.headDim, g.stateSize};
    out.declareD(k, g);
    cuSeqlens = k.ptrParam("cu_seqlens", DType::I32, {"?"}); // [S + 1]
    slots = k.ptrParam("slots", DType::I32, {"?"});          // [S], negative: padding
    chunkSeq = k.ptrParam("chunk_seq", DType::I32, {"?"});   // [chunks]
    chunkBegin = k.ptrParam("chunk_begin", DType::I32, {"?"});
    chunkEnd = k.ptrParam("chunk_end", DType::I32, {"?"});
    // [chunks, heads, head_dim, state]: the state each chunk enters with
    // mid-sequence (ssd_state_pass's span_states), and the one a sequence
    // starts from in its first chunk (span_tail: the page or zeros)
    states = k.ptrParam("chunk_states", DType::F32, stateShape);
    tail = k.ptrParam("chunk_tail", DType::F32, stateShape);
    y = k.ptrParam("y", out.yType, {"?", g.inner}); // [T, inner]
    in.dtMin = k.scalarParam("dt_min", DType::F32);
    in.dtMax = k.scalarParam("dt_max", DType::F32);
    out.declareZ(k);
  }
};

/// One row block's y before D, the gate and the store: the carried state's
/// term, then one accumulation over the chunk's earlier row blocks (all
/// causal: no mask) and the block's own rows (masked). `finiteX` false takes
/// x finite and adds NaN markers from each non-finite x's token on.
struct RowBlock {
  const SsdShape &g, &gb; ///< the chunk's shape, and the same with q = block_m
  const SsdInputs &in;
  Value h, p0, t0, m0;
  Chunk diag;       ///< the block's own rows, with C
  Halves c;         ///< C of those rows as the dots take it
  Value lam, carry; ///< their decay exponents from the chunk start; e^L C S_in

  /// The accumulated y and whether some x read was not finite (f32 0 or 1).
  std::pair<Value, Value> output(bool finiteX) const {
    const int64_t bm = gb.q;
    auto product = [&](const Chunk &j, Value lamJ, Value causal, Value acc) {
      Value cb =
          dotHalves(c, transposeBoth(halves(j.b, g.exact)), zeros({bm, bm}, DType::F32));
      Halves mix = splitBF16(decayedMix(cb, lam, lamJ, j.dt, causal), g.exactMix);
      Value x = finiteX ? j.x : guardNonFinite(j.x).x(j.x);
      return dotHalves(mix, halves(x, g.exact), acc);
    };
    auto nonFinite = [&](const Chunk &j) {
      return where(anyNonFinite(j), constant(1.0, DType::F32), constant(0.0, DType::F32));
    };
    std::vector<Value> out = forRange(
        0, m0, bm,
        {carry, constant(0.0, DType::F32), zeros({gb.bp}, DType::F32),
         constant(0.0, DType::F32)},
        [&](Value j0, std::vector<Value> carried) {
          Chunk j = loadChunk(gb, in, h, p0, t0 + j0, t0 + j0 + bm, /*withC=*/false);
          Value acc = product(j, carried[1] + j.lam, Value(), carried[0]);
          Value poison =
              finiteX ? carried[2] : carried[2] + sum(guardNonFinite(j.x).markers, 0);
          return std::vector<Value>{acc, carried[1] + j.lamEnd, poison,
                                    maximum(carried[3], nonFinite(j))};
        });
    Value acc = product(diag, lam, causalMask(bm), out[0]);
    if (!finiteX)
      acc = acc + expandDims(out[2], 0) + cumsum(guardNonFinite(diag.x).markers, 0);
    return {acc, maximum(out[3], nonFinite(diag))};
  }
};

} // namespace

void buildSsdChunkScan(Kernel &k, const Specialization &spec) {
  const SsdShape g(spec);
  SsdShape gb = g;
  gb.q = spec.get("block_m");
  SsdInputs in = SsdInputs::declare(k, g);
  const ScanParams p(k, g, spec, in);
  k.setConfig({{gb.q, g.bp, g.stateTile}, spec.get("warps"), 1});

  const int64_t pBlocks = (g.headDim + g.bp - 1) / g.bp;
  Value z = programId(1), h = programId(2);
  Value m0 = (programId(0) / pBlocks) * gb.q, p0 = (programId(0) % pBlocks) * g.bp;
  // A spare chunk (sequence -1) and the row blocks past a short chunk's end
  // read and write nothing.
  Value rawSeq = load(p.chunkSeq + z);
  Value t0 = load(p.chunkBegin + z), t1 = load(p.chunkEnd + z);
  ifThen((rawSeq >= 0) & (m0 < t1 - t0), [&] {
    in.loadHead(g, h);
    Value seq = maximum(rawSeq, 0);
    Value live = load(p.slots + seq) >= 0;
    // A sequence's first chunk starts from the page or zeros (chunk_tail),
    // any other from the chunk before (chunk_states); a view of 0 rows reads
    // nothing.
    Value start = load(p.cuSeqlens + seq);
    Value first = t0 == start, later = t0 != start;
    auto rowsIf = [&](Value when) {
      return Dim(
          where(when, constant(double(g.headDim), DType::I32), constant(0, DType::I32)));
    };
    const Shape stateTile = {g.bp, g.stateTile};
    Value entering =
        where(first, load(stateView(p.tail, z, h, g, rowsIf(first)), {p0, 0}, stateTile),
              load(stateView(p.states, z, h, g, rowsIf(later)), {p0, 0}, stateTile));

    Chunk diag =
        loadChunk(gb, in, h, p0, t0 + m0, minimum(t0 + m0 + gb.q, t1), /*withC=*/true);
    Value before = sum(chunkDt(g, in, h, t0.to(DType::I64), m0, g.q) * in.a, 0);
    RowBlock block{
        g,      gb, in, h, p0, t0, m0, diag, halves(diag.cm, g.exact), before + diag.lam,
        Value()};
    block.carry = dotHalves(block.c, transposeBoth(splitBF16(entering, g.exact)),
                            zeros({gb.q, g.bp}, DType::F32)) *
                  expandDims(exp(block.lam), 1);

    Value dCoef = p.out.skip(g, h, p0);
    Value gate = p.out.gate(g, diag.rowBase, diag.len, h, p0, gb.q);
    RowSlice y = rowSlice(p.y + diag.rowBase * g.inner, h * g.headDim, Dim(diag.len),
                          g.headDim, g.inner, p.out.yType);
    auto finish = [&](Value acc) {
      Value out = acc + diag.x.to(DType::F32) * dCoef;
      return where(live, gate.valid() ? out * gate : out, 0.0).to(p.out.yType);
    };
    auto [acc, bad] = block.output(/*finiteX=*/true);
    store(y.view, {0, y.at(p0)}, finish(acc));
    ifThen(bad > 0.0,
           [&] { store(y.view, {0, y.at(p0)}, finish(block.output(false).first)); });
  });
}

KernelDef ssdChunkScanKernel() {
  using R = ConstantRange;
  std::vector<KernelConstant> constants = ssdConstants();
  for (KernelConstant &c : constants)
    if (c.name == "chunk")
      c.defaultValue = 128;
  constants.push_back({"block_m",
                       32,
                       "rows of a chunk per program (and per step of its dot loop)",
                       {64},
                       R::powersOfTwo(16, 256)});
  constants.push_back(yF32());
  for (KernelConstant &c : ssdOutputConstants())
    constants.push_back(std::move(c));
  std::vector<ConstantRule> rules = ssdRules();
  rules.push_back({"block_m <= chunk", {"block_m", "chunk"}, [](const Specialization &s) {
                     return s.get("block_m") <= s.get("chunk");
                   }});
  rules.push_back(ssdStrideRule("z_stride", "heads", "head_dim"));
  return {"ssd_chunk_scan",
          "R5p's outputs of each chunk's row blocks in parallel, from the states the "
          "chunks enter with",
          std::move(constants), buildSsdChunkScan, std::move(rules)};
}

} // namespace tilejit::models
