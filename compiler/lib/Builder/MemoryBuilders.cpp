// Builder: views over global memory, loads and stores through views and
// through tiles of pointers.
#include "BuilderInternal.h"

using namespace mlir;

namespace tilejit {
using namespace detail;

namespace {

/// i32 offsets of a view access; false (diagnosed or poisoned) on failure.
bool indexOperands(Kernel &k, const std::vector<Operand> &offsets,
                   SmallVectorImpl<mlir::Value> &out) {
  for (const Operand &o : offsets) {
    if (!o.number && !o.value.valid())
      return false;
    mlir::Value v = indexOperand(k, o, "an offset");
    if (!v)
      return false;
    out.push_back(v);
  }
  return true;
}

} // namespace

View makeView(const Operand &ptr, const std::vector<Dim> &sizes,
              const std::vector<Dim> &strides) {
  Kernel *k = kernelOf({&ptr});
  if (!k)
    return View();
  if (ptr.number || !isa<tile::PointerType>(ptr.value.raw().getType()))
    return View(k->fail(
        ptr.loc, "makeView needs a scalar pointer, got " +
                     (ptr.number ? std::string("a number") : describe(ptr.value.raw()))));
  if (sizes.size() != strides.size() || sizes.empty())
    return View(k->fail(ptr.loc, "makeView needs as many strides as sizes (" +
                                     std::to_string(sizes.size()) + " vs " +
                                     std::to_string(strides.size()) + ")"));
  Location loc = k->location(ptr.loc);
  OpBuilder &b = k->builder();
  SmallVector<int64_t> shape, strideValues;
  SmallVector<mlir::Value> dynSizes, dynStrides;
  auto collect = [&](const Dim &d, SmallVector<int64_t> &fixed,
                     SmallVector<mlir::Value> &dynamic, Type type) {
    if (d.fixed) {
      fixed.push_back(*d.fixed);
      return true;
    }
    if (!d.dynamic.valid() || d.dynamic.isTile() ||
        !d.dynamic.raw().getType().isSignlessInteger() ||
        d.dynamic.raw().getType().getIntOrFloatBitWidth() > type.getIntOrFloatBitWidth())
      return false;
    fixed.push_back(ShapedType::kDynamic);
    dynamic.push_back(castInt(*k, d.dynamic.raw(), type, loc));
    return true;
  };
  for (const Dim &d : sizes)
    if (!collect(d, shape, dynSizes, b.getI32Type()))
      return View(k->fail(ptr.loc, "a view size must be an integer or an integer scalar "
                                   "Value of at most 32 bits (view sizes are i32)"));
  for (const Dim &d : strides)
    if (!collect(d, strideValues, dynStrides, b.getI64Type()))
      return View(k->fail(ptr.loc,
                          "a view stride must be an integer or an integer scalar Value"));
  Type element = cast<tile::PointerType>(ptr.value.raw().getType()).getPointeeType();
  // getChecked: a negative size or stride (a constant gone wrong) is a
  // diagnostic at the caller's line; ViewType::get would assert.
  auto type = tile::ViewType::getChecked([&] { return emitError(loc); }, &k->context(),
                                         ArrayRef<int64_t>(shape), element,
                                         ArrayRef<int64_t>(strideValues));
  if (!type)
    return View();
  return View(k->wrap(
      tile::MakeViewOp::create(b, loc, type, ptr.value.raw(), dynSizes, dynStrides)));
}

Value load(const View &view, const std::vector<Operand> &offsets, const Shape &shape,
           std::optional<double> padding, SrcLoc loc) {
  if (!view.valid())
    return {};
  Kernel *k = view.value.kernel();
  SmallVector<mlir::Value> idx;
  if (!checkShape(*k, shape, loc, "load") || !indexOperands(*k, offsets, idx))
    return {};
  Type element = cast<tile::ViewType>(view.value.raw().getType()).getElementType();
  auto type = RankedTensorType::get(shape, element);
  TypedAttr pad;
  if (padding)
    pad = cast<TypedAttr>(
        cast<arith::ConstantOp>(
            materialize(*k, Operand(*padding, loc), element).getDefiningOp())
            .getValue());
  return k->wrap(tile::LoadOp::create(k->builder(), k->location(loc), type,
                                      view.value.raw(), idx, pad));
}

void store(const View &view, const std::vector<Operand> &offsets, const Operand &value,
           SrcLoc loc) {
  Kernel *k = kernelOf({&value});
  if (!view.valid() || !k)
    return;
  if (value.number || !value.value.isTile()) {
    k->fail(loc,
            "store(view, offsets, tile) needs a tile, got " +
                (value.number ? std::string("a number") : describe(value.value.raw())));
    return;
  }
  SmallVector<mlir::Value> idx;
  if (!indexOperands(*k, offsets, idx))
    return;
  tile::StoreOp::create(k->builder(), k->location(loc), value.value.raw(),
                        view.value.raw(), idx);
}

Value load(const Operand &ptrs, std::optional<Operand> mask,
           std::optional<Operand> other) {
  Kernel *k = kernelOf({&ptrs});
  if (!k || (mask && !kernelOf({&*mask})) || (other && !kernelOf({&*other})))
    return {};
  if (ptrs.number || !ptrs.value.isPointer())
    return k->fail(ptrs.loc, "load(ptrs, mask, other) needs pointers, got " +
                                 (ptrs.number ? std::string("a number")
                                              : describe(ptrs.value.raw())));
  Location loc = k->location(ptrs.loc);
  mlir::Value p = ptrs.value.raw();
  Shape shape = shapeOf(p.getType());
  Type pointee = tile::getPointeeType(p.getType());
  mlir::Value m, o;
  if (mask) {
    if (mask->number || !getElementTypeOrSelf(mask->value.raw().getType()).isInteger(1))
      return k->fail(mask->loc, "a load mask must be i1");
    auto common = broadcastShapes(mask->value.shape(), shape);
    if (!common || *common != shape)
      return k->fail(mask->loc, "mask " + describe(mask->value.raw()) +
                                    " does not broadcast to pointers " + describe(p));
    m = broadcastValue(*k, mask->value.raw(), shape, loc);
  }
  if (other) {
    o = materialize(*k, *other, getElementTypeOrSelf(pointee));
    if (getElementTypeOrSelf(o.getType()) != getElementTypeOrSelf(pointee))
      return k->fail(other->loc, "load 'other' must be " +
                                     tile::describeType(getElementTypeOrSelf(pointee)) +
                                     ", got " + describe(o));
    o = broadcastValue(*k, o, shape, loc);
  }
  return k->wrap(tile::PtrLoadOp::create(k->builder(), loc, p, m, o));
}

void store(const Operand &ptrs, const Operand &value, std::optional<Operand> mask) {
  Kernel *k = kernelOf({&ptrs, &value});
  if (!k || (mask && !kernelOf({&*mask})))
    return;
  if (ptrs.number || !ptrs.value.isPointer()) {
    k->fail(ptrs.loc, "store(ptrs, value, mask) needs pointers");
    return;
  }
  Location loc = k->location(ptrs.loc);
  mlir::Value p = ptrs.value.raw();
  Shape shape = shapeOf(p.getType());
  Type pointee = getElementTypeOrSelf(tile::getPointeeType(p.getType()));
  mlir::Value v = materialize(*k, value, pointee);
  if (getElementTypeOrSelf(v.getType()) != pointee) {
    k->fail(value.loc, "storing " + describe(v) + " through pointers to " +
                           tile::describeType(pointee) + " (convert with .to())");
    return;
  }
  auto common = broadcastShapes(shapeOf(v.getType()), shape);
  if (!common || *common != shape) {
    k->fail(value.loc,
            "value " + describe(v) + " does not broadcast to pointers " + describe(p));
    return;
  }
  v = broadcastValue(*k, v, shape, loc);
  mlir::Value m;
  if (mask) {
    if (mask->number || !getElementTypeOrSelf(mask->value.raw().getType()).isInteger(1)) {
      k->fail(mask->loc, "a store mask must be i1");
      return;
    }
    m = broadcastValue(*k, mask->value.raw(), shape, loc);
  }
  tile::PtrStoreOp::create(k->builder(), loc, p, v, m);
}

} // namespace tilejit
