// tile-persistent: a kernel configured with persistent = G runs as a grid of
// at most one program per multiprocessor, each walking the output tiles of
// the grid it was written for: the kernel body becomes the body of one loop
// over tile indices t = program_id .. grid_x * grid_y, step num_programs,
// and program_id / num_programs read the logical grid. Tiles are taken in
// groups of G along axis 0 (row-major within a group), so the programs
// running at once share operand tiles in L2. The logical grid arrives in two
// i32 parameters the runtime appends (`tile.grid_dim`). Runs before
// tile-assign-layouts; the loop is marked `tile.tile_loop` for
// tile-warp-specialize, whose producer walks the same tiles.
#include "tilejit/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tile-persistent"

namespace tilejit::tile {
#define GEN_PASS_DEF_TILEPERSISTENT
#include "tilejit/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace tilejit::tile

using namespace mlir;
using namespace tilejit::tile;

namespace {

struct PersistentPass : tilejit::tile::impl::TilePersistentBase<PersistentPass> {
  void runOnOperation() override {
    KernelOp kernel = getOperation();
    ConfigAttr config = kernel.getConfigAttr();
    if (!config || !config.getPersistent())
      return;
    Block &body = kernel.getBody().front();
    SmallVector<Operation *> gridQueries;
    WalkResult axis2 = kernel.walk([&](Operation *op) {
      if (!isa<ProgramIdOp, NumProgramsOp>(op))
        return WalkResult::advance();
      gridQueries.push_back(op);
      return op->getAttrOfType<IntegerAttr>("axis").getInt() == 2
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (axis2.wasInterrupted()) {
      kernel.emitOpError("persistent = ")
          << config.getPersistent()
          << " walks a 2-D grid of tiles, but the kernel reads grid axis 2";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    Builder attrs(ctx);
    Type i32 = IntegerType::get(ctx, 32);
    SmallVector<Value> grid;
    for (int64_t axis : {0, 1}) {
      unsigned index = kernel.getNumArguments();
      if (failed(kernel.insertArgument(index, i32, DictionaryAttr(), kernel.getLoc())))
        return signalPassFailure();
      kernel.setParamName(index, axis ? "grid_y" : "grid_x");
      kernel.setArgAttr(index, TileDialect::GridDimAttrHelper::getNameStr(),
                        attrs.getI64IntegerAttr(axis));
      grid.push_back(kernel.getArgument(index));
    }

    Location loc = kernel.getLoc();
    OpBuilder b(&body, body.begin());
    auto c = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i32, v); };
    Value first = ProgramIdOp::create(b, loc, i32, 0);
    Value programs = NumProgramsOp::create(b, loc, i32, 0);
    Value tiles = arith::MulIOp::create(b, loc, grid[0], grid[1]);
    auto loop = scf::ForOp::create(b, loc, first, tiles, programs);
    ctx->getLoadedDialect<TileDialect>()->getTileLoopAttrHelper().setAttr(
        loop, b.getUnitAttr());
    Block *loopBody = loop.getBody();
    Operation *ret = body.getTerminator();
    while (loop->getNextNode() != ret)
      loop->getNextNode()->moveBefore(loopBody->getTerminator());

    // Tile t of the grid, in groups of G tiles along axis 0:
    // group = t / (G * grid_y), within it axis 0 fastest.
    b.setInsertionPointToStart(loopBody);
    Value t = loop.getInductionVar();
    Value perGroup = arith::MulIOp::create(b, loc, c(config.getPersistent()), grid[1]);
    Value groupFirst = arith::MulIOp::create(
        b, loc, arith::DivSIOp::create(b, loc, t, perGroup), c(config.getPersistent()));
    Value groupRows =
        arith::MinSIOp::create(b, loc, arith::SubIOp::create(b, loc, grid[0], groupFirst),
                               c(config.getPersistent()));
    Value within = arith::RemSIOp::create(b, loc, t, perGroup);
    Value pid[2] = {
        arith::AddIOp::create(b, loc, groupFirst,
                              arith::RemSIOp::create(b, loc, within, groupRows)),
        arith::DivSIOp::create(b, loc, within, groupRows)};
    for (Operation *op : gridQueries) {
      int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
      op->getResult(0).replaceAllUsesWith(isa<ProgramIdOp>(op) ? pid[axis] : grid[axis]);
      op->erase();
    }
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": kernel @" << kernel.getSymName()
                            << ": tiles in groups of " << config.getPersistent()
                            << " along axis 0\n");
  }
};

} // namespace
