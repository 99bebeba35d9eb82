// Verifiers of Hopper's asynchronous pipeline in the tile dialect: the
// !tile.barriers and !tile.tensormap types, the tensormap source attribute,
// and the mbarrier, TMA and warp-specialization ops tile-warp-specialize makes.
#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/IR/TileOps.h"

using namespace mlir;
using namespace tilejit::tile;

static int64_t bytesOf(Type element) {
  return std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
}

/// Registers a thread may hold at most, summed over a program (sm_90).
static constexpr int64_t kRegisterFile = 65536;

LogicalResult BarriersType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t count) {
  if (count < 1 || count > 32)
    return emitError() << "a ring of mbarriers needs 1 to 32 of them, got " << count;
  return success();
}

/// The box one TMA copy moves: 2-D, at most 256 of each, rows one swizzle
/// span long.
static LogicalResult verifyBox(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> box, int64_t elementBytes) {
  if (box.size() != 2)
    return emitError() << "a tensor map's box is 2-D, got " << box.size() << " sizes";
  for (int64_t size : box)
    if (size < 1 || size > 256)
      return emitError() << "a tensor map's box sizes must be in [1, 256], got " << size;
  int64_t rowBytes = box[1] * elementBytes;
  if (rowBytes != 32 && rowBytes != 64 && rowBytes != 128)
    return emitError() << "a tensor map's box rows must be 32, 64 or 128 bytes (one "
                          "swizzle span), got "
                       << rowBytes;
  return success();
}

LogicalResult TensorMapType::verify(function_ref<InFlightDiagnostic()> emitError,
                                    ArrayRef<int64_t> box, Type element) {
  if (!isa<BFloat16Type, Float16Type, Float8E4M3FNType>(element))
    return emitError() << "a tensor map holds bf16, f16 or f8E4M3FN, got " << element;
  return verifyBox(emitError, box, bytesOf(element));
}

int64_t TensorMapType::getBoxBytes() const {
  return getBox()[0] * getBox()[1] * bytesOf(getElementType());
}

LogicalResult TensorMapSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          std::optional<int64_t> param, int64_t base,
                                          ArrayRef<int64_t> sizes,
                                          ArrayRef<int64_t> sizeArgs,
                                          ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> box,
                                          std::optional<int64_t> elementBytes) {
  if (base < 0)
    return emitError() << "tensormap source base must be a parameter index, got " << base;
  if (param && *param < 0)
    return emitError() << "tensormap source param must be a parameter index, got "
                       << *param;
  if (sizes.size() != 2 || sizeArgs.size() != 2 || strides.size() != 2)
    return emitError() << "tensormap source needs 2 sizes, size_args and strides";
  for (size_t d = 0; d < 2; ++d)
    if ((sizes[d] == -1) != (sizeArgs[d] >= 0) || sizes[d] < -1 || sizeArgs[d] < -1)
      return emitError() << "tensormap source dimension " << d
                         << " needs a static size or a size parameter, got size "
                         << sizes[d] << " and size_arg " << sizeArgs[d];
  if (strides[1] != 1 || strides[0] < 1)
    return emitError() << "tensormap source needs a contiguous last dimension and a "
                          "positive row stride, got strides ["
                       << strides[0] << ", " << strides[1] << "]";
  if (box.empty() != !elementBytes)
    return emitError() << "tensormap source needs box and element_bytes together";
  if (!elementBytes)
    return success();
  if (*elementBytes != 1 && *elementBytes != 2)
    return emitError() << "tensormap source element_bytes must be 1 or 2, got "
                       << *elementBytes;
  return verifyBox(emitError, box, *elementBytes);
}

/// Whether one thread runs `op`: it is in the producer region of a
/// tile.warp_specialize or in a tile.single_thread.
static bool oneThreadRuns(Operation *op) {
  for (Region *r = op->getParentRegion(); r; r = r->getParentRegion()) {
    if (isa_and_nonnull<SingleThreadOp>(r->getParentOp()))
      return true;
    if (auto ws = dyn_cast_or_null<WarpSpecializeOp>(r->getParentOp()))
      return r == &ws.getProducer();
  }
  return false;
}

LogicalResult MbarrierAllocOp::verify() {
  if (!isa<KernelOp>((*this)->getParentOp()))
    return emitOpError("must be at the top level of a kernel: every thread initializes "
                       "the ring together");
  return success();
}

LogicalResult MbarrierExpectTxOp::verify() {
  if (!oneThreadRuns(*this))
    return emitOpError("must be in the producer region of a tile.warp_specialize or in a "
                       "tile.single_thread (one thread arrives)");
  return success();
}

LogicalResult TmaCopyOp::verify() {
  if (!oneThreadRuns(*this))
    return emitOpError("must be in the producer region of a tile.warp_specialize or in a "
                       "tile.single_thread (one thread issues the copy)");
  TensorMapType map = getMap().getType();
  MemRefType buffer = getBuffer().getType();
  if (getOffsets().size() != 2)
    return emitOpError("needs 2 offsets, got ") << getOffsets().size();
  if (map.getElementType() != buffer.getElementType())
    return emitOpError("tensor map element type ")
           << map.getElementType() << " differs from the buffer's "
           << buffer.getElementType();
  if (map.getBox()[0] != buffer.getDimSize(1) || map.getBox()[1] != buffer.getDimSize(2))
    return emitOpError("box ") << map.getBox()[0] << "x" << map.getBox()[1]
                               << " differs from the slot " << buffer.getDimSize(1) << "x"
                               << buffer.getDimSize(2);
  if (buffer.getMemorySpace() !=
      sharedLayoutFor(getContext(), buffer.getDimSize(2), buffer.getElementType()))
    return emitOpError("needs the buffer in the swizzled layout of its rows (TMA "
                       "writes that swizzle), got ")
           << buffer.getMemorySpace();
  if (getBarriers().getType().getCount() != buffer.getDimSize(0))
    return emitOpError("needs one barrier per slot: ")
           << getBarriers().getType().getCount() << " barriers for "
           << buffer.getDimSize(0) << " slots";
  return success();
}

LogicalResult WarpSpecializeOp::verify() {
  auto kernel = cast<KernelOp>((*this)->getParentOp());
  auto config = kernel.getConfigAttr();
  if (!config || config.getProducer() != 1)
    return emitOpError("needs a kernel whose #tile.config has producer = 1");
  const int64_t producerWarps = getNumProducerWarps();
  if (producerWarps != 1 && producerWarps != 4)
    return emitOpError("producer_warps must be 1 (a warp) or 4 (a warpgroup), got ")
           << producerWarps;
  if (bool(getProducerRegs()) != bool(getConsumerRegs()))
    return emitOpError("needs both register budgets or neither");
  if (getProducerRegs()) {
    if (producerWarps != 4)
      return emitOpError("register budgets need a producer warpgroup (setmaxnreg acts "
                         "per warpgroup), got producer_warps = ")
             << producerWarps;
    if (*getProducerRegs() % 8 || *getConsumerRegs() % 8)
      return emitOpError("register budgets must be multiples of 8, got ")
             << *getProducerRegs() << " and " << *getConsumerRegs();
    int64_t total = 128 * int64_t(*getProducerRegs()) +
                    32 * config.getWarps() * int64_t(*getConsumerRegs());
    if (total > kRegisterFile)
      return emitOpError("asks for ")
             << total << " registers (128 producer threads x " << *getProducerRegs()
             << " + " << 32 * config.getWarps() << " consumer threads x "
             << *getConsumerRegs() << "), more than the " << kRegisterFile
             << " of a multiprocessor";
  }
  Operation *next = (*this)->getNextNode();
  if (!next || !isa<ReturnOp>(next))
    return emitOpError("must be the kernel's last op before tile.return: its warps "
                       "part here");
  return success();
}

LogicalResult DotAsyncOp::verify() {
  auto a = getA().getType(), b = getB().getType(), acc = getAcc().getType();
  if (!isa_and_nonnull<WgmmaOperandLayoutAttr>(a.getEncoding()) ||
      !isa_and_nonnull<WgmmaOperandLayoutAttr>(b.getEncoding()))
    return emitOpError("needs #tile.wgmma_operand operands (only wgmma runs "
                       "asynchronously), got ")
           << describeType(a) << " and " << describeType(b);
  if (a.getElementType() != b.getElementType() || a.getRank() != 2 || b.getRank() != 2 ||
      a.getDimSize(1) != b.getDimSize(0) || acc.getDimSize(0) != a.getDimSize(0) ||
      acc.getDimSize(1) != b.getDimSize(1))
    return emitOpError("needs a MxK x KxN product of one element type into a MxN "
                       "accumulator, got ")
           << describeType(a) << " x " << describeType(b) << " -> " << describeType(acc);
  return success();
}
