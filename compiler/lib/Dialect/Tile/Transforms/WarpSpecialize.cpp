// tile-warp-specialize: on an arch with TMA, a kernel configured with
// producer = 1 has its K loop's staged dot operands copied by TMA, issued by
// one thread of an extra producer warp or warpgroup (producer = 2: by thread 0
// of the consumers, see issueInline), into rings of
// shared-memory slots guarded by mbarriers ("full": the copy's bytes landed;
// "empty": every consumer has read the slot). The config's warps consume:
// they wait for a slot, read it with the tensor cores (wgmma) or into
// registers (ldmatrix, for mma.sync) and release it, with no barrier of the
// whole program per K step. wgmma consumers get a producer warpgroup and a
// register split (setmaxnreg) and release per warpgroup; mma.sync consumers
// one producer warp, the kernel's registers, and release per warp. Runs after
// tile-assign-layouts and before tile-pipeline-dots, which then finds nothing
// left to stage.
#include "TmaRings.h"
#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/Transforms/Passes.h"
#include "tilejit/support/Arch.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tile-warp-specialize"

namespace tilejit::tile {
#define GEN_PASS_DEF_TILEWARPSPECIALIZE
#include "tilejit/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace tilejit::tile

using namespace mlir;
using namespace tilejit::tile;

namespace {

/// The register split of a warp-specialized program: the producer thread
/// only walks the K loop and issues copies; the consumers take the rest of
/// the program's share of the register file. One consumer warpgroup shares a
/// multiprocessor with a second program (the two overlap each other's waits
/// for the tensor cores, as two consumer warpgroups of one program do);
/// more take it alone. setmaxnreg takes multiples of 8 up to 256.
struct RegisterSplit {
  int64_t producer, consumer;
};
RegisterSplit registerSplit(int64_t warps) {
  if (warps == 4)
    return {24, (32768 - 128 * 24) / 128 / 8 * 8}; // two programs: 232
  int64_t perThread = (65536 - 128 * 40) / (32 * warps);
  return {40, std::min<int64_t>(240, perThread / 8 * 8)};
}

std::optional<int64_t> constantInt(Value v) {
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

/// The tensor map source of `view`, or why TMA cannot copy from it: a
/// tile.make_view of a kernel parameter with sizes that are constants or i32
/// parameters and static strides whose rows start on 16 bytes.
FailureOr<TensorMapSourceAttr> tensorMapSource(Value view, KernelOp kernel,
                                               std::string &why) {
  auto make = view.getDefiningOp<MakeViewOp>();
  auto kernelArg = [&](Value v) -> int64_t {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &kernel.getBody().front()
               ? int64_t(arg.getArgNumber())
               : int64_t(-1);
  };
  if (!make || kernelArg(make.getBase()) < 0) {
    why = "its view is not made from a kernel parameter";
    return failure();
  }
  ViewType type = make.getResult().getType();
  SmallVector<int64_t> sizes, sizeArgs;
  unsigned dynamic = 0;
  for (int64_t size : type.getShape()) {
    if (size != ShapedType::kDynamic) {
      sizes.push_back(size);
      sizeArgs.push_back(-1);
      continue;
    }
    Value v = make.getSizes()[dynamic++];
    if (auto c = constantInt(v)) {
      sizes.push_back(*c);
      sizeArgs.push_back(-1);
    } else if (int64_t arg = kernelArg(v); arg >= 0) {
      sizes.push_back(-1);
      sizeArgs.push_back(arg);
    } else {
      why = "a size of its view is neither a constant nor a parameter";
      return failure();
    }
  }
  if (llvm::is_contained(type.getStrides(), ShapedType::kDynamic)) {
    why = "its view has a run-time stride";
    return failure();
  }
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  if (type.getStrides()[0] < 1 || (type.getStrides()[0] * bytes) % 16) {
    why = "its rows do not start on 16-byte boundaries one after another";
    return failure();
  }
  return TensorMapSourceAttr::get(kernel.getContext(), kernelArg(make.getBase()), sizes,
                                  sizeArgs, type.getStrides());
}

/// The K loop whose dots' operands TMA feeds: the one loop, at the top level
/// or in tile-persistent's tile loop, with staged operands.
struct KLoop {
  scf::ForOp loop, tileLoop;
  SmallVector<StagedOperand> staged;
};

/// What the rings are: one tensor map per staged operand, the "full" and
/// "empty" mbarriers, their slots and the bytes one K step copies.
struct Rings {
  SmallVector<BlockArgument> maps;
  Value full, empty;
  int64_t stages, txBytes;
};

struct WarpSpecializePass
    : tilejit::tile::impl::TileWarpSpecializeBase<WarpSpecializePass> {
  using TileWarpSpecializeBase::TileWarpSpecializeBase;
  /// "producer = N", as diagnostics name the request.
  std::string request;

  void runOnOperation() override {
    KernelOp kernel = getOperation();
    ConfigAttr config = kernel.getConfigAttr();
    if (!config || !config.getProducer())
      return;
    request = "producer = " + std::to_string(config.getProducer());
    const std::optional<tilejit::Arch> &target = arch;
    if (!target) {
      kernel.emitOpError(request) << " needs a target arch to check for TMA (the "
                                     "pass's arch option)";
      return signalPassFailure();
    }
    // A request the target cannot honor is refused by name, never dropped.
    if (!target->capabilities().tma) {
      kernel.emitOpError(request)
          << " needs TMA (cp.async.bulk.tensor), which " << target->name() << " lacks";
      return signalPassFailure();
    }
    if (failed(specialize(kernel, config, *target)))
      signalPassFailure();
  }

  FailureOr<KLoop> findKLoop(KernelOp kernel) {
    auto *tileDialect = getContext().getLoadedDialect<TileDialect>();
    KLoop found;
    SmallVector<scf::ForOp> candidates;
    for (auto top : kernel.getBody().front().getOps<scf::ForOp>()) {
      candidates.push_back(top);
      if (tileDialect->getTileLoopAttrHelper().isAttrPresent(top))
        llvm::append_range(candidates, top.getBody()->getOps<scf::ForOp>());
    }
    for (scf::ForOp candidate : candidates) {
      SmallVector<StagedOperand> staged = collectStagedOperands(candidate, DEBUG_TYPE);
      if (staged.empty())
        continue;
      if (found.loop)
        return kernel.emitOpError(request)
               << " needs one K loop of staged dots, found two (at "
               << found.loop.getLoc() << " and " << candidate.getLoc() << ")";
      found.loop = candidate;
      found.staged = std::move(staged);
    }
    if (!found.loop)
      return kernel.emitOpError(request)
             << " needs a top-level K loop (or one in the persistent tile loop) whose "
                "dot operands are loaded tiles that can be staged in shared memory "
                "(-test-tile-staged-operands says why each is not)";
    if (found.loop->getParentOp() != kernel)
      found.tileLoop = cast<scf::ForOp>(found.loop->getParentOp());
    return found;
  }

  /// One !tile.tensormap parameter per staged operand, named after its base,
  /// its source saying which view the runtime builds it from.
  FailureOr<SmallVector<BlockArgument>> addTensorMaps(KernelOp kernel,
                                                      ArrayRef<StagedOperand> staged) {
    SmallVector<BlockArgument> maps;
    for (const StagedOperand &s : staged) {
      LoadOp load = s.load;
      std::string why;
      auto source = tensorMapSource(load.getView(), kernel, why);
      if (failed(source))
        return load.emitOpError("cannot be copied by TMA for ") << request << ": " << why;
      // A box TMA cannot copy (over 256 rows, rows that are not one swizzle
      // span) is the load's diagnostic, as the type's verifier words it.
      auto tile = load.getResult().getType();
      auto type = TensorMapType::getChecked(
          [&] {
            return load.emitOpError("cannot be copied by TMA for ") << request << ": ";
          },
          &getContext(), tile.getShape(), tile.getElementType());
      if (!type)
        return failure();
      unsigned index = kernel.getNumArguments();
      StringAttr baseName = kernel.getParamName(source->getBase());
      std::string name =
          (baseName ? baseName.str() : "arg" + std::to_string(source->getBase())) +
          ".tensormap";
      if (failed(kernel.insertArgument(index, type, DictionaryAttr(), load.getLoc())))
        return failure();
      kernel.setParamName(index, name);
      kernel.setArgAttr(index, TileDialect::TensormapSourceAttrHelper::getNameStr(),
                        *source);
      maps.push_back(kernel.getArgument(index));
    }
    return maps;
  }

  LogicalResult specialize(KernelOp kernel, ConfigAttr config,
                           const tilejit::Arch &target) {
    FailureOr<KLoop> kLoop = findKLoop(kernel);
    if (failed(kLoop))
      return failure();
    const int64_t stages = config.getStages(), warps = config.getWarps();
    if (stages < 2)
      return kernel.emitOpError(request)
             << " needs stages >= 2 (a slot being read while the next is copied), got "
             << stages;
    // tile-assign-layouts chose each dot's path: wgmma operands are read from
    // the slots by the tensor cores, a warpgroup at a time; mma.sync ones by
    // ldmatrix, a warp at a time.
    const bool wgmma = llvm::any_of(kLoop->staged, [](StagedOperand &s) {
      return isa<WgmmaOperandLayoutAttr>(s.convert.getResult().getType().getEncoding());
    });
    const bool inline_ = config.getProducer() == 2;
    if (wgmma && inline_)
      return kernel.emitOpError(
          "producer = 2 (a consumer thread issues the copies) is for "
          "mma.sync consumers; wgmma's take producer = 1");
    if (wgmma && !target.capabilities().setmaxnreg)
      return kernel.emitOpError("producer = 1 with wgmma consumers needs setmaxnreg "
                                "(their register split), which ")
             << target.name() << " lacks";
    FailureOr<SmallVector<BlockArgument>> maps = addTensorMaps(kernel, kLoop->staged);
    if (failed(maps))
      return failure();

    Block &body = kernel.getBody().front();
    Location loc = kLoop->loop.getLoc();
    OpBuilder b(&body, body.begin());
    int64_t txBytes = 0;
    for (auto [s, map] : llvm::zip(kLoop->staged, *maps)) {
      allocateRing(b, loc, s, stages);
      txBytes += cast<TensorMapType>(map.getType()).getBoxBytes();
    }
    auto ringType = BarriersType::get(&getContext(), stages);
    Rings rings{
        *maps, MbarrierAllocOp::create(b, loc, ringType, 1u),
        MbarrierAllocOp::create(b, loc, ringType, uint32_t(wgmma ? warps / 4 : warps)),
        stages, txBytes};
    if (inline_)
      return specializeInline(*kLoop, rings);
    return specializeWithProducer(kernel, *kLoop, rings, wgmma, warps);
  }

  /// producer = 1: everything the kernel did becomes the consumers' region of
  /// a tile.warp_specialize whose producer walks the same iterations.
  LogicalResult specializeWithProducer(KernelOp kernel, KLoop &k, Rings &rings,
                                       bool wgmma, int64_t warps) {
    Block &body = kernel.getBody().front();
    Location loc = k.loop.getLoc();
    Operation *ret = body.getTerminator();
    OpBuilder b(ret);
    WarpSpecializeOp ws;
    if (wgmma) {
      RegisterSplit split = registerSplit(warps);
      ws = WarpSpecializeOp::create(b, loc, b.getI32IntegerAttr(split.producer),
                                    b.getI32IntegerAttr(split.consumer), IntegerAttr());
    } else {
      ws = WarpSpecializeOp::create(b, loc, IntegerAttr(), IntegerAttr(),
                                    b.getI32IntegerAttr(1));
    }
    Block *consumer = new Block(), *producer = new Block();
    ws.getConsumer().push_back(consumer);
    ws.getProducer().push_back(producer);
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (&op == ws || &op == ret || isa<SharedAllocOp, MbarrierAllocOp>(op))
        continue;
      op.moveBefore(consumer, consumer->end());
    }
    if (failed(buildProducer(producer, consumer, k, rings)))
      return failure();

    // The consumers: wait for the slot, read it, release it after the dots.
    RingPosition at = carryRingPosition(k.loop, k.tileLoop);
    b.setInsertionPointToStart(k.loop.getBody());
    auto [slot, parity] = slotAndParity(b, loc, at, rings.stages, /*producer=*/false);
    MbarrierWaitOp::create(b, loc, rings.full, slot, parity);
    for (StagedOperand &s : k.staged)
      readFromSlot(b, s, slot);
    b.setInsertionPoint(k.loop.getBody()->getTerminator());
    MbarrierArriveOp::create(b, loc, rings.empty, slot, Value(), /*per_warp=*/!wgmma);
    bool inFlight =
        wgmma && keepOneGroupInFlight(k.loop, rings.empty, slot, rings.stages, at);
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": loop at " << loc << ": " << k.staged.size()
                            << " operands by TMA, " << rings.stages << " slots, "
                            << rings.txBytes << " bytes per step, " << warps
                            << " consumer warps (" << (wgmma ? "wgmma" : "mma.sync")
                            << ")" << (inFlight ? ", one wgmma group in flight" : "")
                            << "\n");
    return success();
  }

  /// The producer region: the same iterations (of the same tiles) as the
  /// consumers', one TMA copy per operand per step.
  LogicalResult buildProducer(Block *producer, Block *consumer, KLoop &k, Rings &rings) {
    OpBuilder pb(producer, producer->end());
    IRMapping outer;
    auto loopLike = [&](scf::ForOp of) -> FailureOr<scf::ForOp> {
      auto lb = cloneChain(pb, of.getLowerBound(), consumer, outer),
           ub = cloneChain(pb, of.getUpperBound(), consumer, outer),
           step = cloneChain(pb, of.getStep(), consumer, outer);
      if (failed(lb) || failed(ub) || failed(step))
        return of.emitOpError("needs bounds the producer can compute (pure ops)");
      auto copy = scf::ForOp::create(pb, of.getLoc(), *lb, *ub, *step);
      outer.map(of.getInductionVar(), copy.getInductionVar());
      pb.setInsertionPointToStart(copy.getBody());
      return copy;
    };
    scf::ForOp tiles;
    if (k.tileLoop) {
      auto copied = loopLike(k.tileLoop);
      if (failed(copied))
        return failure();
      tiles = *copied;
    }
    auto copyLoop = loopLike(k.loop);
    if (failed(copyLoop))
      return failure();
    RingPosition at = carryRingPosition(*copyLoop, tiles);
    if (tiles) // the carrying loop's
      outer.map(k.tileLoop.getInductionVar(), tiles.getInductionVar());
    return issueStep(pb, k.loop.getLoc(), k.staged, rings.maps, rings.full, rings.empty,
                     at, rings.stages, rings.txBytes, consumer, outer);
  }

  /// producer = 2: the kernel stays one region; its K loop waits for each
  /// slot, reads it and releases it per warp, and thread 0 issues the copies
  /// (issueInline).
  LogicalResult specializeInline(KLoop &k, Rings &rings) {
    Location loc = k.loop.getLoc();
    RingPosition at = carryRingPosition(k.loop, k.tileLoop);
    if (failed(issueInline(k.loop, at, k.staged, rings.maps, rings.full, rings.empty,
                           rings.stages, rings.txBytes)))
      return failure();
    // After the issuing thread's region: the consumers' wait for the step.
    OpBuilder b(k.loop.getBody(), std::next(k.loop.getBody()->begin()));
    auto [slot, parity] = slotAndParity(b, loc, at, rings.stages, /*producer=*/false);
    MbarrierWaitOp::create(b, loc, rings.full, slot, parity);
    for (StagedOperand &s : k.staged)
      readFromSlot(b, s, slot);
    b.setInsertionPoint(k.loop.getBody()->getTerminator());
    MbarrierArriveOp::create(b, loc, rings.empty, slot, Value(), /*per_warp=*/true);
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": loop at " << loc << ": " << k.staged.size()
                            << " operands by TMA from thread 0, " << rings.stages
                            << " slots, " << rings.txBytes
                            << " bytes per step (mma.sync)\n");
    return success();
  }
};

} // namespace
