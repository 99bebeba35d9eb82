// Verifiers of the shared-memory staging ops (tile.shared_alloc,
// tile.async_copy, tile.shared_load) that tile-pipeline-dots creates.
#include "tilejit/Dialect/Tile/IR/TileOps.h"

using namespace mlir;
using namespace tilejit::tile;

static std::string listStr(ArrayRef<int64_t> values) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(values, os);
  return s;
}

static int64_t bytesOf(Type element) {
  return std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
}

LogicalResult SharedAllocOp::verify() {
  MemRefType type = getResult().getType();
  auto layout = cast<SharedLayoutAttr>(type.getMemorySpace());
  int64_t cols = type.getDimSize(2);
  if (layout.getVec() * bytesOf(type.getElementType()) != 16)
    return emitOpError("shared layout vec must make 16-byte chunks of ")
           << type.getElementType() << ", got vec = " << layout.getVec();
  if (cols % layout.getVec() || cols / layout.getVec() < layout.getMaxPhase())
    return emitOpError("rows of ")
           << cols << " elements must hold at least maxPhase = " << layout.getMaxPhase()
           << " whole chunks of " << layout.getVec();
  return success();
}

LogicalResult AsyncCopyOp::verify() {
  ViewType view = getView().getType();
  MemRefType buffer = getBuffer().getType();
  if (view.getRank() != 2 || getOffsets().size() != 2)
    return emitOpError("needs a 2-D view and 2 offsets, got a ")
           << view.getRank() << "-D view and " << getOffsets().size() << " offsets";
  if (view.getElementType() != buffer.getElementType())
    return emitOpError("view element type ")
           << view.getElementType() << " differs from the buffer's "
           << buffer.getElementType();
  if (view.getContiguousDim() != 1u)
    return emitOpError("needs the view's last dimension contiguous (stride 1)");
  int64_t vec = 16 / bytesOf(buffer.getElementType());
  int64_t size = view.getShape()[1], stride = view.getStrides()[0];
  if (size == ShapedType::kDynamic || size % vec || stride == ShapedType::kDynamic ||
      stride % vec)
    return emitOpError("needs the view's last size and row stride static multiples of ")
           << vec << " elements (16 bytes)";
  return success();
}

unsigned SharedLoadOp::getKDim() {
  Attribute encoding = getResult().getType().getEncoding();
  int64_t opIdx = isa<WgmmaOperandLayoutAttr>(encoding)
                      ? cast<WgmmaOperandLayoutAttr>(encoding).getOpIdx()
                      : cast<DotOperandLayoutAttr>(encoding).getOpIdx();
  return (opIdx == 0) != getTranspose() ? 1 : 0;
}

SmallVector<int64_t, 2> SharedLoadOp::getSlotOffsets() {
  if (auto offsets = getOffsets())
    return SmallVector<int64_t, 2>(*offsets);
  return {0, 0};
}

LogicalResult SharedLoadOp::verify() {
  MemRefType buffer = getBuffer().getType();
  RankedTensorType result = getResult().getType();
  if (result.getRank() != 2)
    return emitOpError("result must be 2-D, got ") << describeType(result);
  int64_t rows = result.getDimSize(0), cols = result.getDimSize(1);
  if (getTranspose())
    std::swap(rows, cols);
  SmallVector<int64_t, 2> offsets = getSlotOffsets();
  if (offsets.size() != 2 || offsets[0] < 0 || offsets[1] < 0 ||
      offsets[0] + rows > buffer.getDimSize(1) ||
      offsets[1] + cols > buffer.getDimSize(2))
    return emitOpError("a ") << rows << "x" << cols << " part at offsets ["
                             << listStr(offsets) << "] does not fit a "
                             << buffer.getDimSize(1) << "x" << buffer.getDimSize(2)
                             << " slot";
  if (result.getElementType() != buffer.getElementType())
    return emitOpError("result element type ")
           << result.getElementType() << " differs from the buffer's "
           << buffer.getElementType();
  // wgmma reads the whole slot through a descriptor, K-major, or MN-major
  // for a 16-bit B (its transpose immediate; 8-bit operands have no other).
  if (auto wgmma = dyn_cast_or_null<WgmmaOperandLayoutAttr>(result.getEncoding())) {
    bool mnMajorB = wgmma.getOpIdx() == 1 && bytesOf(result.getElementType()) == 2;
    if ((getKDim() != 1 && !mnMajorB) || getOffsets() || rows != buffer.getDimSize(1) ||
        cols != buffer.getDimSize(2))
      return emitOpError("a #tile.wgmma_operand result must be a whole slot without "
                         "offsets, with K contiguous (or N, for a 16-bit B)");
    return success();
  }
  auto operand = dyn_cast_or_null<DotOperandLayoutAttr>(result.getEncoding());
  if (!operand)
    return emitOpError("result needs a #tile.dot_operand or #tile.wgmma_operand layout");
  // ldmatrix reads 16-byte rows along K, or (.trans) along M/N of 16-bit data.
  unsigned kDim = getKDim();
  if (kDim == 0 && (operand.getOpIdx() == 0 || bytesOf(result.getElementType()) != 2))
    return emitOpError("needs K contiguous in the slot for operand ")
           << operand.getOpIdx() << " of " << result.getElementType()
           << " (ldmatrix.trans reads only a 16-bit B)";
  int64_t kStep = 8 * operand.getKWidth();
  if (offsets[1 - kDim] != 0 || offsets[kDim] % kStep)
    return emitOpError("offsets must move along K only, by multiples of ")
           << kStep << ", got [" << listStr(offsets) << "]";
  return success();
}
