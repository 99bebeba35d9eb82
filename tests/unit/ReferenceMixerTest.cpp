// The f64 reference of the paged state (R8) and the whole mixer (R7) at a small
// geometry: untouched slots stay byte-identical, padding rows are zero,
// duplicate slots are errors, and prefill agrees with decode step by step.
#include "tilejit/models/reference/Reference.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace tilejit::models;
using namespace tilejit::models::ref;

namespace {

/// A small NemotronH: layer 0 has bf16 projections (an attention layer
/// follows), layer 2 FP8 ones.
NemotronHConfig smallConfig() {
  NemotronHConfig c;
  c.hiddenSize = 32;
  c.numHeads = 4;
  c.headDim = 4;
  c.numGroups = 2;
  c.stateSize = 8;
  c.convKernel = 4;
  c.chunkSize = 4;
  c.layerPattern = "M*M-";
  return c;
}

/// Pages filled with random (nonzero) state, so untouched and carried slots
/// are distinguishable from zeros.
PagedState randomPages(const NemotronHConfig &c, int64_t slots, Rng &rng) {
  PagedState s = PagedState::zeros(c, slots);
  s.conv = randomBF16(s.conv.shape, rng, -1, 1);
  s.ssm = randomF32(s.ssm.shape, rng, -1, 1);
  return s;
}

/// True when slot `slot` of both pages is byte-identical in `a` and `b`.
bool slotIdentical(const PagedState &a, const PagedState &b, int64_t slot) {
  auto same = [&](const auto &x, const auto &y) {
    auto rx = sliceRows(x, slot, slot + 1), ry = sliceRows(y, slot, slot + 1);
    return std::memcmp(rx.data.data(), ry.data.data(),
                       rx.data.size() * sizeof(rx.data[0])) == 0;
  };
  return same(a.conv, b.conv) && same(a.ssm, b.ssm);
}

std::string errorOf(llvm::Expected<Tensor<uint16_t>> r) {
  REQUIRE(!r);
  return llvm::toString(r.takeError());
}

int64_t bf16UlpDistance(uint16_t a, uint16_t b) {
  auto ordered = [](uint16_t v) {
    return (v & 0x8000) ? -int64_t(v & 0x7FFF) : int64_t(v);
  };
  return std::abs(ordered(a) - ordered(b));
}

} // namespace

TEST_CASE("R8 paged updates: untouched slots identical, padding zero", "[reference]") {
  const NemotronHConfig c = smallConfig();
  Rng rng(21);
  auto weights = syntheticMambaLayer(c, 2, 1);
  REQUIRE(bool(weights));
  const int64_t Cd = c.convChannels();
  PagedState pages = randomPages(c, 4, rng);
  const PagedState before = pages;
  const std::vector<int64_t> slots = {2, -1, 0};
  Tensor<uint16_t> xt = randomBF16({3, Cd}, rng, -1, 1);

  auto out =
      convUpdatePaged(xt, weights->convWeight, weights->convBias, slots, pages.conv);
  REQUIRE(bool(out));
  // Rows 0 and 2 equal the unpaged update on their slots' states.
  for (int64_t r : {0, 2}) {
    Tensor<uint16_t> state = sliceRows(before.conv, slots[r], slots[r] + 1);
    auto want = convUpdate(sliceRows(xt, r, r + 1), weights->convWeight,
                           weights->convBias, state);
    REQUIRE(bool(want));
    CHECK(sliceRows(*out, r, r + 1).data == want->data);
    CHECK(sliceRows(pages.conv, slots[r], slots[r] + 1).data == state.data);
  }
  CHECK(sliceRows(*out, 1, 2).data == std::vector<double>(size_t(Cd), 0.0));
  for (int64_t slot : {1, 3})
    CHECK(slotIdentical(pages, before, slot));
  CHECK(!slotIdentical(pages, before, 0));

  // Duplicate slots: an error naming both rows, and nothing written.
  PagedState untouched = pages;
  auto dup =
      convUpdatePaged(xt, weights->convWeight, weights->convBias, {1, -1, 1}, pages.conv);
  REQUIRE(!dup);
  CHECK(llvm::toString(dup.takeError()) == "rows 0 and 2 both use slot 1 in one batch");
  CHECK(pages.conv == untouched.conv);
  CHECK(llvm::toString(checkSlots({0, 4}, 4)) == "row 1 uses slot 4, outside [0, 4)");
  CHECK(!checkSlots({-1, -1, 3}, 4)); // several padding rows are fine

  // SSM page: the same contract.
  const SsmParams params = SsmParams::of(c, *weights);
  Tensor<uint16_t> x = randomBF16({3, c.numHeads, c.headDim}, rng, -1, 1);
  Tensor<uint16_t> dt = randomBF16({3, c.numHeads}, rng, -1, 1);
  Tensor<uint16_t> B = randomBF16({3, c.numGroups, c.stateSize}, rng, -1, 1);
  Tensor<uint16_t> C = randomBF16({3, c.numGroups, c.stateSize}, rng, -1, 1);
  auto y = ssmUpdatePaged(x, dt, B, C, params, slots, pages.ssm);
  REQUIRE(bool(y));
  CHECK(sliceRows(*y, 1, 2).data == std::vector<double>(size_t(c.intermediate()), 0.0));
  for (int64_t slot : {1, 3})
    CHECK(slotIdentical(pages, untouched, slot));
  CHECK(!slotIdentical(pages, untouched, 2));
}

TEST_CASE("R7 decode: padding rows zero, other slots byte-identical", "[reference]") {
  const NemotronHConfig c = smallConfig();
  Rng rng(23);
  for (int64_t layer : {0, 2}) {
    auto weights = syntheticMambaLayer(c, layer, 5);
    REQUIRE(bool(weights));
    CHECK(weights->inProj.isFP8 == (layer == 2));
    PagedState pages = randomPages(c, 5, rng);
    const PagedState before = pages;
    Tensor<uint16_t> hidden = randomBF16({3, c.hiddenSize}, rng, -2, 2);

    auto out = mixerDecode(c, *weights, hidden, {3, -1, 1}, pages);
    REQUIRE(bool(out));
    REQUIRE(out->size() == 3 * c.hiddenSize);
    CHECK(sliceRows(*out, 1, 2).data == std::vector<uint16_t>(size_t(c.hiddenSize), 0));
    for (int64_t slot : {0, 2, 4})
      CHECK(slotIdentical(pages, before, slot));
    CHECK(!slotIdentical(pages, before, 1));
    CHECK(!slotIdentical(pages, before, 3));

    // Rows are independent: row 2 alone on a copy of the old state agrees.
    PagedState alone = before;
    auto single = mixerDecode(c, *weights, sliceRows(hidden, 2, 3), {1}, alone);
    REQUIRE(bool(single));
    CHECK(single->data == sliceRows(*out, 2, 3).data);
    CHECK(slotIdentical(alone, pages, 1));

    // Duplicate slots: the error, and every page unchanged.
    PagedState snapshot = pages;
    CHECK(errorOf(mixerDecode(c, *weights, hidden, {4, 2, 4}, pages)) ==
          "rows 0 and 2 both use slot 4 in one batch");
    CHECK(pages.conv == snapshot.conv);
    CHECK(pages.ssm == snapshot.ssm);
    CHECK(errorOf(mixerDecode(c, *weights, hidden, {0, 1}, pages)) ==
          "mixer: 2 slot indices for 3 rows");
  }
}

TEST_CASE("R7 prefill continuing from a slot agrees with decode steps", "[reference]") {
  const NemotronHConfig c = smallConfig();
  Rng rng(29);
  auto weights = syntheticMambaLayer(c, 2, 9);
  REQUIRE(bool(weights));
  const int64_t T = 6;
  const PagedState start = randomPages(c, 3, rng);
  Tensor<uint16_t> hidden = randomBF16({T, c.hiddenSize}, rng, -2, 2);

  PagedState prefillPages = start;
  auto prefill = mixerPrefill(c, *weights, hidden, {{0, T}, {1}, {true}}, prefillPages);
  REQUIRE(bool(prefill));
  PagedState decodePages = start;
  std::vector<uint16_t> decoded;
  for (int64_t t = 0; t < T; ++t) {
    auto out = mixerDecode(c, *weights, sliceRows(hidden, t, t + 1), {1}, decodePages);
    REQUIRE(bool(out));
    decoded.insert(decoded.end(), out->data.begin(), out->data.end());
  }
  // The conv state is exact; the SSM state differs only by the per-step f32
  // stores of decode; outputs by rare bf16 ulps after the chain of roundings.
  CHECK(prefillPages.conv == decodePages.conv);
  int64_t examined = 0, far = 0;
  for (size_t i = 0; i < decoded.size(); ++i, ++examined)
    far += bf16UlpDistance(decoded[i], prefill->data[i]) > 2;
  CHECK(examined == T * c.hiddenSize);
  CHECK(far == 0);
  double stateDiff = 0;
  for (int64_t i = 0; i < prefillPages.ssm.size(); ++i)
    stateDiff = std::max(
        stateDiff, double(std::fabs(prefillPages.ssm.data[i] - decodePages.ssm.data[i])));
  CHECK(stateDiff < 1e-5);
  CHECK(slotIdentical(prefillPages, start, 0));
  CHECK(slotIdentical(prefillPages, start, 2));

  // Counterfactual: a fresh start (dropped carry) separates the STATE by far
  // more than that band.
  PagedState freshPages = start;
  auto fresh = mixerPrefill(c, *weights, hidden, {{0, T}, {1}, {false}}, freshPages);
  REQUIRE(bool(fresh));
  double freshDiff = 0;
  for (int64_t i = 0; i < freshPages.ssm.size(); ++i)
    freshDiff = std::max(
        freshDiff, double(std::fabs(freshPages.ssm.data[i] - prefillPages.ssm.data[i])));
  CHECK(freshDiff > 1e-2);
  CHECK(fresh->data != prefill->data);
}

TEST_CASE("R7 packed prefill: sequences independent, padding sequence zero",
          "[reference]") {
  const NemotronHConfig c = smallConfig();
  Rng rng(31);
  auto weights = syntheticMambaLayer(c, 0, 3);
  REQUIRE(bool(weights));
  const PagedState start = randomPages(c, 4, rng);
  Tensor<uint16_t> hidden = randomBF16({9, c.hiddenSize}, rng, -2, 2);

  // Sequences [0, 5) fresh into slot 3, [5, 7) padding, [7, 9) continuing slot 0.
  PagedState pages = start;
  auto packed = mixerPrefill(c, *weights, hidden,
                             {{0, 5, 7, 9}, {3, -1, 0}, {false, true, true}}, pages);
  REQUIRE(bool(packed));
  CHECK(sliceRows(*packed, 5, 7).data ==
        std::vector<uint16_t>(size_t(2 * c.hiddenSize), 0));
  CHECK(slotIdentical(pages, start, 1));
  CHECK(slotIdentical(pages, start, 2));

  PagedState alone = start;
  auto first =
      mixerPrefill(c, *weights, sliceRows(hidden, 0, 5), {{0, 5}, {3}, {false}}, alone);
  auto last =
      mixerPrefill(c, *weights, sliceRows(hidden, 7, 9), {{0, 2}, {0}, {true}}, alone);
  REQUIRE(bool(first));
  REQUIRE(bool(last));
  CHECK(first->data == sliceRows(*packed, 0, 5).data);
  CHECK(last->data == sliceRows(*packed, 7, 9).data);
  CHECK(alone.conv == pages.conv);
  CHECK(alone.ssm == pages.ssm);

  // Validation happens before any slot is written.
  PagedState snapshot = pages;
  CHECK(errorOf(mixerPrefill(c, *weights, hidden,
                             {{0, 5, 5, 9}, {3, -1, 0}, {false, false, false}}, pages)) ==
        "varlen: sequence 1 is empty or negative (cu_seqlens[1] = 5, cu_seqlens[2] = 5); "
        "empty sequences are refused");
  CHECK(errorOf(mixerPrefill(c, *weights, hidden,
                             {{0, 5, 7, 9}, {2, 1, 2}, {false, false, false}}, pages)) ==
        "sequences 0 and 2 both use slot 2 in one batch");
  CHECK(pages.conv == snapshot.conv);
  CHECK(pages.ssm == snapshot.ssm);
}
