// Layout family: convert_layout, broadcast, expand_dims, reshape, transpose.
// Each moves elements by an index map (destination index -> source index).
// When every thread already holds what it needs, registers are just renamed;
// when every warp holds the whole source, one element per lane, lanes
// exchange it by warp shuffles; otherwise the tile goes through shared memory.
#include "Emitter.h"
#include "SharedMemoryEmitter.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "convert-tile-to-llvm"

using namespace mlir;

namespace tilejit::lowering {
namespace {

/// Destination index -> source index, on constants and on run-time values.
struct IndexMap {
  std::function<Index(const Index &)> constant;
  std::function<Regs(ArrayRef<Value>)> values;
  /// The destination dimension that moves along the source's rows (its last
  /// dimension) one element per step, when the map permutes dimensions.
  std::optional<unsigned> alongRows;
  /// Set for the two maps ldmatrix can apply: the identity (false) and the
  /// 2-D transpose (true).
  std::optional<bool> transposes = std::nullopt;
};

/// Where every warp holds the whole source tile, one element per thread and
/// each lane bit selecting one bit of one index, register r of the
/// destination comes from the lane that holds its element by one
/// shfl.sync.idx: no scratch memory, no barrier (a vector spread over lanes
/// that a broadcast or an expand_dims moves into another layout).
std::optional<Regs> shuffleFromLanes(Emitter &e, const Distributed &from,
                                     const Distributed &to, const Regs &in,
                                     const IndexMap &map, Location loc) {
  auto bits = from.laneIndexBits();
  if (bits.empty())
    return std::nullopt;
  OpBuilder &b = e.b;
  Regs out(to.numRegs());
  for (unsigned r = 0; r < to.numRegs(); ++r) {
    auto first = llvm::find(to.regs, to.regs[r]) - to.regs.begin();
    if (unsigned(first) != r) {
      out[r] = out[first];
      continue;
    }
    Regs index = map.values(e.elementIndex(to, r, loc));
    Value lane = e.i32(0, loc);
    for (auto [laneBit, dimBit] : llvm::enumerate(bits)) {
      auto [dim, bit] = dimBit;
      if (dim < 0)
        continue;
      Value set = LLVM::AndOp::create(
          b, loc, LLVM::LShrOp::create(b, loc, index[dim], e.i32(bit, loc)),
          e.i32(1, loc));
      lane = LLVM::OrOp::create(b, loc, lane,
                                LLVM::ShlOp::create(b, loc, set, e.i32(laneBit, loc)));
    }
    out[r] = e.shuffle(in[0], lane, NVVM::ShflKind::idx, loc);
  }
  return out;
}

LogicalResult moveTile(Emitter &e, Value src, Value dst, const IndexMap &map) {
  Location loc = dst.getLoc();
  auto srcType = cast<RankedTensorType>(src.getType());
  auto dstType = cast<RankedTensorType>(dst.getType());
  const Distributed &from = e.layout(srcType), &to = e.layout(dstType);
  Regs &in = e.regs(src);

  // In registers: every lane/warp basis maps onto the source's, and every
  // destination register's element sits in some source register.
  bool inRegisters =
      from.lanes.size() == to.lanes.size() && from.warps.size() == to.warps.size();
  for (size_t b = 0; inRegisters && b < to.lanes.size(); ++b)
    inRegisters = map.constant(to.lanes[b]) == from.lanes[b];
  for (size_t b = 0; inRegisters && b < to.warps.size(); ++b)
    inRegisters = map.constant(to.warps[b]) == from.warps[b];
  Regs out;
  for (unsigned r = 0; inRegisters && r < to.numRegs(); ++r) {
    auto it = llvm::find(from.regs, map.constant(to.regs[r]));
    if (it == from.regs.end())
      inRegisters = false;
    else
      out.push_back(in[it - from.regs.begin()]);
  }
  auto trace = [&](llvm::StringRef how) {
    LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": '" << dst.getDefiningOp()->getName()
                            << "' at " << loc << ": " << how << "\n");
  };
  if (inRegisters) {
    trace("registers renamed");
    e.map(dst, std::move(out));
    return success();
  }
  if (auto shuffled = shuffleFromLanes(e, from, to, in, map, loc)) {
    trace("warp shuffles");
    e.map(dst, std::move(*shuffled));
    return success();
  }
  if (map.transposes)
    if (auto fragments = operandThroughLdmatrix(e, src, dst, *map.transposes)) {
      trace("through shared memory, read by ldmatrix");
      e.map(dst, std::move(*fragments));
      return success();
    }
  trace("through shared memory");
  Type type = e.elementType(srcType);
  const int64_t pad =
      e.shared().rowPad(from, to, type, srcType.getShape(), map.alongRows);
  e.shared().barrier(loc);
  e.shared().store(from, in, type, 0, loc, pad);
  e.shared().barrier(loc);
  e.map(dst, e.shared().load(to, type, srcType.getShape(), map.values, 0, loc,
                             map.alongRows, pad));
  return success();
}

/// A split-K accumulator into `dst`'s layout: every warp group writes its
/// partial sum to its own copy in scratch, then each destination register
/// adds the copies in group order (the same sum on every run).
LogicalResult sumPartials(Emitter &e, Value src, Value dst) {
  Location loc = dst.getLoc();
  auto srcType = cast<RankedTensorType>(src.getType());
  auto dstType = cast<RankedTensorType>(dst.getType());
  auto target = dyn_cast<tile::MmaLayoutAttr>(dstType.getEncoding());
  if (target && target.getWpk() > 1)
    return dst.getDefiningOp()->emitOpError(
        "cannot convert between two split-K accumulator layouts");
  const Distributed &parts = e.partialLayout(srcType), &to = e.layout(dstType);
  Type type = e.elementType(srcType);
  e.shared().barrier(loc);
  e.shared().store(parts, e.regs(src), type, 0, loc);
  e.shared().barrier(loc);
  Regs sum;
  for (int64_t g = 0; g < parts.shape[0]; ++g) {
    Regs part = e.shared().load(
        to, type, parts.shape,
        [&](ArrayRef<Value> index) {
          Regs out{e.i32(g, loc)};
          out.append(index.begin(), index.end());
          return out;
        },
        0, loc, srcType.getRank() - 1);
    if (g == 0) {
      sum = std::move(part);
      continue;
    }
    for (auto [acc, v] : llvm::zip_equal(sum, part))
      acc = LLVM::FAddOp::create(e.b, loc, acc, v);
  }
  e.map(dst, std::move(sum));
  return success();
}

bool isPartial(Type type) {
  auto mma = dyn_cast<tile::MmaLayoutAttr>(cast<RankedTensorType>(type).getEncoding());
  return mma && mma.getWpk() > 1;
}

IndexMap identity(unsigned rank) {
  return {[](const Index &i) { return i; }, [](ArrayRef<Value> v) { return Regs(v); },
          rank ? std::optional<unsigned>(rank - 1) : std::nullopt, false};
}

LogicalResult emitBroadcast(Emitter &e, Operation *op) {
  auto bcast = cast<tile::BroadcastOp>(op);
  ArrayRef<int64_t> shape = bcast.getSrc().getType().getShape();
  Emitter *em = &e;
  Location loc = op->getLoc();
  IndexMap map{[shape](const Index &i) {
                 Index out(i);
                 for (size_t d = 0; d < shape.size(); ++d)
                   if (shape[d] == 1)
                     out[d] = 0;
                 return out;
               },
               [shape, em, loc](ArrayRef<Value> v) {
                 Regs out(v);
                 for (size_t d = 0; d < shape.size(); ++d)
                   if (shape[d] == 1)
                     out[d] = em->i32(0, loc);
                 return out;
               }};
  return moveTile(e, bcast.getSrc(), bcast.getResult(), map);
}

LogicalResult emitExpandDims(Emitter &e, Operation *op) {
  auto expand = cast<tile::ExpandDimsOp>(op);
  int64_t axis = expand.getAxis();
  IndexMap map{[axis](const Index &i) {
                 Index out(i);
                 out.erase(out.begin() + axis);
                 return out;
               },
               [axis](ArrayRef<Value> v) {
                 Regs out(v);
                 out.erase(out.begin() + axis);
                 return out;
               }};
  return moveTile(e, expand.getSrc(), expand.getResult(), map);
}

LogicalResult emitTranspose(Emitter &e, Operation *op) {
  auto transpose = cast<tile::TransposeOp>(op);
  SmallVector<int32_t> order(transpose.getOrder());
  // Destination dim d is source dim order[d].
  std::optional<unsigned> alongRows;
  for (auto [d, source] : llvm::enumerate(order))
    if (size_t(source) + 1 == order.size())
      alongRows = d;
  IndexMap map{[order](const Index &i) {
                 Index out(i.size());
                 for (size_t d = 0; d < order.size(); ++d)
                   out[order[d]] = i[d];
                 return out;
               },
               [order](ArrayRef<Value> v) {
                 Regs out(v.size());
                 for (size_t d = 0; d < order.size(); ++d)
                   out[order[d]] = v[d];
                 return out;
               },
               alongRows,
               order.size() == 2 && order[0] == 1 ? std::optional<bool>(true)
                                                  : std::nullopt};
  return moveTile(e, transpose.getSrc(), transpose.getResult(), map);
}

LogicalResult emitReshape(Emitter &e, Operation *op) {
  auto reshape = cast<tile::ReshapeOp>(op);
  Index from(reshape.getResult().getType().getShape());
  Index to(reshape.getSrc().getType().getShape());
  Emitter *em = &e;
  Location loc = op->getLoc();
  // Row-major position is what a reshape keeps.
  IndexMap map{[from, to](const Index &i) {
                 int64_t linear = 0;
                 for (size_t d = 0; d < from.size(); ++d)
                   linear = linear * from[d] + i[d];
                 Index out(to.size());
                 for (int64_t d = to.size() - 1; d >= 0; --d) {
                   out[d] = linear % to[d];
                   linear /= to[d];
                 }
                 return out;
               },
               [from, to, em, loc](ArrayRef<Value> v) {
                 Value linear = em->linearize(v, from, loc);
                 Regs out(to.size());
                 for (int64_t d = to.size() - 1; d >= 0; --d) {
                   Value size = em->i32(to[d], loc);
                   out[d] = LLVM::URemOp::create(em->b, loc, linear, size);
                   linear = LLVM::UDivOp::create(em->b, loc, linear, size);
                 }
                 return out;
               }};
  return moveTile(e, reshape.getSrc(), reshape.getResult(), map);
}

} // namespace

void populateLayoutEmitters(EmitterTable &table) {
  table.add<tile::ConvertLayoutOp>([](Emitter &e, Operation *op) {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    if (isPartial(op->getOperand(0).getType()))
      return sumPartials(e, op->getOperand(0), op->getResult(0));
    return moveTile(e, op->getOperand(0), op->getResult(0), identity(type.getRank()));
  });
  table.add<tile::BroadcastOp>(emitBroadcast);
  table.add<tile::ExpandDimsOp>(emitExpandDims);
  table.add<tile::ReshapeOp>(emitReshape);
  table.add<tile::TransposeOp>(emitTranspose);
}

} // namespace tilejit::lowering
