// The DType (support/DType.h) of an MLIR element type: the one mapping the
// builder (fromMlirType) and the interpreter (the types it holds) share.
#ifndef TILEJIT_DIALECT_TILE_IR_ELEMENTTYPES_H
#define TILEJIT_DIALECT_TILE_IR_ELEMENTTYPES_H

#include "tilejit/support/DType.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace tilejit::tile {

/// The DType of scalar type `t` (any signedness of an integer width DType
/// has); std::nullopt for anything else, index included.
inline std::optional<DType> dtypeOf(mlir::Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (mlir::isa<mlir::Float8E4M3FNType>(t))
    return DType::F8E4M3;
  if (t.isInteger(1))
    return DType::I1;
  if (t.isInteger(8))
    return DType::I8;
  if (t.isInteger(32))
    return DType::I32;
  if (t.isInteger(64))
    return DType::I64;
  return std::nullopt;
}

} // namespace tilejit::tile

#endif // TILEJIT_DIALECT_TILE_IR_ELEMENTTYPES_H
