// What tile-pipeline-dots can stage through shared memory, shared with
// tile-assign-layouts, which picks the wgmma path only for dots whose
// operands will be staged (a wgmma operand has no register form to fall
// back on).
#ifndef TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_STAGING_H
#define TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_STAGING_H

#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <string>

namespace tilejit::tile {

/// True when `v` can be recomputed for another iteration of `loop`: it is
/// defined outside the loop, is its induction variable, or comes from pure
/// ops of such values in the loop body.
bool isRecomputable(mlir::Value v, mlir::scf::ForOp loop);

/// Why `load`, feeding operand `opIdx` of a dot in `loop` directly
/// (`transposed`: through tile.transpose [1, 0]), cannot be copied into a
/// slot by 16-byte cp.async chunks for any iteration; empty when it can: a
/// 2-D view with a contiguous last dimension, static 16-byte-multiple size
/// and row stride, zero padding, offsets recomputable with the column one a
/// chunk multiple, and ldmatrix able to read the slot (K contiguous unless
/// 16-bit B). The passes trace the reason (-debug-only).
std::string whyNotStageable(LoadOp load, unsigned opIdx, bool transposed,
                            mlir::scf::ForOp loop);

/// Why `dot` cannot lower to wgmma (given an arch that has it); empty when it
/// can: bf16, f16 or e4m3 operands that the loop around it loads and
/// tile-pipeline-dots will stage with K contiguous (A as loaded, B
/// transposed from an [N, K] view), rows of 32, 64 or 128 bytes (one wgmma
/// swizzle atom wide), M a multiple of 16 x `numWarps` (whole warpgroups of
/// 64-row blocks) and N a multiple of 8 up to 256 (one instruction spans N).
std::string whyNotWgmma(DotOp dot, int64_t numWarps);

} // namespace tilejit::tile

#endif // TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_STAGING_H
