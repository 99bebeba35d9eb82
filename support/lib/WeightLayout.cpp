// Packing a row-major weight into a chunked layout and back (WeightLayout.h).
#include "tilejit/support/WeightLayout.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace tilejit {

std::string WeightLayout::name() const {
  if (!packed())
    return "row-major";
  return llvm::formatv("k{0}-rows{1}", kChunkBytes, groupRows).str();
}

uint64_t WeightLayout::packedBytes(int64_t rows, int64_t rowBytes) const {
  if (!packed())
    return uint64_t(rows) * rowBytes;
  const int64_t groups = (rows + groupRows - 1) / groupRows;
  return uint64_t(groups) * groupRows * rowBytes;
}

std::string formatWeightLayouts(const WeightLayouts &layouts) {
  std::string text;
  for (const auto &[param, layout] : layouts)
    if (layout.packed())
      text += (text.empty() ? "" : ";") + param + "=" + layout.name();
  return text;
}

/// `from` converted between the two orders: row-major into `layout` with
/// `toPacked`, else back.
static llvm::Expected<std::vector<uint8_t>> convert(const WeightLayout &layout,
                                                    llvm::ArrayRef<uint8_t> from,
                                                    int64_t rows, int64_t rowBytes,
                                                    bool toPacked) {
  if (!layout.packed())
    return std::vector<uint8_t>(from.begin(), from.end());
  const uint64_t rowMajorBytes = uint64_t(rows) * rowBytes;
  const uint64_t expected = toPacked ? rowMajorBytes : layout.packedBytes(rows, rowBytes);
  if (from.size() != expected)
    return llvm::createStringError(llvm::formatv(
        "weight layout {0}: {1} bytes for {2} rows of {3} bytes, expected {4}",
        layout.name(), from.size(), rows, rowBytes, expected));
  if (rowBytes % WeightLayout::kChunkBytes)
    return llvm::createStringError(llvm::formatv(
        "weight layout {0}: rows of {1} bytes are not whole {2}-byte chunks",
        layout.name(), rowBytes, WeightLayout::kChunkBytes));
  std::vector<uint8_t> to(toPacked ? layout.packedBytes(rows, rowBytes) : rowMajorBytes,
                          0);
  const int64_t chunks = rowBytes / WeightLayout::kChunkBytes, g = layout.groupRows;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t c = 0; c < chunks; ++c) {
      const uint64_t plain = uint64_t(row) * rowBytes + c * WeightLayout::kChunkBytes;
      const uint64_t packed =
          ((uint64_t(row / g) * chunks + c) * g + row % g) * WeightLayout::kChunkBytes;
      std::memcpy(to.data() + (toPacked ? packed : plain),
                  from.data() + (toPacked ? plain : packed), WeightLayout::kChunkBytes);
    }
  return to;
}

llvm::Expected<std::vector<uint8_t>> packWeight(const WeightLayout &layout,
                                                llvm::ArrayRef<uint8_t> rowMajor,
                                                int64_t rows, int64_t rowBytes) {
  return convert(layout, rowMajor, rows, rowBytes, /*toPacked=*/true);
}

llvm::Expected<std::vector<uint8_t>> unpackWeight(const WeightLayout &layout,
                                                  llvm::ArrayRef<uint8_t> packed,
                                                  int64_t rows, int64_t rowBytes) {
  return convert(layout, packed, rows, rowBytes, /*toPacked=*/false);
}

} // namespace tilejit
