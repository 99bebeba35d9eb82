// The mbarrier rings tile-warp-specialize builds: where a K step falls in a
// ring, the producer side's copies (by a producer warp or by a consumer
// thread, producer = 2) and the consumers' release of their slots, with one
// wgmma group kept in flight where it helps.
#ifndef TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_TMARINGS_H
#define TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_TMARINGS_H

#include "Staging.h"

namespace tilejit::tile {

/// Where a K iteration falls in the rings' sequence: the K steps a program
/// took in its earlier tiles (`base`, null without tile-persistent) + its K
/// index in this tile. A running count, not tile index x trip count, so that
/// tiles may take different numbers of K steps (a split tail's tiles).
struct RingPosition {
  mlir::Value kIv, kLb, kUb, kStep;
  mlir::Value base;
};

/// The position of `loop`'s iterations. With a persistent `tileLoop` (null:
/// none), first gives it the running count: an i32 iter_arg from 0, advanced
/// by `loop`'s trip count at each tile's end; `tileLoop` becomes the loop
/// that carries it (the old one is replaced).
RingPosition carryRingPosition(mlir::scf::ForOp loop, mlir::scf::ForOp &tileLoop);

/// Clones into `b` what `v` needs that is defined in `block` (the consumer
/// body): region-free ops without memory effects only (an integer division
/// is fine: the producer computes it for the same iterations the consumers
/// do); values from above stay.
mlir::FailureOr<mlir::Value> cloneChain(mlir::OpBuilder &b, mlir::Value v,
                                        mlir::Block *block, mlir::IRMapping &map);

/// (slot, parity) of an iteration in a ring of `stages`: its sequence number
/// i, i % stages and (i / stages) % 2, flipped for a producer, whose first
/// pass waits for nothing.
std::pair<mlir::Value, mlir::Value> slotAndParity(mlir::OpBuilder &b, mlir::Location loc,
                                                  const RingPosition &at, int64_t stages,
                                                  bool producer);

/// Issues one K step's copies from the producing thread: waits until the
/// step's slot is empty, expects its bytes on the full barrier and starts
/// one TMA copy per operand at the step's offsets. `map` takes the consumer
/// body's values (its K index, and the tile index for a persistent loop) to
/// the step's; what the offsets need from `body` is cloned (pure ops only).
mlir::LogicalResult issueStep(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::MutableArrayRef<StagedOperand> staged,
                              llvm::ArrayRef<mlir::BlockArgument> maps, mlir::Value full,
                              mlir::Value empty, const RingPosition &at, int64_t stages,
                              int64_t txBytes, mlir::Block *body, mlir::IRMapping &map);

/// producer = 2: thread 0 of the consumers issues the copies itself, stages - 1
/// K steps ahead of the step they all read (see TmaRings.cpp).
mlir::LogicalResult issueInline(mlir::scf::ForOp loop, RingPosition at,
                                mlir::MutableArrayRef<StagedOperand> staged,
                                llvm::ArrayRef<mlir::BlockArgument> maps,
                                mlir::Value full, mlir::Value empty, int64_t stages,
                                int64_t txBytes);

/// Keeps one wgmma group in flight across the consumer loop's iterations,
/// releasing each slot one iteration late (see TmaRings.cpp). Returns whether
/// the loop was rewritten.
bool keepOneGroupInFlight(mlir::scf::ForOp loop, mlir::Value empty, mlir::Value slot,
                          int64_t stages, RingPosition at);

} // namespace tilejit::tile

#endif // TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_TMARINGS_H
