// R3 (docs/numerics.md#r3-causal-conv-prefill): the causal depthwise conv1d + SiLU over a
// packed varlen token stream (R9), each sequence starting from its slot's conv
// page or from zeros and writing its final state back to the page (R8). xBC is
// read in place from the in_proj output zxbcdt through a strided view.
//
// Grid: (channel blocks, chunks). A chunk is 1..block_t tokens of one sequence
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
#include "Parts.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <cmath>

namespace tilejit::models {
namespace {

/// silu(x) as x * r * r with r = rsqrt(1 + e^-x). silu()'s IEEE division
/// (div.rn.f32: a reciprocal, Newton steps and a slow-path check, about ten
/// instructions) is the largest item of this kernel's ~25 per element; the
/// GPU's rsqrt.approx (<= 2 ulp) puts x * r * r within ~6 f32 ulp of the
/// quotient, far inside the one-bf16-ulp band of the output.
Value siluWithoutDivision(Value x) {
  Value r = rsqrt(1.0f + exp(-x));
  return x * r * r;
}

} // namespace

void buildConvPrefill(Kernel &k, const Specialization &spec) {
  const int64_t inner = spec.get("inner"), channels = spec.get("channels");
  const int64_t heads = spec.get("heads");
  const int64_t bc = spec.get("block_c"), step = spec.get("rows_per_step");
  const bool divisionFree = spec.get("fast_silu") != 0;
  const bool channelLast = spec.get("state_layout") != 0;
  constexpr int64_t past = 3;                         // K - 1 taps of conv state
  const int64_t rowStride = inner + channels + heads; // zxbcdt: z | xBC | dt

  Value zxbcdt = k.ptrParam("zxbcdt", DType::BF16,
                            {"?", rowStride}); // [T, inner + channels + heads]
  Value weight = k.ptrParam("weight", DType::BF16, {channels, 4}); // [channels, 4]
  Value bias = k.ptrParam("bias", DType::BF16, {channels});        // [channels]
  Value cuSeqlens = k.ptrParam("cu_seqlens", DType::I32, {"?"});   // [S + 1]
  Value slots = k.ptrParam("slots", slotType(spec), {"?"}); // [S], negative: padding
  Value init = k.ptrParam("init", DType::I32, {"?"}); // [S], 1: continue from the slot
  Value chunkSeq = k.ptrParam("chunk_seq", DType::I32, {"?"}); // [chunks]
  Value chunkBegin = k.ptrParam("chunk_begin", DType::I32, {"?"});
  Value chunkEnd = k.ptrParam("chunk_end", DType::I32, {"?"});
  Value page = k.ptrParam("conv_state", DType::BF16,
                          channelLast ? std::vector<ParamDim>{"num_slots", 3, channels}
                                      : std::vector<ParamDim>{"num_slots", channels, 3});
  Value out = k.ptrParam("out", DType::BF16, {"?", channels}); // [T, channels]
  Value numSlots = k.scalarParam("num_slots", DType::I32);
  const OpCheck check = OpCheck::declare(k, spec.get("checked") != 0);
  Value status, tokens;
  if (check.enabled) {
    status = k.ptrParam("status", DType::I64, {1}); // check_varlen's verdict
    tokens = k.scalarParam("tokens", DType::I32);
  }
  // Eight bf16 per thread: one 16-byte access per row when block_c is
  // 256 * warps.
  k.setConfig({{1, bc}, spec.get("warps"), 1, 8});
  // The halo logic relies on block_t (a power of two >= 4) and rows_per_step
  // (>= 3, dividing it), checked before the build (Register.cpp).

  Value c0 = programId(0) * bc, chunk = programId(1);
  const Shape row = {1, bc};
  // Unchecked launches trust their metadata: `trusted` holds throughout.
  Value trusted = constant(1, DType::I1);
  if (check.enabled) {
    Value verdict = load(status);
    trusted = verdict == int64_t(0);
    ifThen(verdict != int64_t(0), [&] {
      View all = makeView(out, {tokens, channels}, {channels, 1});
      Value nan = full(row, std::nan(""), DType::BF16);
      forRange(0, spec.get("block_t"), 1, {}, [&](Value r, std::vector<Value>) {
        store(all, {chunk * spec.get("block_t") + r, c0}, nan);
        return std::vector<Value>{};
      });
    });
  }
  Value seq = load(chunkSeq + chunk);
  Value begin = load(chunkBegin + chunk), end = load(chunkEnd + chunk);
  // A spare chunk (sequence -1 and begin = end: a graph captured for more
  // chunks than this batch holds) reads no metadata and stores nothing: it
  // takes the padding branch over zero rows.
  Value real = seq >= 0;
  Value seqStart = load(cuSeqlens + seq, real, 0);
  Value seqEnd = load(cuSeqlens + seq + 1, real, 0);
  Value slot = load(slots + seq, real, -1);
  Value first = begin == seqStart;
  Value live = trusted & (slot >= 0);
  if (check.enabled) {
    Value pages = numSlots.to(slot.dtype());
    Value past = trusted & (slot >= pages);
    live = live & (slot < pages);
    check.record(past & first & (programId(0) == 0), OpError::SlotOutOfRange, seq);
    ifThen(past, [&] {
      View rows = makeView(out, {end, channels}, {channels, 1});
      forRange(begin, end, 1, {}, [&](Value r, std::vector<Value>) {
        store(rows, {r, c0}, full(row, std::nan(""), DType::BF16));
        return std::vector<Value>{};
      });
    });
  }
  // A live slot lies in [0, num_slots): exact as the i32 row of a page view.
  Value slotRow = slot.to(DType::I32);

  const Operand xCol = c0 + inner;
  // Rows past the chunk's end (and, for the final state, before the
  // sequence's start, given as row -1) read as zero: views mask them.
  View chunkRows = makeView(zxbcdt, {end, inner + channels}, {rowStride, 1});
  View seqRows = makeView(zxbcdt, {seqEnd, inner + channels}, {rowStride, 1});
  // Tap j of every slot's page, [num_slots, channels].
  auto [tapStride, channelStride] =
      convStateStrides(ConvOperands{page, weight, bias, channels, channelLast});
  std::vector<View> taps;
  for (int64_t j = 0; j < past; ++j)
    taps.push_back(makeView(page + j * tapStride, {numSlots, channels},
                            {past * channels, channelStride}));
  auto perChannel = [&](Value base, int64_t stride) {
    return load(makeView(base, {1, channels}, {channels * stride, stride}), {0, c0}, row)
        .to(DType::F32);
  };
  View outRows = makeView(out, {end, channels}, {channels, 1});

  // A padding sequence: zero rows, and nothing of it (input or page) is read.
  ifThen(trusted & (slot < 0), [&] {
    forRange(0, end - begin, step, {}, [&](Value r0, std::vector<Value>) {
      for (int64_t i = 0; i < step; ++i)
        store(outRows, {begin + r0 + i, c0}, zeros(row, DType::BF16));
      return std::vector<Value>{};
    });
  });

  ifThen(live, [&] {
    Value w[4];
    for (int64_t j = 0; j < 4; ++j)
      w[j] = perChannel(weight + j, 4);
    Value b = perChannel(bias, 1);

    // The halo u(begin - 3 .. begin - 1): the old state in a sequence's
    // first chunk (zeros for a fresh sequence), else the tokens.
    Value oldStateRow = where(first & (load(init + seq) != 0), slotRow, -1);
    std::vector<Value> halo;
    for (int64_t j = 0; j < past; ++j)
      halo.push_back(
          where(first, load(taps[j], {oldStateRow, c0}, row),
                load(chunkRows, {where(first, -1, begin - past + j), xCol}, row)));

    // The final state, written by the program of the sequence's first chunk:
    // state'[j] = u(L - 3 + j), a token or (L < 3) a tap of the old state.
    // No other program reads or writes this page, so the read of the initial
    // state and the write of the final one cannot race across CTAs; within
    // the program every [1, block_c] tile has the one layout, so the thread
    // that stores a channel's new taps is the one that loaded its old taps,
    // and it does so after those loads (same-thread program order).
    ifThen(first, [&] {
      Value length = seqEnd - seqStart;
      for (int64_t j = 0; j < past; ++j) {
        Value tau = length - past + j;
        Value token = load(seqRows, {where(tau >= 0, seqStart + tau, -1), xCol}, row);
        Value oldTap = length + j; // the tap u(tau) comes from when tau < 0
        Value fromOld = where(oldTap == 0, halo[0], where(oldTap == 1, halo[1], halo[2]));
        store(taps[j], {slotRow, c0}, where(tau >= 0, token, fromOld));
      }
    });

    // The window slides in f32: each row is widened once, not once per tap.
    // Measured slower on the H200 (docs/journal/2026-11-30-prefill.md): loading the next
    // step's rows one step ahead (242 registers), and hoisting the weight
    // loads above the metadata chain with the halo carried raw.
    std::vector<Value> haloF32;
    for (Value h : halo)
      haloF32.push_back(h.to(DType::F32));
    forRange(
        0, end - begin, step, haloF32,
        [&](Value r0, std::vector<Value> window) -> std::vector<Value> {
          for (int64_t i = 0; i < step; ++i)
            window.push_back(load(chunkRows, {begin + r0 + i, xCol}, row).to(DType::F32));
          for (int64_t i = 0; i < step; ++i) {
            // R3: bias, then the taps oldest first (w[3] multiplies the
            // current token), each tap one fused multiply-add: four issue
            // slots a channel where a multiply and an add take eight.
            Value pre = b;
            for (int64_t j = 0; j < 4; ++j)
              pre = fma(w[j], window[i + j], pre);
            store(outRows, {begin + r0 + i, c0},
                  (divisionFree ? siluWithoutDivision(pre) : silu(pre)).to(DType::BF16));
          }
          return std::vector<Value>(window.end() - past, window.end());
        });
  });
}

} // namespace tilejit::models
