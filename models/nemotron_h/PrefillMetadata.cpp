// The device metadata of a packed prefill batch (see PrefillMetadata.h). The
// checks are the reference's own (ref::varlenChunks, ref::checkSlots), so the
// kernels and the oracle refuse exactly the same batches.
#include "tilejit/models/nemotron_h/PrefillMetadata.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <algorithm>
#include <limits>

namespace tilejit::models {

llvm::Expected<PrefillMetadata> prefillMetadata(const ref::PrefillBatch &batch,
                                                int64_t numTokens, int64_t numSlots,
                                                int64_t chunkSize, int64_t chunkCapacity,
                                                int64_t spanChunks) {
  if (spanChunks < 1)
    return llvm::createStringError("prefill: %lld chunks per span (at least 1)",
                                   (long long)spanChunks);
  if (numTokens > std::numeric_limits<int32_t>::max())
    return llvm::createStringError("prefill: %lld tokens do not fit the int32 metadata",
                                   (long long)numTokens);
  auto chunks = ref::varlenChunks(batch.cuSeqlens, numTokens, chunkSize);
  if (!chunks)
    return chunks.takeError();
  const size_t sequences = batch.cuSeqlens.size() - 1;
  if (batch.slots.size() != sequences || batch.continueFromSlot.size() != sequences)
    return llvm::createStringError(
        "prefill: cu_seqlens holds %zu sequences but there are %zu slots and %zu "
        "continue flags",
        sequences, batch.slots.size(), batch.continueFromSlot.size());
  if (auto err = ref::checkSlots(batch.slots, numSlots, "sequence"))
    return std::move(err);

  if (chunkCapacity > 0 && chunks->numChunks() > chunkCapacity)
    return llvm::createStringError("prefill: %lld tokens in %zu sequences need %lld "
                                   "chunks of %lld, but the capacity "
                                   "is %lld chunks",
                                   (long long)numTokens, sequences,
                                   (long long)chunks->numChunks(), (long long)chunkSize,
                                   (long long)chunkCapacity);

  PrefillMetadata m;
  m.cuSeqlens.assign(batch.cuSeqlens.begin(), batch.cuSeqlens.end());
  m.slots.assign(batch.slots.begin(), batch.slots.end());
  for (bool carry : batch.continueFromSlot)
    m.init.push_back(carry ? 1 : 0);
  m.chunkSequence.assign(chunks->chunkSequence.begin(), chunks->chunkSequence.end());
  m.chunkBegin.assign(chunks->chunkBegin.begin(), chunks->chunkBegin.end());
  m.chunkEnd.assign(chunks->chunkEnd.begin(), chunks->chunkEnd.end());
  // Each sequence's first chunk: chunks tile a sequence from its first token,
  // in order. Found once, not by walking back from each span's tail, which
  // was quadratic in one long sequence's chunks (2^31 tokens never finished).
  std::vector<int64_t> firstChunk(sequences, -1);
  for (int64_t c = m.numChunks() - 1; c >= 0; --c)
    firstChunk[m.chunkSequence[c]] = c;
  // Spans: windows of consecutive chunks, each with its tail's sequence.
  m.spanChunk.push_back(0);
  for (int64_t c = 0; c < m.numChunks(); c += spanChunks) {
    const int64_t end = std::min<int64_t>(c + spanChunks, m.numChunks());
    const int32_t seq = m.chunkSequence[end - 1];
    // The tail starts at a sequence start when its sequence's first chunk is
    // in the window.
    const int64_t firstOfSeq = firstChunk[seq];
    m.spanChunk.push_back(int32_t(end));
    m.spanSlot.push_back(m.slots[seq] < 0 ? -1 : m.slots[seq]);
    const bool ends = m.chunkEnd[end - 1] == m.cuSeqlens[seq + 1];
    m.spanFlags.push_back((firstOfSeq >= c ? kSpanTailStarts : 0) |
                          (m.init[seq] ? kSpanTailFromPage : 0) |
                          (ends ? kSpanTailEnds : 0));
  }
  m.chunkSequence.resize(size_t(std::max(chunkCapacity, m.numChunks())), -1);
  m.chunkBegin.resize(m.chunkSequence.size(), 0);
  m.chunkEnd.resize(m.chunkSequence.size(), 0);
  return m;
}

} // namespace tilejit::models
