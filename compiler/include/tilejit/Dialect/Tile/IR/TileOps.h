// Operations of the `tile` dialect.
#ifndef TILEJIT_DIALECT_TILE_IR_TILEOPS_H
#define TILEJIT_DIALECT_TILE_IR_TILEOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tilejit/Dialect/Tile/IR/TileDialect.h"

#define GET_OP_CLASSES
#include "tilejit/Dialect/Tile/IR/TileOps.h.inc"

#endif // TILEJIT_DIALECT_TILE_IR_TILEOPS_H
