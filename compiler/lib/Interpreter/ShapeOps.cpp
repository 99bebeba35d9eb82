// Interpreter ops that create or move tile elements without arithmetic:
// arith.constant, arith.select, tile.splat / arange / broadcast / expand_dims /
// reshape / transpose, and the grid queries program_id / num_programs.
#include "InterpreterImpl.h"

#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/APFloat.h"

using namespace mlir;

namespace tilejit::interp::detail {
namespace {

/// Row-major strides of `shape`, in elements.
SmallVector<int64_t, 4> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t, 4> strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// out[k] = in[sum_d index_d(k) * inStrides[d]], k running over `shape` in
/// row-major order: the one loop behind broadcast and transpose.
template <typename T>
void gather(const T *in, T *out, ArrayRef<int64_t> shape, ArrayRef<int64_t> inStrides) {
  int64_t rank = shape.size();
  int64_t inner = shape.back(), innerStride = inStrides.back();
  SmallVector<int64_t, 4> index(rank, 0);
  int64_t base = 0;
  for (;;) {
    for (int64_t j = 0; j < inner; ++j)
      *out++ = in[base + j * innerStride];
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      base += inStrides[d];
      if (++index[d] < shape[d])
        break;
      base -= inStrides[d] * shape[d];
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// A gather from the operand into the result, whichever storage they use.
Instr gatherInstr(unsigned src, unsigned dst, bool isFloat, SmallVector<int64_t, 4> shape,
                  SmallVector<int64_t, 4> inStrides, int64_t count) {
  return [=](Frame &frame) {
    auto apply = [&](auto &from, auto &to) {
      to.resize(count);
      gather(from.data(), to.data(), shape, inStrides);
    };
    if (isFloat)
      apply(frame.slots[src].f, frame.slots[dst].f);
    else
      apply(frame.slots[src].i, frame.slots[dst].i);
    return llvm::Error::success();
  };
}

Expected<Instr> compileConstant(Operation *op, Compiler &c) {
  Attribute value = cast<arith::ConstantOp>(op).getValue();
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(op->getResult(0));
  auto toFloat = [](APFloat v) {
    bool lost;
    v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    return v.convertToFloat();
  };
  auto toInt = [&](const APInt &v) {
    return signExtend(v.getZExtValue(), type.bitWidth());
  };
  std::vector<float> floats;
  std::vector<int64_t> ints;
  if (auto f = dyn_cast<FloatAttr>(value)) {
    floats.push_back(toFloat(f.getValue()));
  } else if (auto i = dyn_cast<IntegerAttr>(value)) {
    ints.push_back(toInt(i.getValue()));
  } else if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (type.isFloat())
      for (const APFloat &v : dense.getValues<APFloat>())
        floats.push_back(toFloat(v));
    else
      for (const APInt &v : dense.getValues<APInt>())
        ints.push_back(toInt(v)); // a splat yields its value numElements times
  } else {
    return opError(op, "has a constant the interpreter does not support");
  }
  unsigned slot = *out;
  // Nothing else writes a constant's slot: fill it once per run.
  return Instr([slot, floats = std::move(floats), ints = std::move(ints)](Frame &frame) {
    Slot &s = frame.slots[slot];
    if (s.f.empty() && s.i.empty()) {
      s.f = floats;
      s.i = ints;
    }
    return llvm::Error::success();
  });
}

Expected<Instr> compileSelect(Operation *op, Compiler &c) {
  auto select = cast<arith::SelectOp>(op);
  unsigned cond = c.slotOf(select.getCondition());
  unsigned a = c.slotOf(select.getTrueValue()), b = c.slotOf(select.getFalseValue());
  Expected<unsigned> out = c.define(select.getResult(), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(select.getResult());
  if (type.form == ValueForm::View)
    return opError(op, "cannot select between views");
  bool isFloat = type.isFloat();
  bool scalarCond = !c.typeOf(select.getCondition()).isTile();
  int64_t n = type.numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const std::vector<int64_t> &mask = frame.slots[cond].i;
    auto apply = [&](const auto &x, const auto &y, auto &to) {
      to.resize(n);
      for (int64_t k = 0; k < n; ++k)
        to[k] = mask[scalarCond ? 0 : k] ? x[k] : y[k];
    };
    Slot &A = frame.slots[a], &B = frame.slots[b], &D = frame.slots[dst];
    if (isFloat)
      apply(A.f, B.f, D.f);
    else
      apply(A.i, B.i, D.i);
    return llvm::Error::success();
  });
}

Expected<Instr> compileSplat(Operation *op, Compiler &c) {
  auto splat = cast<tile::SplatOp>(op);
  unsigned src = c.slotOf(splat.getSrc());
  Expected<unsigned> out = c.define(splat.getResult(), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(splat.getResult());
  bool isFloat = type.isFloat();
  int64_t n = type.numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    Slot &from = frame.slots[src], &to = frame.slots[dst];
    if (isFloat)
      to.f.assign(n, from.f[0]);
    else
      to.i.assign(n, from.i[0]);
    return llvm::Error::success();
  });
}

Expected<Instr> compileArange(Operation *op, Compiler &c) {
  auto arange = cast<tile::ArangeOp>(op);
  Expected<unsigned> out = c.define(arange.getResult(), op);
  if (!out)
    return out.takeError();
  int64_t start = arange.getStart(), end = arange.getEnd();
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    std::vector<int64_t> &to = frame.slots[dst].i;
    to.resize(end - start);
    for (int64_t k = start; k < end; ++k)
      to[k - start] = k;
    return llvm::Error::success();
  });
}

Expected<Instr> compileBroadcast(Operation *op, Compiler &c) {
  auto broadcast = cast<tile::BroadcastOp>(op);
  unsigned src = c.slotOf(broadcast.getSrc());
  Expected<unsigned> out = c.define(broadcast.getResult(), op);
  if (!out)
    return out.takeError();
  ArrayRef<int64_t> srcShape = broadcast.getSrc().getType().getShape();
  const ValueType &type = c.typeOf(broadcast.getResult());
  SmallVector<int64_t, 4> strides = rowMajorStrides(srcShape);
  for (auto [d, size] : llvm::enumerate(srcShape))
    if (size == 1)
      strides[d] = 0;
  return gatherInstr(src, *out, type.isFloat(), type.shape, strides, type.numElements);
}

Expected<Instr> compileTranspose(Operation *op, Compiler &c) {
  auto transpose = cast<tile::TransposeOp>(op);
  unsigned src = c.slotOf(transpose.getSrc());
  Expected<unsigned> out = c.define(transpose.getResult(), op);
  if (!out)
    return out.takeError();
  SmallVector<int64_t, 4> srcStrides =
      rowMajorStrides(transpose.getSrc().getType().getShape());
  SmallVector<int64_t, 4> strides;
  for (int32_t d : transpose.getOrder())
    strides.push_back(srcStrides[d]);
  const ValueType &type = c.typeOf(transpose.getResult());
  return gatherInstr(src, *out, type.isFloat(), type.shape, strides, type.numElements);
}

/// expand_dims, reshape and convert_layout keep the row-major element order:
/// the result shares its operand's storage.
Expected<Instr> compileReinterpret(Operation *op, Compiler &c) {
  if (llvm::Error err = c.alias(op->getResult(0), c.slotOf(op->getOperand(0)), op))
    return std::move(err);
  return Instr();
}

template <bool count> Expected<Instr> compileGridQuery(Operation *op, Compiler &c) {
  int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const Grid &source = count ? frame.grid : frame.programId;
    frame.slots[dst].i.assign(1, signExtend(uint64_t(source[axis]), 32));
    return llvm::Error::success();
  });
}

} // namespace

void registerShapeOps(OpTable &table) {
  table.add<arith::ConstantOp>(compileConstant);
  table.add<arith::SelectOp>(compileSelect);
  table.add<tile::SplatOp>(compileSplat);
  table.add<tile::ArangeOp>(compileArange);
  table.add<tile::BroadcastOp>(compileBroadcast);
  table.add<tile::TransposeOp>(compileTranspose);
  table.add<tile::ExpandDimsOp>(compileReinterpret);
  table.add<tile::ReshapeOp>(compileReinterpret);
  // Register layouts only matter on the GPU: a layout change is a no-op here.
  table.add<tile::ConvertLayoutOp>(compileReinterpret);
  table.add<tile::ProgramIdOp>(compileGridQuery<false>);
  table.add<tile::NumProgramsOp>(compileGridQuery<true>);
}

} // namespace tilejit::interp::detail
