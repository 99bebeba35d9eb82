// tile.dot on Hopper's warpgroup MMA (sm_90a), for dots whose operands are
// in #tile.wgmma_operand layouts (see DotWgmma.cpp).
#ifndef TILEJIT_LIB_CONVERSION_TILETOLLVM_DOTWGMMA_H
#define TILEJIT_LIB_CONVERSION_TILETOLLVM_DOTWGMMA_H

#include "Emitter.h"

namespace tilejit::lowering {

/// The 32-bit word `word` (a0..a3 of A, b0..b1 of B) of mma step `step` of
/// outer tile `tile` of an operand fragment (`regs` in `layout`, `kSteps`
/// steps a tile), its kWidth elements packed: fragmentRegister()'s order.
Value fragmentWord(Emitter &e, const Regs &regs, tile::DotOperandLayoutAttr layout,
                   int64_t kSteps, int64_t tile, int64_t step, int64_t word,
                   Location loc);

/// Emits `dot` (B #tile.wgmma_operand, A #tile.wgmma_operand or 16-bit A
/// fragments of #tile.dot_operand<parent = the accumulator's>, the
/// accumulator #tile.mma<wpc = [warps, 1]>) as wgmma.mma_async on
/// shared-memory descriptors (and A registers); the wait (Emitter::defer)
/// comes before the first op that may use the dot's result.
LogicalResult emitWgmmaDot(Emitter &e, tile::DotOp dot);
/// Emits `dot` as one wgmma group with no wait: its result registers are the
/// instructions' outputs, read only through a tile.dot_wait. A zero
/// accumulator is never read (the first instruction starts from zero).
LogicalResult emitWgmmaDotAsync(Emitter &e, tile::DotAsyncOp dot);
/// wgmma.wait_group with the waited values' registers passed through.
LogicalResult emitDotWait(Emitter &e, tile::DotWaitOp wait);

} // namespace tilejit::lowering

#endif // TILEJIT_LIB_CONVERSION_TILETOLLVM_DOTWGMMA_H
