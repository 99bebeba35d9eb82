// Builder: grid queries, tile creation and shapes, reductions, dot and
// structured control flow (MemoryBuilders.cpp: views, loads and stores).
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

} // namespace

mlir::Value detail::indexOperand(Kernel &k, const Operand &x, const char *what) {
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

std::vector<Value> ifElse(const Operand &cond, BranchBody thenBody, BranchBody elseBody) {
  Kernel *k = kernelOf({&cond});
  if (!k)
    return {};
  if (cond.number || cond.value.isTile() || !cond.value.raw().getType().isInteger(1)) {
    k->fail(cond.loc, "ifElse needs a scalar i1 condition");
    return {};
  }
  OpBuilder &b = k->builder();
  Location loc = k->location(cond.loc);
  // The arms are built first, into a detached if without results; the
  // results' types come from the then arm, and the else arm must match them.
  auto op = scf::IfOp::create(b, loc, TypeRange(), cond.value.raw(),
                              /*withElseRegion=*/true);
  auto buildArm = [&](Block *block,
                      BranchBody body) -> std::optional<std::vector<Value>> {
    OpBuilder::InsertionGuard guard(b);
    block->getTerminator()->erase();
    b.setInsertionPointToEnd(block);
    std::vector<Value> values = body();
    SmallVector<mlir::Value> raw;
    for (const Value &v : values) {
      if (!v.valid())
        return std::nullopt;
      raw.push_back(v.raw());
    }
    scf::YieldOp::create(b, loc, raw);
    return values;
  };
  auto thenValues = buildArm(op.thenBlock(), thenBody);
  auto elseValues = buildArm(op.elseBlock(), elseBody);
  bool ok = thenValues && elseValues;
  if (ok && thenValues->size() != elseValues->size()) {
    k->fail(cond.loc, "ifElse arms return " + std::to_string(thenValues->size()) +
                          " and " + std::to_string(elseValues->size()) + " values");
    ok = false;
  }
  SmallVector<Type> types;
  for (size_t i = 0; ok && i < thenValues->size(); ++i) {
    Type t = (*thenValues)[i].raw().getType();
    if (t != (*elseValues)[i].raw().getType()) {
      k->fail(cond.loc, "ifElse result " + std::to_string(i) +
                            " differs between arms: " + describe((*thenValues)[i].raw()) +
                            " and " + describe((*elseValues)[i].raw()));
      ok = false;
    }
    types.push_back(t);
  }
  if (!ok) {
    op.erase();
    return {};
  }
  // The if with its results, taking over both arms' regions.
  auto result =
      scf::IfOp::create(b, loc, types, cond.value.raw(), /*withElseRegion=*/true);
  result.getThenRegion().takeBody(op.getThenRegion());
  result.getElseRegion().takeBody(op.getElseRegion());
  op.erase();
  std::vector<Value> out;
  for (mlir::Value r : result.getResults())
    out.push_back(k->wrap(r));
  return out;
}

} // namespace tilejit
