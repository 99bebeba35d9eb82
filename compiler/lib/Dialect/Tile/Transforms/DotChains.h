// Which mma.sync dots tile-assign-layouts stacks all warps along M for, so
// that an accumulator reaches the next dot's A operand in registers.
#ifndef TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_DOTCHAINS_H
#define TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_DOTCHAINS_H

#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/DenseSet.h"

namespace tilejit::tile {

/// Whether tile-assign-layouts gives `op`'s results and tile operands one
/// layout (elementwise arithmetic, conversions, scans, pointer arithmetic).
bool sharesOperandLayout(mlir::Operation *op);

/// The dots of `kernel` whose result reaches another dot's A operand through
/// ops that share their operands' layout (a chain: C = A B, then f(C) D), and
/// every dot whose accumulator meets such a chain's in those ops. The m16n8
/// accumulator fragment of a thread is its m16n8k16 A fragment, so when all of
/// a chain's warps split M alike (warps stacked along M in both dots) the
/// accumulator is the next A operand as it stands; the dots it meets follow
/// them so that no other conversion takes the chain's place.
llvm::DenseSet<mlir::Operation *> chainedDots(KernelOp kernel);

} // namespace tilejit::tile

#endif // TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_DOTCHAINS_H
