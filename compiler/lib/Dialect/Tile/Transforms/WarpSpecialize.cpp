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
#include "Staging.h"
#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/Transforms/Passes.h"
#include "tilejit/support/Arch.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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

/// Clones into `b` what `v` needs that is defined in `block` (the consumer
/// body): region-free ops without memory effects only (an integer division
/// is fine: the producer computes it for the same iterations the consumers
/// do); values from above stay.
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

/// Where a K iteration falls in the rings' sequence: every program walks its
/// K loop once per tile, so the sequence numbers tile index x trip count +
/// K index (the tile loop's parts null without tile-persistent).
struct RingPosition {
  Value kIv, kLb, kUb, kStep;
  Value tileIv, tileLb, tileStep;
};

/// K iterations of the loop `at` describes: ceil((ub - lb) / step).
Value tripCount(OpBuilder &b, Location loc, const RingPosition &at) {
  Value one = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1);
  return arith::DivSIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, arith::SubIOp::create(b, loc, at.kUb, at.kLb),
                            arith::SubIOp::create(b, loc, at.kStep, one)),
      at.kStep);
}

/// (slot, parity) of an iteration in a ring of `stages`: its sequence number
/// i, i % stages and (i / stages) % 2, flipped for a producer, whose first
/// pass waits for nothing.
std::pair<Value, Value> slotAndParity(OpBuilder &b, Location loc, const RingPosition &at,
                                      int64_t stages, bool producer) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i32, v); };
  auto indexOf = [&](Value iv, Value lb, Value step) {
    return arith::DivSIOp::create(b, loc, arith::SubIOp::create(b, loc, iv, lb), step);
  };
  Value index = indexOf(at.kIv, at.kLb, at.kStep);
  if (at.tileIv) {
    Value trip = tripCount(b, loc, at);
    index = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, indexOf(at.tileIv, at.tileLb, at.tileStep), trip),
        index);
  }
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
void releaseLast(OpBuilder &b, Location loc, Value empty, RingPosition at,
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

/// Issues one K step's copies from the producing thread: waits until the
/// step's slot is empty, expects its bytes on the full barrier and starts
/// one TMA copy per operand at the step's offsets. `map` takes the consumer
/// body's values (its K index, and the tile index for a persistent loop) to
/// the step's; what the offsets need from `body` is cloned (pure ops only).
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
/// (docs/BENCHMARKS.md, issue 20, session 3).
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
  if (at.tileIv)
    releaseLast(b, loc, empty, at, stages);
  LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": dot at " << loc
                          << ": one wgmma group in flight, chained accumulator\n");
  return true;
}

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
    auto target = tilejit::Arch::parse(arch);
    if (!target) {
      kernel.emitOpError("cannot check ")
          << request << ": " << toString(target.takeError());
      return signalPassFailure();
    }
    // A request the target cannot honor is refused by name, never dropped.
    if (!target->capabilities().tma) {
      kernel.emitOpError(request)
          << " needs TMA (cp.async.bulk.tensor), which " << arch << " lacks";
      return signalPassFailure();
    }
    if (failed(specialize(kernel, config, target->capabilities())))
      signalPassFailure();
  }

  LogicalResult specialize(KernelOp kernel, ConfigAttr config,
                           const tilejit::ArchCapabilities &caps) {
    Block &body = kernel.getBody().front();
    // The K loop: at the top level, or in tile-persistent's tile loop.
    scf::ForOp loop, tileLoop;
    SmallVector<StagedOperand> staged;
    SmallVector<scf::ForOp> candidates;
    for (auto top : body.getOps<scf::ForOp>()) {
      candidates.push_back(top);
      if (top->hasAttr("tile.tile_loop"))
        llvm::append_range(candidates, top.getBody()->getOps<scf::ForOp>());
    }
    for (scf::ForOp candidate : candidates) {
      SmallVector<StagedOperand> found = collectStagedOperands(candidate, DEBUG_TYPE);
      if (found.empty())
        continue;
      if (loop)
        return kernel.emitOpError(request)
               << " needs one K loop of staged dots, found two (at " << loop.getLoc()
               << " and " << candidate.getLoc() << ")";
      loop = candidate;
      staged = std::move(found);
    }
    if (!loop)
      return kernel.emitOpError(request)
             << " needs a top-level K loop (or one in the persistent tile loop) whose "
                "dot "
                "operands are loaded tiles that can be staged in shared memory "
                "(-test-tile-staged-operands says why each is not)";
    if (loop->getParentOp() != kernel)
      tileLoop = cast<scf::ForOp>(loop->getParentOp());
    const int64_t stages = config.getStages(), warps = config.getWarps();
    if (stages < 2)
      return kernel.emitOpError(request)
             << " needs stages >= 2 (a slot being read while the next is copied), got "
             << stages;
    // tile-assign-layouts chose each dot's path: wgmma operands are read from
    // the slots by the tensor cores, a warpgroup at a time; mma.sync ones by
    // ldmatrix, a warp at a time.
    const bool wgmma = llvm::any_of(staged, [](StagedOperand &s) {
      return isa<WgmmaOperandLayoutAttr>(s.convert.getResult().getType().getEncoding());
    });
    const bool inline_ = config.getProducer() == 2;
    if (wgmma && inline_)
      return kernel.emitOpError(
          "producer = 2 (a consumer thread issues the copies) is for "
          "mma.sync consumers; wgmma's take producer = 1");
    if (wgmma && !caps.setmaxnreg)
      return kernel.emitOpError("producer = 1 with wgmma consumers needs setmaxnreg "
                                "(their register split), which ")
             << arch << " lacks";

    // Tensor maps: one parameter per staged operand, named after its base.
    SmallVector<BlockArgument> maps;
    for (StagedOperand &s : staged) {
      std::string why;
      auto source = tensorMapSource(s.load.getView(), kernel, why);
      if (failed(source))
        return s.load.emitOpError("cannot be copied by TMA for ")
               << request << ": " << why;
      // A box TMA cannot copy (over 256 rows, rows that are not one swizzle
      // span) is the load's diagnostic, as the type's verifier words it.
      auto tile = s.load.getResult().getType();
      auto type = TensorMapType::getChecked(
          [&] {
            return s.load.emitOpError("cannot be copied by TMA for ") << request << ": ";
          },
          &getContext(), tile.getShape(), tile.getElementType());
      if (!type)
        return failure();
      unsigned index = kernel.getNumArguments();
      auto baseName = kernel.getArgAttrOfType<StringAttr>(source->getBase(), "tile.name");
      std::string name =
          (baseName ? baseName.str() : "arg" + std::to_string(source->getBase())) +
          ".tensormap";
      OpBuilder names(&getContext());
      if (failed(kernel.insertArgument(
              index, type,
              names.getDictionaryAttr(
                  {names.getNamedAttr("tile.name", names.getStringAttr(name)),
                   names.getNamedAttr("tile.tensormap_source", *source)}),
              s.load.getLoc())))
        return failure();
      maps.push_back(kernel.getArgument(index));
    }

    Location loc = loop.getLoc();
    OpBuilder b(&body, body.begin());
    int64_t txBytes = 0;
    for (StagedOperand &s : staged) {
      allocateRing(b, loc, s, stages);
      txBytes += cast<TensorMapType>(maps[&s - staged.data()].getType()).getBoxBytes();
    }
    auto ringType = BarriersType::get(&getContext(), stages);
    Value full = MbarrierAllocOp::create(b, loc, ringType, 1u);
    Value empty =
        MbarrierAllocOp::create(b, loc, ringType, uint32_t(wgmma ? warps / 4 : warps));
    if (inline_)
      return specializeInline(loop, tileLoop, staged, maps, full, empty, stages, txBytes);

    // Everything else the kernel did becomes the consumers' region.
    Operation *ret = body.getTerminator();
    b.setInsertionPoint(ret);
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

    // The producer: the same iterations (of the same tiles), one TMA copy per
    // operand per step.
    OpBuilder pb(producer, producer->end());
    IRMapping outer;
    auto loopLike = [&](scf::ForOp of, IRMapping &map) -> FailureOr<scf::ForOp> {
      auto lb = cloneChain(pb, of.getLowerBound(), consumer, map),
           ub = cloneChain(pb, of.getUpperBound(), consumer, map),
           step = cloneChain(pb, of.getStep(), consumer, map);
      if (failed(lb) || failed(ub) || failed(step))
        return of.emitOpError("needs bounds the producer can compute (pure ops)");
      auto copy = scf::ForOp::create(pb, of.getLoc(), *lb, *ub, *step);
      map.map(of.getInductionVar(), copy.getInductionVar());
      pb.setInsertionPointToStart(copy.getBody());
      return copy;
    };
    RingPosition pAt;
    if (tileLoop) {
      auto tiles = loopLike(tileLoop, outer);
      if (failed(tiles))
        return failure();
      pAt.tileIv = tiles->getInductionVar();
      pAt.tileLb = tiles->getLowerBound();
      pAt.tileStep = tiles->getStep();
    }
    auto copyLoop = loopLike(loop, outer);
    if (failed(copyLoop))
      return failure();
    pAt.kIv = copyLoop->getInductionVar();
    pAt.kLb = copyLoop->getLowerBound();
    pAt.kUb = copyLoop->getUpperBound();
    pAt.kStep = copyLoop->getStep();
    if (failed(issueStep(pb, loc, staged, maps, full, empty, pAt, stages, txBytes,
                         consumer, outer)))
      return failure();

    // The consumers: wait for the slot, read it, release it after the dots.
    b.setInsertionPointToStart(loop.getBody());
    RingPosition cAt{loop.getInductionVar(), loop.getLowerBound(), loop.getUpperBound(),
                     loop.getStep()};
    if (tileLoop) {
      cAt.tileIv = tileLoop.getInductionVar();
      cAt.tileLb = tileLoop.getLowerBound();
      cAt.tileStep = tileLoop.getStep();
    }
    auto [cSlot, cParity] = slotAndParity(b, loc, cAt, stages, /*producer=*/false);
    MbarrierWaitOp::create(b, loc, full, cSlot, cParity);
    for (StagedOperand &s : staged)
      readFromSlot(b, s, cSlot);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    MbarrierArriveOp::create(b, loc, empty, cSlot, Value(), /*per_warp=*/!wgmma);
    bool inFlight = wgmma && keepOneGroupInFlight(loop, empty, cSlot, stages, cAt);
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": loop at " << loc << ": " << staged.size()
                            << " operands by TMA, " << stages << " slots, " << txBytes
                            << " bytes per step, " << warps << " consumer warps ("
                            << (wgmma ? "wgmma" : "mma.sync") << ")"
                            << (inFlight ? ", one wgmma group in flight" : "") << "\n");
    return success();
  }

  /// producer = 2: the kernel stays one region; its K loop waits for each
  /// slot, reads it and releases it per warp, and thread 0 issues the copies
  /// (issueInline).
  LogicalResult specializeInline(scf::ForOp loop, scf::ForOp tileLoop,
                                 MutableArrayRef<StagedOperand> staged,
                                 ArrayRef<BlockArgument> maps, Value full, Value empty,
                                 int64_t stages, int64_t txBytes) {
    Location loc = loop.getLoc();
    RingPosition at{loop.getInductionVar(), loop.getLowerBound(), loop.getUpperBound(),
                    loop.getStep()};
    if (tileLoop) {
      at.tileIv = tileLoop.getInductionVar();
      at.tileLb = tileLoop.getLowerBound();
      at.tileStep = tileLoop.getStep();
    }
    if (failed(issueInline(loop, at, staged, maps, full, empty, stages, txBytes)))
      return failure();
    // After the issuing thread's region: the consumers' wait for the step.
    OpBuilder b(loop.getBody(), std::next(loop.getBody()->begin()));
    auto [slot, parity] = slotAndParity(b, loc, at, stages, /*producer=*/false);
    MbarrierWaitOp::create(b, loc, full, slot, parity);
    for (StagedOperand &s : staged)
      readFromSlot(b, s, slot);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    MbarrierArriveOp::create(b, loc, empty, slot, Value(), /*per_warp=*/true);
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": loop at " << loc << ": " << staged.size()
                            << " operands by TMA from thread 0, " << stages << " slots, "
                            << txBytes << " bytes per step (mma.sync)\n");
    return success();
  }
};

} // namespace
