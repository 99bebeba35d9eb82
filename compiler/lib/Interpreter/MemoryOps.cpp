// Memory ops: tile.make_view, tile.load / tile.store (masked by the view's
// bounds), tile.addptr and tile.ptr_load / tile.ptr_store (masked by an i1
// mask). Every element that is touched is first checked against the run's
// buffers, so a bad access is an error naming the op, never a stray read.
#include "InterpreterImpl.h"

#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/APFloat.h"

using namespace mlir;

namespace tilejit::interp::detail {
namespace {

Expected<Instr> compileMakeView(Operation *op, Compiler &c) {
  auto make = cast<tile::MakeViewOp>(op);
  tile::ViewType type = make.getResult().getType();
  unsigned base = c.slotOf(make.getBase());
  std::vector<unsigned> sizes, strides;
  for (Value v : make.getSizes())
    sizes.push_back(c.slotOf(v));
  for (Value v : make.getStrides())
    strides.push_back(c.slotOf(v));
  SmallVector<int64_t, 4> staticSizes(type.getShape()), staticStrides(type.getStrides());
  Expected<unsigned> out = c.define(make.getResult(), op);
  if (!out)
    return out.takeError();
  OpSite site = siteOf(op);
  unsigned dst = *out;
  return Instr([=](Frame &frame) -> llvm::Error {
    View &view = frame.slots[dst].view;
    view.base = frame.slots[base].i[0];
    view.sizes = staticSizes;
    view.strides = staticStrides;
    auto nextSize = sizes.begin(), nextStride = strides.begin();
    for (int64_t &size : view.sizes)
      if (ShapedType::isDynamic(size) && (size = frame.slots[*nextSize++].i[0]) < 0)
        return siteError(site, "view size must be >= 0, got " + std::to_string(size));
    for (int64_t &stride : view.strides)
      if (ShapedType::isDynamic(stride))
        stride = frame.slots[*nextStride++].i[0];
    return llvm::Error::success();
  });
}

/// The part of a tile at `offsets` that lies inside a view's bounds: per
/// dimension, tile indices [lo, hi).
struct Box {
  SmallVector<int64_t, 4> lo, hi;
  bool empty = false;
};

Box clipToView(const View &view, ArrayRef<int64_t> offsets, ArrayRef<int64_t> tileShape) {
  Box box;
  for (auto [d, size] : llvm::enumerate(tileShape)) {
    box.lo.push_back(std::clamp<int64_t>(-offsets[d], 0, size));
    box.hi.push_back(std::clamp<int64_t>(view.sizes[d] - offsets[d], 0, size));
    box.empty |= box.lo.back() >= box.hi.back();
  }
  return box;
}

/// Calls visit(tileIndex, address) for every element of the box, row-major.
template <typename Visit>
void forEachInBox(const View &view, ArrayRef<int64_t> offsets,
                  ArrayRef<int64_t> tileShape, const Box &box, int64_t elementBytes,
                  Visit visit) {
  int64_t rank = tileShape.size();
  SmallVector<int64_t, 4> index(box.lo);
  for (;;) {
    int64_t tileIndex = 0, element = 0;
    for (int64_t d = 0; d < rank; ++d) {
      tileIndex = tileIndex * tileShape[d] + index[d];
      element += (offsets[d] + index[d]) * view.strides[d];
    }
    int64_t step = view.strides[rank - 1] * elementBytes;
    int64_t address = view.base + element * elementBytes;
    for (int64_t j = box.lo[rank - 1]; j < box.hi[rank - 1]; ++j, address += step)
      visit(tileIndex + j - box.lo[rank - 1], address);
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < box.hi[d])
        break;
      index[d] = box.lo[d];
    }
    if (d < 0)
      return;
  }
}

/// Checks every address the box touches: one range test when the whole span
/// lies in one buffer, else element by element.
llvm::Error checkBox(const OpSite &site, const Memory &memory, const View &view,
                     ArrayRef<int64_t> offsets, ArrayRef<int64_t> tileShape,
                     const Box &box, unsigned elementBytes, bool write) {
  __int128 lo = 0, hi = 0;
  for (size_t d = 0; d < tileShape.size(); ++d) {
    __int128 first = __int128(offsets[d] + box.lo[d]) * view.strides[d];
    __int128 last = __int128(offsets[d] + box.hi[d] - 1) * view.strides[d];
    lo += std::min(first, last);
    hi += std::max(first, last);
  }
  __int128 low = view.base + lo * elementBytes, high = view.base + hi * elementBytes;
  if (low < INT64_MIN || high > INT64_MAX - elementBytes)
    return siteError(site, "view addresses overflow 64 bits");
  if (memory.contains(int64_t(low), uint64_t(high - low) + elementBytes, write))
    return llvm::Error::success();
  std::vector<int64_t> addresses;
  forEachInBox(view, offsets, tileShape, box, elementBytes,
               [&](int64_t, int64_t address) { addresses.push_back(address); });
  return memory.check(site, addresses.data(), nullptr, addresses.size(), elementBytes,
                      write);
}

std::vector<unsigned> slotsOf(const Compiler &c, ValueRange values) {
  std::vector<unsigned> slots;
  for (Value v : values)
    slots.push_back(c.slotOf(v));
  return slots;
}

/// A view access in this run: its offsets and the part of the tile inside the
/// view, checked against the run's buffers (not checked when nothing is inside).
Expected<std::pair<SmallVector<int64_t, 4>, Box>>
locate(Frame &frame, const OpSite &site, const View &view, ArrayRef<unsigned> offsetSlots,
       ArrayRef<int64_t> shape, unsigned bytes, bool write) {
  SmallVector<int64_t, 4> offsets;
  for (unsigned s : offsetSlots)
    offsets.push_back(frame.slots[s].i[0]);
  Box box = clipToView(view, offsets, shape);
  if (!box.empty)
    if (llvm::Error err =
            checkBox(site, *frame.memory, view, offsets, shape, box, bytes, write))
      return std::move(err);
  return std::make_pair(std::move(offsets), std::move(box));
}

Expected<Instr> compileLoad(Operation *op, Compiler &c) {
  auto load = cast<tile::LoadOp>(op);
  unsigned viewSlot = c.slotOf(load.getView());
  std::vector<unsigned> offsetSlots = slotsOf(c, load.getOffsets());
  Expected<unsigned> out = c.define(load.getResult(), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(load.getResult());
  ValueType element = elementOf(type);
  float floatPad = 0;
  int64_t intPad = 0;
  if (auto pad = dyn_cast_or_null<FloatAttr>(load.getPaddingAttr())) {
    bool lost;
    APFloat v = pad.getValue();
    v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    floatPad = v.convertToFloat();
  } else if (auto pad = dyn_cast_or_null<IntegerAttr>(load.getPaddingAttr())) {
    intPad = signExtend(pad.getValue().getZExtValue(), element.bitWidth());
  }
  SmallVector<int64_t, 4> shape = type.shape;
  int64_t n = type.numElements;
  OpSite site = siteOf(op);
  unsigned dst = *out;
  return Instr([=](Frame &frame) -> llvm::Error {
    const View &view = frame.slots[viewSlot].view;
    Slot &to = frame.slots[dst];
    if (element.isFloat())
      to.f.assign(n, floatPad);
    else
      to.i.assign(n, intPad);
    auto located = locate(frame, site, view, offsetSlots, shape, element.memoryBytes(),
                          /*write=*/false);
    if (!located)
      return located.takeError();
    auto &[offsets, box] = *located;
    if (box.empty)
      return llvm::Error::success();
    if (element.isFloat())
      forEachInBox(
          view, offsets, shape, box, element.memoryBytes(),
          [&](int64_t k, int64_t address) { to.f[k] = readFloat(element, address); });
    else
      forEachInBox(
          view, offsets, shape, box, element.memoryBytes(),
          [&](int64_t k, int64_t address) { to.i[k] = readInt(element, address); });
    return llvm::Error::success();
  });
}

Expected<Instr> compileStore(Operation *op, Compiler &c) {
  auto store = cast<tile::StoreOp>(op);
  unsigned valueSlot = c.slotOf(store.getValue()), viewSlot = c.slotOf(store.getView());
  std::vector<unsigned> offsetSlots = slotsOf(c, store.getOffsets());
  const ValueType &type = c.typeOf(store.getValue());
  ValueType element = elementOf(type);
  SmallVector<int64_t, 4> shape = type.shape;
  OpSite site = siteOf(op);
  return Instr([=](Frame &frame) -> llvm::Error {
    const View &view = frame.slots[viewSlot].view;
    const Slot &from = frame.slots[valueSlot];
    auto located = locate(frame, site, view, offsetSlots, shape, element.memoryBytes(),
                          /*write=*/true);
    if (!located)
      return located.takeError();
    auto &[offsets, box] = *located;
    if (box.empty)
      return llvm::Error::success();
    if (element.isFloat())
      forEachInBox(
          view, offsets, shape, box, element.memoryBytes(),
          [&](int64_t k, int64_t address) { writeFloat(element, address, from.f[k]); });
    else
      forEachInBox(
          view, offsets, shape, box, element.memoryBytes(),
          [&](int64_t k, int64_t address) { writeInt(element, address, from.i[k]); });
    return llvm::Error::success();
  });
}

Expected<Instr> compileAddPtr(Operation *op, Compiler &c) {
  auto add = cast<tile::AddPtrOp>(op);
  unsigned ptr = c.slotOf(add.getPtr()), offset = c.slotOf(add.getOffset());
  Expected<unsigned> out = c.define(add.getResult(), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(add.getResult());
  uint64_t bytes = type.memoryBytes();
  int64_t n = type.numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const int64_t *p = frame.slots[ptr].i.data(), *o = frame.slots[offset].i.data();
    std::vector<int64_t> &to = frame.slots[dst].i;
    to.resize(n);
    for (int64_t k = 0; k < n; ++k)
      to[k] = int64_t(uint64_t(p[k]) + uint64_t(o[k]) * bytes);
    return llvm::Error::success();
  });
}

Expected<Instr> compilePtrLoad(Operation *op, Compiler &c) {
  auto load = cast<tile::PtrLoadOp>(op);
  unsigned ptrs = c.slotOf(load.getPtrs());
  std::optional<unsigned> mask, other;
  if (load.getMask())
    mask = c.slotOf(load.getMask());
  if (load.getOther())
    other = c.slotOf(load.getOther());
  ValueType element = elementOf(c.typeOf(load.getPtrs()));
  Expected<unsigned> out = c.define(load.getResult(), op);
  if (!out)
    return out.takeError();
  int64_t n = c.typeOf(load.getResult()).numElements;
  OpSite site = siteOf(op);
  unsigned dst = *out;
  return Instr([=](Frame &frame) -> llvm::Error {
    const int64_t *addresses = frame.slots[ptrs].i.data();
    const int64_t *active = mask ? frame.slots[*mask].i.data() : nullptr;
    if (llvm::Error err =
            frame.memory->check(site, addresses, active, n, element.memoryBytes(),
                                /*write=*/false))
      return err;
    auto fill = [&](auto &to, const auto *otherValues, auto read) {
      to.resize(n);
      for (int64_t k = 0; k < n; ++k)
        to[k] = !active || active[k] ? read(element, addresses[k])
                : otherValues        ? otherValues[k]
                                     : 0;
    };
    Slot &to = frame.slots[dst];
    if (element.isFloat())
      fill(to.f, other ? frame.slots[*other].f.data() : nullptr, readFloat);
    else
      fill(to.i, other ? frame.slots[*other].i.data() : nullptr, readInt);
    return llvm::Error::success();
  });
}

Expected<Instr> compilePtrStore(Operation *op, Compiler &c) {
  auto store = cast<tile::PtrStoreOp>(op);
  unsigned ptrs = c.slotOf(store.getPtrs()), value = c.slotOf(store.getValue());
  std::optional<unsigned> mask;
  if (store.getMask())
    mask = c.slotOf(store.getMask());
  ValueType element = elementOf(c.typeOf(store.getPtrs()));
  int64_t n = c.typeOf(store.getValue()).numElements;
  OpSite site = siteOf(op);
  return Instr([=](Frame &frame) -> llvm::Error {
    const int64_t *addresses = frame.slots[ptrs].i.data();
    const int64_t *active = mask ? frame.slots[*mask].i.data() : nullptr;
    if (llvm::Error err =
            frame.memory->check(site, addresses, active, n, element.memoryBytes(),
                                /*write=*/true))
      return err;
    const Slot &from = frame.slots[value];
    for (int64_t k = 0; k < n; ++k) {
      if (active && !active[k])
        continue;
      if (element.isFloat())
        writeFloat(element, addresses[k], from.f[k]);
      else
        writeInt(element, addresses[k], from.i[k]);
    }
    return llvm::Error::success();
  });
}

} // namespace

// Programmatic dependent launch. The interpreter runs launches one after
// another, each to its end, which is what a wait guarantees: a wait and a
// signal need no work. A prefetch reads nothing, but the GPU faults on a
// range outside the allocation or not 16-byte aligned, so that is checked.
Expected<Instr> compileNoWork(Operation *, Compiler &) { return Instr(); }

Expected<Instr> compilePrefetchL2(Operation *op, Compiler &c) {
  auto prefetch = cast<tile::PrefetchL2Op>(op);
  unsigned ptr = c.slotOf(prefetch.getPtr()), bytes = c.slotOf(prefetch.getBytes());
  OpSite site = siteOf(op);
  return Instr([=](Frame &frame) -> llvm::Error {
    int64_t address = frame.slots[ptr].i[0], n = frame.slots[bytes].i[0];
    if (n <= 0 || n % 16 != 0)
      return siteError(site, "prefetches " + llvm::Twine(n) +
                                 " bytes: a positive multiple of 16 is needed");
    std::optional<uint64_t> offset = frame.memory->offsetInBuffer(address, uint64_t(n));
    if (!offset)
      return siteError(site, "prefetches " + llvm::Twine(n) +
                                 " bytes outside every buffer of the launch");
    if (*offset % 16 != 0)
      return siteError(site, "prefetches from byte " + llvm::Twine(*offset) +
                                 " of its buffer: a multiple of 16 is needed");
    return llvm::Error::success();
  });
}

void registerMemoryOps(OpTable &table) {
  table.add<tile::GridDepWaitOp, tile::GridDepLaunchOp>(compileNoWork);
  table.add<tile::PrefetchL2Op>(compilePrefetchL2);
  table.add<tile::MakeViewOp>(compileMakeView);
  table.add<tile::LoadOp>(compileLoad);
  table.add<tile::StoreOp>(compileStore);
  table.add<tile::AddPtrOp>(compileAddPtr);
  table.add<tile::PtrLoadOp>(compilePtrLoad);
  table.add<tile::PtrStoreOp>(compilePtrStore);
}

} // namespace tilejit::interp::detail
