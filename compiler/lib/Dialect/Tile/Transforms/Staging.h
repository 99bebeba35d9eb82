// What tile-pipeline-dots can stage through shared memory, shared with
// tile-assign-layouts, which picks the wgmma path only for dots whose
// operands will be staged (a wgmma operand has no register form to fall
// back on).
#ifndef TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_STAGING_H
#define TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_STAGING_H

#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <optional>
#include <string>

namespace tilejit::tile {

/// One dot operand a loop loads: load [-> transpose [1, 0]] -> convert_layout
/// into a #tile.dot_operand or #tile.wgmma_operand layout, and the ring of
/// shared-memory slots it is staged through once `buffer` is allocated.
struct StagedOperand {
  LoadOp load;
  TransposeOp transpose;
  ConvertLayoutOp convert;
  mlir::Value buffer;
};

/// The staging of operand `opIdx` of a dot in `loop`, or nullopt with `why`
/// saying what is missing (kContig fragments are never staged: they are
/// loaded straight from global memory).
std::optional<StagedOperand> matchStagedOperand(mlir::Value operand, unsigned opIdx,
                                                mlir::scf::ForOp loop, std::string &why);
/// Calls `decided` for each operand of each dot of `loop`'s body, in order,
/// with its staging (nullopt when it stays in registers) and why not.
void forEachDotOperand(mlir::scf::ForOp loop,
                       llvm::function_ref<void(DotOp dot, unsigned opIdx,
                                               const std::optional<StagedOperand> &staged,
                                               llvm::StringRef why)>
                           decided);
/// Every stageable operand of the dots of `loop`'s body, in order; each
/// decision is traced under `debugType` (-debug-only; -test-tile-staged-operands
/// prints them for tests).
llvm::SmallVector<StagedOperand> collectStagedOperands(mlir::scf::ForOp loop,
                                                       llvm::StringRef debugType);
/// `v` for the iteration whose induction variable `map` names: values from
/// outside the loop stay, body ops are cloned at `b`.
mlir::Value recomputeFor(mlir::OpBuilder &b, mlir::Value v, mlir::scf::ForOp loop,
                         mlir::IRMapping &map);
/// Allocates `s.buffer`: `stages` slots of the loaded tile's shape, swizzled
/// as tile::sharedLayoutFor lays out a staged operand.
void allocateRing(mlir::OpBuilder &b, mlir::Location loc, StagedOperand &s,
                  int64_t stages);
/// Replaces the operand's conversion by a tile.shared_load of slot `slot` and
/// erases the load (and transpose) it came from.
void readFromSlot(mlir::OpBuilder &b, StagedOperand &s, mlir::Value slot);

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
/// 16-bit B).
std::string whyNotStageable(LoadOp load, unsigned opIdx, bool transposed,
                            mlir::scf::ForOp loop);

/// Whether wgmma reads `dot`'s A from a slot: A is a load that the loop
/// around the dot stages (K contiguous); otherwise A comes from registers.
bool wgmmaStagesA(DotOp dot);

/// Why `dot` cannot lower to wgmma (given an arch that has it); empty when it
/// can: bf16, f16 or e4m3 operands, B transposed from an [N, K] view that the
/// loop around the dot loads and tile-pipeline-dots will stage with K
/// contiguous (or, 16-bit only, loaded [K, N]: wgmma's MN-major B), A staged
/// alike (wgmmaStagesA) or, when 16-bit, taken from registers, K rows (and
/// an MN-major B's N rows) of 32 or 64 bytes or a multiple of 128 (which
/// slots store as 128-byte column blocks of swizzle atoms), M a multiple of
/// 16 x `numWarps` (whole warpgroups of 64-row blocks) and N a multiple of 8
/// up to 256 (one instruction spans N).
std::string whyNotWgmma(DotOp dot, int64_t numWarps);

} // namespace tilejit::tile

#endif // TILEJIT_LIB_DIALECT_TILE_TRANSFORMS_STAGING_H
