// R9: validation of a packed varlen batch's cu_seqlens and its chunk metadata:
// chunks tile each sequence from its first token and hold 1..Q tokens.
#include "tilejit/models/reference/Reference.h"

namespace tilejit::models::ref {

llvm::Expected<VarlenChunks> varlenChunks(llvm::ArrayRef<int64_t> cuSeqlens,
                                          int64_t numTokens, int64_t chunkSize) {
  if (chunkSize < 1 || (chunkSize & (chunkSize - 1)) != 0)
    return llvm::createStringError("varlen: chunk size %lld is not a power of two",
                                   (long long)chunkSize);
  if (cuSeqlens.size() < 2)
    return llvm::createStringError(
        "varlen: cu_seqlens needs at least 2 entries (one sequence), got %zu",
        cuSeqlens.size());
  if (cuSeqlens.front() != 0)
    return llvm::createStringError("varlen: cu_seqlens[0] is %lld, expected 0",
                                   (long long)cuSeqlens.front());
  for (size_t s = 0; s + 1 < cuSeqlens.size(); ++s)
    if (cuSeqlens[s + 1] <= cuSeqlens[s])
      return llvm::createStringError(
          "varlen: sequence %zu is empty or negative (cu_seqlens[%zu] = %lld, "
          "cu_seqlens[%zu] = %lld); empty sequences are refused",
          s, s, (long long)cuSeqlens[s], s + 1, (long long)cuSeqlens[s + 1]);
  if (cuSeqlens.back() != numTokens)
    return llvm::createStringError(
        "varlen: cu_seqlens ends at %lld but the batch holds %lld tokens",
        (long long)cuSeqlens.back(), (long long)numTokens);

  VarlenChunks chunks;
  for (size_t s = 0; s + 1 < cuSeqlens.size(); ++s)
    for (int64_t begin = cuSeqlens[s]; begin < cuSeqlens[s + 1]; begin += chunkSize) {
      chunks.chunkSequence.push_back(int64_t(s));
      chunks.chunkBegin.push_back(begin);
      chunks.chunkEnd.push_back(std::min(begin + chunkSize, cuSeqlens[s + 1]));
    }
  return chunks;
}

} // namespace tilejit::models::ref
