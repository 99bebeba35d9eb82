// tile-rematerialize: a layout conversion that would go through shared memory,
// of a tree of elementwise ops over leaves any layout rebuilds cheaply, becomes
// the tree computed again in the target layout. Runs after tile-assign-layouts,
// which inserts the conversions.
#include "LayoutQueries.h"
#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tile-rematerialize"

namespace tilejit::tile {
#define GEN_PASS_DEF_TILEREMATERIALIZE
#include "tilejit/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace tilejit::tile

using namespace mlir;
using namespace tilejit::tile;

namespace {

/// The leaves of a tree are splats, constants, aranges and broadcasts of tiles
/// every warp holds whole (Distributed::laneIndexBits): the tree is computed
/// again in the target layout, its broadcasts by warp shuffles, and the
/// conversion goes (the decay mask and the per-row and per-column factors of
/// ssd_prefill's products, broadcast into the mma layout).
class Rematerializer {
public:
  explicit Rematerializer(int64_t numWarps) : numWarps(numWarps) {}

  void run(KernelOp kernel) {
    SmallVector<ConvertLayoutOp> converts;
    kernel.walk([&](ConvertLayoutOp c) { converts.push_back(c); });
    for (ConvertLayoutOp convert : converts) {
      auto target = convert.getResult().getType();
      auto operand = dyn_cast<DotOperandLayoutAttr>(target.getEncoding());
      // Operands loaded straight into their fragments (kContig): a tree of
      // loads and elementwise ops is loaded and computed in the fragment.
      const bool fragment = operand && operand.getKContig();
      if ((!fragment && !isa<BlockedLayoutAttr, MmaLayoutAttr, SliceLayoutAttr>(
                            target.getEncoding())) ||
          isPartial(convert.getSrc().getType().getEncoding()) ||
          inRegisters(convert.getSrc().getType(), target))
        continue;
      int budget = 16; // ops a tree may hold
      // Into an accumulator, a load no other op reads is a leaf too: loading
      // it in the mma layout costs less than a trip through shared memory.
      const Loads loads = fragment                                   ? Loads::Any
                          : isa<MmaLayoutAttr>(target.getEncoding()) ? Loads::SingleUse
                                                                     : Loads::None;
      if (!cheap(convert.getSrc(), budget, loads, target.getEncoding()))
        continue;
      LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": convert_layout at " << convert.getLoc()
                              << ": its operand's tree is computed again in "
                              << target.getEncoding() << " instead\n");
      OpBuilder b(convert);
      convert.getResult().replaceAllUsesWith(
          rebuild(convert.getSrc(), target.getEncoding(), b));
      convert.erase();
    }
  }

private:
  int64_t numWarps;

  /// The moves tile lowering makes by renaming registers (LayoutEmitters).
  bool inRegisters(RankedTensorType from, RankedTensorType to) {
    auto a = distribute(from, numWarps), b = distribute(to, numWarps);
    if (failed(a) || failed(b) || a->lanes != b->lanes || a->warps != b->warps)
      return false;
    return llvm::all_of(b->regs,
                        [&](const Index &i) { return llvm::is_contained(a->regs, i); });
  }

  static bool elementwise(Operation *op) {
    return (isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) ||
            isa<ConvertOp>(op)) &&
           op->getNumResults() == 1 && op->getNumRegions() == 0;
  }

  /// Which loads from views are leaves (a load reads the same elements in any
  /// layout).
  enum class Loads { None, SingleUse, Any };

  /// A conversion from `target` itself is a leaf (the tree reads its source).
  bool cheap(Value v, int &budget, Loads loads, Attribute target) {
    Operation *def = v.getDefiningOp();
    if (!def || --budget < 0)
      return false;
    if (auto convert = dyn_cast<ConvertLayoutOp>(def))
      return layoutOf(convert.getSrc()) == target ||
             cheap(convert.getSrc(), budget, loads, target);
    if (isRematerializable(v))
      return true;
    if (isa<LoadOp>(def) &&
        (loads == Loads::Any || (loads == Loads::SingleUse && def->hasOneUse())))
      return true;
    if (auto bcast = dyn_cast<BroadcastOp>(def)) {
      auto from = distribute(bcast.getSrc().getType(), numWarps);
      return succeeded(from) && !from->laneIndexBits().empty();
    }
    if (!elementwise(def))
      return false;
    return llvm::all_of(def->getOperands(), [&](Value o) {
      return !tileType(o) || cheap(o, budget, loads, target);
    });
  }

  Value rebuild(Value v, Attribute layout, OpBuilder &b) {
    Operation *def = v.getDefiningOp();
    auto t = tileType(v);
    auto type = RankedTensorType::get(t.getShape(), t.getElementType(), layout);
    if (auto convert = dyn_cast<ConvertLayoutOp>(def))
      return layoutOf(convert.getSrc()) == layout ? convert.getSrc()
                                                  : rebuild(convert.getSrc(), layout, b);
    if (auto bcast = dyn_cast<BroadcastOp>(def))
      return BroadcastOp::create(b, bcast.getLoc(), type, bcast.getSrc());
    IRMapping operands;
    if (!isRematerializable(v))
      for (Value o : def->getOperands())
        if (tileType(o))
          operands.map(o, rebuild(o, layout, b));
    return cloneInLayout(b, def, type, operands);
  }
};

struct RematerializePass : tilejit::tile::impl::TileRematerializeBase<RematerializePass> {
  void runOnOperation() override {
    KernelOp kernel = getOperation();
    Rematerializer(getNumWarps(kernel)).run(kernel);
  }
};

} // namespace
