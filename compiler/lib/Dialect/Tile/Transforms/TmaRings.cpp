// The mbarrier rings of tile-warp-specialize (see TmaRings.h).
#include "TmaRings.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tile-warp-specialize"

using namespace mlir;

namespace tilejit::tile {

FailureOr<Value> cloneChain(OpBuilder &b, Value v, Block *block, IRMapping &map) {
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || !block->getParentOp()->isProperAncestor(def))
    return v;
  if (!isMemoryEffectFree(def) || def->getNumRegions())
    return failure();
  for (Value o : def->getOperands())
    if (failed(cloneChain(b, o, block, map)))
      return failure();
  return b.clone(*def, map)->getResult(cast<OpResult>(v).getResultNumber());
}

/// K iterations of the loop `at` describes: ceil((ub - lb) / step).
static Value tripCount(OpBuilder &b, Location loc, const RingPosition &at) {
  Value one = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1);
  return arith::DivSIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, arith::SubIOp::create(b, loc, at.kUb, at.kLb),
                            arith::SubIOp::create(b, loc, at.kStep, one)),
      at.kStep);
}

RingPosition carryRingPosition(scf::ForOp loop, scf::ForOp &tileLoop) {
  RingPosition at{loop.getInductionVar(), loop.getLowerBound(), loop.getUpperBound(),
                  loop.getStep(), Value()};
  if (!tileLoop)
    return at;
  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(tileLoop);
  Location loc = tileLoop.getLoc();
  Value zero = arith::ConstantIntOp::create(rewriter, loc, rewriter.getI32Type(), 0);
  DictionaryAttr attrs = tileLoop->getDiscardableAttrDictionary();
  auto next = [&](OpBuilder &b, Location, ArrayRef<BlockArgument> base) {
    // A loop that does not run takes no step.
    Value steps =
        arith::MaxSIOp::create(b, loc, tripCount(b, loc, at),
                               arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
    return SmallVector<Value>{arith::AddIOp::create(b, loc, base.back(), steps)};
  };
  auto carried = tileLoop.replaceWithAdditionalYields(rewriter, zero, false, next);
  tileLoop = cast<scf::ForOp>(carried->getOperation());
  tileLoop->setDiscardableAttrs(attrs);
  at.base = tileLoop.getRegionIterArgs().back();
  return at;
}

std::pair<Value, Value> slotAndParity(OpBuilder &b, Location loc, const RingPosition &at,
                                      int64_t stages, bool producer) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i32, v); };
  auto indexOf = [&](Value iv, Value lb, Value step) {
    return arith::DivSIOp::create(b, loc, arith::SubIOp::create(b, loc, iv, lb), step);
  };
  Value index = indexOf(at.kIv, at.kLb, at.kStep);
  if (at.base)
    index = arith::AddIOp::create(b, loc, at.base, index);
  Value slot = arith::RemSIOp::create(b, loc, index, c(stages));
  Value parity = arith::AndIOp::create(
      b, loc, arith::DivSIOp::create(b, loc, index, c(stages)), c(1));
  if (producer)
    parity = arith::XOrIOp::create(b, loc, parity, c(1));
  return {slot, parity};
}

/// After a loop that releases each slot one iteration late: the release of
/// its last iteration's slot, which a persistent program's next tile needs
/// (none when the loop did not run).
static void releaseLast(OpBuilder &b, Location loc, Value empty, RingPosition at,
                        int64_t stages) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i32, v); };
  Value trip = tripCount(b, loc, at);
  at.kIv = arith::AddIOp::create(
      b, loc, at.kLb,
      arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, trip, c(1)), at.kStep));
  Value lastSlot = slotAndParity(b, loc, at, stages, /*producer=*/false).first;
  Value ran = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, trip, c(0));
  MbarrierArriveOp::create(b, loc, empty, lastSlot, ran);
}

LogicalResult issueStep(OpBuilder &b, Location loc, MutableArrayRef<StagedOperand> staged,
                        ArrayRef<BlockArgument> maps, Value full, Value empty,
                        const RingPosition &at, int64_t stages, int64_t txBytes,
                        Block *body, IRMapping &map) {
  auto [slot, parity] = slotAndParity(b, loc, at, stages, /*producer=*/true);
  MbarrierWaitOp::create(b, loc, empty, slot, parity);
  MbarrierExpectTxOp::create(b, loc, full, slot, uint32_t(txBytes));
  for (auto [s, tensorMap] : llvm::zip(staged, maps)) {
    SmallVector<Value> offsets;
    for (Value o : s.load.getOffsets()) {
      auto clone = cloneChain(b, o, body, map);
      if (failed(clone))
        return s.load.emitOpError("needs offsets the producer can compute (pure ops)");
      offsets.push_back(*clone);
    }
    TmaCopyOp::create(b, s.load.getLoc(), tensorMap, offsets, s.buffer, slot, full);
  }
  return success();
}

/// producer = 2: thread 0 of the consumers issues the copies itself, stages - 1
/// K steps ahead of the step they all read: before the K loop, the first
/// stages - 1 steps; at the top of iteration i, step i + stages - 1 (into the
/// slot step i - 1 read, once every warp has released it). No warp is added,
/// so the consumers keep the register file a producer warp would share
/// (ptxas caps 9 warps at 168 registers a thread, 8 at 255).
LogicalResult issueInline(scf::ForOp loop, RingPosition at,
                          MutableArrayRef<StagedOperand> staged,
                          ArrayRef<BlockArgument> maps, Value full, Value empty,
                          int64_t stages, int64_t txBytes) {
  Location loc = loop.getLoc();
  Type i32 = IntegerType::get(loop.getContext(), 32);
  auto singleThread = [&](OpBuilder &b) {
    auto op = SingleThreadOp::create(b, loc);
    op.getBody().push_back(new Block());
    b.setInsertionPointToStart(&op.getBody().front());
  };
  // Issues step `iv` when it is one of the loop's.
  auto issueIfInLoop = [&](OpBuilder &b, Value iv) -> LogicalResult {
    Value inLoop = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, iv,
                                         loop.getUpperBound());
    auto guard = scf::IfOp::create(b, loc, inLoop, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    IRMapping map;
    map.map(loop.getInductionVar(), iv);
    RingPosition step = at;
    step.kIv = iv;
    return issueStep(b, loc, staged, maps, full, empty, step, stages, txBytes,
                     loop.getBody(), map);
  };
  OpBuilder before(loop);
  singleThread(before);
  auto c = [&](OpBuilder &b, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  auto ahead =
      scf::ForOp::create(before, loc, c(before, 0), c(before, stages - 1), c(before, 1));
  before.setInsertionPointToStart(ahead.getBody());
  Value first = arith::AddIOp::create(
      before, loc, loop.getLowerBound(),
      arith::MulIOp::create(before, loc, ahead.getInductionVar(), loop.getStep()));
  if (failed(issueIfInLoop(before, first)))
    return failure();
  OpBuilder top(loop.getBody(), loop.getBody()->begin());
  singleThread(top);
  Value next = arith::AddIOp::create(
      top, loc, loop.getInductionVar(),
      arith::MulIOp::create(top, loc, c(top, stages - 1), loop.getStep()));
  return issueIfInLoop(top, next);
}

/// Keeps one wgmma group in flight across the consumer loop's iterations:
/// the loop's single dot (both operands in wgmma layouts, its accumulator
/// the loop's only iter_arg use) becomes a tile.dot_async chaining the
/// accumulator, and a tile.dot_wait {pending = 1} lets the previous
/// iteration's group finish before its slot is released, so the tensor cores
/// never wait for a release. Not for e4m3: its reduced sums (R1h) are
/// promoted to f32 after every K block, and reading one block's finished
/// products while the next block's wgmma runs makes ptxas serialize every
/// wgmma (warning C7514; seen with the loop unrolled by two so that nothing
/// copies registers in flight, and with the next block's partial sums
/// starting from zero without a register write); two consumer warpgroups, or
/// two programs per multiprocessor, overlap each other's promotion instead.
/// Pairs of K blocks per iteration (the first promoted while the second runs,
/// nothing in flight at the back edge) pass ptxas but measured no faster on
/// the H200, whose main loop already runs near the tensor rate
/// (docs/journal/2026-12-02.md, "The main loop is not where the time went").
/// Returns whether the loop was rewritten.
bool keepOneGroupInFlight(scf::ForOp loop, Value empty, Value slot, int64_t stages,
                          RingPosition at) {
  auto dots = llvm::to_vector(loop.getBody()->getOps<DotOp>());
  auto arrives = llvm::to_vector(loop.getBody()->getOps<MbarrierArriveOp>());
  if (dots.size() != 1 || arrives.size() != 1 || loop.getNumRegionIterArgs() != 1)
    return false;
  DotOp dot = dots.front();
  BlockArgument accArg = loop.getRegionIterArgs()[0];
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (dot.getAcc() != accArg || !accArg.hasOneUse() ||
      yield.getOperand(0) != dot.getResult() || !dot->hasOneUse() ||
      !isa<WgmmaOperandLayoutAttr>(dot.getA().getType().getEncoding()))
    return false;
  if (isa<Float8E4M3FNType>(dot.getA().getType().getElementType())) {
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": e4m3 dot at " << dot.getLoc()
                            << " stays synchronous: its products are promoted to f32 "
                               "after every K block\n");
    return false;
  }
  Location loc = dot.getLoc();
  auto accType = dot.getResult().getType();
  OpBuilder b(dot);
  Value started = DotAsyncOp::create(b, loc, accType, dot.getA(), dot.getB(), accArg);
  DotWaitOp::create(b, loc, TypeRange{}, ValueRange{}, 1u);
  dot.getResult().replaceAllUsesWith(started);
  dot.erase();
  // The previous iteration's slot is free once its group has finished.
  MbarrierArriveOp arrive = arrives.front();
  b.setInsertionPoint(arrive);
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i32, v); };
  Value index = arith::DivSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, loop.getInductionVar(), loop.getLowerBound()),
      loop.getStep());
  Value notFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, index, c(0));
  Value previous = arith::RemSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, slot, c(stages - 1)), c(stages));
  MbarrierArriveOp::create(b, loc, empty, previous, notFirst);
  arrive.erase();
  // The last group finishes after the loop. A persistent program's next tile
  // needs its slot back: released there, when the loop ran at all.
  b.setInsertionPointAfter(loop);
  auto last =
      DotWaitOp::create(b, loc, TypeRange{accType}, ValueRange{loop.getResult(0)}, 0u);
  loop.getResult(0).replaceAllUsesExcept(last.getResult(0), last);
  if (at.base)
    releaseLast(b, loc, empty, at, stages);
  LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": dot at " << loc
                          << ": one wgmma group in flight, chained accumulator\n");
  return true;
}

} // namespace tilejit::tile
