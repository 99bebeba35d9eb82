// TensorMapSpec: checks and the ten-integer text form (see TensorMap.h).
#include "tilejit/support/TensorMap.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace tilejit {

llvm::Error TensorMapSpec::validate() const {
  auto fail = [](const llvm::Twine &why) {
    return llvm::createStringError("tensor map: " + why);
  };
  for (int d = 0; d < 2; ++d) {
    if ((sizes[d] == -1) != (sizeArgs[d] >= 0) || sizes[d] < -1 || sizes[d] == 0)
      return fail(llvm::formatv("dimension {0} needs a positive static size or a size "
                                "parameter, got {1} and parameter {2}",
                                d, sizes[d], sizeArgs[d]));
    if (box[d] < 1 || box[d] > 256)
      return fail(llvm::formatv("box size {0} outside [1, 256]", box[d]));
  }
  if (elementBytes != 1 && elementBytes != 2)
    return fail(llvm::formatv("{0}-byte elements (1 or 2 supported)", elementBytes));
  uint32_t rowBytes = box[1] * elementBytes;
  if (rowBytes != 32 && rowBytes != 64 && rowBytes != 128)
    return fail(llvm::formatv("box rows of {0} bytes, not 32, 64 or 128", rowBytes));
  if (rowStride < 1 || (rowStride * elementBytes) % 16)
    return fail(llvm::formatv("a row stride of {0} elements is not a positive multiple "
                              "of 16 bytes",
                              rowStride));
  return llvm::Error::success();
}

std::string TensorMapSpec::toString() const {
  return llvm::formatv("{0},{1},{2},{3},{4},{5},{6},{7},{8},{9}", param, base, sizes[0],
                       sizeArgs[0], sizes[1], sizeArgs[1], rowStride, box[0], box[1],
                       elementBytes);
}

/// The spec of toString's ten fields, each in range for its member.
static llvm::Expected<TensorMapSpec> fromFields(llvm::ArrayRef<int64_t> f) {
  if (f.size() != 10)
    return llvm::createStringError(
        llvm::formatv("tensor map: 10 fields expected, got {0}", f.size()).str());
  // Indices and box sizes are 32-bit; sizes and the stride (fields 2, 4, 6)
  // are 64-bit.
  for (size_t i : {0, 1, 3, 5, 7, 8, 9})
    if (f[i] < -1 || f[i] > INT32_MAX)
      return llvm::createStringError(
          llvm::formatv("tensor map: field {0} ({1}) is out of range", i, f[i]).str());
  if (f[0] < 0 || f[1] < 0 || f[7] < 0 || f[8] < 0 || f[9] < 0)
    return llvm::createStringError("tensor map: a negative index or size");
  TensorMapSpec spec;
  spec.param = uint32_t(f[0]);
  spec.base = uint32_t(f[1]);
  spec.sizes = {f[2], f[4]};
  spec.sizeArgs = {int32_t(f[3]), int32_t(f[5])};
  spec.rowStride = f[6];
  spec.box = {uint32_t(f[7]), uint32_t(f[8])};
  spec.elementBytes = uint32_t(f[9]);
  if (llvm::Error err = spec.validate())
    return std::move(err);
  return spec;
}

llvm::Expected<TensorMapSpec> TensorMapSpec::parse(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef, 10> parts;
  text.split(parts, ',');
  llvm::SmallVector<int64_t, 10> fields;
  for (llvm::StringRef part : parts) {
    int64_t v;
    if (part.getAsInteger(10, v) || parts.size() != 10)
      return llvm::createStringError("tensor map: '" + text.str() +
                                     "' is not ten integers");
    fields.push_back(v);
  }
  return fromFields(fields);
}

} // namespace tilejit
