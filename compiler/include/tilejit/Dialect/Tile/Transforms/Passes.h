// Passes on the tile dialect (declared in Passes.td).
#ifndef TILEJIT_DIALECT_TILE_TRANSFORMS_PASSES_H
#define TILEJIT_DIALECT_TILE_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "tilejit/support/ArchOption.h"

namespace tilejit::tile {

#define GEN_PASS_DECL
#include "tilejit/Dialect/Tile/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tilejit/Dialect/Tile/Transforms/Passes.h.inc"

} // namespace tilejit::tile

#endif // TILEJIT_DIALECT_TILE_TRANSFORMS_PASSES_H
