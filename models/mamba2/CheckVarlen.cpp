// check_varlen: tilejit.ops' device-side check of a packed varlen batch's
// metadata (docs/numerics.md R9, OpChecks.h) before conv_prefill or
// ssd_prefill trusts it. One program walks cu_seqlens and, with `chunks`, the
// caller's chunk metadata (cu_chunk_seqlens, seq_idx, last_chunk_indices),
// `block` entries at a time, and writes its verdict to `status`: 0, or the
// error word of the first rule broken (in OpError's order, at its lowest
// index), which it also stores to `errors`. Indices are read as given (i64
// with `index_i64`), so no value reaches a comparison truncated.
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {
namespace {

/// The lowest index in `idx` where `broken` holds, or INT32_MAX.
Value firstWhere(Value broken, Value idx) {
  return min(where(broken, idx, INT32_MAX), 0);
}

} // namespace

void buildCheckVarlen(Kernel &k, const Specialization &spec) {
  const DType t = spec.get("index_i64") ? DType::I64 : DType::I32;
  const bool chunks = spec.get("chunks") != 0;
  const int64_t block = spec.get("block");
  Value cu = k.ptrParam("cu_seqlens", t, {"?"}); // [sequences + 1]
  Value cuChunks, seqIdx, lastChunk;
  if (chunks) {
    cuChunks = k.ptrParam("cu_chunk_seqlens", t, {"?"});    // [nchunks + 1]
    seqIdx = k.ptrParam("seq_idx", t, {"?"});               // [nchunks]
    lastChunk = k.ptrParam("last_chunk_indices", t, {"?"}); // [sequences]
  }
  Value status = k.ptrParam("status", DType::I64, {1});
  Value sequences = k.scalarParam("sequences", DType::I32);
  Value tokens = k.scalarParam("tokens", DType::I32);
  Value nchunks, chunkSize;
  if (chunks) {
    nchunks = k.scalarParam("nchunks", DType::I32);
    chunkSize = k.scalarParam("chunk_size", DType::I64);
  }
  const OpCheck check = OpCheck::declare(k, /*enabled=*/true);
  k.setConfig({{block}, spec.get("warps"), 1});

  const Value S = sequences.to(t), T = tokens.to(t);
  std::vector<std::pair<OpError, Value>> broken; // each rule's first index
  auto scalarRule = [&](OpError error, Value holds) {
    broken.emplace_back(
        error, where(holds, constant(INT32_MAX, DType::I32), constant(0, DType::I32)));
  };
  scalarRule(OpError::SeqlensStart, load(cu) == int64_t(0));
  // Sequences: strictly rising boundaries (empty sequences are refused, R9)
  // and, with chunks, each sequence's last chunk named by last_chunk_indices.
  Value C = chunks ? nchunks.to(t) : Value();
  auto sequenceRules =
      forRange(0, sequences, block,
               {constant(INT32_MAX, DType::I32), constant(INT32_MAX, DType::I32),
                constant(INT32_MAX, DType::I32)},
               [&](Value i0, std::vector<Value> first) {
                 Value idx = i0 + arange(0, block);
                 Value in = idx < sequences;
                 Value at = load(cu + idx, in, 0), next = load(cu + idx + 1, in, 0);
                 first[0] = minimum(first[0], firstWhere(in & (next <= at), idx));
                 if (chunks) {
                   Value last = load(lastChunk + idx, in, 0);
                   Value outside = in & ((last < 0) | (last >= C));
                   Value lc = maximum(minimum(last, C - 1), 0).to(DType::I32);
                   Value seqOfLast = load(seqIdx + lc, in, 0);
                   Value seqAfter = load(seqIdx + (lc + 1), in & (lc + 1 < nchunks), -1);
                   Value own = idx.to(t);
                   Value wrong = in & (last >= 0) & (last < C) &
                                 ((seqOfLast != own) | (seqAfter == own));
                   first[1] = minimum(first[1], firstWhere(outside, idx));
                   first[2] = minimum(first[2], firstWhere(wrong, idx));
                 }
                 return first;
               });
  broken.emplace_back(OpError::SeqlensOrder, sequenceRules[0]);
  scalarRule(OpError::SeqlensEnd, load(cu + sequences) == T);
  if (chunks) {
    scalarRule(OpError::ChunksStart, load(cuChunks) == int64_t(0));
    std::vector<Value> none(5, constant(INT32_MAX, DType::I32));
    auto chunkRules =
        forRange(0, nchunks, block, none, [&](Value j0, std::vector<Value> first) {
          Value idx = j0 + arange(0, block);
          Value in = idx < nchunks;
          Value begin = load(cuChunks + idx, in, 0),
                end = load(cuChunks + idx + 1, in, 0);
          Value seq = load(seqIdx + idx, in, 0);
          Value before = load(seqIdx + (idx - 1), in & (idx > 0), 0);
          Value seqOk = (seq >= 0) & (seq < S), seqBad = (seq < 0) | (seq >= S);
          Value sc = maximum(minimum(seq, S - 1), 0).to(DType::I32);
          Value lo = load(cu + sc, in, 0), hi = load(cu + sc + 1, in, 0);
          first[0] = minimum(first[0], firstWhere(in & (end <= begin), idx));
          Value tooLong = (end - begin).to(DType::I64) > chunkSize;
          first[1] = minimum(first[1], firstWhere(in & tooLong, idx));
          first[2] = minimum(first[2], firstWhere(in & seqBad, idx));
          first[3] = minimum(first[3], firstWhere(in & (idx > 0) & (seq < before), idx));
          first[4] = minimum(first[4],
                             firstWhere(in & seqOk & ((begin < lo) | (end > hi)), idx));
          return first;
        });
    broken.emplace_back(OpError::ChunksOrder, chunkRules[0]);
    scalarRule(OpError::ChunksEnd, load(cuChunks + nchunks) == T);
    broken.emplace_back(OpError::ChunkTooLong, chunkRules[1]);
    broken.emplace_back(OpError::SeqIdxRange, chunkRules[2]);
    broken.emplace_back(OpError::SeqIdxOrder, chunkRules[3]);
    broken.emplace_back(OpError::ChunkCrossesSequence, chunkRules[4]);
    broken.emplace_back(OpError::LastChunkRange, sequenceRules[1]);
    broken.emplace_back(OpError::LastChunkWrong, sequenceRules[2]);
  }
  // The first rule broken, in OpError's order: folded from the last.
  Value word = constant(0, DType::I64);
  for (auto it = broken.rbegin(); it != broken.rend(); ++it)
    word = where(it->second != INT32_MAX, check.word(it->first, it->second), word);
  store(status, word);
  check.record(word);
}

KernelDef checkVarlenKernel() {
  using R = ConstantRange;
  return {"check_varlen",
          "tilejit.ops' device-side check of varlen metadata (R9): cu_seqlens, and with "
          "chunks the caller's chunk boundaries, seq_idx and last_chunk_indices",
          {{"index_i64", 0, "1: the index tensors are i64; 0: i32", {}, R::flag()},
           {"chunks",
            0,
            "1: also cu_chunk_seqlens, seq_idx and last_chunk_indices",
            {},
            R::flag()},
           {"block", 1024, "entries per step", {}, tileRange()},
           {"warps", 4, "warps per program", {}, warpsRange()}},
          buildCheckVarlen};
}

} // namespace tilejit::models
