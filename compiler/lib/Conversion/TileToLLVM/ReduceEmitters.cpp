// Reduction and scan family. A reduction combines in-thread registers first,
// then lanes with butterfly shuffles, then warps through shared memory; its
// result takes the slice layout, held by every thread that needs it. A scan
// runs Hillis-Steele steps (log2(n) steps): by warp shuffles when lanes alone
// hold its axis, else through shared memory.
#include "Emitter.h"
#include "SharedMemoryEmitter.h"

using namespace mlir;

namespace tilejit::lowering {
namespace {

Value combine(Emitter &e, tile::ReduceKind kind, Value a, Value b, Location loc) {
  OpBuilder &builder = e.b;
  bool isFloat = isa<FloatType>(a.getType());
  switch (kind) {
  case tile::ReduceKind::Sum:
    return isFloat ? Value(LLVM::FAddOp::create(builder, loc, a, b))
                   : Value(LLVM::AddOp::create(builder, loc, a, b));
  case tile::ReduceKind::Max:
    return isFloat ? Value(LLVM::MaximumOp::create(builder, loc, a, b))
                   : Value(LLVM::SMaxOp::create(builder, loc, a, b));
  case tile::ReduceKind::Min:
    return isFloat ? Value(LLVM::MinimumOp::create(builder, loc, a, b))
                   : Value(LLVM::SMinOp::create(builder, loc, a, b));
  }
  return {};
}

LogicalResult emitReduce(Emitter &e, Operation *op) {
  auto reduce = cast<tile::ReduceOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  int64_t axis = reduce.getAxis();
  tile::ReduceKind kind = reduce.getKind();
  auto srcType = reduce.getSrc().getType();
  const Distributed &d = e.layout(srcType);
  Regs &in = e.regs(reduce.getSrc());
  Type type = e.elementType(srcType);

  // 1. In-thread: registers that differ only along the axis.
  SmallVector<Index> groups;
  Regs partial;
  for (unsigned r = 0; r < d.numRegs(); ++r) {
    if (d.isDuplicateRegister(r))
      continue;
    Index key = d.regs[r];
    key.erase(key.begin() + axis);
    auto it = llvm::find(groups, key);
    if (it == groups.end()) {
      groups.push_back(key);
      partial.push_back(in[r]);
    } else {
      Value &acc = partial[it - groups.begin()];
      acc = combine(e, kind, acc, in[r], loc);
    }
  }
  // 2. Lanes along the axis.
  for (auto [bit, basis] : llvm::enumerate(d.lanes))
    if (basis[axis] != 0)
      for (Value &v : partial)
        v = combine(e, kind, v,
                    e.shuffle(v, e.i32(1 << bit, loc), NVVM::ShflKind::bfly, loc), loc);
  // 3. Warps along the axis, through shared memory.
  SmallVector<unsigned> warpBits;
  for (auto [bit, basis] : llvm::enumerate(d.warps))
    if (basis[axis] != 0)
      warpBits.push_back(bit);
  if (!warpBits.empty()) {
    int64_t slices = 1ll << warpBits.size(), perSlice = groups.size();
    // Slot of each partial: [warp position along the axis][lane-level id].
    Value k = e.i32(0, loc);
    for (auto [j, bit] : llvm::enumerate(warpBits)) {
      Value set = LLVM::AndOp::create(
          b, loc, LLVM::LShrOp::create(b, loc, e.warp(), e.i32(bit, loc)), e.i32(1, loc));
      k = LLVM::OrOp::create(b, loc, k, LLVM::ShlOp::create(b, loc, set, e.i32(j, loc)));
    }
    // The other warp bits and the lane id identify which partials a thread holds.
    unsigned axisMask = 0;
    for (unsigned bit : warpBits)
      axisMask |= 1u << bit;
    Value otherWarp =
        LLVM::AndOp::create(b, loc, e.warp(), e.i32(~int64_t(axisMask), loc));
    int64_t threads = 32 * e.numWarps;
    Value thread = LLVM::AddOp::create(
        b, loc, LLVM::MulOp::create(b, loc, otherWarp, e.i32(32, loc)), e.lane());
    Type stored = type.isInteger(1) ? b.getI8Type() : type;
    int64_t bytes = std::max<int64_t>(1, stored.getIntOrFloatBitWidth() / 8);
    e.shared().reserve(slices * threads * perSlice * bytes);
    e.shared().barrier(loc);
    auto slot = [&](Value slice, unsigned g) {
      Value row = LLVM::AddOp::create(
          b, loc, LLVM::MulOp::create(b, loc, slice, e.i32(threads, loc)), thread);
      return LLVM::AddOp::create(
          b, loc, LLVM::MulOp::create(b, loc, row, e.i32(perSlice, loc)), e.i32(g, loc));
    };
    for (unsigned g = 0; g < perSlice; ++g)
      LLVM::StoreOp::create(b, loc, partial[g],
                            e.shared().address(slot(k, g), stored, 0, loc));
    e.shared().barrier(loc);
    for (unsigned g = 0; g < perSlice; ++g) {
      Value acc;
      for (int64_t s = 0; s < slices; ++s) {
        // Slice s of this thread's warp group: same other-warp bits, axis bits = s.
        Value v = LLVM::LoadOp::create(
            b, loc, stored, e.shared().address(slot(e.i32(s, loc), g), stored, 0, loc));
        acc = acc ? combine(e, kind, acc, v, loc) : v;
      }
      partial[g] = acc;
    }
  }
  // Map groups onto the result's registers (the slice layout's order).
  if (!isa<RankedTensorType>(reduce.getResult().getType())) {
    e.map(reduce.getResult(), {partial[0]});
    return success();
  }
  const Distributed &result =
      e.layout(cast<RankedTensorType>(reduce.getResult().getType()));
  Regs out;
  for (const Index &offset : result.regs) {
    auto it = llvm::find(groups, offset);
    if (it == groups.end())
      return op->emitOpError(
          "reduction result layout does not match its operand's slice");
    out.push_back(partial[it - groups.begin()]);
  }
  e.map(reduce.getResult(), std::move(out));
  return success();
}

LogicalResult emitScan(Emitter &e, Operation *op) {
  auto scan = cast<tile::ScanOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  int64_t axis = scan.getAxis();
  auto type = scan.getSrc().getType();
  const Distributed &d = e.layout(type);
  Type element = e.elementType(type);
  Regs cur = e.regs(scan.getSrc());
  Value identity = e.zero(element, loc);
  if (scan.getKind() != tile::ReduceKind::Sum)
    return op->emitOpError("only sum scans have a GPU lowering");
  // The axis held by lanes 0 .. n-1 of every warp, one element each (lane l
  // at axis index l mod n): the same steps by shfl.sync.up, no shared memory.
  const int64_t n = type.getDimSize(axis);
  bool inLanes = n <= 32 &&
                 llvm::all_of(d.regs, [&](const Index &i) { return i[axis] == 0; }) &&
                 llvm::all_of(d.warps, [&](const Index &i) { return i[axis] == 0; });
  for (auto [bit, basis] : llvm::enumerate(d.lanes)) {
    bool below = (int64_t(1) << bit) < n;
    for (auto [dim, v] : llvm::enumerate(basis))
      if (below ? v != (int64_t(dim) == axis ? int64_t(1) << bit : 0)
                : int64_t(dim) == axis && v)
        inLanes = false;
  }
  if (inLanes) {
    Value position = LLVM::AndOp::create(b, loc, e.lane(), e.i32(n - 1, loc));
    for (int64_t step = 1; step < n; step *= 2) {
      Value valid = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::sge, position,
                                         e.i32(step, loc));
      for (Value &v : cur) {
        Value up = e.shuffle(v, e.i32(step, loc), NVVM::ShflKind::up, loc);
        v = combine(e, tile::ReduceKind::Sum, v,
                    LLVM::SelectOp::create(b, loc, valid, up, identity), loc);
      }
    }
    e.map(scan.getResult(), std::move(cur));
    return success();
  }
  for (int64_t step = 1; step < n; step *= 2) {
    e.shared().barrier(loc);
    e.shared().store(d, cur, element, 0, loc);
    e.shared().barrier(loc);
    Regs next;
    for (unsigned r = 0; r < d.numRegs(); ++r) {
      Regs index = e.elementIndex(d, r, loc);
      Value back = LLVM::SubOp::create(b, loc, index[axis], e.i32(step, loc));
      Value valid =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::sge, back, e.i32(0, loc));
      index[axis] = LLVM::SelectOp::create(b, loc, valid, back, e.i32(0, loc));
      Value linear = e.linearize(index, d.shape, loc);
      Type stored = element.isInteger(1) ? b.getI8Type() : element;
      Value v = LLVM::LoadOp::create(b, loc, stored,
                                     e.shared().address(linear, stored, 0, loc));
      v = LLVM::SelectOp::create(b, loc, valid, v, identity);
      next.push_back(combine(e, tile::ReduceKind::Sum, cur[r], v, loc));
    }
    cur = std::move(next);
  }
  e.map(scan.getResult(), std::move(cur));
  return success();
}

} // namespace

void populateReduceEmitters(EmitterTable &table) {
  table.add<tile::ReduceOp>(emitReduce);
  table.add<tile::ScanOp>(emitScan);
}

} // namespace tilejit::lowering
