// Questions tile-assign-layouts and tile-rematerialize ask of a value: its
// tile type and layout, and whether any layout can rebuild it for free.
#ifndef TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_LAYOUTQUERIES_H
#define TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_LAYOUTQUERIES_H

#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/IRMapping.h"

namespace tilejit::tile {

/// The tile type of `v`; null for a scalar, pointer or view.
inline mlir::RankedTensorType tileType(mlir::Value v) {
  return mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
}

/// The layout encoding of `v`'s tile; null when it has none (yet).
inline mlir::Attribute layoutOf(mlir::Value v) {
  auto t = tileType(v);
  return t ? t.getEncoding() : mlir::Attribute();
}

/// A split-K accumulator layout: each warp group holds a partial sum.
inline bool isPartial(mlir::Attribute layout) {
  auto mma = mlir::dyn_cast_or_null<MmaLayoutAttr>(layout);
  return mma && mma.getWpk() > 1;
}

/// Values any layout can be rebuilt in for free: splats, aranges and splat
/// constants.
inline bool isRematerializable(mlir::Value v) {
  mlir::Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (mlir::isa<SplatOp, ArangeOp>(def))
    return true;
  auto constant = mlir::dyn_cast<mlir::arith::ConstantOp>(def);
  return constant && mlir::isa<mlir::SplatElementsAttr>(constant.getValue());
}

/// A clone at `b` of `def`, whose one result becomes `type` (the same tile in
/// another layout), its operands taken through `operands`.
inline mlir::Value cloneInLayout(mlir::OpBuilder &b, mlir::Operation *def,
                                 mlir::RankedTensorType type, mlir::IRMapping &operands) {
  mlir::Operation *clone = b.clone(*def, operands);
  if (auto constant = mlir::dyn_cast<mlir::arith::ConstantOp>(clone))
    constant.setValueAttr(mlir::SplatElementsAttr::get(
        type, mlir::cast<mlir::SplatElementsAttr>(constant.getValue())
                  .getSplatValue<mlir::Attribute>()));
  clone->getResult(0).setType(type);
  return clone->getResult(0);
}

} // namespace tilejit::tile

#endif // TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_LAYOUTQUERIES_H
