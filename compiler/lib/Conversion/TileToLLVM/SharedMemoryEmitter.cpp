// The emitter's shared memory: buffer placement, the scratch space, barriers
// and the vectorized stores and loads of distributed tiles (see
// SharedMemoryEmitter.h).
#include "SharedMemoryEmitter.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tilejit::lowering {

static constexpr llvm::StringLiteral kSharedName = "tile_shared";

SharedMemoryEmitter::SharedMemoryEmitter(Emitter &e, tile::KernelOp kernel) : e(e) {
  Location loc = kernel.getLoc();
  auto module = kernel->getParentOfType<ModuleOp>();
  if (!module.lookupSymbol(kSharedName)) {
    OpBuilder::InsertionGuard guard(e.b);
    e.b.setInsertionPointToStart(module.getBody());
    // Dynamic shared memory: a zero-sized external array in address space 3,
    // 1024-byte aligned because wgmma applies its 128-byte swizzle to address
    // bits, so a slot must start on a 1024-byte swizzle atom.
    LLVM::GlobalOp::create(e.b, loc, LLVM::LLVMArrayType::get(e.b.getI8Type(), 0),
                           /*isConstant=*/false, LLVM::Linkage::External, kSharedName,
                           Attribute(), /*alignment=*/1024, /*addrSpace=*/3);
  }
  start_ = LLVM::AddressOfOp::create(e.b, loc, LLVM::LLVMPointerType::get(e.ctx, 3),
                                     kSharedName);
  // Buffers live for the whole kernel: they take the start of the dynamic
  // shared memory (128-byte aligned), the scratch space follows.
  kernel.walk([&](Operation *op) {
    int64_t bytes = 0;
    if (auto alloc = dyn_cast<tile::SharedAllocOp>(op)) {
      auto type = alloc.getResult().getType();
      bytes = type.getNumElements() *
              std::max<unsigned>(1, type.getElementTypeBitWidth() / 8);
    } else if (auto ring = dyn_cast<tile::MbarrierAllocOp>(op)) {
      bytes = 8 * ring.getResult().getType().getCount();
    } else {
      return;
    }
    bufferOffsets_[op] = scratchBase_;
    scratchBase_ = llvm::alignTo(scratchBase_ + bytes, 128);
  });
  bytes_ = scratchBase_;
  scratch_ = scratchBase_
                 ? Value(LLVM::GEPOp::create(
                       e.b, loc, start_.getType(), e.b.getI8Type(), start_,
                       ArrayRef<LLVM::GEPArg>{LLVM::GEPArg(int32_t(scratchBase_))}))
                 : start_;
}

Value SharedMemoryEmitter::buffer(Operation *alloc, Location loc) {
  int64_t offset = bufferOffsets_.lookup(alloc);
  if (!offset)
    return start_;
  return LLVM::GEPOp::create(e.b, loc, start_.getType(), e.b.getI8Type(), start_,
                             ArrayRef<LLVM::GEPArg>{LLVM::GEPArg(int32_t(offset))});
}

void SharedMemoryEmitter::barrier(Location loc) {
  if (!barrierThreads_) {
    NVVM::Barrier0Op::create(e.b, loc);
    return;
  }
  // Barrier 1, counting only the threads that reach it (barrier 0 is the
  // whole program's).
  e.inlineAsm("bar.sync 1, " + std::to_string(barrierThreads_) + ";", "", {}, {},
              /*sideEffects=*/true, loc);
}

Value SharedMemoryEmitter::address(Value linear, Type llvmType, int64_t offset,
                                   Location loc) {
  Value base = scratch_;
  auto ptrType = LLVM::LLVMPointerType::get(e.ctx, 3);
  if (offset)
    base = LLVM::GEPOp::create(e.b, loc, ptrType, e.b.getI8Type(), base,
                               ArrayRef<LLVM::GEPArg>{LLVM::GEPArg(offset)});
  return LLVM::GEPOp::create(e.b, loc, ptrType, llvmType, base, ValueRange{linear});
}

static int64_t bytesOf(Type llvmType) {
  if (isa<LLVM::LLVMPointerType>(llvmType))
    return 8;
  return std::max<int64_t>(1, llvmType.getIntOrFloatBitWidth() / 8);
}

/// How many registers of `d` go to or from scratch as one vector access: each
/// group holds consecutive elements along `dim`, which the buffer stores
/// contiguously in rows of `rowLength`; a group starts at an element index
/// that is a multiple of the width in every thread (the thread's part of each
/// index is a sum of lane/warp bases) and fills at most 16 bytes; `offset`
/// keeps the alignment.
unsigned sharedVectorWidth(const Distributed &d, unsigned dim, int64_t rowLength,
                           unsigned bytes, int64_t offset) {
  if (dim >= d.shape.size() || bytes == 0 || bytes > 16)
    return 1;
  unsigned width = d.contiguousRegisters(dim, 16 / bytes);
  auto aligned = [&](int64_t w) {
    if (rowLength % w || offset % (w * bytes))
      return false;
    for (unsigned r = 0; r < d.numRegs(); r += w)
      if (d.regs[r][dim] % w)
        return false;
    for (const Index &basis : llvm::concat<const Index>(d.lanes, d.warps))
      if (basis[dim] % w)
        return false;
    return true;
  };
  while (width > 1 && !aligned(width))
    width /= 2;
  return width;
}

void SharedMemoryEmitter::store(const Distributed &d, const Regs &values, Type llvmType,
                                int64_t offset, Location loc, int64_t pad) {
  int64_t elements = d.shape.empty() ? 1 : d.shape.back() + pad;
  for (size_t dim = 0; dim + 1 < d.shape.size(); ++dim)
    elements *= d.shape[dim];
  Type stored = llvmType.isInteger(1) ? e.b.getI8Type() : llvmType;
  unsigned bytes = bytesOf(stored);
  reserve(offset + elements * bytes);
  // Replicated threads hold the same values; only the owner writes.
  e.ifOwner(d, loc, [&] {
    auto widen = [&](Value v) {
      return llvmType.isInteger(1) ? Value(LLVM::ZExtOp::create(e.b, loc, stored, v)) : v;
    };
    // Consecutive elements of a thread go out as one vector store (scalar
    // stores made the layout conversions of ssd_prefill a third of its code).
    unsigned width = llvmType.isInteger(1) || d.shape.empty()
                         ? 1
                         : sharedVectorWidth(d, d.shape.size() - 1, d.shape.back() + pad,
                                             bytes, offset);
    for (unsigned r = 0; r < d.numRegs(); r += width) {
      unsigned fresh = 0;
      for (unsigned i = r; i < r + width; ++i)
        fresh += !d.isDuplicateRegister(i);
      if (fresh == 0)
        continue;
      Value linear = e.linearize(e.elementIndex(d, r, loc), d.shape, loc, pad);
      Value first = address(linear, stored, offset, loc);
      if (width == 1 || fresh != width) {
        for (unsigned i = r; i < r + width; ++i) {
          if (d.isDuplicateRegister(i))
            continue;
          Value at =
              i == r ? first
                     : Value(LLVM::GEPOp::create(e.b, loc, first.getType(), stored, first,
                                                 ArrayRef<LLVM::GEPArg>{int32_t(i - r)}));
          LLVM::StoreOp::create(e.b, loc, widen(values[i]), at);
        }
        continue;
      }
      auto vectorType = VectorType::get({int64_t(width)}, stored);
      Value vector = LLVM::UndefOp::create(e.b, loc, vectorType);
      for (unsigned i = 0; i < width; ++i)
        vector = LLVM::InsertElementOp::create(e.b, loc, vector, widen(values[r + i]),
                                               e.i32(i, loc));
      LLVM::StoreOp::create(e.b, loc, vector, first, width * bytes);
    }
  });
}

int64_t SharedMemoryEmitter::rowPad(const Distributed &from, const Distributed &to,
                                    Type llvmType, ArrayRef<int64_t> shape,
                                    std::optional<unsigned> alongRows) {
  if (shape.size() < 2 || llvmType.isInteger(1))
    return 0;
  const int64_t bytes = bytesOf(llvmType), row = shape.back();
  int64_t pad = std::max<int64_t>(1, 4 / bytes);
  pad = std::max<int64_t>(pad,
                          sharedVectorWidth(from, from.shape.size() - 1, row, bytes, 0));
  if (alongRows)
    pad = std::max<int64_t>(pad, sharedVectorWidth(to, *alongRows, row, bytes, 0));
  return pad;
}

Regs SharedMemoryEmitter::load(const Distributed &d, Type llvmType,
                               ArrayRef<int64_t> srcShape,
                               const std::function<Regs(ArrayRef<Value>)> &source,
                               int64_t offset, Location loc,
                               std::optional<unsigned> alongRows, int64_t pad) {
  Type stored = llvmType.isInteger(1) ? e.b.getI8Type() : llvmType;
  auto narrow = [&](Value v) {
    return llvmType.isInteger(1) ? Value(LLVM::TruncOp::create(e.b, loc, llvmType, v))
                                 : v;
  };
  // Registers consecutive along the dimension that `source` maps onto the
  // buffer's rows read consecutive elements: one vector load.
  unsigned width = 1;
  if (alongRows && !llvmType.isInteger(1) && !srcShape.empty())
    width =
        sharedVectorWidth(d, *alongRows, srcShape.back() + pad, bytesOf(stored), offset);
  Regs out(d.numRegs());
  for (unsigned r = 0; r < d.numRegs(); r += width) {
    bool repeats = false;
    for (unsigned i = r; i < r + width; ++i)
      repeats |= d.isDuplicateRegister(i);
    if (width > 1 && !repeats) {
      Value linear = e.linearize(source(e.elementIndex(d, r, loc)), srcShape, loc, pad);
      auto vectorType = VectorType::get({int64_t(width)}, stored);
      Value vector =
          LLVM::LoadOp::create(e.b, loc, vectorType, address(linear, stored, offset, loc),
                               width * bytesOf(stored));
      for (unsigned i = 0; i < width; ++i)
        out[r + i] = LLVM::ExtractElementOp::create(e.b, loc, vector, e.i32(i, loc));
      continue;
    }
    for (unsigned i = r; i < r + width; ++i) {
      auto first = llvm::find(d.regs, d.regs[i]) - d.regs.begin();
      if ((unsigned)first != i) {
        out[i] = out[first];
        continue;
      }
      Regs index = source(e.elementIndex(d, i, loc));
      Value linear = e.linearize(index, srcShape, loc, pad);
      out[i] = narrow(
          LLVM::LoadOp::create(e.b, loc, stored, address(linear, stored, offset, loc)));
    }
  }
  return out;
}

} // namespace tilejit::lowering
