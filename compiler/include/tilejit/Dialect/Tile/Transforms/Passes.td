// Passes on the tile dialect.
#ifndef TILEJIT_TILE_PASSES_TD
#define TILEJIT_TILE_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileAssignLayouts : Pass<"tile-assign-layouts", "::tilejit::tile::KernelOp"> {
  let summary = "Give every tile a register layout";
  let description = [{
    Sets a layout encoding (`#tile.blocked`, `#tile.slice`, `#tile.mma`) on
    every tile from the kernel's `#tile.config` (warps, vector width): loads
    and new tiles get coalescing blocked layouts, reductions the slice of
    their operand, dots the mma accumulator layout (also for the loop that
    carries it), broadcasts their operand's layout. Where a consumer needs a
    different layout than its producer has, splats and constants are
    rebuilt in place and anything else goes through `tile.convert_layout`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // TILEJIT_TILE_PASSES_TD
