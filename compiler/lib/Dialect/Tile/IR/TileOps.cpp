// Verifiers, custom assembly and builders of the `tile` ops. Folders and
// canonicalization patterns live in TileCanonicalize.cpp.
#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "tilejit/Dialect/Tile/IR/Layouts.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace tilejit::tile;

#define GET_OP_CLASSES
#include "tilejit/Dialect/Tile/IR/TileOps.cpp.inc"

static std::string str(Type t) { return describeType(t); }

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

void KernelOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                     FunctionType type) {
  state.addAttribute(SymbolTable::getSymbolAttrName(), builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  Region *body = state.addRegion();
  Block *entry = new Block();
  body->push_back(entry);
  for (Type t : type.getInputs())
    entry->addArgument(t, state.location);
}

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &b, ArrayRef<Type> args, ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag,
                      std::string &) { return b.getFunctionType(args, results); };
  SMLoc loc = parser.getCurrentLocation();
  if (function_interface_impl::parseFunctionOp(
          parser, result, /*allowVariadic=*/false, getFunctionTypeAttrName(result.name),
          buildType, getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name)))
    return failure();
  // `config` arrives in the attribute dictionary; unchecked, an attribute of
  // the wrong kind would be dropped silently when it becomes a property.
  return result.name.verifyInherentAttrs(result.attributes,
                                         [&] { return parser.emitError(loc); });
}

void KernelOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(p, *this, /*isVariadic=*/false,
                                           getFunctionTypeAttrName(),
                                           getArgAttrsAttrName(), getResAttrsAttrName());
}

/// PTX's identifier syntax: a letter then letters, digits, '_' and '$', or one
/// of '_', '$', '%' then at least one of those. The kernel's name becomes its
/// `.entry` verbatim, so anything else is PTX that ptxas refuses.
static bool isPtxIdentifier(StringRef name) {
  auto follows = [](char c) { return llvm::isAlnum(c) || c == '_' || c == '$'; };
  if (name.empty() || !llvm::all_of(name.drop_front(), follows))
    return false;
  return llvm::isAlpha(name[0]) ||
         ((name[0] == '_' || name[0] == '$' || name[0] == '%') && name.size() > 1);
}

LogicalResult KernelOp::verify() {
  if (!isPtxIdentifier(getSymName()))
    return emitOpError("name '")
           << getSymName()
           << "' is not a PTX identifier (a letter, then letters, digits, '_' or '$')";
  if (!getResultTypes().empty())
    return emitOpError("kernels return nothing, got ")
           << getResultTypes().size() << " result(s)";
  for (auto [i, t] : llvm::enumerate(getArgumentTypes())) {
    // A tensor map is built by the runtime from the view its source names.
    if (isa<TensorMapType>(t)) {
      TensorMapSourceAttr source = getTensorMapSource(i);
      if (!source)
        return emitOpError("parameter ")
               << i << " is a !tile.tensormap without a tile.tensormap_source";
      int64_t n = getArgumentTypes().size();
      auto isParam = [&](int64_t index, auto pred) {
        return index >= 0 && index < n && pred(getArgumentTypes()[index]);
      };
      if (!isParam(source.getBase(), [](Type p) { return isa<PointerType>(p); }))
        return emitOpError("tensor map parameter ")
               << i << " names parameter " << source.getBase()
               << " as its base, which is not a pointer";
      for (int64_t arg : source.getSizeArgs())
        if (arg >= 0 && !isParam(arg, [](Type p) { return p.isInteger(32); }))
          return emitOpError("tensor map parameter ")
                 << i << " takes a size from parameter " << arg << ", which is not i32";
      continue;
    }
    bool ok = isa<PointerType>(t) || isa<Float32Type, Float16Type, BFloat16Type>(t) ||
              t.isInteger(1) || t.isInteger(8) || t.isInteger(32) || t.isInteger(64);
    if (!ok)
      return emitOpError("parameter ") << i
                                       << " must be a !tile.ptr or a scalar (i1, i8, "
                                          "i32, i64, f16, bf16, f32), got "
                                       << str(t);
  }
  // Lowering reads every layout as this kernel's warps spread a tile of its
  // rank; checked here, a layout that disagrees never reaches it. Each type
  // is checked once.
  const int64_t numWarps = getNumWarps(*this);
  llvm::DenseSet<Type> checked;
  WalkResult layouts = getBody().walk([&](Operation *op) {
    auto check = [&](Type t) {
      auto tile = dyn_cast<RankedTensorType>(t);
      if (!tile || !tile.getEncoding() || !checked.insert(t).second)
        return success();
      return verifyLayout(tile, numWarps, [&] { return op->emitOpError(); });
    };
    for (Type t : op->getResultTypes())
      if (failed(check(t)))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Type t : region.getArgumentTypes())
        if (failed(check(t)))
          return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(layouts.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Creation and shape ops
//===----------------------------------------------------------------------===//

LogicalResult ArangeOp::verify() {
  // I32Attr accessors zero-extend; the bounds are signed.
  int64_t start = getStartAttr().getInt(), end = getEndAttr().getInt();
  if (end <= start)
    return emitOpError("needs start < end, got ") << start << " to " << end;
  RankedTensorType type = getResult().getType();
  if (type.getRank() != 1 || type.getDimSize(0) != end - start)
    return emitOpError("result must be tile<")
           << (end - start) << "xi32>, got " << str(getResult().getType());
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto src = getSrc().getType(), dst = getResult().getType();
  if (src.getRank() != dst.getRank())
    return emitOpError("source and result ranks differ: ")
           << str(src) << " vs " << str(dst) << " (use tile.expand_dims first)";
  for (int64_t i = 0; i < src.getRank(); ++i)
    if (src.getDimSize(i) != dst.getDimSize(i) && src.getDimSize(i) != 1)
      return emitOpError("cannot broadcast ")
             << str(src) << " to " << str(dst) << ": dimension " << i << " is "
             << src.getDimSize(i) << ", expected 1 or " << dst.getDimSize(i);
  return success();
}

LogicalResult ExpandDimsOp::verify() {
  auto src = getSrc().getType(), dst = getResult().getType();
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0 || axis > src.getRank())
    return emitOpError("axis ")
           << axis << " out of range [0, " << src.getRank() << "] for " << str(src);
  SmallVector<int64_t> expected(src.getShape());
  expected.insert(expected.begin() + axis, 1);
  if (dst.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape must be ")
           << shapeStr(expected) << ", got " << shapeStr(dst.getShape());
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto src = getSrc().getType(), dst = getResult().getType();
  if (src.getNumElements() != dst.getNumElements())
    return emitOpError("element count changes: ")
           << str(src) << " has " << src.getNumElements() << ", " << str(dst) << " has "
           << dst.getNumElements();
  return success();
}

LogicalResult TransposeOp::verify() {
  auto src = getSrc().getType(), dst = getResult().getType();
  ArrayRef<int32_t> order = getOrder();
  if ((int64_t)order.size() != src.getRank())
    return emitOpError("order has ")
           << order.size() << " entries for rank " << src.getRank();
  SmallVector<bool> seen(order.size(), false);
  SmallVector<int64_t> expected;
  for (int32_t o : order) {
    if (o < 0 || o >= (int32_t)order.size() || seen[o])
      return emitOpError("order must be a permutation of [0, ") << order.size() << ")";
    seen[o] = true;
    expected.push_back(src.getDimSize(o));
  }
  if (dst.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape must be ")
           << shapeStr(expected) << ", got " << shapeStr(dst.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Memory ops
//===----------------------------------------------------------------------===//

LogicalResult MakeViewOp::verify() {
  ViewType view = getResult().getType();
  Type pointee = getBase().getType().getPointeeType();
  if (pointee != view.getElementType())
    return emitOpError("base points to ")
           << pointee << " but the view holds " << view.getElementType();
  if (getSizes().size() != view.getNumDynamicSizes())
    return emitOpError("view has ")
           << view.getNumDynamicSizes() << " dynamic size(s) but " << getSizes().size()
           << " were given";
  if (getStrides().size() != view.getNumDynamicStrides())
    return emitOpError("view has ")
           << view.getNumDynamicStrides() << " dynamic stride(s) but "
           << getStrides().size() << " were given";
  return success();
}

/// Checks a tile accessed at `offsets` of `view` (shared by load and store).
static LogicalResult verifyViewAccess(Operation *op, ViewType view, size_t numOffsets,
                                      RankedTensorType tile) {
  if (numOffsets != (size_t)view.getRank())
    return op->emitOpError("view of rank ")
           << view.getRank() << " needs " << view.getRank() << " offsets, got "
           << numOffsets;
  if (tile.getRank() != view.getRank())
    return op->emitOpError("tile rank ") << tile.getRank() << " differs from view rank "
                                         << view.getRank() << " (" << str(tile) << ")";
  if (tile.getElementType() != view.getElementType())
    return op->emitOpError("tile element type ")
           << tile.getElementType() << " differs from view element type "
           << view.getElementType();
  return success();
}

LogicalResult LoadOp::verify() {
  RankedTensorType tile = getResult().getType();
  if (failed(verifyViewAccess(*this, getView().getType(), getOffsets().size(), tile)))
    return failure();
  if (auto pad = getPaddingAttr())
    if (pad.getType() != tile.getElementType())
      return emitOpError("padding type ")
             << pad.getType() << " differs from element type " << tile.getElementType();
  return success();
}

LogicalResult StoreOp::verify() {
  return verifyViewAccess(*this, getView().getType(), getOffsets().size(),
                          getValue().getType());
}

LogicalResult AddPtrOp::verify() {
  auto ptrTile = dyn_cast<RankedTensorType>(getPtr().getType());
  auto offTile = dyn_cast<RankedTensorType>(getOffset().getType());
  if (!ptrTile != !offTile || (ptrTile && ptrTile.getShape() != offTile.getShape()))
    return emitOpError("pointer and offset shapes differ: ")
           << str(getPtr().getType()) << " vs " << str(getOffset().getType())
           << " (splat the scalar first)";
  return success();
}

void PtrLoadOp::build(OpBuilder &builder, OperationState &state, Value ptrs, Value mask,
                      Value other) {
  build(builder, state, getPointeeType(ptrs.getType()), ptrs, mask, other);
}

//===----------------------------------------------------------------------===//
// ConvertOp
//===----------------------------------------------------------------------===//

LogicalResult ConvertOp::verify() {
  Type src = getSrc().getType(), dst = getResult().getType();
  auto srcTile = dyn_cast<RankedTensorType>(src);
  auto dstTile = dyn_cast<RankedTensorType>(dst);
  if (!srcTile != !dstTile || (srcTile && srcTile.getShape() != dstTile.getShape()))
    return emitOpError("source and result shapes differ: ")
           << str(src) << " vs " << str(dst);
  Type to = getElementTypeOrSelf(dst);
  if (isWideningConversion(src, dst)) {
    if (getRounding() || getSaturate())
      return emitOpError("widening conversion ")
             << str(src) << " -> " << str(dst) << " is exact: drop rounding/saturate";
    return success();
  }
  if (!getRounding())
    return emitOpError("narrowing conversion ")
           << str(src) << " -> " << str(dst) << " must state its rounding";
  if (isa<Float8E4M3FNType>(to) && !getSaturate())
    return emitOpError("conversion to f8E4M3FN must saturate (e4m3fn has no infinity)");
  if (!isa<Float8E4M3FNType>(to) && getSaturate())
    return emitOpError("saturate applies only to conversions to f8E4M3FN");
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions, scans, dot
//===----------------------------------------------------------------------===//

static LogicalResult verifyAxis(Operation *op, int64_t axis, RankedTensorType src) {
  if (axis < 0 || axis >= src.getRank())
    return op->emitOpError("axis ")
           << axis << " out of range [0, " << src.getRank() << ") for " << str(src);
  return success();
}

static LogicalResult verifyCombinable(Operation *op, ReduceKind kind, Type element) {
  if (element.isInteger(1))
    return op->emitOpError("cannot ") << stringifyReduceKind(kind) << " i1 tiles";
  return success();
}

LogicalResult ReduceOp::verify() {
  auto src = getSrc().getType();
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), src)) ||
      failed(verifyCombinable(*this, getKind(), src.getElementType())))
    return failure();
  SmallVector<int64_t> shape(src.getShape());
  shape.erase(shape.begin() + getAxis());
  Type expected = shape.empty()
                      ? src.getElementType()
                      : Type(RankedTensorType::get(shape, src.getElementType()));
  // Layout encodings are free to differ (the result takes a slice layout).
  Type got = getResult().getType();
  if (auto t = dyn_cast<RankedTensorType>(got))
    got = RankedTensorType::get(t.getShape(), t.getElementType());
  if (got != expected)
    return emitOpError("result must be ")
           << str(expected) << ", got " << str(getResult().getType());
  return success();
}

LogicalResult ScanOp::verify() {
  auto src = getSrc().getType();
  if (failed(verifyAxis(*this, getAxisAttr().getInt(), src)))
    return failure();
  return verifyCombinable(*this, getKind(), src.getElementType());
}

LogicalResult DotOp::verify() {
  auto a = getA().getType(), b = getB().getType(), acc = getAcc().getType();
  if (a.getRank() != 2 || b.getRank() != 2 || acc.getRank() != 2)
    return emitOpError("operands must be 2-D tiles, got ")
           << str(a) << ", " << str(b) << ", " << str(acc);
  if (a.getElementType() != b.getElementType())
    return emitOpError("operand element types differ: ")
           << a.getElementType() << " vs " << b.getElementType();
  if (a.getDimSize(1) != b.getDimSize(0))
    return emitOpError("inner dimensions differ: ")
           << str(a) << " x " << str(b) << " (K = " << a.getDimSize(1) << " vs "
           << b.getDimSize(0) << ")";
  if (acc.getDimSize(0) != a.getDimSize(0) || acc.getDimSize(1) != b.getDimSize(1))
    return emitOpError("accumulator must be tile<")
           << a.getDimSize(0) << "x" << b.getDimSize(1) << "xf32>, got " << str(acc);
  return success();
}
