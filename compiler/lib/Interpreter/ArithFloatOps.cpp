// Elementwise float ops of `arith` and `math` on f32 / f16 / bf16 tiles and
// scalars. Each op computes in f32 (or f64 for transcendental functions) and
// rounds the result back to the element type, nearest even.
#include "InterpreterImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;

namespace tilejit::interp::detail {
namespace {

using Unary = float (*)(float);
using Binary = float (*)(float, float);

/// Float arithmetic needs a format the GPU computes in: e4m3 values exist
/// only to be converted (there is no e4m3 arithmetic unit).
llvm::Error checkComputable(Operation *op, const ValueType &type) {
  if (type.element == DType::F8E4M3)
    return opError(op, "computes on f8E4M3FN, which has no arithmetic on the GPU; "
                       "convert to f32 first");
  return llvm::Error::success();
}

/// One elementwise instruction over `operands` (all of the result's shape).
template <typename Fn>
Expected<Instr> floatElementwise(Operation *op, Compiler &c, Fn fn) {
  SmallVector<unsigned, 3> in;
  for (Value v : op->getOperands())
    in.push_back(c.slotOf(v));
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  const ValueType &type = c.typeOf(op->getResult(0));
  if (llvm::Error err = checkComputable(op, type))
    return std::move(err);
  DType element = type.element;
  int64_t n = type.numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    std::vector<float> &to = frame.slots[dst].f;
    to.resize(n);
    fn(frame, in, to.data(), n);
    roundInPlace(element, to.data(), n);
    return llvm::Error::success();
  });
}

template <Unary Fn> Expected<Instr> compileUnary(Operation *op, Compiler &c) {
  return floatElementwise(op, c,
                          [](Frame &frame, ArrayRef<unsigned> in, float *to, int64_t n) {
                            const float *x = frame.slots[in[0]].f.data();
                            for (int64_t k = 0; k < n; ++k)
                              to[k] = Fn(x[k]);
                          });
}

template <Binary Fn> Expected<Instr> compileBinary(Operation *op, Compiler &c) {
  return floatElementwise(
      op, c, [](Frame &frame, ArrayRef<unsigned> in, float *to, int64_t n) {
        const float *x = frame.slots[in[0]].f.data(), *y = frame.slots[in[1]].f.data();
        for (int64_t k = 0; k < n; ++k)
          to[k] = Fn(x[k], y[k]);
      });
}

Expected<Instr> compileFma(Operation *op, Compiler &c) {
  return floatElementwise(
      op, c, [](Frame &frame, ArrayRef<unsigned> in, float *to, int64_t n) {
        const float *x = frame.slots[in[0]].f.data(), *y = frame.slots[in[1]].f.data(),
                    *z = frame.slots[in[2]].f.data();
        for (int64_t k = 0; k < n; ++k)
          to[k] = std::fma(x[k], y[k], z[k]);
      });
}

float add(float a, float b) { return a + b; }
float sub(float a, float b) { return a - b; }
float mul(float a, float b) { return a * b; }
float div(float a, float b) { return a / b; }
float rem(float a, float b) { return std::fmod(a, b); }
float copySign(float a, float b) { return std::copysign(a, b); }
float neg(float a) { return -a; }
float absF(float a) { return std::fabs(a); }
float ceilF(float a) { return std::ceil(a); }
float floorF(float a) { return std::floor(a); }
float truncF(float a) { return std::trunc(a); }
bool isFinite(float a) { return std::isfinite(a); }
bool isInf(float a) { return std::isinf(a); }
bool isNaN(float a) { return std::isnan(a); }

// IEEE 754-2019 maximum/minimum (NaN propagates, -0 < +0) and maximumNumber /
// minimumNumber (a NaN operand is ignored), as arith specifies them.
float maximum(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return NAN;
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
float minimum(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return NAN;
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
float maxNum(float a, float b) {
  return std::isnan(a) ? b : std::isnan(b) ? a : maximum(a, b);
}
float minNum(float a, float b) {
  return std::isnan(a) ? b : std::isnan(b) ? a : minimum(a, b);
}

// Transcendental functions are evaluated in f64 and rounded once to f32, so
// the interpreter is within 0.5 ulp (+2^-29 relative) of the exact value.
// The GPU's fast paths are less accurate and tests must budget the
// difference: exp via ex2.approx.ftz.f32 after a multiply by log2(e) is about
// 2 ulp plus |x| * 2^-24 relative from the rounded product; log via
// lg2.approx about 2^-22 absolute near 1; tanh.approx.f32 up to 2^-10.99
// relative; rsqrt.approx about 1 ulp; sqrt (sqrt.rn) is exact like here.
template <double (*Fn)(double)> float viaDouble(float x) { return float(Fn(double(x))); }
double rsqrt(double x) { return 1.0 / std::sqrt(x); }
double roundEven(double x) { return std::nearbyint(x); }
template <double (*Fn)(double, double)> float viaDouble2(float x, float y) {
  return float(Fn(double(x), double(y)));
}

template <typename Pred>
Expected<Instr> compileCompare(Operation *op, Compiler &c, Pred pred) {
  unsigned a = c.slotOf(op->getOperand(0)), b = c.slotOf(op->getOperand(1));
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  int64_t n = c.typeOf(op->getResult(0)).numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const float *x = frame.slots[a].f.data(), *y = frame.slots[b].f.data();
    std::vector<int64_t> &to = frame.slots[dst].i;
    to.resize(n);
    for (int64_t k = 0; k < n; ++k)
      to[k] = pred(x[k], y[k]) ? -1 : 0;
    return llvm::Error::success();
  });
}

Expected<Instr> compileCmpF(Operation *op, Compiler &c) {
  using P = arith::CmpFPredicate;
  using Cmp = bool (*)(float, float);
  auto unordered = [](float a, float b) { return std::isnan(a) || std::isnan(b); };
  Cmp cmp = nullptr;
  switch (cast<arith::CmpFOp>(op).getPredicate()) {
  case P::AlwaysFalse:
    cmp = [](float, float) { return false; };
    break;
  case P::OEQ:
    cmp = [](float a, float b) { return a == b; };
    break;
  case P::OGT:
    cmp = [](float a, float b) { return a > b; };
    break;
  case P::OGE:
    cmp = [](float a, float b) { return a >= b; };
    break;
  case P::OLT:
    cmp = [](float a, float b) { return a < b; };
    break;
  case P::OLE:
    cmp = [](float a, float b) { return a <= b; };
    break;
  case P::ONE:
    cmp = [](float a, float b) { return a < b || a > b; };
    break;
  case P::ORD:
    cmp = [](float a, float b) { return !std::isnan(a) && !std::isnan(b); };
    break;
  case P::UEQ:
    cmp = [](float a, float b) { return !(a < b || a > b); };
    break;
  case P::UGT:
    cmp = [](float a, float b) { return !(a <= b); };
    break;
  case P::UGE:
    cmp = [](float a, float b) { return !(a < b); };
    break;
  case P::ULT:
    cmp = [](float a, float b) { return !(a >= b); };
    break;
  case P::ULE:
    cmp = [](float a, float b) { return !(a > b); };
    break;
  case P::UNE:
    cmp = [](float a, float b) { return a != b; };
    break;
  case P::UNO:
    cmp = unordered;
    break;
  case P::AlwaysTrue:
    cmp = [](float, float) { return true; };
    break;
  }
  return compileCompare(op, c, cmp);
}

template <bool (*Fn)(float)> Expected<Instr> compileClassify(Operation *op, Compiler &c) {
  unsigned a = c.slotOf(op->getOperand(0));
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  int64_t n = c.typeOf(op->getResult(0)).numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const float *x = frame.slots[a].f.data();
    std::vector<int64_t> &to = frame.slots[dst].i;
    to.resize(n);
    for (int64_t k = 0; k < n; ++k)
      to[k] = Fn(x[k]) ? -1 : 0;
    return llvm::Error::success();
  });
}

} // namespace

void registerArithFloatOps(OpTable &table) {
  table.add<arith::AddFOp>(compileBinary<add>);
  table.add<arith::SubFOp>(compileBinary<sub>);
  table.add<arith::MulFOp>(compileBinary<mul>);
  table.add<arith::DivFOp>(compileBinary<div>);
  table.add<arith::RemFOp>(compileBinary<rem>);
  table.add<arith::MaximumFOp>(compileBinary<maximum>);
  table.add<arith::MinimumFOp>(compileBinary<minimum>);
  table.add<arith::MaxNumFOp>(compileBinary<maxNum>);
  table.add<arith::MinNumFOp>(compileBinary<minNum>);
  table.add<arith::NegFOp>(compileUnary<neg>);
  table.add<arith::CmpFOp>(compileCmpF);

  table.add<math::AbsFOp>(compileUnary<absF>);
  table.add<math::CeilOp>(compileUnary<ceilF>);
  table.add<math::CopySignOp>(compileBinary<copySign>);
  table.add<math::CosOp>(compileUnary<viaDouble<std::cos>>);
  table.add<math::ErfOp>(compileUnary<viaDouble<std::erf>>);
  table.add<math::ExpOp>(compileUnary<viaDouble<std::exp>>);
  table.add<math::Exp2Op>(compileUnary<viaDouble<std::exp2>>);
  table.add<math::ExpM1Op>(compileUnary<viaDouble<std::expm1>>);
  table.add<math::FloorOp>(compileUnary<floorF>);
  table.add<math::FmaOp>(compileFma);
  table.add<math::IsFiniteOp>(compileClassify<isFinite>);
  table.add<math::IsInfOp>(compileClassify<isInf>);
  table.add<math::IsNaNOp>(compileClassify<isNaN>);
  table.add<math::LogOp>(compileUnary<viaDouble<std::log>>);
  table.add<math::Log1pOp>(compileUnary<viaDouble<std::log1p>>);
  table.add<math::Log2Op>(compileUnary<viaDouble<std::log2>>);
  table.add<math::PowFOp>(compileBinary<viaDouble2<std::pow>>);
  table.add<math::RoundEvenOp>(compileUnary<viaDouble<roundEven>>);
  table.add<math::RsqrtOp>(compileUnary<viaDouble<rsqrt>>);
  table.add<math::SinOp>(compileUnary<viaDouble<std::sin>>);
  table.add<math::SqrtOp>(compileUnary<viaDouble<std::sqrt>>);
  table.add<math::TanhOp>(compileUnary<viaDouble<std::tanh>>);
  table.add<math::TruncOp>(compileUnary<truncF>);
}

} // namespace tilejit::interp::detail
