// Reduction and scan family. A reduction combines in-thread registers first,
// then lanes with butterfly shuffles, then warps through shared memory; its
// result takes the slice layout, held by every thread that needs it. A scan
// runs Hillis-Steele steps through shared memory (log2(n) steps).
#include "Emitter.h"

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

/// shfl.sync.bfly of any scalar up to 64 bits (moved as one or two i32).
Value shuffleXor(Emitter &e, Value v, int32_t laneMask, Location loc) {
  OpBuilder &b = e.b;
  Type t = v.getType(), i32 = b.getI32Type();
  unsigned bits = t.getIntOrFloatBitWidth();
  auto shfl = [&](Value x) {
    return NVVM::ShflOp::create(b, loc, x.getType(), e.i32(-1, loc), x, e.i32(laneMask, loc),
                                e.i32(0x1f, loc), NVVM::ShflKind::bfly, UnitAttr())
        .getResult();
  };
  if (t.isF32() || t.isInteger(32))
    return shfl(v);
  if (bits == 64) {
    Value word = LLVM::BitcastOp::create(b, loc, VectorType::get({2}, i32), v);
    Value lo = shfl(LLVM::ExtractElementOp::create(b, loc, word, e.i32(0, loc)));
    Value hi = shfl(LLVM::ExtractElementOp::create(b, loc, word, e.i32(1, loc)));
    Value vec = LLVM::UndefOp::create(b, loc, VectorType::get({2}, i32));
    vec = LLVM::InsertElementOp::create(b, loc, vec, lo, e.i32(0, loc));
    vec = LLVM::InsertElementOp::create(b, loc, vec, hi, e.i32(1, loc));
    return LLVM::BitcastOp::create(b, loc, t, vec);
  }
  Type narrow = b.getIntegerType(bits);
  Value asInt = isa<FloatType>(t) ? Value(LLVM::BitcastOp::create(b, loc, narrow, v)) : v;
  Value moved = shfl(LLVM::ZExtOp::create(b, loc, i32, asInt));
  Value back = LLVM::TruncOp::create(b, loc, narrow, moved);
  return isa<FloatType>(t) ? Value(LLVM::BitcastOp::create(b, loc, t, back)) : back;
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
        v = combine(e, kind, v, shuffleXor(e, v, 1 << bit, loc), loc);
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
    Value otherWarp = LLVM::AndOp::create(b, loc, e.warp(), e.i32(~axisMask, loc));
    int64_t threads = 32 * e.numWarps;
    Value thread = LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, otherWarp, e.i32(32, loc)),
                                       e.lane());
    Type stored = type.isInteger(1) ? b.getI8Type() : type;
    int64_t bytes = std::max<int64_t>(1, stored.getIntOrFloatBitWidth() / 8);
    e.reserveShared(slices * threads * perSlice * bytes);
    e.barrier(loc);
    auto slot = [&](Value slice, unsigned g) {
      Value row = LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, slice, e.i32(threads, loc)),
                                      thread);
      return LLVM::AddOp::create(b, loc, LLVM::MulOp::create(b, loc, row, e.i32(perSlice, loc)),
                                 e.i32(g, loc));
    };
    for (unsigned g = 0; g < perSlice; ++g)
      LLVM::StoreOp::create(b, loc, partial[g], e.sharedAddress(slot(k, g), stored, 0, loc));
    e.barrier(loc);
    for (unsigned g = 0; g < perSlice; ++g) {
      Value acc;
      for (int64_t s = 0; s < slices; ++s) {
        // Slice s of this thread's warp group: same other-warp bits, axis bits = s.
        Value v = LLVM::LoadOp::create(b, loc, stored, e.sharedAddress(slot(e.i32(s, loc), g), stored, 0, loc));
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
  const Distributed &result = e.layout(cast<RankedTensorType>(reduce.getResult().getType()));
  Regs out;
  for (const Index &offset : result.regs) {
    auto it = llvm::find(groups, offset);
    if (it == groups.end())
      return op->emitOpError("reduction result layout does not match its operand's slice");
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
  for (int64_t step = 1; step < type.getDimSize(axis); step *= 2) {
    e.barrier(loc);
    e.storeShared(d, cur, element, 0, loc);
    e.barrier(loc);
    Regs next;
    for (unsigned r = 0; r < d.numRegs(); ++r) {
      Regs index = e.elementIndex(d, r, loc);
      Value back = LLVM::SubOp::create(b, loc, index[axis], e.i32(step, loc));
      Value valid = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::sge, back, e.i32(0, loc));
      index[axis] = LLVM::SelectOp::create(b, loc, valid, back, e.i32(0, loc));
      Value linear = e.linearize(index, d.shape, loc);
      Type stored = element.isInteger(1) ? b.getI8Type() : element;
      Value v = LLVM::LoadOp::create(b, loc, stored, e.sharedAddress(linear, stored, 0, loc));
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
  table["tile.reduce"] = emitReduce;
  table["tile.scan"] = emitScan;
}

} // namespace tilejit::lowering
