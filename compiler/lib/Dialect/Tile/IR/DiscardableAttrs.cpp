// The tile dialect's discardable attributes (TileDialect.td): a kernel's
// accessors of its parameters' attributes, and the checks of every tile.*
// attribute wherever it appears (docs/tile-dialect.md, "Discardable
// attributes").
#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace tilejit::tile;

//===----------------------------------------------------------------------===//
// KernelOp's parameter attributes
//===----------------------------------------------------------------------===//

StringAttr KernelOp::getParamName(unsigned index) {
  return getArgAttrOfType<StringAttr>(index, TileDialect::NameAttrHelper::getNameStr());
}

void KernelOp::setParamName(unsigned index, StringRef name) {
  setArgAttr(index, TileDialect::NameAttrHelper::getNameStr(),
             StringAttr::get(getContext(), name));
}

bool KernelOp::isInvariantParam(unsigned index) {
  return bool(getArgAttr(index, TileDialect::InvariantAttrHelper::getNameStr()));
}

TensorMapSourceAttr KernelOp::getTensorMapSource(unsigned index) {
  return getArgAttrOfType<TensorMapSourceAttr>(
      index, TileDialect::TensormapSourceAttrHelper::getNameStr());
}

IntegerAttr KernelOp::getGridDim(unsigned index) {
  return getArgAttrOfType<IntegerAttr>(index,
                                       TileDialect::GridDimAttrHelper::getNameStr());
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

namespace {

/// "an i64 integer": what a check expects, for its message.
template <typename AttrT> const char *kindName();
template <> const char *kindName<StringAttr>() { return "a string"; }
template <> const char *kindName<UnitAttr>() { return "a unit attribute"; }
template <> const char *kindName<IntegerAttr>() { return "an integer"; }
template <> const char *kindName<ArrayAttr>() { return "an array"; }
template <> const char *kindName<DenseI64ArrayAttr>() { return "an array<i64>"; }
template <> const char *kindName<TensorMapSourceAttr>() {
  return "a #tile.tensormap_source";
}

/// `attr`'s value as an AttrT, or a diagnostic at `op` naming what it is.
template <typename AttrT> AttrT expect(Operation *op, NamedAttribute attr) {
  auto value = dyn_cast<AttrT>(attr.getValue());
  if (!value)
    op->emitOpError("attribute '") << attr.getName().getValue() << "' must be "
                                   << kindName<AttrT>() << ", got " << attr.getValue();
  return value;
}

/// The parameter types of the function `op` is, if it is one.
ArrayRef<Type> parameterTypes(Operation *op) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  return function ? function.getArgumentTypes() : ArrayRef<Type>();
}

/// `tile.tensormaps`: one launch record per tensor map parameter.
LogicalResult verifyTensorMapRecords(Operation *op, NamedAttribute attr) {
  auto records = expect<ArrayAttr>(op, attr);
  if (!records)
    return failure();
  const size_t params = parameterTypes(op).size();
  for (Attribute record : records) {
    auto source = dyn_cast<TensorMapSourceAttr>(record);
    if (!source || !source.isLaunchRecord())
      return op->emitOpError("attribute 'tile.tensormaps' holds a record that is not a "
                             "#tile.tensormap_source with param, box and "
                             "element_bytes: ")
             << record;
    if (*source.getParam() >= int64_t(params))
      return op->emitOpError("tile.tensormaps names parameter ")
             << *source.getParam() << " of a function of " << params << " parameters";
  }
  return success();
}

/// `tile.grid_dims`: the two parameters of a persistent kernel's logical grid.
LogicalResult verifyGridDims(Operation *op, NamedAttribute attr) {
  auto dims = expect<DenseI64ArrayAttr>(op, attr);
  if (!dims)
    return failure();
  const int64_t params = parameterTypes(op).size();
  if (dims.size() != 2 ||
      llvm::any_of(dims.asArrayRef(), [&](int64_t p) { return p < 0 || p >= params; }))
    return op->emitOpError("tile.grid_dims must name two of the function's ")
           << params << " parameters, got " << attr.getValue();
  return success();
}

/// A launch figure: an integer of at least `least`.
LogicalResult verifyCount(Operation *op, NamedAttribute attr, int64_t least) {
  auto count = expect<IntegerAttr>(op, attr);
  if (!count)
    return failure();
  if (count.getValue().getSExtValue() < least)
    return op->emitOpError("attribute '")
           << attr.getName().getValue() << "' must be at least " << least << ", got "
           << count.getValue().getSExtValue();
  return success();
}

} // namespace

LogicalResult TileDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == TileLoopAttrHelper::getNameStr()) {
    if (!expect<UnitAttr>(op, attr))
      return failure();
    if (!isa<scf::ForOp>(op))
      return op->emitOpError("tile.tile_loop marks an scf.for (tile-persistent's loop "
                             "over tiles)");
    return success();
  }
  if (name == ThreadsAttrHelper::getNameStr() ||
      name == ProgramsPerSmAttrHelper::getNameStr())
    return verifyCount(op, attr, 1);
  if (name == SharedBytesAttrHelper::getNameStr())
    return verifyCount(op, attr, 0);
  if (name == SumsAttrHelper::getNameStr()) {
    auto sums = expect<StringAttr>(op, attr);
    if (!sums)
      return failure();
    if (sums.getValue() != "exact" && sums.getValue() != "reduced")
      return op->emitOpError("tile.sums must be \"exact\" or \"reduced\", got ") << sums;
    return success();
  }
  if (name == GridDimsAttrHelper::getNameStr())
    return verifyGridDims(op, attr);
  if (name == TensormapsAttrHelper::getNameStr())
    return verifyTensorMapRecords(op, attr);
  for (StringRef param : {NameAttrHelper::getNameStr(), InvariantAttrHelper::getNameStr(),
                          ShapeAttrHelper::getNameStr(), GridDimAttrHelper::getNameStr(),
                          TensormapSourceAttrHelper::getNameStr()})
    if (name == param)
      return op->emitOpError("'") << name << "' belongs on a kernel parameter";
  return op->emitOpError("'") << name << "' is not an attribute of the tile dialect";
}

LogicalResult TileDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  ArrayRef<Type> types = parameterTypes(op);
  Type type = argIndex < types.size() ? types[argIndex] : Type();
  if (name == NameAttrHelper::getNameStr())
    return success(bool(expect<StringAttr>(op, attr)));
  if (name == InvariantAttrHelper::getNameStr()) {
    if (!expect<UnitAttr>(op, attr))
      return failure();
    if (!isa_and_nonnull<PointerType>(type))
      return op->emitOpError("parameter ")
             << argIndex
             << " is marked tile.invariant but is not a !tile.ptr (only memory can be "
                "invariant)";
    return success();
  }
  if (name == ShapeAttrHelper::getNameStr()) {
    auto shape = expect<ArrayAttr>(op, attr);
    // Each size is an integer, or the name of the parameter holding it.
    if (shape &&
        !llvm::all_of(shape, [](Attribute d) { return isa<IntegerAttr, StringAttr>(d); }))
      return op->emitOpError("tile.shape of parameter ")
             << argIndex << " must list sizes and parameter names, got " << shape;
    return success(bool(shape));
  }
  if (name == GridDimAttrHelper::getNameStr()) {
    auto axis = expect<IntegerAttr>(op, attr);
    if (!axis)
      return failure();
    if (!type || !type.isInteger(32) || axis.getValue().getZExtValue() > 1)
      return op->emitOpError("tile.grid_dim marks an i32 parameter holding axis 0 or 1 "
                             "of the logical grid, got ")
             << axis << " on parameter " << argIndex;
    return success();
  }
  if (name == TensormapSourceAttrHelper::getNameStr()) {
    auto source = expect<TensorMapSourceAttr>(op, attr);
    if (!source)
      return failure();
    if (!isa_and_nonnull<TensorMapType>(type))
      return op->emitOpError("parameter ")
             << argIndex << " has a tile.tensormap_source but is not a !tile.tensormap";
    if (source.getParam() || !source.getBox().empty())
      return op->emitOpError("the tile.tensormap_source of parameter ")
             << argIndex
             << " names no param, box or element_bytes: its position and type give them";
    return success();
  }
  return op->emitOpError("'") << name
                              << "' is not a parameter attribute of the tile "
                                 "dialect";
}
