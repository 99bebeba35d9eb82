// Hopper's asynchronous pipeline family: tile.mbarrier_* as PTX mbarrier
// instructions, tile.tma_copy as cp.async.bulk.tensor,
// tile.warp_specialize as a branch on the warp index with setmaxnreg,
// tile.single_thread as a branch only thread 0 takes, and programmatic
// dependent launch (tile.grid_dep_wait / grid_dep_launch as griddepcontrol,
// tile.prefetch_l2 as cp.async.bulk.prefetch.L2 from thread 0).
//
// Shared-memory addresses go to PTX as 32-bit offsets in the shared window;
// a tensor map is the generic address of its by-value (grid-constant)
// kernel parameter.
#include "Emitter.h"
#include "SharedMemoryEmitter.h"

using namespace mlir;

namespace tilejit::lowering {
namespace {

/// The 32-bit shared-window address of mbarrier `slot` of a ring.
Value barrierAddress(Emitter &e, Value ring, Value slot, Location loc) {
  OpBuilder &b = e.b;
  Value base = e.regs(ring)[0];
  Value at =
      LLVM::GEPOp::create(b, loc, base.getType(), b.getI64Type(), base, ValueRange{slot});
  return LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), at);
}

/// Emits `body` in a block that only the threads where `cond` holds run.
void emitIf(Emitter &e, Value cond, Location loc, llvm::function_ref<void()> body) {
  OpBuilder &b = e.b;
  Block *current = b.getInsertionBlock();
  Block *then = b.createBlock(current->getParent(), std::next(current->getIterator()));
  Block *done = b.createBlock(current->getParent(), std::next(then->getIterator()));
  b.setInsertionPointToEnd(current);
  LLVM::CondBrOp::create(b, loc, cond, then, done);
  b.setInsertionPointToEnd(then);
  body();
  LLVM::BrOp::create(b, loc, done);
  b.setInsertionPointToEnd(done);
}

Value equals(Emitter &e, Value v, int64_t c, Location loc) {
  return LLVM::ICmpOp::create(e.b, loc, LLVM::ICmpPredicate::eq, v, e.i32(c, loc));
}

/// Whether this is thread 0 of warp 0 (one thread per program).
Value isThreadZero(Emitter &e, Location loc) {
  return LLVM::AndOp::create(e.b, loc, equals(e, e.warp(), 0, loc),
                             equals(e, e.lane(), 0, loc));
}

void asmStatement(Emitter &e, llvm::StringRef text, llvm::StringRef constraints,
                  ValueRange args, Location loc) {
  e.inlineAsm(text, constraints, {}, args, /*sideEffects=*/true, loc);
}

LogicalResult emitMbarrierAlloc(Emitter &e, Operation *op) {
  auto alloc = cast<tile::MbarrierAllocOp>(op);
  Location loc = op->getLoc();
  Value base = e.shared().buffer(op, loc);
  e.map(alloc.getResult(), {base});
  // One thread initializes; the fence makes the initialization visible to
  // the async proxy (TMA), the barrier to every thread.
  Value first = isThreadZero(e, loc);
  emitIf(e, first, loc, [&] {
    for (int64_t i = 0; i < alloc.getResult().getType().getCount(); ++i)
      asmStatement(e, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
                   {barrierAddress(e, alloc.getResult(), e.i32(i, loc), loc),
                    e.i32(alloc.getArrivals(), loc)},
                   loc);
  });
  asmStatement(e, "fence.mbarrier_init.release.cluster;", "", {}, loc);
  e.shared().barrier(loc);
  return success();
}

LogicalResult emitMbarrierArrive(Emitter &e, Operation *op) {
  auto arrive = cast<tile::MbarrierArriveOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  // One thread per warpgroup: the warpgroup's tensor-core reads have
  // completed once any of its threads has passed the wait before this (per
  // warp: a warp's ldmatrix has completed for all its lanes once lane 0 is
  // past it). A predicated instruction, not a branch: ptxas serializes wgmmas
  // whose accumulators it cannot follow through branches (C7514).
  Value leader = equals(e, e.lane(), 0, loc);
  if (!arrive.getPerWarp())
    leader = LLVM::AndOp::create(
        b, loc, equals(e, LLVM::AndOp::create(b, loc, e.warp(), e.i32(3, loc)), 0, loc),
        leader);
  if (Value predicate = arrive.getPredicate())
    leader = LLVM::AndOp::create(b, loc, leader, e.regs(predicate)[0]);
  Value address =
      barrierAddress(e, arrive.getBarriers(), e.regs(arrive.getSlot())[0], loc);
  asmStatement(e,
               "{\n.reg .pred p;\nsetp.ne.b32 p, $1, 0;\n"
               "@p mbarrier.arrive.shared::cta.b64 _, [$0];\n}",
               "r,r", {address, LLVM::ZExtOp::create(b, loc, b.getI32Type(), leader)},
               loc);
  return success();
}

LogicalResult emitMbarrierExpectTx(Emitter &e, Operation *op) {
  auto expect = cast<tile::MbarrierExpectTxOp>(op);
  Location loc = op->getLoc();
  asmStatement(e, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
               {barrierAddress(e, expect.getBarriers(), e.regs(expect.getSlot())[0], loc),
                e.i32(expect.getBytes(), loc)},
               loc);
  return success();
}

LogicalResult emitMbarrierWait(Emitter &e, Operation *op) {
  auto wait = cast<tile::MbarrierWaitOp>(op);
  Location loc = op->getLoc();
  // PTX scopes labels to the braces, so every copy of this text may use them.
  asmStatement(e,
               "{\n.reg .pred done;\nwait:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
               "@!done bra wait;\n}",
               "r,r",
               {barrierAddress(e, wait.getBarriers(), e.regs(wait.getSlot())[0], loc),
                e.regs(wait.getParity())[0]},
               loc);
  return success();
}

LogicalResult emitTmaCopy(Emitter &e, Operation *op) {
  auto copy = cast<tile::TmaCopyOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  MemRefType buffer = copy.getBuffer().getType();
  int64_t slotBytes = buffer.getDimSize(1) * buffer.getDimSize(2) *
                      std::max<unsigned>(1, buffer.getElementTypeBitWidth() / 8);
  Value slot = e.regs(copy.getSlot())[0];
  Value base = e.regs(copy.getBuffer())[0];
  Value dst = LLVM::GEPOp::create(
      b, loc, base.getType(), b.getI8Type(), base,
      ValueRange{LLVM::MulOp::create(b, loc, slot, e.i32(slotBytes, loc))});
  Value map = LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), e.regs(copy.getMap())[0]);
  // The tensor map's coordinates run innermost first: column, then row.
  asmStatement(
      e,
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::"
      "bytes [$0], [$1, {$2, $3}], [$4];",
      "r,l,r,r,r",
      {LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), dst), map,
       e.regs(copy.getOffsets()[1])[0], e.regs(copy.getOffsets()[0])[0],
       barrierAddress(e, copy.getBarriers(), slot, loc)},
      loc);
  return success();
}

LogicalResult emitWarpSpecialize(Emitter &e, Operation *op) {
  auto ws = cast<tile::WarpSpecializeOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  Block *current = b.getInsertionBlock();
  Region *region = current->getParent();
  Block *producer = b.createBlock(region, std::next(current->getIterator()));
  Block *issuer = b.createBlock(region, std::next(producer->getIterator()));
  Block *consumer = b.createBlock(region, std::next(issuer->getIterator()));
  Block *done = b.createBlock(region, std::next(consumer->getIterator()));
  b.setInsertionPointToEnd(current);
  Value isProducer = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::uge, e.warp(),
                                          e.i32(e.numWarps, loc));
  LLVM::CondBrOp::create(b, loc, isProducer, producer, consumer);

  // Registers move from the producer warpgroup to the consumers (when the
  // op carries budgets); one producer thread issues every copy, the others
  // are done.
  b.setInsertionPointToEnd(producer);
  if (ws.getProducerRegs())
    asmStatement(e,
                 "setmaxnreg.dec.sync.aligned.u32 " +
                     std::to_string(*ws.getProducerRegs()) + ";",
                 "", {}, loc);
  Value elected = LLVM::AndOp::create(b, loc, equals(e, e.warp(), e.numWarps, loc),
                                      equals(e, e.lane(), 0, loc));
  LLVM::CondBrOp::create(b, loc, elected, issuer, done);
  b.setInsertionPointToEnd(issuer);
  if (!ws.getProducer().empty() && failed(e.emitBlock(ws.getProducer().front())))
    return failure();
  LLVM::BrOp::create(b, loc, done);

  b.setInsertionPointToEnd(consumer);
  if (ws.getConsumerRegs())
    asmStatement(e,
                 "setmaxnreg.inc.sync.aligned.u32 " +
                     std::to_string(*ws.getConsumerRegs()) + ";",
                 "", {}, loc);
  e.shared().setBarrierThreads(32 * e.numWarps);
  if (!ws.getConsumer().empty() && failed(e.emitBlock(ws.getConsumer().front())))
    return failure();
  e.shared().setBarrierThreads(0);
  LLVM::BrOp::create(b, loc, done);
  b.setInsertionPointToEnd(done);
  return success();
}

LogicalResult emitSingleThread(Emitter &e, Operation *op) {
  auto single = cast<tile::SingleThreadOp>(op);
  Location loc = op->getLoc();
  LogicalResult result = success();
  emitIf(e, isThreadZero(e, loc), loc,
         [&] { result = e.emitBlock(single.getBody().front()); });
  return result;
}

LogicalResult emitGridDep(Emitter &e, Operation *op) {
  // Every thread executes it: a wait holds only the threads that run it, and
  // launch_dependents counts a program once any of its threads has run it.
  NVVM::GriddepcontrolOp::create(e.b, op->getLoc(),
                                 isa<tile::GridDepWaitOp>(op)
                                     ? NVVM::GridDepActionKind::wait
                                     : NVVM::GridDepActionKind::launch_dependents);
  return success();
}

LogicalResult emitPrefetchL2(Emitter &e, Operation *op) {
  auto prefetch = cast<tile::PrefetchL2Op>(op);
  Location loc = op->getLoc();
  emitIf(e, isThreadZero(e, loc), loc, [&] {
    NVVM::CpAsyncBulkPrefetchOp::create(e.b, loc, e.regs(prefetch.getPtr())[0],
                                        e.regs(prefetch.getBytes())[0], Value());
  });
  return success();
}

} // namespace

void populateAsyncEmitters(EmitterTable &table) {
  table.add<tile::GridDepWaitOp, tile::GridDepLaunchOp>(emitGridDep);
  table.add<tile::PrefetchL2Op>(emitPrefetchL2);
  table.add<tile::MbarrierAllocOp>(emitMbarrierAlloc);
  table.add<tile::MbarrierArriveOp>(emitMbarrierArrive);
  table.add<tile::MbarrierExpectTxOp>(emitMbarrierExpectTx);
  table.add<tile::MbarrierWaitOp>(emitMbarrierWait);
  table.add<tile::TmaCopyOp>(emitTmaCopy);
  table.add<tile::WarpSpecializeOp>(emitWarpSpecialize);
  table.add<tile::SingleThreadOp>(emitSingleThread);
}

} // namespace tilejit::lowering
