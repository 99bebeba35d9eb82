// What the runtime needs to build a TMA descriptor (a `!tile.tensormap`
// kernel parameter) at launch: which parameters hold the view's base and
// sizes, its static parts, and the box one copy moves. The compiler fills it
// from its `#tile.tensormap_source` records, the disk cache stores it as text,
// the runtime encodes it with cuTensorMapEncodeTiled.
#ifndef TILEJIT_SUPPORT_TENSORMAP_H
#define TILEJIT_SUPPORT_TENSORMAP_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>

namespace tilejit {

/// A 2-D view (row-major, the last dimension contiguous) copied in boxes.
struct TensorMapSpec {
  /// Index of the tensor-map parameter itself.
  uint32_t param = 0;
  /// Index of the pointer parameter holding the view's base.
  uint32_t base = 0;
  /// Per dimension: a static size, or -1 with `sizeArgs` naming the i32
  /// parameter that holds it.
  std::array<int64_t, 2> sizes{};
  std::array<int32_t, 2> sizeArgs{-1, -1};
  /// Elements between consecutive rows.
  int64_t rowStride = 0;
  /// Rows x columns one copy moves; box[1] * elementBytes is the swizzle
  /// span (32, 64 or 128 bytes).
  std::array<uint32_t, 2> box{};
  uint32_t elementBytes = 1;

  /// Checks the fields against each other and the hardware's limits.
  llvm::Error validate() const;
  /// Ten comma-separated integers: param, base, size0, sizeArg0, size1,
  /// sizeArg1, rowStride, box0, box1, elementBytes (a disk cache entry's
  /// text).
  std::string toString() const;
  /// The spec toString wrote, checked as validate() checks it.
  static llvm::Expected<TensorMapSpec> parse(llvm::StringRef text);

  bool operator==(const TensorMapSpec &other) const = default;
};

} // namespace tilejit

#endif // TILEJIT_SUPPORT_TENSORMAP_H
