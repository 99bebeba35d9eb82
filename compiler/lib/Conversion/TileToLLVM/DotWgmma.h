// tile.dot on Hopper's warpgroup MMA (sm_90a), for dots whose operands are
// in #tile.wgmma_operand layouts (see DotWgmma.cpp).
#ifndef TILEJIT_LIB_CONVERSION_TILETOLLVM_DOTWGMMA_H
#define TILEJIT_LIB_CONVERSION_TILETOLLVM_DOTWGMMA_H

#include "Emitter.h"

namespace tilejit::lowering {

/// Emits `dot` (both operands #tile.wgmma_operand, the accumulator
/// #tile.mma<wpc = [warps, 1]>) as wgmma.mma_async on shared-memory
/// descriptors; the wait (Emitter::defer) comes before the first op that may
/// use the dot's result.
LogicalResult emitWgmmaDot(Emitter &e, tile::DotOp dot);
/// Emits `dot` as one wgmma group with no wait: its result registers are the
/// instructions' outputs, read only through a tile.dot_wait. A zero
/// accumulator is never read (the first instruction starts from zero).
LogicalResult emitWgmmaDotAsync(Emitter &e, tile::DotAsyncOp dot);
/// wgmma.wait_group with the waited values' registers passed through.
LogicalResult emitDotWait(Emitter &e, tile::DotWaitOp wait);

} // namespace tilejit::lowering

#endif // TILEJIT_LIB_CONVERSION_TILETOLLVM_DOTWGMMA_H
