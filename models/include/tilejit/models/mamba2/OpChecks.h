// The value checks the Mamba2 kernels make on the device when an op that
// stands in for another library's (tilejit.ops) launches them with `checked`
// = 1: index tables and varlen metadata are device data the host never reads
// (docs/numerics.md R8), so a bad value is found where it is read. A bad
// launch touches no state, writes NaN where its outputs would go, and records
// one error word the caller reads when it synchronizes (docs/python.md,
// "Checks on the device").
#ifndef TILEJIT_MODELS_MAMBA2_OPCHECKS_H
#define TILEJIT_MODELS_MAMBA2_OPCHECKS_H

#include <cstdint>
#include <utility>

namespace tilejit::models {

/// What a check found. The numbers are part of the error word's format.
enum class OpError : int64_t {
  None = 0,
  /// A row's slot is past the page (index: the row).
  SlotOutOfRange = 1,
  /// A row's destination slot is past the page (index: the row).
  DstSlotOutOfRange = 2,
  /// cu_seqlens (or query_start_loc) does not start at 0.
  SeqlensStart = 10,
  /// cu_seqlens[i + 1] <= cu_seqlens[i] (index: i): a sequence is empty or
  /// the boundaries go backwards.
  SeqlensOrder = 11,
  /// cu_seqlens does not end at the token count.
  SeqlensEnd = 12,
  /// Sequence i's rows cu_seqlens[i] .. cu_seqlens[i + 1] (or
  /// query_start_loc's) are not a range of the op's rows (index: i).
  SeqlensRange = 13,
  /// Sequence i has more tokens than the kernel steps or its slot table has
  /// columns for (index: i).
  SequenceTooLong = 14,
  /// cu_chunk_seqlens does not start at 0.
  ChunksStart = 20,
  /// cu_chunk_seqlens[i + 1] <= cu_chunk_seqlens[i] (index: i).
  ChunksOrder = 21,
  /// cu_chunk_seqlens does not end at the token count.
  ChunksEnd = 22,
  /// Chunk i is longer than chunk_size (index: i).
  ChunkTooLong = 23,
  /// seq_idx[i] is not a sequence (index: i).
  SeqIdxRange = 30,
  /// seq_idx[i] < seq_idx[i - 1] (index: i).
  SeqIdxOrder = 31,
  /// Chunk i does not lie inside sequence seq_idx[i] (index: i).
  ChunkCrossesSequence = 32,
  /// last_chunk_indices[s] is not a chunk (index: s).
  LastChunkRange = 40,
  /// last_chunk_indices[s] is not the last chunk of sequence s (index: s).
  LastChunkWrong = 41,
  /// num_accepted_tokens[i] is not in 1 .. the tokens a row may hold (index: i).
  AcceptedRange = 50,
  /// A prefix-caching column (initial_state_idx[i] or
  /// block_idx_last_scheduled_token[i]) is not a column of the slot table
  /// (index: i).
  ColumnRange = 51,
};

/// Every OpError but None, and its name (what tilejit.ops keys its messages by).
inline constexpr std::pair<OpError, const char *> kOpErrorNames[] = {
    {OpError::SlotOutOfRange, "slot_out_of_range"},
    {OpError::DstSlotOutOfRange, "dst_slot_out_of_range"},
    {OpError::SeqlensStart, "seqlens_start"},
    {OpError::SeqlensOrder, "seqlens_order"},
    {OpError::SeqlensEnd, "seqlens_end"},
    {OpError::SeqlensRange, "seqlens_range"},
    {OpError::SequenceTooLong, "sequence_too_long"},
    {OpError::ChunksStart, "chunks_start"},
    {OpError::ChunksOrder, "chunks_order"},
    {OpError::ChunksEnd, "chunks_end"},
    {OpError::ChunkTooLong, "chunk_too_long"},
    {OpError::SeqIdxRange, "seq_idx_range"},
    {OpError::SeqIdxOrder, "seq_idx_order"},
    {OpError::ChunkCrossesSequence, "chunk_crosses_sequence"},
    {OpError::LastChunkRange, "last_chunk_range"},
    {OpError::LastChunkWrong, "last_chunk_wrong"},
    {OpError::AcceptedRange, "accepted_range"},
    {OpError::ColumnRange, "column_range"},
};

/// The error word, one i64 so that a store of it never tears: the op that
/// launched (a number its caller chose, < 2^16) in bits 40-55, the OpError in
/// bits 32-39 and the index in bits 0-31. 0 is "no error".
constexpr int64_t packOpError(int64_t op, OpError error, int64_t index) {
  return (op << 40) | (int64_t(error) << 32) | (index & 0xffffffff);
}

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_OPCHECKS_H
