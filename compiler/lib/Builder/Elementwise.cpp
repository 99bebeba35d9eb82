// Builder: broadcasting, elementwise arithmetic and math.
#include "BuilderInternal.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;

namespace tilejit {
namespace detail {

Kernel *kernelOf(std::initializer_list<const Operand *> operands) {
  Kernel *k = nullptr;
  for (const Operand *x : operands) {
    if (x->number)
      continue;
    if (!x->value.valid())
      return nullptr;
    k = x->value.kernel();
  }
  return k ? k : Kernel::current();
}

Shape shapeOf(Type t) {
  if (auto tensor = dyn_cast<RankedTensorType>(t))
    return Shape(tensor.getShape());
  return {};
}

std::string describe(mlir::Value v) { return tile::describeType(v.getType()); }

mlir::Value materialize(Kernel &k, const Operand &x, Type type) {
  if (!x.number)
    return x.value.raw();
  Location loc = k.location(x.loc);
  Type element = getElementTypeOrSelf(type);
  TypedAttr attr;
  if (auto ft = dyn_cast<FloatType>(element)) {
    llvm::APFloat value(*x.number);
    bool losesInfo;
    value.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    attr = FloatAttr::get(ft, value);
  } else {
    attr = IntegerAttr::get(element, exactInteger(k, x, element));
  }
  return arith::ConstantOp::create(k.builder(), loc, attr);
}

int64_t exactInteger(Kernel &k, const Operand &x, Type element) {
  std::optional<int64_t> value;
  if (x.isInteger)
    value = x.integer;
  else if (std::isfinite(*x.number) && *x.number == std::trunc(*x.number) &&
           std::fabs(*x.number) < 0x1p63)
    value = int64_t(*x.number);
  unsigned width = element.getIntOrFloatBitWidth();
  // Signed range; i1 also takes 1 (true).
  int64_t lo = width >= 64 ? INT64_MIN : -(int64_t(1) << (width - 1));
  int64_t hi = width >= 64 ? INT64_MAX : width == 1 ? 1 : (int64_t(1) << (width - 1)) - 1;
  if (value && *value >= lo && *value <= hi)
    return *value;
  std::string text = x.isInteger ? std::to_string(x.integer) : std::to_string(*x.number);
  k.fail(x.loc, "the number " + text + " does not fit " + tile::describeType(element) +
                    (value ? "" : " (not an integer)") + ", the type it takes here");
  return 0;
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[out.size() - 1 - i] = std::max(da, db);
  }
  return out;
}

mlir::Value broadcastValue(Kernel &k, mlir::Value v, const Shape &shape, Location loc) {
  Shape have = shapeOf(v.getType());
  if (have == shape)
    return v;
  Type element = getElementTypeOrSelf(v.getType());
  if (have.empty())
    return tile::SplatOp::create(k.builder(), loc, RankedTensorType::get(shape, element),
                                 v);
  while (have.size() < shape.size()) {
    have.insert(have.begin(), 1);
    v = tile::ExpandDimsOp::create(k.builder(), loc, RankedTensorType::get(have, element),
                                   v, 0);
  }
  if (have != shape)
    v = tile::BroadcastOp::create(k.builder(), loc, RankedTensorType::get(shape, element),
                                  v);
  return v;
}

mlir::Value castInt(Kernel &k, mlir::Value v, Type to, Location loc) {
  unsigned from = v.getType().getIntOrFloatBitWidth(), want = to.getIntOrFloatBitWidth();
  if (from == want)
    return v;
  if (from < want)
    return arith::ExtSIOp::create(k.builder(), loc, to, v);
  return arith::TruncIOp::create(k.builder(), loc, to, v);
}

} // namespace detail

using namespace detail;

namespace {

enum class Bin {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  Max,
  Min
};

const char *spelling(Bin op) {
  static const char *names[] = {"+",  "-", "*",   "/",   "%",       "<",
                                "<=", ">", ">=",  "==",  "!=",      "&",
                                "|",  "^", "shl", "shr", "maximum", "minimum"};
  return names[int(op)];
}

mlir::Value createFloat(OpBuilder &b, Location loc, Bin op, mlir::Value x,
                        mlir::Value y) {
  using P = arith::CmpFPredicate;
  switch (op) {
  case Bin::Add:
    return arith::AddFOp::create(b, loc, x, y);
  case Bin::Sub:
    return arith::SubFOp::create(b, loc, x, y);
  case Bin::Mul:
    return arith::MulFOp::create(b, loc, x, y);
  case Bin::Div:
    return arith::DivFOp::create(b, loc, x, y);
  case Bin::Rem:
    return arith::RemFOp::create(b, loc, x, y);
  case Bin::Lt:
    return arith::CmpFOp::create(b, loc, P::OLT, x, y);
  case Bin::Le:
    return arith::CmpFOp::create(b, loc, P::OLE, x, y);
  case Bin::Gt:
    return arith::CmpFOp::create(b, loc, P::OGT, x, y);
  case Bin::Ge:
    return arith::CmpFOp::create(b, loc, P::OGE, x, y);
  case Bin::Eq:
    return arith::CmpFOp::create(b, loc, P::OEQ, x, y);
  case Bin::Ne:
    return arith::CmpFOp::create(b, loc, P::UNE, x, y);
  case Bin::Max:
    return arith::MaximumFOp::create(b, loc, x, y);
  case Bin::Min:
    return arith::MinimumFOp::create(b, loc, x, y);
  case Bin::And:
  case Bin::Or:
  case Bin::Xor:
  case Bin::Shl:
  case Bin::Shr:
    break;
  }
  return {};
}

mlir::Value createInt(OpBuilder &b, Location loc, Bin op, mlir::Value x, mlir::Value y) {
  using P = arith::CmpIPredicate;
  switch (op) {
  case Bin::Add:
    return arith::AddIOp::create(b, loc, x, y);
  case Bin::Sub:
    return arith::SubIOp::create(b, loc, x, y);
  case Bin::Mul:
    return arith::MulIOp::create(b, loc, x, y);
  case Bin::Div:
    return arith::DivSIOp::create(b, loc, x, y);
  case Bin::Rem:
    return arith::RemSIOp::create(b, loc, x, y);
  case Bin::Lt:
    return arith::CmpIOp::create(b, loc, P::slt, x, y);
  case Bin::Le:
    return arith::CmpIOp::create(b, loc, P::sle, x, y);
  case Bin::Gt:
    return arith::CmpIOp::create(b, loc, P::sgt, x, y);
  case Bin::Ge:
    return arith::CmpIOp::create(b, loc, P::sge, x, y);
  case Bin::Eq:
    return arith::CmpIOp::create(b, loc, P::eq, x, y);
  case Bin::Ne:
    return arith::CmpIOp::create(b, loc, P::ne, x, y);
  case Bin::And:
    return arith::AndIOp::create(b, loc, x, y);
  case Bin::Or:
    return arith::OrIOp::create(b, loc, x, y);
  case Bin::Xor:
    return arith::XOrIOp::create(b, loc, x, y);
  case Bin::Shl:
    return arith::ShLIOp::create(b, loc, x, y);
  case Bin::Shr:
    return arith::ShRUIOp::create(b, loc, x, y);
  case Bin::Max:
    return arith::MaxSIOp::create(b, loc, x, y);
  case Bin::Min:
    return arith::MinSIOp::create(b, loc, x, y);
  }
  return {};
}

/// ptr + offsets: tile.addptr after splatting/broadcasting to a common shape.
Value pointerAdd(Kernel &k, const Operand &ptr, const Operand &offset) {
  Location loc = k.location(ptr.loc);
  mlir::Value p = ptr.value.raw();
  // A C++ offset outside i32 is exact as an i64 offset (addresses are 64-bit).
  const bool wide = offset.number && offset.isInteger && !llvm::isInt<32>(offset.integer);
  mlir::Value o =
      materialize(k, offset, wide ? k.builder().getI64Type() : k.builder().getI32Type());
  Type offElement = getElementTypeOrSelf(o.getType());
  if (!offElement.isInteger(32) && !offElement.isInteger(64))
    return k.fail(ptr.loc, "pointer offsets must be i32 or i64, got " + describe(o));
  auto shape = broadcastShapes(shapeOf(p.getType()), shapeOf(o.getType()));
  if (!shape)
    return k.fail(ptr.loc, "shapes do not broadcast in pointer '+': " + describe(p) +
                               " vs " + describe(o));
  p = broadcastValue(k, p, *shape, loc);
  o = broadcastValue(k, o, *shape, loc);
  return k.wrap(tile::AddPtrOp::create(k.builder(), loc, p.getType(), p, o));
}

Value binary(Bin op, const Operand &a, const Operand &b) {
  Kernel *k = kernelOf({&a, &b});
  if (!k)
    return {};
  const SrcLoc &src = a.number ? b.loc : a.loc;
  if (a.number && b.number)
    return k->fail(src, std::string("'") + spelling(op) + "' needs at least one Value");
  if (a.value.valid() && a.value.isPointer() && op == Bin::Add)
    return pointerAdd(*k, a, b);
  if (b.value.valid() && b.value.isPointer() && op == Bin::Add)
    return pointerAdd(*k, b, a);
  for (const Operand *x : {&a, &b})
    if (x->value.valid() && (x->value.isPointer() || x->value.isView()))
      return k->fail(src, std::string("'") + spelling(op) + "' does not apply to " +
                              describe(x->value.raw()));

  Type ta = a.number ? Type() : getElementTypeOrSelf(a.value.raw().getType());
  Type tb = b.number ? Type() : getElementTypeOrSelf(b.value.raw().getType());
  if (ta && tb && ta != tb)
    return k->fail(src, std::string("dtype mismatch in '") + spelling(op) +
                            "': " + describe(a.value.raw()) + " vs " +
                            describe(b.value.raw()) + " (convert one with .to())");
  Type element = ta ? ta : tb;
  for (const Operand *x : {&a, &b})
    if (x->number && !x->isInteger && !isa<FloatType>(element))
      return k->fail(src, std::string("'") + spelling(op) + "' of a " +
                              tile::describeType(element) +
                              " value and the non-integer " + std::to_string(*x->number));

  auto shape = broadcastShapes(a.number ? Shape() : a.value.shape(),
                               b.number ? Shape() : b.value.shape());
  if (!shape)
    return k->fail(src, std::string("shapes do not broadcast in '") + spelling(op) +
                            "': " + describe(a.value.raw()) + " vs " +
                            describe(b.value.raw()));
  Location loc = k->location(src);
  mlir::Value x = broadcastValue(*k, materialize(*k, a, element), *shape, loc);
  mlir::Value y = broadcastValue(*k, materialize(*k, b, element), *shape, loc);
  mlir::Value out = isa<FloatType>(element) ? createFloat(k->builder(), loc, op, x, y)
                                            : createInt(k->builder(), loc, op, x, y);
  if (!out)
    return k->fail(src, std::string("'") + spelling(op) +
                            "' needs integer or i1 operands, got " + describe(x));
  return k->wrap(out);
}

/// A math function of one float operand.
template <typename MathOp> Value unaryFloat(const char *name, const Operand &x) {
  Kernel *k = kernelOf({&x});
  if (!k)
    return {};
  if (x.number || !isa<FloatType>(getElementTypeOrSelf(x.value.raw().getType())))
    return k->fail(
        x.loc, std::string(name) + " needs a float tile or scalar, got " +
                   (x.number ? std::string("a C++ number") : describe(x.value.raw())));
  return k->wrap(MathOp::create(k->builder(), k->location(x.loc), x.value.raw()));
}

} // namespace

Value operator+(const Operand &a, const Operand &b) { return binary(Bin::Add, a, b); }
Value operator-(const Operand &a, const Operand &b) { return binary(Bin::Sub, a, b); }
Value operator*(const Operand &a, const Operand &b) { return binary(Bin::Mul, a, b); }
Value operator/(const Operand &a, const Operand &b) { return binary(Bin::Div, a, b); }
Value operator%(const Operand &a, const Operand &b) { return binary(Bin::Rem, a, b); }
Value operator<(const Operand &a, const Operand &b) { return binary(Bin::Lt, a, b); }
Value operator<=(const Operand &a, const Operand &b) { return binary(Bin::Le, a, b); }
Value operator>(const Operand &a, const Operand &b) { return binary(Bin::Gt, a, b); }
Value operator>=(const Operand &a, const Operand &b) { return binary(Bin::Ge, a, b); }
Value operator==(const Operand &a, const Operand &b) { return binary(Bin::Eq, a, b); }
Value operator!=(const Operand &a, const Operand &b) { return binary(Bin::Ne, a, b); }
Value operator&(const Operand &a, const Operand &b) { return binary(Bin::And, a, b); }
Value operator|(const Operand &a, const Operand &b) { return binary(Bin::Or, a, b); }
Value operator^(const Operand &a, const Operand &b) { return binary(Bin::Xor, a, b); }
Value shl(const Operand &a, const Operand &bits) { return binary(Bin::Shl, a, bits); }
Value shr(const Operand &a, const Operand &bits) { return binary(Bin::Shr, a, bits); }
Value maximum(const Operand &a, const Operand &b) { return binary(Bin::Max, a, b); }
Value minimum(const Operand &a, const Operand &b) { return binary(Bin::Min, a, b); }
Value operator-(const Operand &a) {
  Kernel *k = kernelOf({&a});
  if (!k)
    return {};
  // negf, not 0 - x: the sign of zero must flip too.
  if (!a.number && isa<FloatType>(getElementTypeOrSelf(a.value.raw().getType())))
    return k->wrap(
        arith::NegFOp::create(k->builder(), k->location(a.loc), a.value.raw()));
  return binary(Bin::Sub, Operand(0, a.loc), a);
}

Value where(const Operand &cond, const Operand &a, const Operand &b) {
  Kernel *k = kernelOf({&cond, &a, &b});
  if (!k)
    return {};
  if (cond.number || !getElementTypeOrSelf(cond.value.raw().getType()).isInteger(1))
    return k->fail(cond.loc, "where() needs an i1 condition, got " +
                                 (cond.number ? std::string("a C++ number")
                                              : describe(cond.value.raw())));
  // a - a, b - b would reuse binary()'s checks but emit ops; resolve types here.
  Value ab = a.number ? (b.number ? Value() : b.value) : a.value;
  if (!ab.valid())
    return k->fail(cond.loc, "where() needs at least one Value among its branches");
  Type element = getElementTypeOrSelf(ab.raw().getType());
  if (!a.number && !b.number && getElementTypeOrSelf(b.value.raw().getType()) != element)
    return k->fail(cond.loc, "dtype mismatch in where(): " + describe(a.value.raw()) +
                                 " vs " + describe(b.value.raw()));
  auto shape = broadcastShapes(cond.value.shape(), a.number ? Shape() : a.value.shape());
  if (shape)
    shape = broadcastShapes(*shape, b.number ? Shape() : b.value.shape());
  if (!shape)
    return k->fail(cond.loc,
                   "shapes do not broadcast in where(): " + describe(cond.value.raw()) +
                       ", " + (a.number ? "number" : describe(a.value.raw())) + ", " +
                       (b.number ? "number" : describe(b.value.raw())));
  Location loc = k->location(cond.loc);
  mlir::Value c = broadcastValue(*k, cond.value.raw(), *shape, loc);
  mlir::Value x = broadcastValue(*k, materialize(*k, a, element), *shape, loc);
  mlir::Value y = broadcastValue(*k, materialize(*k, b, element), *shape, loc);
  return k->wrap(arith::SelectOp::create(k->builder(), loc, c, x, y));
}

Value fma(const Operand &a, const Operand &b, const Operand &c) {
  Kernel *k = kernelOf({&a, &b, &c});
  if (!k)
    return {};
  const Operand *first = nullptr;
  for (const Operand *x : {&a, &b, &c})
    if (!x->number && !first)
      first = x;
  if (!first)
    return k->fail(a.loc, "fma() needs at least one Value");
  Type element = getElementTypeOrSelf(first->value.raw().getType());
  if (!isa<FloatType>(element) || isa<Float8E4M3FNType>(element))
    return k->fail(first->loc, "fma() needs f32, bf16 or f16 operands, got " +
                                   describe(first->value.raw()));
  Shape shape;
  for (const Operand *x : {&a, &b, &c}) {
    if (x->number)
      continue;
    if (getElementTypeOrSelf(x->value.raw().getType()) != element)
      return k->fail(x->loc, "dtype mismatch in fma(): " + describe(first->value.raw()) +
                                 " vs " + describe(x->value.raw()) +
                                 " (convert one with .to())");
    auto joined = broadcastShapes(shape, x->value.shape());
    if (!joined)
      return k->fail(x->loc,
                     "shapes do not broadcast in fma(): " + describe(first->value.raw()) +
                         " vs " + describe(x->value.raw()));
    shape = *joined;
  }
  Location loc = k->location(first->loc);
  auto operand = [&](const Operand &x) {
    return broadcastValue(*k, materialize(*k, x, element), shape, loc);
  };
  return k->wrap(
      math::FmaOp::create(k->builder(), loc, operand(a), operand(b), operand(c)));
}

Value exp(const Operand &x) { return unaryFloat<math::ExpOp>("exp", x); }
Value log(const Operand &x) { return unaryFloat<math::LogOp>("log", x); }
Value log1p(const Operand &x) { return unaryFloat<math::Log1pOp>("log1p", x); }
Value sqrt(const Operand &x) { return unaryFloat<math::SqrtOp>("sqrt", x); }
Value rsqrt(const Operand &x) { return unaryFloat<math::RsqrtOp>("rsqrt", x); }
Value abs(const Operand &x) { return unaryFloat<math::AbsFOp>("abs", x); }

// Composite functions attribute every op they create to the caller's line.
Value silu(const Operand &x) {
  auto at = [&](Value v) { return Operand(v, x.loc); };
  Value denominator = binary(Bin::Add, Operand(1.0, x.loc), at(exp(at(-x))));
  return binary(Bin::Div, x, at(denominator));
}

Value softplus(const Operand &x) {
  auto at = [&](Value v) { return Operand(v, x.loc); };
  Value big = binary(Bin::Gt, x, Operand(20.0, x.loc));
  return where(at(big), x, at(log1p(at(exp(x)))));
}

} // namespace tilejit
