// tile-pipeline-dots: dot operands that a loop loads from views reach shared
// memory through asynchronous copies issued `stages - 1` iterations ahead,
// and registers through tile.shared_load (ldmatrix), never through a
// register round trip. Runs after tile-assign-layouts: it replaces
// convert_layout(load) and convert_layout(transpose(load)) into a
// #tile.dot_operand layout. Other transposes into a #tile.dot_operand layout
// (of computed tiles) take that layout directly.
#include "Staging.h"
#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/Transforms/Passes.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tile-pipeline-dots"

namespace tilejit::tile {
#define GEN_PASS_DEF_TILEPIPELINEDOTS
#include "tilejit/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace tilejit::tile

using namespace mlir;
using namespace tilejit::tile;

namespace {

/// Copies of every staged operand for iteration `iv` into `slot`, one group.
void issueCopies(OpBuilder &b, Location loc, scf::ForOp loop,
                 ArrayRef<StagedOperand> staged, Value iv, Value slot) {
  IRMapping map;
  map.map(loop.getInductionVar(), iv);
  for (StagedOperand s : staged) {
    Value view = recomputeFor(b, s.load.getView(), loop, map);
    SmallVector<Value> offsets;
    for (Value o : s.load.getOffsets())
      offsets.push_back(recomputeFor(b, o, loop, map));
    AsyncCopyOp::create(b, loc, view, offsets, s.buffer, slot);
  }
  AsyncCommitOp::create(b, loc);
}

/// A dot of two tile.shared_loads becomes one dot per mma K step, each on
/// its own part of the slots: the fragments of one step are live at a time
/// instead of the whole K extent's.
void splitIntoSteps(DotOp dot) {
  auto aLoad = dot.getA().getDefiningOp<SharedLoadOp>();
  auto bLoad = dot.getB().getDefiningOp<SharedLoadOp>();
  if (!aLoad || !bLoad || !aLoad->hasOneUse() || !bLoad->hasOneUse() || aLoad == bLoad ||
      aLoad.getOffsets() || bLoad.getOffsets())
    return;
  auto aType = aLoad.getResult().getType();
  // wgmma reads whole slots through descriptors; only fragments split.
  auto aOperand = dyn_cast<DotOperandLayoutAttr>(aType.getEncoding());
  if (!aOperand)
    return;
  int64_t kStep = 8 * aOperand.getKWidth();
  int64_t kTotal = aType.getDimSize(1);
  if (kTotal <= kStep || kTotal % kStep)
    return;
  OpBuilder b(dot);
  Location loc = dot.getLoc();
  auto part = [&](SharedLoadOp load, unsigned resultKDim, int64_t k) -> Value {
    auto type = load.getResult().getType();
    SmallVector<int64_t> shape(type.getShape());
    shape[resultKDim] = kStep;
    SmallVector<int64_t> offsets{0, 0};
    offsets[load.getKDim()] = k;
    return SharedLoadOp::create(
        b, load.getLoc(),
        RankedTensorType::get(shape, type.getElementType(), type.getEncoding()),
        load.getBuffer(), load.getSlot(), b.getDenseI64ArrayAttr(offsets),
        load.getTranspose());
  };
  Value acc = dot.getAcc();
  for (int64_t k = 0; k < kTotal; k += kStep) {
    Value a = part(aLoad, 1, k), bPart = part(bLoad, 0, k);
    acc = DotOp::create(b, loc, acc.getType(), a, bPart, acc);
  }
  LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": dot at " << loc << ": split into "
                          << kTotal / kStep << " dots of K = " << kStep << "\n");
  dot.getResult().replaceAllUsesWith(acc);
  dot.erase();
  aLoad.erase();
  bLoad.erase();
}

void pipelineLoop(scf::ForOp loop, SmallVector<StagedOperand> staged, int64_t stages) {
  Location loc = loop.getLoc();
  LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": loop at " << loc << ": staged operands: "
                          << staged.size() << ", slots per ring: " << stages
                          << ", iterations copied ahead: " << stages - 1 << "\n");
  OpBuilder b(loop);
  Type i32 = b.getI32Type();
  auto constant = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i32, v); };
  for (StagedOperand &s : staged)
    allocateRing(b, loc, s, stages);
  // Prologue: iterations 0 .. stages-2 into slots 0 .. stages-2. Copies for
  // iterations the loop does not run are never read.
  Value lb = loop.getLowerBound(), step = loop.getStep();
  for (int64_t i = 0; i + 1 < stages; ++i) {
    Value iv = arith::AddIOp::create(b, loc, lb,
                                     arith::MulIOp::create(b, loc, step, constant(i)));
    issueCopies(b, loc, loop, staged, iv, constant(i));
  }

  // Iteration i reads slot i % stages once its group is complete (stages-2
  // younger groups may stay in flight), then refills the slot iteration i-1
  // read (the wait's barrier has released it) for iteration i + stages - 1.
  // wgmma dots read their slots asynchronously: the refill is placed after
  // them, so its copies issue while the tensor cores run (the lowering
  // defers the dot's wait past them).
  bool asyncDots = llvm::any_of(staged, [](StagedOperand s) {
    return isa<WgmmaOperandLayoutAttr>(s.convert.getResult().getType().getEncoding());
  });
  b.setInsertionPointToStart(loop.getBody());
  Value iv = loop.getInductionVar();
  Value index =
      arith::DivSIOp::create(b, loc, arith::SubIOp::create(b, loc, iv, lb), step);
  Value readSlot = arith::RemSIOp::create(b, loc, index, constant(stages));
  if (stages == 1) {
    // One slot: wait for every thread to finish reading it, refill, wait.
    AsyncWaitOp::create(b, loc, 0);
    issueCopies(b, loc, loop, staged, iv, readSlot);
    AsyncWaitOp::create(b, loc, 0);
  } else {
    AsyncWaitOp::create(b, loc, stages - 2);
    if (asyncDots)
      b.setInsertionPoint(loop.getBody()->getTerminator());
    Value ahead = arith::AddIOp::create(
        b, loc, iv, arith::MulIOp::create(b, loc, step, constant(stages - 1)));
    Value writeSlot = arith::RemSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, index, constant(stages - 1)),
        constant(stages));
    issueCopies(b, loc, loop, staged, ahead, writeSlot);
  }
  for (StagedOperand &s : staged)
    readFromSlot(b, s, readSlot);
  for (DotOp dot : llvm::to_vector(loop.getBody()->getOps<DotOp>()))
    splitIntoSteps(dot);
  // Copies of iterations past the end may still be in flight.
  b.setInsertionPointAfter(loop);
  AsyncWaitOp::create(b, loc, 0);
}

/// A transpose left unstaged whose only use converts its result to a dot
/// operand's fragments takes that layout itself: the conversion needs scratch memory
/// anyway, and one trip through it replaces two (the transpose's and the
/// conversion's), with the fragments' K pairs read from the source's rows.
void foldConversionsIntoTransposes(KernelOp kernel) {
  kernel.walk([](ConvertLayoutOp convert) {
    auto transpose = convert.getSrc().getDefiningOp<TransposeOp>();
    auto target = convert.getResult().getType();
    if (!transpose || !transpose->hasOneUse() ||
        !isa<DotOperandLayoutAttr>(target.getEncoding()))
      return;
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": transpose at " << transpose.getLoc()
                            << " takes " << target.getEncoding()
                            << " itself: one trip through scratch, not two\n");
    transpose.getResult().setType(target);
    convert.getResult().replaceAllUsesWith(transpose.getResult());
    convert.erase();
  });
}

struct PipelineDotsPass : tilejit::tile::impl::TilePipelineDotsBase<PipelineDotsPass> {
  void runOnOperation() override {
    KernelOp kernel = getOperation();
    int64_t stages = 1;
    if (auto config = kernel.getConfigAttr())
      stages = config.getStages();
    SmallVector<std::pair<scf::ForOp, SmallVector<StagedOperand>>> loops;
    kernel.walk([&](scf::ForOp loop) {
      // Slot arithmetic is emitted in i32, the type of tile offsets.
      if (!loop.getInductionVar().getType().isInteger(32)) {
        LLVM_DEBUG(llvm::dbgs()
                   << DEBUG_TYPE ": loop at " << loop.getLoc()
                   << ": not pipelined, its induction variable is not i32\n");
        return;
      }
      SmallVector<StagedOperand> staged = collectStagedOperands(loop, DEBUG_TYPE);
      if (!staged.empty())
        loops.emplace_back(loop, std::move(staged));
    });
    for (auto &[loop, staged] : loops)
      pipelineLoop(loop, std::move(staged), stages);
    foldConversionsIntoTransposes(kernel);
    // tile-assign-layouts gives wgmma operands only to loads this pass
    // stages; one left behind has no lowering.
    kernel.walk([&](ConvertLayoutOp convert) {
      if (isa<WgmmaOperandLayoutAttr>(convert.getResult().getType().getEncoding())) {
        convert.emitOpError("leaves a wgmma operand unstaged: only a loop-loaded tile "
                            "can reach shared memory for wgmma");
        signalPassFailure();
      }
    });
  }
};

} // namespace
