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

    `arch` (an exact arch name; empty: none) selects the matrix path from
    that arch's capability table: with wgmma, a dot whose operands a loop
    loads with K contiguous (bf16/f16/e4m3, rows of 32, 64 or 128 bytes,
    M a multiple of 16 x warps, N at most 256) takes `#tile.wgmma_operand`
    operands; every other dot keeps the mma.sync fragments.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"\"",
           "Exact target arch (sm_90, sm_90a, sm_110a, sm_121a) whose capabilities pick the dot path">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TilePipelineDots : Pass<"tile-pipeline-dots", "::tilejit::tile::KernelOp"> {
  let summary = "Stage loop-loaded dot operands through shared memory, pipelined";
  let description = [{
    Runs after `tile-assign-layouts`. In an `scf.for`, a `tile.dot` operand
    that is `tile.convert_layout(tile.load)` (or of `tile.transpose [1, 0]`
    of a load) into a `#tile.dot_operand` layout, from a view whose last
    dimension is contiguous in 16-byte chunks, becomes a
    `tile.shared_load` from a `tile.shared_alloc` ring of `stages` slots (the
    kernel's `#tile.config`) that `tile.async_copy` fills `stages - 1`
    iterations ahead. One `tile.async_wait` per iteration (its barrier)
    orders the copies and reads. Other operands keep the register path.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // TILEJIT_TILE_PASSES_TD
