// Shared-memory staging family: tile.shared_alloc, tile.async_copy (16-byte
// cp.async, zero-filled out of bounds), tile.async_commit / tile.async_wait
// and tile.shared_load (ldmatrix into #tile.dot_operand fragments).
// Slots are stored as #tile.shared describes: rows of C elements whose
// 16-byte chunks are XORed with the row's phase, rows wider than 128 bytes
// as 128-byte column blocks one after the other.
#include "Emitter.h"
#include "SharedMemoryEmitter.h"

using namespace mlir;

namespace tilejit::lowering {
namespace {

/// One slot's geometry and its swizzle, with run-time address arithmetic.
struct Slots {
  Emitter &e;
  Location loc;
  tile::SharedLayoutAttr layout;
  int64_t rows, cols, bytes, vec;
  /// Whether wide rows go in 128-byte column blocks: only in kernels where
  /// wgmma reads slots (its descriptors need them), so the others keep the
  /// plain rows they were tuned with.
  bool columnBlocks = false;

  Slots(Emitter &e, MemRefType type, bool columnBlocks, Location loc)
      : e(e), loc(loc), layout(cast<tile::SharedLayoutAttr>(type.getMemorySpace())),
        rows(type.getDimSize(1)), cols(type.getDimSize(2)),
        bytes(std::max<int64_t>(1, type.getElementTypeBitWidth() / 8)),
        vec(layout.getVec()), columnBlocks(columnBlocks) {}
  /// One [rows, cols] tile of `element`s in scratch, swizzled as
  /// tile::sharedLayoutFor lays out a staged dot operand.
  Slots(Emitter &e, int64_t rows, int64_t cols, Type element, Location loc)
      : e(e), loc(loc), layout(tile::sharedLayoutFor(e.ctx, cols, element)), rows(rows),
        cols(cols), bytes(std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8)),
        vec(layout.getVec()) {}

  Value add(Value x, int64_t c) {
    return c ? Value(LLVM::AddOp::create(e.b, loc, x, e.i32(c, loc))) : x;
  }
  template <typename OpTy> Value op(Value x, int64_t c) {
    return OpTy::create(e.b, loc, x, e.i32(c, loc));
  }

  /// Byte address of the 16-byte chunk at row `row + rowConst`, chunk
  /// `chunk + chunkConst`, of slot `slot`. `rowConst` must keep the phase
  /// (a multiple of perPhase * maxPhase) and `chunkConst` must not share bits
  /// with `chunk` (both hold for fragment offsets), so the XOR applies to the
  /// run-time parts alone and the constants fold into the offset.
  Value chunkAddress(Value base, Value slot, Value row, int64_t rowConst, Value chunk,
                     int64_t chunkConst) {
    OpBuilder &b = e.b;
    Value phase =
        op<LLVM::AndOp>(op<LLVM::LShrOp>(row, llvm::Log2_64(layout.getPerPhase())),
                        layout.getMaxPhase() - 1);
    Value swizzled = LLVM::XOrOp::create(b, loc, chunk, phase);
    Value q = LLVM::XOrOp::create(b, loc, swizzled, e.i32(chunkConst, loc));
    Value slotBase = op<LLVM::MulOp>(slot, rows * cols * bytes);
    Value offset;
    // Only whole 128-byte blocks tile a slot without overlap (the swizzle
    // permutes chunks within a block), so other widths keep plain rows.
    if (!columnBlocks || cols * bytes <= 128 || (cols * bytes) % 128) {
      // (r + rc) * cols + ((c | cc) ^ p) * vec elements, cc disjoint from
      // c ^ p; rc * cols folds into the address's immediate.
      Value element = LLVM::AddOp::create(b, loc, op<LLVM::MulOp>(row, cols),
                                          op<LLVM::MulOp>(q, vec));
      offset = LLVM::AddOp::create(b, loc, slotBase,
                                   op<LLVM::MulOp>(add(element, rowConst * cols), bytes));
    } else {
      // Wider rows are stored as 128-byte column blocks of `rows` rows each
      // (every block a column of wgmma swizzle atoms): chunk q of row r is at
      // block q / 8, row r of it, chunk q % 8.
      Value inRow =
          LLVM::AddOp::create(b, loc, op<LLVM::MulOp>(op<LLVM::LShrOp>(q, 3), rows * 128),
                              op<LLVM::MulOp>(op<LLVM::AndOp>(q, 7), 16));
      // rc * 128 added last, so it folds into the address's immediate.
      Value within = LLVM::AddOp::create(b, loc, op<LLVM::MulOp>(row, 128), inRow);
      offset = add(LLVM::AddOp::create(b, loc, slotBase, within), rowConst * 128);
    }
    return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                               ValueRange{offset});
  }
};

LogicalResult emitSharedAlloc(Emitter &e, Operation *op) {
  e.map(op->getResult(0), {e.shared().buffer(op, op->getLoc())});
  return success();
}

/// True when wgmma (the async proxy) reads slots of this kernel.
bool hasWgmmaOperands(Operation *op) {
  auto kernel = op->getParentOfType<tile::KernelOp>();
  return kernel && kernel
                       .walk([](tile::SharedLoadOp load) {
                         return isa<tile::WgmmaOperandLayoutAttr>(
                                    load.getResult().getType().getEncoding())
                                    ? WalkResult::interrupt()
                                    : WalkResult::advance();
                       })
                       .wasInterrupted();
}

LogicalResult emitAsyncCopy(Emitter &e, Operation *op) {
  auto copy = cast<tile::AsyncCopyOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  Slots slots(e, copy.getBuffer().getType(), hasWgmmaOperands(op), loc);
  ViewValue &view = e.view(copy.getView());
  Value base = e.regs(copy.getBuffer())[0], slot = e.regs(copy.getSlot())[0];
  Value row0 = e.regs(copy.getOffsets()[0])[0], col0 = e.regs(copy.getOffsets()[1])[0];
  Type element = e.elementType(copy.getView().getType().getElementType());
  int64_t chunksPerRow = slots.cols / slots.vec, chunks = slots.rows * chunksPerRow;
  int64_t threads = 32 * e.numWarps;
  Value tid = LLVM::AddOp::create(b, loc, slots.op<LLVM::MulOp>(e.warp(), 32), e.lane());
  for (int64_t first = 0; first < chunks; first += threads) {
    Value id = slots.add(tid, first);
    // A tile of fewer chunks than threads: the extra threads copy nothing.
    // (Repeating the last chunk wrote the same bytes from several threads,
    // a write-write race compute-sanitizer's racecheck reports.)
    Block *done = nullptr;
    if (first + threads > chunks) {
      Value mine =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, id, e.i32(chunks, loc));
      Block *current = b.getInsertionBlock();
      Block *copyBlock =
          b.createBlock(current->getParent(), std::next(current->getIterator()));
      done = b.createBlock(current->getParent(), std::next(copyBlock->getIterator()));
      b.setInsertionPointToEnd(current);
      LLVM::CondBrOp::create(b, loc, mine, copyBlock, done);
      b.setInsertionPointToEnd(copyBlock);
    }
    Value row = slots.op<LLVM::UDivOp>(id, chunksPerRow);
    Value chunk = slots.op<LLVM::URemOp>(id, chunksPerRow);
    Value r = LLVM::AddOp::create(b, loc, row0, row);
    Value c = LLVM::AddOp::create(b, loc, col0, slots.op<LLVM::MulOp>(chunk, slots.vec));
    Value inBounds = LLVM::AndOp::create(
        b, loc, LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, r, view.sizes[0]),
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, c, view.sizes[1]));
    Value linear = LLVM::AddOp::create(
        b, loc,
        LLVM::MulOp::create(b, loc, LLVM::SExtOp::create(b, loc, b.getI64Type(), r),
                            view.strides[0]),
        LLVM::MulOp::create(b, loc, LLVM::SExtOp::create(b, loc, b.getI64Type(), c),
                            view.strides[1]));
    Value src = gep(e, view.base, element, linear, loc);
    Value dst = slots.chunkAddress(base, slot, row, 0, chunk, 0);
    // Out of bounds: 0 source bytes, the 16 destination bytes are zeroed.
    Value size = LLVM::SelectOp::create(b, loc, inBounds, e.i32(16, loc), e.i32(0, loc));
    NVVM::CpAsyncOp::create(b, loc, dst, src, 16, NVVM::LoadCacheModifierKind::CG, size);
    if (done) {
      LLVM::BrOp::create(b, loc, done);
      b.setInsertionPointToEnd(done);
    }
  }
  return success();
}

LogicalResult emitAsyncWait(Emitter &e, Operation *op) {
  NVVM::CpAsyncWaitGroupOp::create(e.b, op->getLoc(),
                                   cast<tile::AsyncWaitOp>(op).getPending());
  // cp.async writes through the generic proxy; each writer orders its
  // writes before wgmma's async-proxy reads ahead of the barrier.
  if (hasWgmmaOperands(op))
    NVVM::FenceProxyOp::create(
        e.b, op->getLoc(), NVVM::ProxyKindAttr::get(e.ctx, NVVM::ProxyKind::async_shared),
        NVVM::SharedSpaceAttr::get(e.ctx, NVVM::SharedSpace::shared_cta));
  e.shared().barrier(op->getLoc());
  return success();
}

/// The 32-bit words of `x4`/`x2` ldmatrix, each split into its elements.
void appendElements(Emitter &e, Value word, Type element, int64_t kw, Regs &out,
                    Location loc) {
  auto vecType = VectorType::get({kw}, element);
  Value v = LLVM::BitcastOp::create(e.b, loc, vecType, word);
  for (int64_t p = 0; p < kw; ++p)
    out.push_back(LLVM::ExtractElementOp::create(e.b, loc, v, e.i32(p, loc)));
}

Regs loadFragments(Emitter &e, Slots &slots, Value base, Value slot,
                   RankedTensorType type, bool kRows, int64_t kOffset);

LogicalResult emitSharedLoad(Emitter &e, Operation *op) {
  auto load = cast<tile::SharedLoadOp>(op);
  Location loc = op->getLoc();
  auto type = load.getResult().getType();
  Slots slots(e, load.getBuffer().getType(), hasWgmmaOperands(op), loc);
  Value base = e.regs(load.getBuffer())[0], slot = e.regs(load.getSlot())[0];
  // A wgmma operand stays in shared memory: its one value is the slot's
  // address, which the dot turns into matrix descriptors.
  if (isa<tile::WgmmaOperandLayoutAttr>(type.getEncoding())) {
    e.map(load.getResult(),
          {slots.chunkAddress(base, slot, e.i32(0, loc), 0, e.i32(0, loc), 0)});
    return success();
  }
  // K runs along the slot's rows' chunks unless B is stored [K, N] (.trans).
  e.map(load.getResult(),
        loadFragments(e, slots, base, slot, type, /*kRows=*/load.getKDim() == 0,
                      load.getSlotOffsets()[load.getKDim()]));
  return success();
}

Regs loadFragments(Emitter &e, Slots &slots, Value base, Value slot,
                   RankedTensorType type, bool kRows, int64_t kOffset) {
  Location loc = slots.loc;
  OpBuilder &b = e.b;
  auto operand = cast<tile::DotOperandLayoutAttr>(type.getEncoding());
  Type element = e.elementType(type);
  int64_t kw = operand.getKWidth();
  int64_t wm = operand.getParent().getWpc()[0], wn = operand.getParent().getWpc()[1];
  bool isA = operand.getOpIdx() == 0;
  int64_t kSize = type.getDimSize(isA ? 1 : 0), outer = type.getDimSize(isA ? 0 : 1);
  int64_t kSteps = kSize / (8 * kw);
  // Rows holding K (B stored [K, N], A stored [K, M]) are read transposed.
  bool trans = kRows;
  // The part's first K chunk (rows hold K) or first K row (.trans).
  int64_t kChunk = trans ? 0 : kOffset / slots.vec, kRow = trans ? kOffset : 0;

  Value lane = e.lane(), warp = e.warp();
  Value l8 = slots.op<LLVM::AndOp>(lane, 7);
  Value l3 = slots.op<LLVM::AndOp>(slots.op<LLVM::LShrOp>(lane, 3), 1);
  Value l4 = slots.op<LLVM::LShrOp>(lane, 4);
  // This warp's first row (A) or column (B) of the parent grid.
  Value warpOuter = isA ? slots.op<LLVM::MulOp>(slots.op<LLVM::UDivOp>(warp, wn), 16)
                        : slots.op<LLVM::MulOp>(slots.op<LLVM::URemOp>(warp, wn), 8);
  auto ldmatrix = [&](Value addr, int64_t num) {
    Type i32 = b.getI32Type();
    Type result =
        num == 1 ? i32
                 : LLVM::LLVMStructType::getLiteral(e.ctx, SmallVector<Type>(num, i32));
    Value r = NVVM::LdMatrixOp::create(
        b, loc, result, addr, num, trans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(e.ctx, 8, 8), NVVM::LdStMatrixEltType::B16);
    Regs words;
    for (int64_t i = 0; i < num; ++i)
      words.push_back(num == 1 ? r : Value(LLVM::ExtractValueOp::create(b, loc, r, i)));
    return words;
  };

  // Registers in the #tile.dot_operand order: pack, word, k step, outer tile.
  Regs out;
  if (isA && trans) {
    // Rows are K: per 16-row tile and K step, one x4.trans: lanes 0-7 K 0-7 /
    // columns 0-7 (a0), 8-15 columns 8-15 (a1), 16-23 K 8-15 (a2), 24-31 (a3).
    Value krow = LLVM::AddOp::create(b, loc, l8, slots.op<LLVM::MulOp>(l4, 8));
    Value col = LLVM::AddOp::create(b, loc, warpOuter, slots.op<LLVM::MulOp>(l3, 8));
    for (int64_t i = 0; i < outer / (16 * wm); ++i)
      for (int64_t s = 0; s < kSteps; ++s) {
        Value chunk =
            slots.op<LLVM::LShrOp>(slots.add(col, i * 16 * wm), llvm::Log2_64(slots.vec));
        for (Value w :
             ldmatrix(slots.chunkAddress(base, slot, slots.add(krow, kRow + s * 8 * kw),
                                         0, chunk, 0),
                      4))
          appendElements(e, w, element, kw, out, loc);
      }
  } else if (isA) {
    // Per 16-row tile and K step, one x4: lanes 0-7 rows 0-7 / low K chunk
    // (a0), 8-15 rows 8-15 (a1), 16-23 rows 0-7 / high chunk (a2), 24-31 (a3).
    Value row = LLVM::AddOp::create(
        b, loc, warpOuter, LLVM::AddOp::create(b, loc, l8, slots.op<LLVM::MulOp>(l3, 8)));
    for (int64_t i = 0; i < outer / (16 * wm); ++i)
      for (int64_t s = 0; s < kSteps; ++s)
        for (Value w : ldmatrix(
                 slots.chunkAddress(base, slot, row, i * 16 * wm, l4, kChunk + 2 * s), 4))
          appendElements(e, w, element, kw, out, loc);
  } else {
    // Per pair of 8-column tiles and K step, one x4 giving b0, b1 of the
    // first tile, then of the second (x2 for a last single tile).
    int64_t tiles = outer / (8 * wn);
    SmallVector<Regs> perTile(tiles);
    for (int64_t j = 0; j < tiles; j += 2) {
      int64_t num = j + 1 < tiles ? 4 : 2;
      Value tileSel = num == 4 ? l4 : e.i32(0, loc);
      // Column of the lane's tile: warpOuter + (j + tileSel) * 8 * wn.
      Value col =
          LLVM::AddOp::create(b, loc, warpOuter, slots.op<LLVM::MulOp>(tileSel, 8 * wn));
      for (int64_t s = 0; s < kSteps; ++s) {
        Regs words;
        if (trans) {
          // Rows are K: lanes 0-7 K 0-7 (b0), 8-15 K 8-15 (b1); chunk = column.
          Value krow = LLVM::AddOp::create(b, loc, l8, slots.op<LLVM::MulOp>(l3, 8));
          Value chunk = slots.op<LLVM::LShrOp>(col, llvm::Log2_64(slots.vec));
          words = ldmatrix(slots.chunkAddress(base, slot, krow, kRow + s * 8 * kw, chunk,
                                              j * 8 * wn / slots.vec),
                           num);
        } else {
          // Rows are N: lanes 0-7 low K chunk (b0), 8-15 high K chunk (b1).
          Value nrow = LLVM::AddOp::create(b, loc, col, l8);
          words = ldmatrix(
              slots.chunkAddress(base, slot, nrow, j * 8 * wn, l3, kChunk + 2 * s), num);
        }
        for (int64_t t = 0; t < num / 2; ++t)
          for (int64_t q = 0; q < 2; ++q)
            perTile[j + t].push_back(words[2 * t + q]);
      }
    }
    for (Regs &words : perTile)
      for (Value w : words)
        appendElements(e, w, element, kw, out, loc);
  }
  return out;
}

} // namespace

std::optional<Regs> operandThroughLdmatrix(Emitter &e, Value src, Value dst,
                                           bool transposed) {
  auto srcType = cast<RankedTensorType>(src.getType());
  auto dstType = cast<RankedTensorType>(dst.getType());
  auto operand = dyn_cast<tile::DotOperandLayoutAttr>(dstType.getEncoding());
  Type element = e.elementType(dstType);
  if (!operand || operand.getKContig() || operand.getKWidth() != 2 ||
      srcType.getRank() != 2 || !element.isIntOrFloat() ||
      element.getIntOrFloatBitWidth() != 16)
    return std::nullopt;
  Location loc = dst.getLoc();
  const Distributed &from = e.layout(srcType);
  const int64_t rows = srcType.getDimSize(0), cols = srcType.getDimSize(1);
  bool isA = operand.getOpIdx() == 0;
  int64_t wm = operand.getParent().getWpc()[0], wn = operand.getParent().getWpc()[1];
  int64_t kSize = dstType.getDimSize(isA ? 1 : 0),
          outer = dstType.getDimSize(isA ? 0 : 1);
  // ldmatrix reads 8x8 blocks of 16-byte rows: whole 16-row (A) or 8-column
  // (B) tiles per warp and whole K steps; B's tiles go in pairs but for the last.
  if (cols % 8 || rows % 8 || kSize % 16 || outer % ((isA ? 16 : 8) * (isA ? wm : wn)))
    return std::nullopt;
  Slots slots(e, rows, cols, element, loc);
  OpBuilder &b = e.b;
  Value base = e.shared().address(e.i32(0, loc), b.getI8Type(), 0, loc);
  e.shared().reserve(rows * cols * slots.bytes);
  e.shared().barrier(loc);
  // The tile goes out row-major with each row's 16-byte chunks swizzled, as
  // many consecutive elements of a thread per store as one chunk holds.
  unsigned width = sharedVectorWidth(from, 1, cols, slots.bytes, 0);
  const Regs &in = e.regs(src);
  e.ifOwner(from, loc, [&] {
    for (unsigned r = 0; r < from.numRegs(); r += width) {
      bool repeats = false;
      for (unsigned i = r; i < r + width; ++i)
        repeats |= from.isDuplicateRegister(i);
      if (repeats && width == 1)
        continue;
      Regs index = e.elementIndex(from, r, loc);
      Value chunk = slots.op<LLVM::LShrOp>(index[1], llvm::Log2_64(slots.vec));
      Value within = slots.op<LLVM::AndOp>(index[1], slots.vec - 1);
      Value at = LLVM::GEPOp::create(
          b, loc, base.getType(), b.getI8Type(),
          slots.chunkAddress(base, e.i32(0, loc), index[0], 0, chunk, 0),
          ValueRange{slots.op<LLVM::MulOp>(within, slots.bytes)});
      auto vectorType = VectorType::get({int64_t(width)}, element);
      Value vector = LLVM::UndefOp::create(b, loc, vectorType);
      for (unsigned i = 0; i < width; ++i)
        vector = LLVM::InsertElementOp::create(b, loc, vector, in[r + i], e.i32(i, loc));
      LLVM::StoreOp::create(b, loc, vector, at, width * slots.bytes);
    }
  });
  e.shared().barrier(loc);
  // K along the stored rows: B of a [K, N] tile, A of a transposed [K, M].
  return loadFragments(e, slots, base, e.i32(0, loc), dstType,
                       /*kRows=*/isA ? transposed : !transposed, 0);
}

void populateSharedEmitters(EmitterTable &table) {
  table.add<tile::SharedAllocOp>(emitSharedAlloc);
  table.add<tile::AsyncCopyOp>(emitAsyncCopy);
  table.add<tile::AsyncCommitOp>([](Emitter &e, Operation *op) {
    NVVM::CpAsyncCommitGroupOp::create(e.b, op->getLoc());
    return success();
  });
  table.add<tile::AsyncWaitOp>(emitAsyncWait);
  table.add<tile::SharedLoadOp>(emitSharedLoad);
}

} // namespace tilejit::lowering
