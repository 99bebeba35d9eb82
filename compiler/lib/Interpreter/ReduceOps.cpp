// tile.reduce, tile.scan and tile.dot. Floats accumulate in f32 in index
// order along the axis (dot: in k order, starting from acc) and are rounded
// to the element type once at the end (scan: each output, the carry staying
// f32); products of bf16 / f16 / e4m3 operands are exact in f32. Float max
// and min propagate NaN (arith.maximumf / minimumf); integer sums wrap and
// integer max / min compare signed.
#include "InterpreterImpl.h"

#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include <cmath>

using namespace mlir;

namespace tilejit::interp::detail {
namespace {

float combine(tile::ReduceKind kind, float a, float b) {
  if (kind == tile::ReduceKind::Sum)
    return a + b;
  if (std::isnan(a) || std::isnan(b))
    return NAN;
  if (a == b) // -0 < +0
    return (kind == tile::ReduceKind::Max) == bool(std::signbit(a)) ? b : a;
  return (kind == tile::ReduceKind::Max) == (a > b) ? a : b;
}

int64_t combine(tile::ReduceKind kind, int64_t a, int64_t b) {
  if (kind == tile::ReduceKind::Sum)
    return int64_t(uint64_t(a) + uint64_t(b));
  return (kind == tile::ReduceKind::Max) == (a > b) ? a : b;
}

/// The source tile as [outer, length, inner] around `axis`.
struct AxisSplit {
  int64_t outer = 1, length = 1, inner = 1;
};

AxisSplit splitAround(ArrayRef<int64_t> shape, int64_t axis) {
  AxisSplit s;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (int64_t(d) < axis)
      s.outer *= size;
    else if (int64_t(d) == axis)
      s.length = size;
    else
      s.inner *= size;
  }
  return s;
}

/// Reduce (`scan` false) or inclusive scan along the axis for one storage
/// type; the inner loop runs over contiguous elements so it vectorizes.
template <typename T>
void reduceOrScan(const T *in, T *out, AxisSplit s, tile::ReduceKind kind, bool scan) {
  for (int64_t o = 0; o < s.outer; ++o) {
    const T *src = in + o * s.length * s.inner;
    T *acc = out + o * (scan ? s.length : 1) * s.inner;
    std::copy(src, src + s.inner, acc);
    for (int64_t a = 1; a < s.length; ++a) {
      T *dst = scan ? acc + s.inner : acc;
      const T *next = src + a * s.inner;
      for (int64_t i = 0; i < s.inner; ++i)
        dst[i] = combine(kind, acc[i], next[i]);
      acc = dst;
    }
  }
}

template <bool scan> Expected<Instr> compileReduceOrScan(Operation *op, Compiler &c) {
  Value source = op->getOperand(0);
  unsigned src = c.slotOf(source);
  auto kind = op->getAttrOfType<tile::ReduceKindAttr>("kind").getValue();
  int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  const ValueType &srcType = c.typeOf(source);
  AxisSplit split = splitAround(srcType.shape, axis);
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(op->getResult(0));
  bool isFloat = type.isFloat();
  DType element = type.element;
  unsigned width = type.bitWidth();
  int64_t n = type.numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    Slot &from = frame.slots[src], &to = frame.slots[dst];
    if (isFloat) {
      to.f.resize(n);
      reduceOrScan(from.f.data(), to.f.data(), split, kind, scan);
      roundInPlace(element, to.f.data(), n);
    } else {
      to.i.resize(n);
      reduceOrScan(from.i.data(), to.i.data(), split, kind, scan);
      for (int64_t &v : to.i)
        v = signExtend(uint64_t(v), width);
    }
    return llvm::Error::success();
  });
}

Expected<Instr> compileDot(Operation *op, Compiler &c) {
  auto dot = cast<tile::DotOp>(op);
  unsigned a = c.slotOf(dot.getA()), b = c.slotOf(dot.getB()),
           acc = c.slotOf(dot.getAcc());
  int64_t m = dot.getA().getType().getDimSize(0), k = dot.getA().getType().getDimSize(1);
  int64_t n = dot.getB().getType().getDimSize(1);
  Expected<unsigned> out = c.define(dot.getResult(), op);
  if (!out)
    return out.takeError();
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const float *x = frame.slots[a].f.data(), *y = frame.slots[b].f.data();
    std::vector<float> &to = frame.slots[dst].f;
    to = frame.slots[acc].f;
    for (int64_t row = 0; row < m; ++row) {
      float *result = to.data() + row * n;
      for (int64_t inner = 0; inner < k; ++inner) {
        float scale = x[row * k + inner];
        const float *bRow = y + inner * n;
        for (int64_t col = 0; col < n; ++col)
          result[col] += scale * bRow[col];
      }
    }
    return llvm::Error::success();
  });
}

} // namespace

void registerReduceOps(OpTable &table) {
  table.add<tile::ReduceOp>(compileReduceOrScan<false>);
  table.add<tile::ScanOp>(compileReduceOrScan<true>);
  table.add<tile::DotOp>(compileDot);
}

} // namespace tilejit::interp::detail
