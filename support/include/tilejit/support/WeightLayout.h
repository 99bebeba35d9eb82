// Packed weight layouts: how a kernel asks for a [rows, K] weight to be
// stored, and the one host packing function the GPU upload and the
// interpreter both use (docs/design.md#weight-layouts).
#ifndef TILEJIT_SUPPORT_WEIGHTLAYOUT_H
#define TILEJIT_SUPPORT_WEIGHTLAYOUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilejit {

/// A weight's storage order. The default is the row-major [rows, K] tensor as
/// the checkpoint gives it. A chunked layout groups `groupRows` rows and
/// stores each group K-chunk-major: chunk c (bytes [c * 16, c * 16 + 16) of a
/// row) of the group's rows 0..groupRows-1, then chunk c + 1. A program that
/// owns one group then streams one contiguous run, and one 16-byte load per
/// thread is one row's chunk: consecutive threads read consecutive 16 bytes.
/// The last group is padded with zero rows.
struct WeightLayout {
  /// 0: row-major (no packing).
  int64_t groupRows = 0;

  static constexpr int64_t kChunkBytes = 16;

  bool packed() const { return groupRows > 0; }
  /// "row-major", or "k16-rows16" for 16-row groups of 16-byte chunks: the
  /// text cache keys and weight-slot parts carry.
  std::string name() const;
  /// Bytes the layout stores for `rows` rows of `rowBytes` bytes.
  uint64_t packedBytes(int64_t rows, int64_t rowBytes) const;

  auto operator<=>(const WeightLayout &) const = default;
};

/// The layouts a kernel reads its weight parameters in, by parameter name;
/// parameters not named are row-major.
using WeightLayouts = std::map<std::string, WeightLayout>;

/// "PARAM=LAYOUT;..." in name order, packed layouts only ("" for none).
std::string formatWeightLayouts(const WeightLayouts &layouts);

/// `rowMajor` ([rows, rowBytes] bytes) in `layout`. Errors: a byte count that
/// is not rows * rowBytes, a row that is not a whole number of chunks.
llvm::Expected<std::vector<uint8_t>> packWeight(const WeightLayout &layout,
                                                llvm::ArrayRef<uint8_t> rowMajor,
                                                int64_t rows, int64_t rowBytes);

/// The inverse of packWeight (the padding rows dropped).
llvm::Expected<std::vector<uint8_t>> unpackWeight(const WeightLayout &layout,
                                                  llvm::ArrayRef<uint8_t> packed,
                                                  int64_t rows, int64_t rowBytes);

} // namespace tilejit

#endif // TILEJIT_SUPPORT_WEIGHTLAYOUT_H
