// Builder: what a Value is (tile, pointer, view; shape and dtype) and the
// conversions between element types: value-preserving (`to`) and bit-preserving
// (`bitcast`).
#include "BuilderInternal.h"

using namespace mlir;

namespace tilejit {

using namespace detail;

bool Value::isTile() const { return valid() && isa<RankedTensorType>(value_.getType()); }
bool Value::isPointer() const {
  return valid() && isa<tile::PointerType>(getElementTypeOrSelf(value_.getType()));
}
bool Value::isView() const { return valid() && isa<tile::ViewType>(value_.getType()); }
Shape Value::shape() const { return valid() ? shapeOf(value_.getType()) : Shape(); }

DType Value::dtype() const {
  Type element = getElementTypeOrSelf(value_.getType());
  if (auto ptr = dyn_cast<tile::PointerType>(element))
    element = ptr.getPointeeType();
  if (auto view = dyn_cast<tile::ViewType>(element))
    element = view.getElementType();
  return fromMlirType(element).value_or(DType::F32);
}

Value Value::to(DType t, SrcLoc srcLoc) const {
  if (!valid())
    return {};
  Kernel &k = *kernel_;
  Location loc = k.location(srcLoc);
  if (isPointer() || isView())
    return k.fail(srcLoc, "cannot convert " + describe(value_) + " to " + dtypeName(t));
  Type from = getElementTypeOrSelf(value_.getType());
  Type element = toMlirType(k.context(), t);
  Type type = tile::getSameShape(value_.getType(), element);
  if (from == element)
    return *this;
  OpBuilder &b = k.builder();
  bool srcFloat = isa<FloatType>(from), dstFloat = isa<FloatType>(element);
  mlir::Value out;
  if (srcFloat && dstFloat) {
    auto op = tile::ConvertOp::create(b, loc, type, value_, nullptr, nullptr);
    if (!tile::isWideningConversion(from, element)) {
      op.setRounding(tile::RoundingMode::RNE);
      op.setSaturate(t == DType::F8E4M3);
    }
    out = op;
  } else if (!srcFloat && dstFloat) {
    out = from.isInteger(1) ? mlir::Value(arith::UIToFPOp::create(b, loc, type, value_))
                            : mlir::Value(arith::SIToFPOp::create(b, loc, type, value_));
  } else if (srcFloat && !dstFloat) {
    out = arith::FPToSIOp::create(b, loc, type, value_);
  } else if (from.getIntOrFloatBitWidth() < element.getIntOrFloatBitWidth()) {
    out = from.isInteger(1) ? mlir::Value(arith::ExtUIOp::create(b, loc, type, value_))
                            : mlir::Value(arith::ExtSIOp::create(b, loc, type, value_));
  } else {
    out = arith::TruncIOp::create(b, loc, type, value_);
  }
  return k.wrap(out);
}

Value bitcast(const Operand &x, DType t) {
  Kernel *k = kernelOf({&x});
  if (!k)
    return {};
  Type element = toMlirType(k->context(), t);
  Type from = x.number ? Type() : getElementTypeOrSelf(x.value.raw().getType());
  if (!from || !from.isIntOrFloat() ||
      from.getIntOrFloatBitWidth() != element.getIntOrFloatBitWidth())
    return k->fail(
        x.loc, std::string("bitcast() needs a tile whose elements are as wide as ") +
                   dtypeName(t) + ", got " +
                   (x.number ? std::string("a C++ number") : describe(x.value.raw())));
  Type type = tile::getSameShape(x.value.raw().getType(), element);
  return k->wrap(
      arith::BitcastOp::create(k->builder(), k->location(x.loc), type, x.value.raw()));
}

} // namespace tilejit
