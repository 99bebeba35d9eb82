// The device metadata of a packed prefill batch (docs/numerics.md#r9-varlen-metadata):
// the int32 arrays the prefill kernels read, validated on the host so a bad batch is an
// error naming its numbers before anything launches.
#ifndef TILEJIT_MODELS_PREFILLMETADATA_H
#define TILEJIT_MODELS_PREFILLMETADATA_H

#include "tilejit/models/reference/Reference.h"

namespace tilejit::models {

/// One prefill batch as the kernels see it. Chunk k covers tokens
/// [chunkBegin[k], chunkEnd[k]) of sequence chunkSequence[k]; chunks tile each
/// sequence from its first token, hold 1..chunkSize tokens and never cross a
/// sequence. Spare chunks (sequence -1, no tokens) may follow the real ones,
/// so a graph captured with a fixed grid serves smaller batches.
struct PrefillMetadata {
  std::vector<int32_t> cuSeqlens; ///< [S + 1]
  std::vector<int32_t> slots;     ///< [S]; negative: padding sequence
  std::vector<int32_t> init;      ///< [S]; 1: continue from the slot, 0: from zeros
  std::vector<int32_t> chunkSequence, chunkBegin, chunkEnd; ///< [chunks]
  /// Spans: windows of `spanChunks` consecutive chunks (the last one shorter;
  /// a window holds whole short sequences and pieces of long ones), which the
  /// SSD walks in parallel from passed states. Span z covers chunks
  /// [spanChunk[z], spanChunk[z + 1]); spare chunks are in none. A span's tail
  /// is its chunks from its last sequence start (all of them if none starts in
  /// it).
  std::vector<int32_t> spanChunk; ///< [spans + 1]
  std::vector<int32_t> spanSlot;  ///< [spans]; the tail sequence's slot, -1 for padding
  /// [spans]; kSpanTailStarts, kSpanTailFromPage, kSpanTailEnds (mamba2/Kernels.h).
  std::vector<int32_t> spanFlags;

  int64_t numSequences() const { return int64_t(slots.size()); }
  int64_t numChunks() const { return int64_t(chunkSequence.size()); }
  int64_t numSpans() const { return int64_t(spanSlot.size()); }
};

/// Validates `batch` for `numTokens` packed tokens and pages of `numSlots`
/// slots (cu_seqlens as ref::varlenChunks checks it: from 0, strictly
/// increasing, ending at numTokens; slots as ref::checkSlots: distinct and
/// below numSlots; one slot and one continue flag per sequence; token counts
/// within int32) and tiles it into chunks of `chunkSize` (a power of two).
/// With `chunkCapacity` > 0 the chunk arrays are padded with spare chunks to
/// exactly that many, and a batch needing more is an error. The chunks are
/// grouped into spans of `spanChunks`.
llvm::Expected<PrefillMetadata>
prefillMetadata(const ref::PrefillBatch &batch, int64_t numTokens, int64_t numSlots,
                int64_t chunkSize, int64_t chunkCapacity = 0, int64_t spanChunks = 16);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PREFILLMETADATA_H
