// The chunking of a packed prefill batch: the chunk metadata prefillMetadata
// builds (chunks, spans and their tails' flags, padding to a graph's capacity)
// and its refusals of bad batches with their numbers, and the chunk constants
// conv_prefill refuses.
#include "tilejit/models/nemotron_h/PrefillMetadata.h"
#include "tilejit/models/mamba2/Kernels.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

TEST_CASE(
    "prefill metadata: chunks of a varlen batch, and bad batches refused with their "
    "numbers",
    "[e2e][prefill]") {
  auto message = [](const ref::PrefillBatch &b, int64_t tokens, int64_t slots) {
    auto m = prefillMetadata(b, tokens, slots, 8);
    return m ? std::string("accepted") : llvm::toString(m.takeError());
  };
  // Lengths 1, 13, 8 in chunks of 8: {0: [0, 1)}, {1: [1, 9), [9, 14)}, {2: [14, 22)}.
  auto m =
      prefillMetadata(makeBatch({1, 13, 8}, {3, -1, 0}, {true, false, true}), 22, 4, 8);
  REQUIRE(bool(m));
  CHECK(m->chunkSequence == std::vector<int32_t>{0, 1, 1, 2});
  CHECK(m->chunkBegin == std::vector<int32_t>{0, 1, 9, 14});
  CHECK(m->chunkEnd == std::vector<int32_t>{1, 9, 14, 22});
  CHECK(m->cuSeqlens == std::vector<int32_t>{0, 1, 14, 22});
  CHECK(m->slots == std::vector<int32_t>{3, -1, 0});
  CHECK(m->init == std::vector<int32_t>{1, 0, 1});
  // Padded to a graph's capacity with spare chunks: sequence -1, no tokens.
  m = prefillMetadata(makeBatch({1, 13, 8}, {3, -1, 0}, {true, false, true}), 22, 4, 8,
                      6);
  REQUIRE(bool(m));
  CHECK(m->chunkSequence == std::vector<int32_t>{0, 1, 1, 2, -1, -1});
  CHECK(m->chunkBegin == std::vector<int32_t>{0, 1, 9, 14, 0, 0});
  CHECK(m->chunkEnd == std::vector<int32_t>{1, 9, 14, 22, 0, 0});
  m = prefillMetadata(makeBatch({1, 13, 8}, {3, -1, 0}, {true, false, true}), 22, 4, 8,
                      3);
  REQUIRE(!m);
  CHECK_THAT(
      llvm::toString(m.takeError()),
      Catch::Contains("22 tokens in 3 sequences need 4 chunks of 8, but the capacity "
                      "is 3 chunks"));

  ref::PrefillBatch b = makeBatch({4, 5}, {0, 1}, {true, true});
  b.cuSeqlens = {0, 4, 4, 9};
  b.slots = {0, 1, 2};
  b.continueFromSlot = {true, true, true};
  CHECK_THAT(message(b, 9, 4), Catch::Contains("sequence 1 is empty or negative "
                                               "(cu_seqlens[1] = 4, cu_seqlens[2] = 4)"));
  b = makeBatch({4, 5}, {0, 1}, {true, true});
  b.cuSeqlens[0] = 1;
  CHECK_THAT(message(b, 9, 4), Catch::Contains("cu_seqlens[0] is 1, expected 0"));
  b = makeBatch({4, 5}, {0, 1}, {true, true});
  CHECK_THAT(message(b, 10, 4),
             Catch::Contains("cu_seqlens ends at 9 but the batch holds 10 tokens"));
  CHECK_THAT(message(makeBatch({4, 5, 1}, {2, -1, 2}, {true, true, false}), 10, 4),
             Catch::Contains("sequences 0 and 2 both use slot 2 in one batch"));
  CHECK_THAT(message(makeBatch({4, 5}, {0, 4}, {true, true}), 9, 4),
             Catch::Contains("sequence 1 uses slot 4, outside [0, 4)"));
  CHECK_THAT(message(makeBatch({4, 5}, {0}, {true, true}), 9, 4),
             Catch::Contains("cu_seqlens holds 2 sequences but there are 1 slots and 2 "
                             "continue flags"));
}

TEST_CASE("prefill metadata: each span's tail sequence and flags, in time linear in the "
          "chunks",
          "[e2e][prefill]") {
  // Lengths 1, 13, 8 in chunks of 8: chunks of sequences 0, 1, 1, 2.
  const ref::PrefillBatch b = makeBatch({1, 13, 8}, {3, -1, 0}, {true, false, true});
  auto one = llvm::cantFail(prefillMetadata(b, 22, 4, 8, 0, /*spanChunks=*/1));
  CHECK(one.spanChunk == std::vector<int32_t>{0, 1, 2, 3, 4});
  CHECK(one.spanSlot == std::vector<int32_t>{3, -1, -1, 0});
  // Sequence 1's second chunk does not start it, its first does not end it;
  // sequences 0 and 2 continue.
  CHECK(one.spanFlags ==
        std::vector<int32_t>{kSpanTailStarts | kSpanTailFromPage | kSpanTailEnds,
                             kSpanTailStarts, kSpanTailEnds,
                             kSpanTailStarts | kSpanTailFromPage | kSpanTailEnds});
  auto two = llvm::cantFail(prefillMetadata(b, 22, 4, 8, 0, /*spanChunks=*/2));
  CHECK(two.spanChunk == std::vector<int32_t>{0, 2, 4});
  CHECK(two.spanSlot == std::vector<int32_t>{-1, 0});
  CHECK(two.spanFlags ==
        std::vector<int32_t>{kSpanTailStarts,
                             kSpanTailStarts | kSpanTailFromPage | kSpanTailEnds});

  // One sequence of 2^20 one-token chunks, a span each: each span's tail used
  // to walk back to its sequence's first chunk, 2^39 steps here (`tilejit run
  // --mode prefill --tokens 2147483647` never reached the plan's size check).
  const int64_t n = int64_t(1) << 20;
  auto longOne =
      llvm::cantFail(prefillMetadata(makeBatch({n}, {0}, {true}), n, 1, 1, 0, 1));
  REQUIRE(longOne.spanFlags.size() == size_t(n));
  CHECK(longOne.spanFlags.front() == (kSpanTailStarts | kSpanTailFromPage));
  CHECK(longOne.spanFlags.back() == (kSpanTailFromPage | kSpanTailEnds));
  CHECK(std::count(longOne.spanFlags.begin(), longOne.spanFlags.end(),
                   int32_t(kSpanTailFromPage)) == n - 2);
}

TEST_CASE("conv_prefill: a bad block_t or rows_per_step is refused naming them",
          "[e2e][prefill]") {
  const KernelDef *def = modelRegistry().find("conv_prefill");
  REQUIRE(def);
  auto refused = [&](const ConstantValues &overrides) {
    auto spec = def->specialize(overrides);
    REQUIRE(!spec);
    return llvm::toString(spec.takeError());
  };
  CHECK(refused({{"block_t", 48}}) ==
        "kernel 'conv_prefill': constant 'block_t' is 48; it must be a power of two in "
        "[4, 1024]");
  CHECK(refused({{"rows_per_step", 2}, {"block_t", 8}}) ==
        "kernel 'conv_prefill': constant 'rows_per_step' is 2; it must be in [3, 64]");
  CHECK(refused({{"rows_per_step", 6}, {"block_t", 8}}) ==
        "kernel 'conv_prefill': rows_per_step = 6, block_t = 8 breaks the rule "
        "rows_per_step divides block_t");
}
