// tile-assign-layouts: every tile gets a register layout encoding; conversions
// are inserted (or splats rebuilt) where producer and consumer disagree. The
// target's capability table picks each dot's matrix path (Staging.h).
#include "DotChains.h"
#include "LayoutQueries.h"
#include "Staging.h"
#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/Transforms/Passes.h"
#include "tilejit/support/Arch.h"

#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "tile-assign-layouts"

namespace tilejit::tile {
#define GEN_PASS_DEF_TILEASSIGNLAYOUTS
#include "tilejit/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace tilejit::tile

using namespace mlir;
using namespace tilejit::tile;

namespace {

/// A constant zero tile (a split-K chain may start from it: every group's
/// partial starts at zero).
bool isZero(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto splat = dyn_cast_or_null<SplatOp>(def))
    if (auto c = splat.getSrc().getDefiningOp<arith::ConstantOp>())
      if (auto f = dyn_cast<FloatAttr>(c.getValue()))
        return f.getValue().isZero();
  auto constant = dyn_cast_or_null<arith::ConstantOp>(def);
  auto dense = constant ? dyn_cast<SplatElementsAttr>(constant.getValue()) : nullptr;
  if (!dense)
    return false;
  if (auto f = dyn_cast<FloatAttr>(dense.getSplatValue<Attribute>()))
    return f.getValue().isZero();
  return false;
}

class Assigner {
public:
  /// `ringBytes`: the shared memory a producer's rings may take on the
  /// target (0: it has no TMA, so no rings).
  Assigner(KernelOp kernel, bool hasWgmma, int64_t ringBytes)
      : ctx(kernel.getContext()), numWarps(getNumWarps(kernel)), hasWgmma(hasWgmma),
        chained(chainedDots(kernel)) {
    if (auto config = kernel.getConfigAttr()) {
      configVector = config.getVector();
      splitK = config.getSplitK();
      direct = config.getDirect() != 0;
      // What tile-warp-specialize's rings (`stages` slots of every dot
      // operand, and their mbarriers) leave of the program's shared memory.
      if (config.getProducer() && ringBytes > 0) {
        int64_t ring = 1024;
        kernel.walk([&](DotOp dot) {
          for (Value operand : {dot.getA(), dot.getB()})
            ring +=
                config.getStages() * tileBytes(cast<RankedTensorType>(operand.getType()));
        });
        rowStoreBudget = ringBytes - ring;
      }
    }
  }

  void processBlock(Block &block) {
    for (Operation &op : llvm::make_early_inc_range(block))
      process(&op);
  }

private:
  /// 16-byte accesses unless the config asks for a narrower vector.
  int64_t vectorFor(RankedTensorType t) {
    Type element = t.getElementType();
    if (auto ptr = dyn_cast<PointerType>(element))
      element = ptr.getPointeeType();
    int64_t bits = std::max<int64_t>(8, element.getIntOrFloatBitWidth());
    int64_t vector = 128 / bits;
    return configVector > 1 ? std::min(vector, configVector) : vector;
  }

  /// Whether `dot` lowers to wgmma; decided once, before its loop's
  /// accumulator and its operands get layouts.
  bool usesWgmma(DotOp dot) {
    auto [it, inserted] = wgmmaDots.try_emplace(dot, false);
    if (inserted) {
      std::string why = !hasWgmma ? "the target has no wgmma"
                        : splitK > 1 || direct
                            ? "the config asks for direct split-K operands"
                            : whyNotWgmma(dot, numWarps);
      it->second = why.empty();
      LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": dot at " << dot.getLoc() << ": "
                              << (!why.empty()        ? "mma.sync, since " + why
                                  : wgmmaStagesA(dot) ? std::string("wgmma")
                                                      : "wgmma, A from registers")
                              << "\n");
    }
    return it->second;
  }

  /// wgmma: warpgroups own 64-row blocks (warps stacked along M); mma.sync:
  /// warps stacked along M for a chain whose M allows it (DotChains.h), else
  /// the squarest warp grid, of numWarps / split_k warps per split-K group.
  Attribute accLayoutFor(DotOp dot) {
    auto t = dot.getResult().getType();
    if (usesWgmma(dot) ||
        (splitK == 1 && chained.contains(dot) && t.getDimSize(0) % (16 * numWarps) == 0))
      return MmaLayoutAttr::get(ctx, {numWarps, 1});
    auto grid = cast<MmaLayoutAttr>(
        mmaLayoutFor(ctx, t.getDimSize(0), t.getDimSize(1), numWarps / splitK));
    return MmaLayoutAttr::get(ctx, grid.getWpc(), splitK);
  }

  Attribute defaultLayout(RankedTensorType t) {
    return defaultBlockedLayout(ctx, t.getShape(), numWarps, vectorFor(t));
  }

  void setLayout(Value v, Attribute layout) {
    auto t = tileType(v);
    v.setType(RankedTensorType::get(t.getShape(), t.getElementType(), layout));
  }

  /// `v` in `layout` for use by `user`: itself, a rebuilt splat/constant, or a
  /// tile.convert_layout inserted before `user`.
  Value inLayout(Value v, Attribute layout, Operation *user) {
    if (layoutOf(v) == layout)
      return v;
    auto t = tileType(v);
    auto type = RankedTensorType::get(t.getShape(), t.getElementType(), layout);
    OpBuilder b(user);
    if (isRematerializable(v)) {
      LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": '" << v.getDefiningOp()->getName()
                              << "' at " << v.getLoc() << " rebuilt in " << layout
                              << " for '" << user->getName() << "'\n");
      IRMapping same;
      return cloneInLayout(b, v.getDefiningOp(), type, same);
    }
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": convert_layout " << layoutOf(v) << " -> "
                            << layout << " for '" << user->getName() << "' at "
                            << user->getLoc() << "\n");
    return ConvertLayoutOp::create(b, v.getLoc(), type, v);
  }

  void convertOperand(OpOperand &operand, Attribute layout) {
    if (tileType(operand.get()))
      operand.set(inLayout(operand.get(), layout, operand.getOwner()));
  }

  /// A split-K accumulator reaches any other consumer summed, in a blocked
  /// layout (a partial tile means nothing on its own).
  void sumPartialOperands(Operation *op) {
    for (OpOperand &operand : op->getOpOperands())
      if (auto t = tileType(operand.get()); t && isPartial(t.getEncoding()))
        convertOperand(operand, defaultLayout(t));
  }

  /// Elementwise ops: an operand in an mma layout (an accumulator, carried
  /// or not) decides, else the first operand that is not a free splat: the
  /// other operands come to an accumulator, which is where the next product
  /// wants the result (a loaded operand can often be loaded in it instead).
  void processElementwise(Operation *op) {
    sumPartialOperands(op);
    Attribute layout;
    for (Value v : op->getOperands())
      if (tileType(v) && (!layout || !isRematerializable(v)) && layoutOf(v)) {
        layout = layoutOf(v);
        if (!isRematerializable(v))
          break;
      }
    for (Value v : op->getOperands())
      if (tileType(v) && isa_and_nonnull<MmaLayoutAttr>(layoutOf(v)) &&
          !isRematerializable(v)) {
        layout = layoutOf(v);
        break;
      }
    if (!layout)
      return;
    for (OpOperand &operand : op->getOpOperands())
      convertOperand(operand, layout);
    for (Value r : op->getResults())
      if (tileType(r))
        setLayout(r, layout);
  }

  void processFor(scf::ForOp loop) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [i, init] : llvm::enumerate(loop.getInitArgs())) {
      if (!tileType(init))
        continue;
      Attribute layout = layoutOf(init);
      // An accumulator a dot produces stays in the mma layout across iterations.
      if (auto dot = yield.getOperand(i).getDefiningOp<DotOp>())
        layout = accLayoutFor(dot);
      convertOperand(loop.getInitArgsMutable()[i], layout);
      setLayout(loop.getRegionIterArg(i), layout);
      setLayout(loop.getResult(i), layout);
    }
    processBlock(*loop.getBody());
    for (auto [i, r] : llvm::enumerate(loop.getResults()))
      if (tileType(r))
        convertOperand(yield->getOpOperand(i), layoutOf(r));
  }

  void processIf(scf::IfOp op) {
    processBlock(*op.thenBlock());
    if (op.elseBlock())
      processBlock(*op.elseBlock());
    for (auto [i, r] : llvm::enumerate(op.getResults())) {
      if (!tileType(r))
        continue;
      Attribute layout = layoutOf(op.thenYield().getOperand(i));
      setLayout(r, layout);
      convertOperand(op.elseYield()->getOpOperand(i), layout);
    }
  }

  void process(Operation *op) {
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return processFor(loop);
    if (auto branch = dyn_cast<scf::IfOp>(op))
      return processIf(branch);
    if (isa<scf::YieldOp, ConvertLayoutOp>(op))
      return;
    if (!isa<DotOp>(op))
      sumPartialOperands(op);
    if (auto store = dyn_cast<StoreOp>(op))
      return storeRows(store);
    if (auto store = dyn_cast<PtrStoreOp>(op)) {
      if (auto layout = layoutOf(store.getPtrs()))
        for (OpOperand &operand : op->getOpOperands().drop_front())
          convertOperand(operand, layout);
      return;
    }
    if (auto bcast = dyn_cast<BroadcastOp>(op))
      return setLayout(bcast.getResult(), layoutOf(bcast.getSrc()));
    if (auto expand = dyn_cast<ExpandDimsOp>(op)) {
      auto slice = dyn_cast<SliceLayoutAttr>(layoutOf(expand.getSrc()));
      Attribute parent = slice && slice.getDim() == expand.getAxis()
                             ? slice.getParent()
                             : defaultLayout(expand.getResult().getType());
      convertOperand(expand.getSrcMutable(),
                     SliceLayoutAttr::get(ctx, expand.getAxis(), parent));
      return setLayout(expand.getResult(), parent);
    }
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (tileType(reduce.getResult()))
        setLayout(reduce.getResult(),
                  SliceLayoutAttr::get(ctx, reduce.getAxis(), layoutOf(reduce.getSrc())));
      return;
    }
    if (auto dot = dyn_cast<DotOp>(op)) {
      auto mma = cast<MmaLayoutAttr>(accLayoutFor(dot));
      bool wgmma = usesWgmma(dot);
      // Every group's partial starts from the chain's first accumulator: it
      // must be zero, or the sum would count it split_k times.
      if (mma.getWpk() > 1 && !isZero(dot.getAcc()) && layoutOf(dot.getAcc()) != mma) {
        dot.emitOpError("with split_k = ")
            << mma.getWpk()
            << " needs its accumulator chain to start from zeros (each warp group sums "
               "its part of K from 0)";
        hadError = true;
      }
      // Operands go to their mma fragment layouts where the tile shapes allow;
      // otherwise lowering reports the shape it cannot split. wgmma operands
      // stay in shared memory (tile-pipeline-dots stages them), but for an A
      // it does not stage: that one takes mma.sync's A fragments, which are
      // wgmma's register A (an accumulator of [warps, 1] feeds it in place).
      OpOperand *operands[] = {&dot.getAMutable(), &dot.getBMutable()};
      for (auto [opIdx, operand] : llvm::enumerate(operands)) {
        auto type = tileType(operand->get());
        if (wgmma && (opIdx == 1 || wgmmaStagesA(dot))) {
          convertOperand(*operand, WgmmaOperandLayoutAttr::get(ctx, opIdx));
          continue;
        }
        Attribute layout =
            dotOperandLayoutFor(mma, opIdx, type.getElementType(), direct || splitK > 1);
        if (succeeded(distribute(layout, type.getShape(), numWarps)))
          convertOperand(*operand, layout);
      }
      convertOperand(dot.getAccMutable(), mma);
      LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": dot at " << dot.getLoc()
                              << ": accumulator " << mma << "\n");
      return setLayout(dot.getResult(), mma);
    }
    if (sharesOperandLayout(op))
      return processElementwise(op);
    // Tiles made from nothing (splat, arange, constants, loads) and reshapes
    // and transposes start from a coalescing blocked layout.
    for (Value r : op->getResults())
      if (auto t = tileType(r); t && !t.getEncoding()) {
        Attribute layout = defaultLayout(t);
        if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
          auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
          if (!dense)
            continue;
          constant.setValueAttr(dense.reshape(
              RankedTensorType::get(t.getShape(), t.getElementType(), layout)));
        }
        LLVM_DEBUG(llvm::dbgs()
                   << DEBUG_TYPE ": '" << op->getName() << "' at " << op->getLoc() << ": "
                   << describeType(t) << " starts in " << layout << " (" << vectorFor(t)
                   << "-element accesses)\n");
        setLayout(r, layout);
      }
  }

  static int64_t tileBytes(RankedTensorType t) {
    return t.getNumElements() * std::max<int64_t>(8, t.getElementTypeBitWidth()) / 8;
  }

  /// A warp-specialized GEMM's accumulator (a wgmma layout: each thread 4 or
  /// 8 bytes of a row at a time) is stored as whole rows, 16 bytes a thread,
  /// through the shared-memory scratch, where the rings leave room for it
  /// (the tile and up to 16 bytes of padding a row): direct stores of a few
  /// bytes a thread left the H200's large e4m3 GEMMs well short of the library
  /// (docs/journal/2026-12-02.md, "The fix: the accumulator stored as whole rows").
  /// Elsewhere stores keep their value's layout.
  void storeRows(StoreOp store) {
    auto t = cast<RankedTensorType>(store.getValue().getType());
    if (rowStoreBudget < 0 || !isa<MmaLayoutAttr>(layoutOf(store.getValue())) ||
        t.getRank() != 2)
      return;
    int64_t scratch = tileBytes(t) + t.getDimSize(0) * 16;
    if (scratch > rowStoreBudget) {
      LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": store at " << store.getLoc()
                              << " stays direct: its rows need " << scratch
                              << " bytes of shared memory, the rings leave "
                              << rowStoreBudget << "\n");
      return;
    }
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": store at " << store.getLoc()
                            << " goes as whole rows through " << scratch
                            << " bytes of shared memory\n");
    convertOperand(store.getValueMutable(), defaultLayout(t));
  }

public:
  bool hadError = false; ///< a diagnostic was emitted

private:
  MLIRContext *ctx;
  int64_t numWarps;
  bool hasWgmma;
  int64_t configVector = 1, splitK = 1;
  bool direct = false;
  int64_t rowStoreBudget = -1; ///< bytes for storeRows; -1: no producer rings
  llvm::DenseMap<Operation *, bool> wgmmaDots;
  llvm::DenseSet<Operation *> chained; ///< dots of a chain (DotChains.h)
};

/// Register layouts enumerate a thread's registers over power-of-two bases
/// (Layouts.cpp): a tile dimension of another size has no layout, and a tile
/// larger than the threads' registers hold none either. The first such tile,
/// in program order, is named. An op of no loaded dialect (which
/// tile-verify-lowerable refuses first in the pipeline) fails here too: the
/// rules of the Assigner ask an op's dialect.
LogicalResult checkTilesFit(KernelOp kernel) {
  const int64_t maxElements = kMaxRegistersPerThread * 32 * getNumWarps(kernel);
  auto unsized = kernel.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!op->isRegistered()) {
      op->emitOpError("is not an operation of a loaded dialect");
      return WalkResult::interrupt();
    }
    for (Value r : op->getResults()) {
      auto t = tileType(r);
      if (!t)
        continue;
      if (!llvm::all_of(t.getShape(), [](int64_t d) { return llvm::isPowerOf2_64(d); })) {
        op->emitOpError("has a tile dimension that is not a power of two, which no "
                        "register layout distributes: ")
            << describeType(t);
        return WalkResult::interrupt();
      }
      int64_t elements = 1;
      for (int64_t d : t.getShape())
        if (__builtin_mul_overflow(elements, d, &elements))
          elements = INT64_MAX;
      if (elements > maxElements) {
        op->emitOpError() << describeType(t) << " holds " << elements
                          << " elements, more than the kernel's " << getNumWarps(kernel)
                          << " warps hold at " << kMaxRegistersPerThread
                          << " registers a thread";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(unsized.wasInterrupted());
}

/// Every tile has a layout its kernel's warps can hold.
LogicalResult checkAllAssigned(KernelOp kernel) {
  const int64_t numWarps = getNumWarps(kernel);
  bool failedAny = false;
  kernel.walk([&](Operation *op) {
    for (Value r : op->getResults()) {
      auto t = tileType(r);
      if (t && !t.getEncoding()) {
        op->emitOpError("no register layout could be assigned to ") << describeType(t);
        failedAny = true;
      } else if (t && !isa<WgmmaOperandLayoutAttr>(t.getEncoding()) &&
                 failed(distribute(t, numWarps))) {
        // (A wgmma operand lives in shared memory, not in registers.) E.g. a
        // dot tile with fewer 16x8 blocks than the kernel has warps: a
        // configuration error to report, not something lowering can fix.
        op->emitOpError() << describeType(t) << " cannot be spread over the kernel's "
                          << numWarps << " warps in layout " << t.getEncoding()
                          << ": use fewer warps or a larger tile";
        failedAny = true;
      }
    }
  });
  return failure(failedAny);
}

struct AssignLayoutsPass : tilejit::tile::impl::TileAssignLayoutsBase<AssignLayoutsPass> {
  using TileAssignLayoutsBase::TileAssignLayoutsBase;

  void runOnOperation() override {
    KernelOp kernel = getOperation();
    bool hasWgmma = false;
    int64_t ringBytes = 0;
    const std::optional<tilejit::Arch> &target = arch;
    if (target) {
      tilejit::ArchCapabilities caps = target->capabilities();
      hasWgmma = caps.wgmma;
      if (caps.tma)
        ringBytes =
            sharedBytes > 0
                ? std::min<int64_t>(sharedBytes, target->profile().sharedBytesPerBlock)
                : target->profile().sharedBytesPerBlock;
    }
    if (failed(checkTilesFit(kernel)))
      return signalPassFailure();
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": kernel @" << kernel.getSymName() << ", "
                            << getNumWarps(kernel) << " warps, arch '"
                            << (target ? target->name() : StringRef()) << "'"
                            << (hasWgmma ? " (wgmma)" : "") << "\n");
    Assigner assigner(kernel, hasWgmma, ringBytes);
    assigner.processBlock(kernel.getBody().front());
    if (assigner.hadError || failed(checkAllAssigned(kernel)))
      return signalPassFailure();
  }
};

} // namespace
