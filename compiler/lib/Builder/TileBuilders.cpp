// Builder: grid queries, tile creation and shapes, reductions, dot, memory
// access and structured control flow.
#include "BuilderInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace tilejit {
using namespace detail;

namespace {

Kernel *currentOrNull() { return Kernel::current(); }

/// The operand as a tile Value, or a diagnostic naming `what`.
bool requireTile(Kernel &k, const Operand &x, const char *what) {
  if (x.number || !x.value.isTile()) {
    k.fail(x.loc, std::string(what) + " needs a tile, got " +
                      (x.number ? std::string("a C++ number") : describe(x.value.raw())));
    return false;
  }
  return true;
}

bool requireAxis(Kernel &k, const Operand &x, int axis, const char *what) {
  int64_t rank = x.value.shape().size();
  if (axis < 0 || axis >= rank) {
    k.fail(x.loc, std::string(what) + ": axis " + std::to_string(axis) +
                      " out of range [0, " + std::to_string(rank) + ") for " +
                      describe(x.value.raw()));
    return false;
  }
  return true;
}

Value reduce(tile::ReduceKind kind, const char *what, const Operand &x, int axis) {
  Kernel *k = kernelOf({&x});
  if (!k || !requireTile(*k, x, what) || !requireAxis(*k, x, axis, what))
    return {};
  auto type = cast<RankedTensorType>(x.value.raw().getType());
  Shape shape(type.getShape());
  shape.erase(shape.begin() + axis);
  Type result = shape.empty() ? type.getElementType()
                              : Type(RankedTensorType::get(shape, type.getElementType()));
  return k->wrap(tile::ReduceOp::create(k->builder(), k->location(x.loc), result, kind,
                                        x.value.raw(), axis));
}

/// An i32 index operand named `what`: a number that fits i32, or an integer
/// scalar Value of at most 32 bits (sign-extended). A wider Value is a
/// diagnostic: truncating it would silently index elsewhere.
mlir::Value indexOperand(Kernel &k, const Operand &x, const char *what) {
  Type i32 = k.builder().getI32Type();
  mlir::Value v = materialize(k, x, i32);
  if (!v.getType().isSignlessInteger()) {
    k.fail(x.loc, std::string(what) + " must be an integer scalar, got " + describe(v));
    return {};
  }
  if (v.getType().getIntOrFloatBitWidth() > 32) {
    k.fail(x.loc, std::string(what) + " is " + describe(v) +
                      ", wider than the i32 it takes (convert it with .to(DType::I32) "
                      "where it is known to fit)");
    return {};
  }
  return castInt(k, v, i32, k.location(x.loc));
}

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

bool detail::checkShape(Kernel &k, const Shape &shape, const SrcLoc &loc,
                        const char *what) {
  std::vector<std::string> parts;
  for (int64_t d : shape)
    parts.push_back(std::to_string(d));
  const std::string dims = "[" + llvm::join(parts, "x") + "]";
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 1) {
      k.fail(loc, std::string(what) + ": tile dimensions must be positive, got " + dims);
      return false;
    }
    std::optional<int64_t> product = llvm::checkedMul(elements, d);
    if (!product || *product > kMaxTileElements) {
      k.fail(loc, std::string(what) + ": a tile of shape " + dims + " holds more than " +
                      std::to_string(kMaxTileElements) + " elements");
      return false;
    }
    elements = *product;
  }
  return true;
}

Value programId(int axis, SrcLoc loc) {
  Kernel *k = currentOrNull();
  if (!k)
    return {};
  if (axis < 0 || axis > 2)
    return k->fail(loc, "programId axis must be 0, 1 or 2, got " + std::to_string(axis));
  return k->wrap(tile::ProgramIdOp::create(k->builder(), k->location(loc),
                                           k->builder().getI32Type(), axis));
}

Value numPrograms(int axis, SrcLoc loc) {
  Kernel *k = currentOrNull();
  if (!k)
    return {};
  if (axis < 0 || axis > 2)
    return k->fail(loc,
                   "numPrograms axis must be 0, 1 or 2, got " + std::to_string(axis));
  return k->wrap(tile::NumProgramsOp::create(k->builder(), k->location(loc),
                                             k->builder().getI32Type(), axis));
}

Value arange(int64_t start, int64_t end, SrcLoc loc) {
  Kernel *k = currentOrNull();
  if (!k)
    return {};
  if (end <= start)
    return k->fail(loc, "arange needs start < end, got " + std::to_string(start) +
                            " to " + std::to_string(end));
  if (start < INT32_MIN || end > INT32_MAX)
    return k->fail(loc, "arange bounds must fit i32, got " + std::to_string(start) +
                            " to " + std::to_string(end));
  if (!checkShape(*k, {end - start}, loc, "arange"))
    return {};
  auto type = RankedTensorType::get({end - start}, k->builder().getI32Type());
  return k->wrap(
      tile::ArangeOp::create(k->builder(), k->location(loc), type, start, end));
}

Value constant(double value, DType t, SrcLoc loc) {
  Kernel *k = currentOrNull();
  if (!k)
    return {};
  // For an integer type the double must be integral and fit (exactInteger).
  return k->wrap(materialize(*k, Operand(value, loc), toMlirType(k->context(), t)));
}

Value full(const Shape &shape, const Operand &value, DType t) {
  Kernel *k = kernelOf({&value});
  if (!k)
    return {};
  if (!checkShape(*k, shape, value.loc, "full"))
    return {};
  Type element = toMlirType(k->context(), t);
  mlir::Value scalar = materialize(*k, value, element);
  if (scalar.getType() != element)
    return k->fail(value.loc, "full() of " + std::string(dtypeName(t)) + " given " +
                                  describe(scalar));
  return k->wrap(broadcastValue(*k, scalar, shape, k->location(value.loc)));
}

Value zeros(const Shape &shape, DType t, SrcLoc loc) {
  return full(shape, Operand(0, loc), t);
}

Value broadcastTo(const Operand &x, const Shape &shape) {
  Kernel *k = kernelOf({&x});
  if (!k)
    return {};
  if (x.number)
    return k->fail(x.loc, "broadcastTo needs a Value (use full() for numbers)");
  if (!checkShape(*k, shape, x.loc, "broadcastTo"))
    return {};
  auto common = broadcastShapes(x.value.shape(), shape);
  if (!common || *common != shape)
    return k->fail(x.loc, "cannot broadcast " + describe(x.value.raw()) + " to shape " +
                              tile::describeType(RankedTensorType::get(
                                  shape, getElementTypeOrSelf(x.value.raw().getType()))));
  return k->wrap(broadcastValue(*k, x.value.raw(), shape, k->location(x.loc)));
}

Value expandDims(const Operand &x, int axis) {
  Kernel *k = kernelOf({&x});
  if (!k || !requireTile(*k, x, "expandDims"))
    return {};
  Shape shape = x.value.shape();
  if (axis < 0 || axis > (int)shape.size())
    return k->fail(x.loc, "expandDims: axis " + std::to_string(axis) +
                              " out of range [0, " + std::to_string(shape.size()) +
                              "] for " + describe(x.value.raw()));
  shape.insert(shape.begin() + axis, 1);
  auto type = RankedTensorType::get(shape, getElementTypeOrSelf(x.value.raw().getType()));
  return k->wrap(tile::ExpandDimsOp::create(k->builder(), k->location(x.loc), type,
                                            x.value.raw(), axis));
}

Value reshape(const Operand &x, const Shape &shape) {
  Kernel *k = kernelOf({&x});
  if (!k || !requireTile(*k, x, "reshape") || !checkShape(*k, shape, x.loc, "reshape"))
    return {};
  auto type = RankedTensorType::get(shape, getElementTypeOrSelf(x.value.raw().getType()));
  return k->wrap(
      tile::ReshapeOp::create(k->builder(), k->location(x.loc), type, x.value.raw()));
}

Value transpose(const Operand &x, const std::vector<int32_t> &order) {
  Kernel *k = kernelOf({&x});
  if (!k || !requireTile(*k, x, "transpose"))
    return {};
  Shape src = x.value.shape(), shape;
  for (int32_t o : order) {
    if (o < 0 || o >= (int32_t)src.size())
      return k->fail(x.loc, "transpose order entry " + std::to_string(o) +
                                " out of range for " + describe(x.value.raw()));
    shape.push_back(src[o]);
  }
  auto type = RankedTensorType::get(shape, getElementTypeOrSelf(x.value.raw().getType()));
  return k->wrap(tile::TransposeOp::create(k->builder(), k->location(x.loc), type,
                                           x.value.raw(), order));
}

Value sum(const Operand &x, int axis) {
  return reduce(tile::ReduceKind::Sum, "sum", x, axis);
}
Value max(const Operand &x, int axis) {
  return reduce(tile::ReduceKind::Max, "max", x, axis);
}
Value min(const Operand &x, int axis) {
  return reduce(tile::ReduceKind::Min, "min", x, axis);
}

Value cumsum(const Operand &x, int axis) {
  Kernel *k = kernelOf({&x});
  if (!k || !requireTile(*k, x, "cumsum") || !requireAxis(*k, x, axis, "cumsum"))
    return {};
  return k->wrap(tile::ScanOp::create(k->builder(), k->location(x.loc),
                                      x.value.raw().getType(), tile::ReduceKind::Sum,
                                      x.value.raw(), axis));
}

Value dot(const Operand &a, const Operand &b, const Operand &acc) {
  Kernel *k = kernelOf({&a, &b, &acc});
  if (!k || !requireTile(*k, a, "dot") || !requireTile(*k, b, "dot") ||
      !requireTile(*k, acc, "dot"))
    return {};
  // Shapes and element types are checked by tile.dot's verifier, at this line.
  return k->wrap(tile::DotOp::create(k->builder(), k->location(a.loc),
                                     acc.value.raw().getType(), a.value.raw(),
                                     b.value.raw(), acc.value.raw()));
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

std::vector<Value> forRange(const Operand &lo, const Operand &hi, const Operand &step,
                            std::vector<Value> init, LoopBody body) {
  Kernel *k = kernelOf({&lo, &hi, &step});
  if (!k)
    return {};
  SmallVector<mlir::Value> inits;
  for (const Value &v : init) {
    if (!v.valid())
      return {};
    inits.push_back(v.raw());
  }
  mlir::Value bounds[3];
  const Operand *ops[3] = {&lo, &hi, &step};
  for (int i = 0; i < 3; ++i)
    if (!(bounds[i] = indexOperand(*k, *ops[i], "a loop bound or step")))
      return {};
  // scf.for needs a positive step; 0 would loop forever.
  if (step.number && *step.number < 1) {
    k->fail(step.loc, "forRange needs a positive step, got " +
                          (step.isInteger ? std::to_string(step.integer)
                                          : std::to_string(*step.number)));
    return {};
  }
  Location loc = k->location(lo.loc);
  OpBuilder &b = k->builder();
  bool ok = true;
  auto loop = scf::ForOp::create(
      b, loc, bounds[0], bounds[1], bounds[2], inits,
      [&](OpBuilder &, Location, mlir::Value iv, ValueRange args) {
        std::vector<Value> carried;
        for (mlir::Value a : args)
          carried.push_back(k->wrap(a));
        std::vector<Value> next = body(k->wrap(iv), carried);
        SmallVector<mlir::Value> yields;
        for (const Value &v : next)
          yields.push_back(v.raw());
        if (next.size() != inits.size()) {
          k->fail(lo.loc, "loop body returned " + std::to_string(next.size()) +
                              " values for " + std::to_string(inits.size()) +
                              " carried values");
          ok = false;
        } else {
          for (auto [i, v] : llvm::enumerate(next))
            if (!v.valid() || v.raw().getType() != inits[i].getType()) {
              if (v.valid())
                k->fail(lo.loc, "loop-carried value " + std::to_string(i) +
                                    " changes type: " + describe(inits[i]) + " -> " +
                                    describe(v.raw()));
              ok = false;
            }
        }
        if (!ok)
          yields.assign(inits.begin(), inits.end());
        scf::YieldOp::create(b, loc, yields);
      });
  std::vector<Value> results;
  for (mlir::Value r : loop.getResults())
    results.push_back(ok ? k->wrap(r) : Value());
  return results;
}

void ifThen(const Operand &cond, llvm::function_ref<void()> body) {
  Kernel *k = kernelOf({&cond});
  if (!k)
    return;
  if (cond.number || cond.value.isTile() || !cond.value.raw().getType().isInteger(1)) {
    k->fail(cond.loc, "ifThen needs a scalar i1 condition");
    return;
  }
  OpBuilder &b = k->builder();
  auto op = scf::IfOp::create(b, k->location(cond.loc), cond.value.raw(),
                              /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op.thenBlock()->getTerminator());
  body();
}

} // namespace tilejit
