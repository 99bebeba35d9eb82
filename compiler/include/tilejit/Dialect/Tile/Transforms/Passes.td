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

    `arch` (an Arch, parsed from its exact name where the option is read;
    none: no capabilities) selects the matrix path from that arch's
    capability table: with wgmma, a dot whose operands a loop loads with K
    contiguous (bf16/f16/e4m3, rows of 32, 64 or 128 bytes,
    M a multiple of 16 x warps, N at most 256) takes `#tile.wgmma_operand`
    operands; every other dot keeps the mma.sync fragments. `shared-bytes`
    (0: the arch's device profile) is the shared memory a program may use,
    less for a plan sized for a smaller device (GB10's 99 KiB on an H200).
  }];
  let options = [
    Option<"arch", "arch", "std::optional<::tilejit::Arch>", /*default=*/"std::nullopt",
           "Exact target arch (sm_90, sm_90a, sm_110a, sm_121a) whose capabilities pick the dot path">,
    Option<"sharedBytes", "shared-bytes", "int64_t", /*default=*/"0",
           "Shared memory per program (0: the arch's device profile)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TileRematerialize : Pass<"tile-rematerialize", "::tilejit::tile::KernelOp"> {
  let summary = "Compute cheap trees again in the layout a conversion asks for";
  let description = [{
    Runs after `tile-assign-layouts`. A `tile.convert_layout` into a blocked,
    slice or mma layout (or into a dot operand fragment loaded straight from
    global memory) that tile lowering could not do by renaming registers goes
    through shared memory. Where its operand is a tree of at most 16
    elementwise ops whose leaves are splats, constants, aranges, broadcasts of
    tiles every warp holds whole (moved by warp shuffles) and loads from
    views (into a fragment any load, into an accumulator a load nothing else
    reads), the tree is computed again in the target layout and the
    conversion goes. A split-K partial sum is never
    converted this way (each warp group holds only its part).
  }];
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

def TileWarpSpecialize : Pass<"tile-warp-specialize", "::tilejit::tile::KernelOp"> {
  let summary = "Feed a K loop's dots from a TMA producer warpgroup through mbarrier rings";
  let description = [{
    For a kernel whose `#tile.config` has `producer = 1`, on an arch whose
    capability table has TMA and wgmma (sm_90a). Runs after
    `tile-assign-layouts` and before `tile-pipeline-dots`. The top-level
    `scf.for` whose dot operands `tile-pipeline-dots` could stage gets, per
    operand, a `!tile.tensormap` kernel parameter (the runtime builds it from
    the view's `tile.make_view`: a parameter pointer, constant or parameter
    sizes, static strides) and a ring of `stages` slots; `tile.mbarrier_alloc`
    makes a "full" ring (one arrival: the producer's expected bytes) and an
    "empty" ring (one arrival per consumer warpgroup). The kernel body becomes
    the consumer region of a `tile.warp_specialize`; its loop waits for each
    slot, reads it with `tile.shared_load` and releases it with
    `tile.mbarrier_arrive` after its dots. The producer region walks the same
    iterations: wait for an empty slot, expect its bytes, `tile.tma_copy`
    each operand. Elsewhere (no TMA or wgmma) the pass drops `producer` from
    the config and `tile-pipeline-dots` stages the operands by cp.async.
  }];
  let options = [
    Option<"arch", "arch", "std::optional<::tilejit::Arch>", /*default=*/"std::nullopt",
           "Exact target arch whose capabilities decide whether TMA is used">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

def TilePersistent : Pass<"tile-persistent", "::tilejit::tile::KernelOp"> {
  let summary = "Walk a grid's tiles with at most one program per multiprocessor";
  let description = [{
    For a kernel whose `#tile.config` has `persistent = G` (G >= 1). Runs
    before `tile-assign-layouts`. The body becomes one `scf.for` (marked
    `tile.tile_loop`) over tile indices from `tile.program_id 0` to
    grid_x * grid_y in steps of `tile.num_programs 0`; inside it
    `tile.program_id` and `tile.num_programs` of axes 0 and 1 read tile t's
    coordinates and the logical grid, taken in groups of G along axis 0.
    The logical grid comes in two i32 parameters appended to the kernel
    (`tile.grid_dim` 0 and 1), which the runtime fills from the caller's grid
    while it launches min(tiles, multiprocessors) programs. A kernel that
    reads axis 2 is refused.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

#endif // TILEJIT_TILE_PASSES_TD
