// R3 (docs/numerics.md#r3-causal-conv-prefill): the causal depthwise conv1d + SiLU over a
// packed varlen token stream (R9), each sequence starting from its slot's conv
// page or from zeros and writing its final state back to the page (R8). xBC is
// read in place from the in_proj output zxbcdt through a strided view.
//
// Grid: (channel blocks, chunks, splits). A chunk is 1..block_t tokens of one sequence
// (chunk_seq / chunk_begin / chunk_end, built on the host by prefillMetadata,
// possibly padded with spare chunks that do nothing).
// Each program slides a window of the last 3 raw input rows down its chunk in
// registers: every thread owns the same channels in every row, so each token
// row is loaded once (plus the 3 halo rows of the chunk), `rows_per_step` row
// loads issue together, and no value crosses threads. `state_layout` 1 takes
// vLLM's channel-last conv page ([num_slots, 3, channels] in memory).
// With `checked` (tilejit.ops, OpChecks.h) the launch first reads `status`,
// check_varlen's verdict on the caller's metadata: a bad batch writes NaN
// over every token (program (c, i) takes rows [i block_t, (i + 1) block_t))
// and touches no page, since metadata it cannot trust would place its loads
// and stores anywhere; and a sequence whose slot is past the page writes NaN
// over its tokens and records the error. `slots_i64` takes i64 slot tables.
// tilejit.ops' forms (ConvForms.h) set the element types, the activation, the
// bias and vLLM's null block.
#include "ConvForms.h"
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <algorithm>
#include <cmath>

namespace tilejit::models {
namespace {

/// conv_prefill's parameters, in order, and its geometry.
struct ConvPrefill {
  int64_t inner, channels, heads, bc, step, blockT;
  bool divisionFree, channelLast, applySilu;
  ConvTypes types;
  static constexpr int64_t past = 3; // K - 1 taps of conv state
  int64_t rowStride;                 // zxbcdt: z | xBC | dt
  Value zxbcdt, weight, bias, cuSeqlens, slots, init, chunkSeq, chunkBegin, chunkEnd;
  Value page, out, numSlots;
  std::optional<Value> nullBlockId;
  OpCheck check;
  Value status, tokens; ///< with `checked`
};

ConvPrefill declareConvPrefill(Kernel &k, const Specialization &spec) {
  ConvPrefill p;
  p.inner = spec.get("inner"), p.channels = spec.get("channels");
  p.heads = spec.get("heads");
  p.bc = spec.get("block_c"), p.step = spec.get("rows_per_step");
  p.blockT = spec.get("block_t");
  p.divisionFree = spec.get("fast_silu") != 0;
  p.channelLast = spec.get("state_layout") != 0;
  p.applySilu = spec.get("silu") != 0;
  p.types = convTypes(spec);
  p.rowStride = p.inner + p.channels + p.heads;
  const int64_t channels = p.channels;
  p.zxbcdt = k.ptrParam("zxbcdt", p.types.x,
                        {"?", p.rowStride}); // [T, inner + channels + heads]
  p.weight = k.ptrParam("weight", p.types.weight, {channels, 4}); // [channels, 4]
  if (spec.get("has_bias"))
    p.bias = k.ptrParam("bias", p.types.bias, {channels});   // [channels]
  p.cuSeqlens = k.ptrParam("cu_seqlens", DType::I32, {"?"}); // [S + 1]
  p.slots = k.ptrParam("slots", slotType(spec), {"?"});      // [S], negative: padding
  p.init = k.ptrParam("init", DType::I32, {"?"}); // [S], 1: continue from the slot
  p.chunkSeq = k.ptrParam("chunk_seq", DType::I32, {"?"}); // [chunks]
  p.chunkBegin = k.ptrParam("chunk_begin", DType::I32, {"?"});
  p.chunkEnd = k.ptrParam("chunk_end", DType::I32, {"?"});
  p.page = k.ptrParam("conv_state", p.types.state,
                      p.channelLast ? std::vector<ParamDim>{"num_slots", 3, channels}
                                    : std::vector<ParamDim>{"num_slots", channels, 3});
  p.out = k.ptrParam("out", p.types.out, {"?", channels}); // [T, channels]
  p.numSlots = k.scalarParam("num_slots", DType::I32);
  p.nullBlockId = declareNullBlock(k, spec);
  p.check = OpCheck::declare(k, spec.get("checked") != 0);
  if (p.check.enabled) {
    p.status = k.ptrParam("status", DType::I64, {1}); // check_varlen's verdict
    p.tokens = k.scalarParam("tokens", DType::I32);
  }
  // One 16-byte access per row of the narrowest operand when block_c is
  // 256 * warps (eight elements of bf16).
  const int64_t vector = std::min(
      {vectorWidth(p.types.x), vectorWidth(p.types.state), vectorWidth(p.types.out)});
  k.setConfig({{1, p.bc}, spec.get("warps"), 1, vector});
  // The halo logic relies on block_t (a power of two >= 4) and rows_per_step
  // (>= 3, dividing it), checked before the build (the registration's rules).
  return p;
}

/// Whether the launch may trust its metadata: always, unless checked; then
/// check_varlen's verdict, and a bad one writes NaN over every token (program
/// (c, i) takes rows [i block_t, (i + 1) block_t)).
Value trustMetadata(const ConvPrefill &p, Value c0, Value chunk) {
  Value trusted = constant(1, DType::I1);
  if (!p.check.enabled)
    return trusted;
  Value verdict = load(p.status);
  trusted = verdict == int64_t(0);
  ifThen(verdict != int64_t(0), [&] {
    View all = makeView(p.out, {p.tokens, p.channels}, {p.channels, 1});
    Value nan = full({1, p.bc}, std::nan(""), p.types.out);
    forRange(0, p.blockT, 1, {}, [&](Value r, std::vector<Value>) {
      store(all, {chunk * p.blockT + r, c0}, nan);
      return std::vector<Value>{};
    });
  });
  return trusted;
}

/// One program's chunk as the metadata gives it.
struct Chunk {
  Value index, begin, end, seq, seqStart, seqEnd, slot, first;
};

/// Whether the chunk's slot names a page of the launch: with `checked`, a
/// slot past the pages writes NaN over the chunk's tokens and records the
/// error (once per sequence).
Value liveSlot(const ConvPrefill &p, const Chunk &c, Value trusted, Value c0) {
  Value live = trusted & realSlot(c.slot, p.nullBlockId);
  if (!p.check.enabled)
    return live;
  Value pages = p.numSlots.to(c.slot.dtype());
  Value past = trusted & (c.slot >= pages);
  live = live & (c.slot < pages);
  p.check.record(past & c.first & (programId(0) == 0), OpError::SlotOutOfRange, c.seq);
  ifThen(past, [&] {
    View rows = makeView(p.out, {c.end, p.channels}, {p.channels, 1});
    forRange(c.begin, c.end, 1, {}, [&](Value r, std::vector<Value>) {
      store(rows, {r, c0}, full({1, p.bc}, std::nan(""), p.types.out));
      return std::vector<Value>{};
    });
  });
  return live;
}

/// The views a chunk's program reads and writes through.
struct ChunkViews {
  Value slotRow; ///< the slot as the i32 row of a page view
  Value xCol;    ///< the first xBC column of the program's channels in zxbcdt
  View chunkRows, seqRows, outRows;
  std::vector<View> taps; ///< tap j of every slot's page, [num_slots, channels]
};

ChunkViews chunkViews(const ConvPrefill &p, const Chunk &c, Value c0) {
  ChunkViews v;
  // A live slot lies in [0, num_slots): exact as the i32 row of a page view.
  v.slotRow = c.slot.to(DType::I32);
  v.xCol = c0 + p.inner;
  // Rows past the chunk's end (and, for the final state, before the
  // sequence's start, given as row -1) read as zero: views mask them.
  v.chunkRows = makeView(p.zxbcdt, {c.end, p.inner + p.channels}, {p.rowStride, 1});
  v.seqRows = makeView(p.zxbcdt, {c.seqEnd, p.inner + p.channels}, {p.rowStride, 1});
  auto [tapStride, channelStride] =
      convStateStrides(ConvOperands{p.page, p.weight, p.bias, p.channels, p.channelLast});
  for (int64_t j = 0; j < ConvPrefill::past; ++j)
    v.taps.push_back(makeView(p.page + j * tapStride, {p.numSlots, p.channels},
                              {ConvPrefill::past * p.channels, channelStride}));
  v.outRows = makeView(p.out, {c.end, p.channels}, {p.channels, 1});
  return v;
}

/// The final state, written by the program of the sequence's first chunk:
/// state'[j] = u(L - 3 + j), a token or (L < 3) a tap of the old state
/// (`halo`). No other program reads or writes this page, so the read of the
/// initial state and the write of the final one cannot race across CTAs;
/// within the program every [1, block_c] tile has the one layout, so the
/// thread that stores a channel's new taps is the one that loaded its old
/// taps, and it does so after those loads (same-thread program order).
void writeFinalState(const ConvPrefill &p, const Chunk &c, const ChunkViews &v,
                     const std::vector<Value> &halo, Value c0) {
  const Shape row = {1, p.bc};
  ifThen(c.first, [&] {
    Value length = c.seqEnd - c.seqStart;
    for (int64_t j = 0; j < ConvPrefill::past; ++j) {
      Value tau = length - ConvPrefill::past + j;
      Value token = asStateInput(
          load(v.seqRows, {where(tau >= 0, c.seqStart + tau, -1), v.xCol}, row), p.types);
      Value oldTap = length + j; // the tap u(tau) comes from when tau < 0
      Value fromOld = where(oldTap == 0, halo[0], where(oldTap == 1, halo[1], halo[2]));
      store(v.taps[j], {v.slotRow, c0}, where(tau >= 0, token, fromOld));
    }
  });
}

/// R3 over a live chunk: the halo, the final state, then the window sliding
/// down the chunk's rows.
void convolveChunk(const ConvPrefill &p, const Chunk &c, const ChunkViews &v, Value c0) {
  const Shape row = {1, p.bc};
  constexpr int64_t past = ConvPrefill::past;
  auto perChannel = [&](Value base, int64_t stride) {
    return load(makeView(base, {1, p.channels}, {p.channels * stride, stride}), {0, c0},
                row)
        .to(DType::F32);
  };
  Value w[4];
  for (int64_t j = 0; j < 4; ++j)
    w[j] = perChannel(p.weight + j, 4);
  Value b = p.bias.valid() ? perChannel(p.bias, 1) : zeros(row, DType::F32);

  // The halo u(begin - 3 .. begin - 1): the old state in a sequence's first
  // chunk (zeros for a fresh sequence), else the tokens.
  Value oldStateRow = where(c.first & (load(p.init + c.seq) != 0), v.slotRow, -1);
  std::vector<Value> halo;
  for (int64_t j = 0; j < past; ++j)
    halo.push_back(
        where(c.first, load(v.taps[j], {oldStateRow, c0}, row),
              asStateInput(load(v.chunkRows,
                                {where(c.first, -1, c.begin - past + j), v.xCol}, row),
                           p.types)));
  writeFinalState(p, c, v, halo, c0);

  // The window slides in f32: each row is widened once, not once per tap.
  // Measured slower on the H200: loading the next step's rows one step ahead,
  // and hoisting the weight loads above the metadata chain with the halo
  // carried raw (docs/journal/2026-11-30-prefill.md, "conv_prefill: fused").
  std::vector<Value> haloF32;
  for (Value h : halo)
    haloF32.push_back(convert(h, DType::F32));
  forRange(
      0, c.end - c.begin, p.step, haloF32,
      [&](Value r0, std::vector<Value> window) -> std::vector<Value> {
        for (int64_t i = 0; i < p.step; ++i)
          window.push_back(convert(
              asStateInput(load(v.chunkRows, {c.begin + r0 + i, v.xCol}, row), p.types),
              DType::F32));
        for (int64_t i = 0; i < p.step; ++i) {
          // R3: bias, then the taps oldest first (w[3] multiplies the current
          // token), each tap one fused multiply-add: four issue slots a
          // channel where a multiply and an add take eight.
          Value pre = b;
          for (int64_t j = 0; j < 4; ++j)
            pre = fma(w[j], window[i + j], pre);
          store(v.outRows, {c.begin + r0 + i, c0},
                convOutput(pre, p.types, p.applySilu, p.divisionFree));
        }
        return std::vector<Value>(window.end() - past, window.end());
      });
}

} // namespace

void buildConvPrefill(Kernel &k, const Specialization &spec) {
  const ConvPrefill p = declareConvPrefill(k, spec);
  Value c0 = programId(0) * p.bc;
  Chunk c;
  c.index = programId(1);
  // Unchecked launches trust their metadata: `trusted` holds throughout.
  Value trusted = trustMetadata(p, c0, c.index);
  c.seq = load(p.chunkSeq + c.index);
  c.begin = load(p.chunkBegin + c.index), c.end = load(p.chunkEnd + c.index);
  Value chunkStart = c.begin;
  if (const int64_t splits = spec.get("splits"); splits > 1) {
    // Program z takes rows [z sub, (z + 1) sub) of the chunk (clamped to its
    // end): a halo of 3 rows more read per piece, for programs that each walk
    // fewer rows.
    const int64_t sub = p.blockT / splits;
    auto clamp = [&](Value row) { return where(row < c.end, row, c.end); };
    c.begin = clamp(chunkStart + programId(2) * sub);
    c.end = clamp(chunkStart + (programId(2) + 1) * sub);
  }
  // A spare chunk (sequence -1 and begin = end: a graph captured for more
  // chunks than this batch holds) reads no metadata and stores nothing: it
  // takes the padding branch over zero rows.
  Value real = c.seq >= 0;
  c.seqStart = load(p.cuSeqlens + c.seq, real, 0);
  c.seqEnd = load(p.cuSeqlens + c.seq + 1, real, 0);
  c.slot = load(p.slots + c.seq, real, -1);
  c.first = c.begin == c.seqStart;
  // Only the first piece of a sequence's first chunk takes the old state and
  // writes the new one (a later piece clamped to an empty end may not).
  if (spec.get("splits") > 1)
    c.first = c.first & (programId(2) == 0);
  Value live = liveSlot(p, c, trusted, c0);
  const ChunkViews v = chunkViews(p, c, c0);

  // A padding sequence: zero rows, and nothing of it (input or page) is read.
  ifThen(trusted & paddingSlot(c.slot, p.nullBlockId), [&] {
    forRange(0, c.end - c.begin, p.step, {}, [&](Value r0, std::vector<Value>) {
      for (int64_t i = 0; i < p.step; ++i)
        store(v.outRows, {c.begin + r0 + i, c0}, zeros({1, p.bc}, p.types.out));
      return std::vector<Value>{};
    });
  });
  ifThen(live, [&] { convolveChunk(p, c, v, c0); });
}

KernelDef convPrefillKernel() {
  using R = ConstantRange;
  KernelDef def{
      "conv_prefill",
      "R3 causal conv1d + SiLU over a packed varlen batch, conv pages read and "
      "written",
      {{"inner", 4096, "z columns before xBC in zxbcdt (I = H*P)", {}, columnsRange()},
       {"channels", 6144, "conv channels (I + 2*G*N)", {}, sizeRange()},
       {"heads", 64, "dt columns after xBC in zxbcdt (H)", {}, columnsRange()},
       // A chunk after a sequence's first starts >= block_t >= 3 tokens
       // in, so its halo lies inside the sequence; steps of >= 3 rows
       // hold the next halo.
       {"block_t",
        64,
        "tokens per chunk: a power of two >= 4 (the host chunks by it)",
        {},
        R::powersOfTwo(4, 1024)},
       {"block_c",
        1024,
        "channels per program (256 * warps: 16-byte accesses)",
        {},
        tileRange()},
       {"rows_per_step",
        8,
        "token rows whose loads issue together (divides block_t)",
        {},
        R::between(3, 64)},
       {"fast_silu",
        1,
        "1: silu as x * rsqrt(1 + e^-x)^2, no division; 0: the IEEE quotient",
        {},
        R::flag()},
       {"warps", 4, "warps per program", {}, warpsRange()},
       {"splits",
        1,
        "programs per chunk (grid z): each walks block_t / splits of its rows",
        {},
        R::powersOfTwo(1, 64)},
       stateLayout(),
       slotsI64(),
       checked()},
      buildConvPrefill,
      {divides("rows_per_step", "block_t"),
       slotsI64NeedsChecks(),
       {"rows_per_step divides block_t / splits",
        {"rows_per_step", "block_t", "splits"},
        [](const Specialization &s) {
          return s.get("block_t") % s.get("splits") == 0 &&
                 (s.get("block_t") / s.get("splits")) % s.get("rows_per_step") == 0;
        }}}};
  for (KernelConstant c : convFormConstants())
    def.constants.push_back(c);
  return def;
}

} // namespace tilejit::models
