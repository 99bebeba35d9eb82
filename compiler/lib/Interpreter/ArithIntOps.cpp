// Elementwise integer ops of `arith` (and math.absi) on tiles and scalars of
// any width up to 64. Values are kept sign-extended from their width, results
// wrap (two's complement). Where arith leaves a result undefined nothing
// traps: division by zero yields 0, and shifts by the width or more yield 0
// (or the sign for shrsi), as PTX's clamped shifts do.
#include "InterpreterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace tilejit::interp::detail {
namespace {

/// An integer op on operands of width `w`, returning the (not yet
/// normalized) result bits.
using IntBinary = uint64_t (*)(int64_t a, int64_t b, unsigned w);

template <IntBinary Fn> Expected<Instr> compileIntBinary(Operation *op, Compiler &c) {
  unsigned a = c.slotOf(op->getOperand(0)), b = c.slotOf(op->getOperand(1));
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(op->getResult(0));
  unsigned w = type.bitWidth();
  int64_t n = type.numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const int64_t *x = frame.slots[a].i.data(), *y = frame.slots[b].i.data();
    std::vector<int64_t> &to = frame.slots[dst].i;
    to.resize(n);
    for (int64_t k = 0; k < n; ++k)
      to[k] = signExtend(Fn(x[k], y[k], w), w);
    return llvm::Error::success();
  });
}

uint64_t zext(int64_t v, unsigned w) { return zeroExtend(v, w); }

uint64_t addInt(int64_t a, int64_t b, unsigned) { return uint64_t(a) + uint64_t(b); }
uint64_t subInt(int64_t a, int64_t b, unsigned) { return uint64_t(a) - uint64_t(b); }
uint64_t mulInt(int64_t a, int64_t b, unsigned) { return uint64_t(a) * uint64_t(b); }
uint64_t andInt(int64_t a, int64_t b, unsigned) { return uint64_t(a & b); }
uint64_t orInt(int64_t a, int64_t b, unsigned) { return uint64_t(a | b); }
uint64_t xorInt(int64_t a, int64_t b, unsigned) { return uint64_t(a ^ b); }
uint64_t maxSigned(int64_t a, int64_t b, unsigned) { return uint64_t(std::max(a, b)); }
uint64_t minSigned(int64_t a, int64_t b, unsigned) { return uint64_t(std::min(a, b)); }
uint64_t maxUnsigned(int64_t a, int64_t b, unsigned w) {
  return std::max(zext(a, w), zext(b, w));
}
uint64_t minUnsigned(int64_t a, int64_t b, unsigned w) {
  return std::min(zext(a, w), zext(b, w));
}
uint64_t divSigned(int64_t a, int64_t b, unsigned) {
  if (b == 0)
    return 0;
  if (b == -1) // avoids INT64_MIN / -1; negation wraps like the GPU
    return 0 - uint64_t(a);
  return uint64_t(a / b);
}
uint64_t remSigned(int64_t a, int64_t b, unsigned) {
  return b == 0 || b == -1 ? 0 : uint64_t(a % b);
}
uint64_t floorDivSigned(int64_t a, int64_t b, unsigned w) {
  if (b == 0 || b == -1)
    return divSigned(a, b, w);
  int64_t q = a / b;
  return uint64_t((a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q);
}
uint64_t ceilDivSigned(int64_t a, int64_t b, unsigned w) {
  if (b == 0 || b == -1)
    return divSigned(a, b, w);
  int64_t q = a / b;
  return uint64_t((a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q);
}
uint64_t divUnsigned(int64_t a, int64_t b, unsigned w) {
  return zext(b, w) == 0 ? 0 : zext(a, w) / zext(b, w);
}
uint64_t remUnsigned(int64_t a, int64_t b, unsigned w) {
  return zext(b, w) == 0 ? 0 : zext(a, w) % zext(b, w);
}
uint64_t ceilDivUnsigned(int64_t a, int64_t b, unsigned w) {
  uint64_t x = zext(a, w), y = zext(b, w);
  return y == 0 ? 0 : x / y + (x % y != 0);
}
uint64_t shiftLeft(int64_t a, int64_t b, unsigned w) {
  return zext(b, w) >= w ? 0 : uint64_t(a) << zext(b, w);
}
uint64_t shiftRightUnsigned(int64_t a, int64_t b, unsigned w) {
  return zext(b, w) >= w ? 0 : zext(a, w) >> zext(b, w);
}
uint64_t shiftRightSigned(int64_t a, int64_t b, unsigned w) {
  return uint64_t(a >> std::min<uint64_t>(zext(b, w), w - 1));
}

using IntCompare = bool (*)(int64_t a, int64_t b, unsigned w);

Expected<Instr> compileCmpI(Operation *op, Compiler &c) {
  using P = arith::CmpIPredicate;
  IntCompare cmp = nullptr;
  switch (cast<arith::CmpIOp>(op).getPredicate()) {
  case P::eq:
    cmp = [](int64_t a, int64_t b, unsigned) { return a == b; };
    break;
  case P::ne:
    cmp = [](int64_t a, int64_t b, unsigned) { return a != b; };
    break;
  case P::slt:
    cmp = [](int64_t a, int64_t b, unsigned) { return a < b; };
    break;
  case P::sle:
    cmp = [](int64_t a, int64_t b, unsigned) { return a <= b; };
    break;
  case P::sgt:
    cmp = [](int64_t a, int64_t b, unsigned) { return a > b; };
    break;
  case P::sge:
    cmp = [](int64_t a, int64_t b, unsigned) { return a >= b; };
    break;
  case P::ult:
    cmp = [](int64_t a, int64_t b, unsigned w) { return zext(a, w) < zext(b, w); };
    break;
  case P::ule:
    cmp = [](int64_t a, int64_t b, unsigned w) { return zext(a, w) <= zext(b, w); };
    break;
  case P::ugt:
    cmp = [](int64_t a, int64_t b, unsigned w) { return zext(a, w) > zext(b, w); };
    break;
  case P::uge:
    cmp = [](int64_t a, int64_t b, unsigned w) { return zext(a, w) >= zext(b, w); };
    break;
  }
  unsigned a = c.slotOf(op->getOperand(0)), b = c.slotOf(op->getOperand(1));
  unsigned w = c.typeOf(op->getOperand(0)).bitWidth();
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  int64_t n = c.typeOf(op->getResult(0)).numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const int64_t *x = frame.slots[a].i.data(), *y = frame.slots[b].i.data();
    std::vector<int64_t> &to = frame.slots[dst].i;
    to.resize(n);
    for (int64_t k = 0; k < n; ++k)
      to[k] = cmp(x[k], y[k], w) ? -1 : 0;
    return llvm::Error::success();
  });
}

Expected<Instr> compileAbsI(Operation *op, Compiler &c) {
  unsigned a = c.slotOf(op->getOperand(0));
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(op->getResult(0));
  unsigned w = type.bitWidth();
  int64_t n = type.numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const int64_t *x = frame.slots[a].i.data();
    std::vector<int64_t> &to = frame.slots[dst].i;
    to.resize(n);
    for (int64_t k = 0; k < n; ++k)
      to[k] = signExtend(x[k] < 0 ? 0 - uint64_t(x[k]) : uint64_t(x[k]), w);
    return llvm::Error::success();
  });
}

} // namespace

void registerArithIntOps(OpTable &table) {
  table.add<arith::AddIOp>(compileIntBinary<addInt>);
  table.add<arith::SubIOp>(compileIntBinary<subInt>);
  table.add<arith::MulIOp>(compileIntBinary<mulInt>);
  table.add<arith::DivSIOp>(compileIntBinary<divSigned>);
  table.add<arith::DivUIOp>(compileIntBinary<divUnsigned>);
  table.add<arith::RemSIOp>(compileIntBinary<remSigned>);
  table.add<arith::RemUIOp>(compileIntBinary<remUnsigned>);
  table.add<arith::FloorDivSIOp>(compileIntBinary<floorDivSigned>);
  table.add<arith::CeilDivSIOp>(compileIntBinary<ceilDivSigned>);
  table.add<arith::CeilDivUIOp>(compileIntBinary<ceilDivUnsigned>);
  table.add<arith::AndIOp>(compileIntBinary<andInt>);
  table.add<arith::OrIOp>(compileIntBinary<orInt>);
  table.add<arith::XOrIOp>(compileIntBinary<xorInt>);
  table.add<arith::ShLIOp>(compileIntBinary<shiftLeft>);
  table.add<arith::ShRUIOp>(compileIntBinary<shiftRightUnsigned>);
  table.add<arith::ShRSIOp>(compileIntBinary<shiftRightSigned>);
  table.add<arith::MaxSIOp>(compileIntBinary<maxSigned>);
  table.add<arith::MinSIOp>(compileIntBinary<minSigned>);
  table.add<arith::MaxUIOp>(compileIntBinary<maxUnsigned>);
  table.add<arith::MinUIOp>(compileIntBinary<minUnsigned>);
  table.add<arith::CmpIOp>(compileCmpI);
  table.add<math::AbsIOp>(compileAbsI);
}

} // namespace tilejit::interp::detail
