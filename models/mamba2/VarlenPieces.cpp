// varlen_pieces: the chunk metadata of a packed varlen batch (R9) made on the
// device in one launch, for tilejit.ops' prefill ops (conv_prefill, ssd_prefill):
// pieces of 1..block tokens tiling each sequence of cu_seqlens from its first
// token, then spare pieces (sequence -1, no tokens) up to the capacity the
// caller sized its buffers for. A program owns `tile` pieces; for each it counts
// the sequences that end before it (searchsorted over the running piece
// counts, `group` sequences a step) and finds the first piece of the sequence
// it falls in. Metadata check_varlen refuses yields pieces the prefill kernels
// never read (they skip the walk); every index stays in bounds either way.
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {

void buildVarlenPieces(Kernel &k, const Specialization &spec) {
  const int64_t tile = spec.get("tile"), group = spec.get("group");
  Value cu = k.ptrParam("cu_seqlens", DType::I32, {"?"});        // [sequences + 1]
  Value seqOut = k.ptrParam("chunk_seq", DType::I32, {"?"});     // [capacity]
  Value beginOut = k.ptrParam("chunk_begin", DType::I32, {"?"}); // [capacity]
  Value endOut = k.ptrParam("chunk_end", DType::I32, {"?"});     // [capacity]
  Value sequences = k.scalarParam("sequences", DType::I32);
  Value capacity = k.scalarParam("capacity", DType::I32);
  Value block = k.scalarParam("block", DType::I32);
  k.setConfig({{tile}, spec.get("warps"), 1});

  Value piece = programId(0) * tile + arange(0, tile); // [tile]
  // Per piece: the sequences ending at or before it, and the first piece of
  // the sequence it falls in (the largest such end).
  std::vector<Value> found = forRange(
      0, sequences, group,
      {zeros({tile}, DType::I32), zeros({tile}, DType::I32), constant(0, DType::I32)},
      [&](Value s0, std::vector<Value> carried) {
        Value s = s0 + arange(0, group);
        Value in = s < sequences;
        Value lo = load(cu + s, in, 0), hi = load(cu + s + 1, in, 0);
        Value counts = where(in, (hi - lo + block - 1) / block, 0);
        Value ends = carried[2] + cumsum(counts, 0); // [group]
        Value before = (expandDims(ends, 0) <= expandDims(piece, 1)) & expandDims(in, 0);
        Value passed = carried[0] + sum(before.to(DType::I32), 1);
        Value first = maximum(carried[1], max(where(before, expandDims(ends, 0), 0), 1));
        return std::vector<Value>{passed, first, carried[2] + sum(counts, 0)};
      });
  Value seq = found[0];
  Value real = seq < sequences;
  Value at = minimum(seq, maximum(sequences - 1, 0));
  Value begin = load(cu + at) + (piece - found[1]) * block;
  Value end = minimum(begin + block, load(cu + at + 1));
  Value inside = piece < capacity;
  store(seqOut + piece, where(real, seq, -1), inside);
  store(beginOut + piece, where(real, begin, 0), inside);
  store(endOut + piece, where(real, end, 0), inside);
}

KernelDef varlenPiecesKernel() {
  return {"varlen_pieces",
          "the chunks of a packed varlen batch (R9) tiling each sequence of cu_seqlens "
          "from its first token, padded with spare pieces to the capacity",
          {{"tile", 128, "pieces per program", {}, tileRange()},
           {"group", 16, "sequences per step of the search", {}, tileRange()},
           {"warps", 4, "warps per program", {}, warpsRange()}},
          buildVarlenPieces};
}

} // namespace tilejit::models
