// Packed weight layouts (support/WeightLayout.h): where each chunk lands, the
// round trip, the padding of the last group, and the errors.
#include "tilejit/support/WeightLayout.h"

#include <catch2/catch.hpp>

#include <numeric>

using namespace tilejit;

namespace {
/// [rows, rowBytes] bytes, each distinct modulo 251.
std::vector<uint8_t> rampOf(int64_t rows, int64_t rowBytes) {
  std::vector<uint8_t> bytes(rows * rowBytes);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = uint8_t(i % 251);
  return bytes;
}
} // namespace

TEST_CASE("a chunked layout stores each group K-chunk-major and round-trips",
          "[support][weights]") {
  const int64_t rows = GENERATE(16, 20, 3), rowBytes = 48, group = 4;
  INFO("rows " << rows);
  WeightLayout layout{group};
  CHECK(layout.name() == "k16-rows4");
  CHECK(WeightLayout{}.name() == "row-major");
  std::vector<uint8_t> plain = rampOf(rows, rowBytes);
  auto packed = packWeight(layout, plain, rows, rowBytes);
  REQUIRE(bool(packed));
  const int64_t paddedRows = (rows + group - 1) / group * group;
  CHECK(packed->size() == size_t(paddedRows * rowBytes));
  CHECK(layout.packedBytes(rows, rowBytes) == packed->size());
  // Chunk c of row r sits at ((r / group) * 3 + c) * group + r % group chunks.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      const int64_t at = (((r / group) * 3 + c) * group + r % group) * 16;
      CHECK(std::equal(plain.begin() + r * rowBytes + c * 16,
                       plain.begin() + r * rowBytes + c * 16 + 16, packed->begin() + at));
    }
  // The padding rows of the last group are zero.
  int64_t paddingBytes = 0;
  for (int64_t r = rows; r < paddedRows; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      const int64_t at = (((r / group) * 3 + c) * group + r % group) * 16;
      paddingBytes += std::count(packed->begin() + at, packed->begin() + at + 16, 0);
    }
  CHECK(paddingBytes == (paddedRows - rows) * rowBytes);
  auto back = unpackWeight(layout, *packed, rows, rowBytes);
  REQUIRE(bool(back));
  CHECK(*back == plain);
  // The counterfactual: the packed bytes are not the row-major ones.
  if (rows > 1)
    CHECK(!std::equal(plain.begin(), plain.end(), packed->begin()));
}

TEST_CASE("a row-major layout leaves the bytes alone; bad sizes are errors",
          "[support][weights]") {
  std::vector<uint8_t> plain = rampOf(4, 32);
  CHECK(*packWeight(WeightLayout{}, plain, 4, 32) == plain);
  auto partialChunk = packWeight(WeightLayout{4}, rampOf(4, 40), 4, 40);
  REQUIRE(!partialChunk);
  CHECK(llvm::toString(partialChunk.takeError()) ==
        "weight layout k16-rows4: rows of 40 bytes are not whole 16-byte chunks");
  auto wrongSize = packWeight(WeightLayout{4}, plain, 5, 32);
  REQUIRE(!wrongSize);
  CHECK(llvm::toString(wrongSize.takeError()) ==
        "weight layout k16-rows4: 128 bytes for 5 rows of 32 bytes, expected 160");
  CHECK(formatWeightLayouts({{"weight", WeightLayout{16}}, {"bias", WeightLayout{}}}) ==
        "weight=k16-rows16");
}
