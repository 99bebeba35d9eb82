// The `tile` dialect, its types and attributes (C++ side of the ODS files).
#ifndef TILEJIT_DIALECT_TILE_IR_TILEDIALECT_H
#define TILEJIT_DIALECT_TILE_IR_TILEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "tilejit/Dialect/Tile/IR/TileEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "tilejit/Dialect/Tile/IR/TileTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tilejit/Dialect/Tile/IR/TileAttrs.h.inc"

// After the attributes: the discardable attributes' helpers name their classes.
#include "tilejit/Dialect/Tile/IR/TileDialect.h.inc"

namespace tilejit::tile {

/// For a pointer or a tile of pointers: the pointee, of the same shape.
mlir::Type getPointeeType(mlir::Type ptrOrPtrTile);
/// For a scalar or a tile: i1 of the same shape.
mlir::Type getMaskType(mlir::Type scalarOrTile);
/// For a scalar or a tile: `element` in the same shape.
mlir::Type getSameShape(mlir::Type scalarOrTile, mlir::Type element);
/// True when converting `from` to `to` is exact for every value of `from`.
bool isWideningConversion(mlir::Type from, mlir::Type to);
/// Prints a type the way diagnostics and users name it (tile<64x128xbf16>).
std::string describeType(mlir::Type type);

} // namespace tilejit::tile

#endif // TILEJIT_DIALECT_TILE_IR_TILEDIALECT_H
