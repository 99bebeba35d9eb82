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

} // namespace tilejit::lowering

#endif // TILEJIT_LIB_CONVERSION_TILETOLLVM_DOTWGMMA_H
