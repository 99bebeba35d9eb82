// Register layouts as data: which tile element each register of each thread holds.
//
// Every layout the dialect knows (blocked, slice, mma) is a sum of independent
// power-of-two contributions: a thread's register r holds the element at
//   regs[r] + sum(lane bit b set) lanes[b] + sum(warp bit b set) warps[b].
// A zero lane/warp basis means threads differing in that bit hold the same
// elements (replication). Lowering and the layout pass reason on this form.
#ifndef TILEJIT_DIALECT_TILE_IR_LAYOUTS_H
#define TILEJIT_DIALECT_TILE_IR_LAYOUTS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"

#include "tilejit/Dialect/Tile/IR/TileDialect.h"

namespace tilejit::tile {

using Index = llvm::SmallVector<int64_t, 4>;

struct Distributed {
  Index shape;
  llvm::SmallVector<Index> regs;  ///< per register: index offset
  llvm::SmallVector<Index> lanes; ///< 5 bases, one per lane-id bit
  llvm::SmallVector<Index> warps; ///< log2(numWarps) bases

  unsigned numRegs() const { return regs.size(); }
  /// Lane/warp bits whose basis is zero: threads differing only there hold
  /// the same elements; only the one with these bits clear should store.
  unsigned laneReplicationMask() const;
  unsigned warpReplicationMask() const;
  /// True if register r repeats an earlier register's element.
  bool isDuplicateRegister(unsigned r) const;
  /// Number of consecutive registers, starting at multiples of the result,
  /// that hold consecutive elements along `dim` (the vector width a memory
  /// access along `dim` may use), capped at `max`.
  unsigned contiguousRegisters(unsigned dim, unsigned max) const;
  /// Where every warp holds the whole tile, one element per thread, and each
  /// lane bit selects one bit of one index or nothing: per lane bit, the
  /// (dim, bit) it selects (dim = -1 for none), so the lane holding any element
  /// follows from its index, and any layout can take the tile by warp
  /// shuffles. Empty otherwise.
  llvm::SmallVector<std::pair<int, unsigned>> laneIndexBits() const;
};

/// The most registers a layout gives one thread for one tile: past any real
/// kernel's (a 256x256 f32 tile over 4 warps holds 512), and a bound on what
/// distribute() enumerates and the emitter unrolls.
inline constexpr int64_t kMaxRegistersPerThread = 1024;

/// The distribution of a tile of `shape` under `encoding` over `numWarps`
/// warps; failure when the encoding cannot hold that shape or would give a
/// thread more than kMaxRegistersPerThread registers.
llvm::FailureOr<Distributed> distribute(mlir::Attribute encoding,
                                        llvm::ArrayRef<int64_t> shape, int64_t numWarps);

/// Convenience for an encoded tile type.
llvm::FailureOr<Distributed> distribute(mlir::RankedTensorType type, int64_t numWarps);

/// Checks the layout of `type` (none is fine) against the tile and the
/// kernel's `numWarps`: a register layout of the tile's rank over exactly
/// those warps that distributes its static power-of-two shape, or a wgmma
/// operand layout of a 2-D tile. The error names the type and what disagrees.
mlir::LogicalResult
verifyLayout(mlir::RankedTensorType type, int64_t numWarps,
             llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// A coalescing blocked layout for `shape`: `vector` elements per thread along
/// the last dimension, lanes then warps filling the fastest dimensions first.
mlir::Attribute defaultBlockedLayout(mlir::MLIRContext *ctx,
                                     llvm::ArrayRef<int64_t> shape, int64_t numWarps,
                                     int64_t vector);

/// The mma.sync accumulator layout for an MxN result over `numWarps` warps.
mlir::Attribute mmaLayoutFor(mlir::MLIRContext *ctx, int64_t m, int64_t n,
                             int64_t numWarps);

/// The #tile.dot_operand layout of operand `opIdx` (0: A, 1: B) of a dot
/// whose accumulator is in `parent`, for `element` operands; `kContig` for
/// operands loaded from memory straight into registers.
mlir::Attribute dotOperandLayoutFor(MmaLayoutAttr parent, unsigned opIdx,
                                    mlir::Type element, bool kContig = false);

/// The register of an operand fragment that holds element `pack` of 32-bit
/// word `word` (a0..a3 of A, b0..b1 of B) of mma step `step` of outer tile
/// `tile` (16 rows of A, 8 columns of B), where a thread holds `kSteps` mma
/// steps of K per tile: the order distribute() lays out registers in.
int64_t fragmentRegister(DotOperandLayoutAttr layout, int64_t kSteps, int64_t tile,
                         int64_t step, int64_t word, int64_t pack);

/// A split-K accumulator (#tile.mma with wpk > 1) as a distribution over
/// [wpk, M, N]: each warp group's registers hold its partial sum at its own
/// leading index, so scratch memory can hold every partial.
llvm::FailureOr<Distributed> partialSums(mlir::RankedTensorType type, int64_t numWarps);

/// The swizzled shared layout of a tile whose rows hold `cols` elements.
SharedLayoutAttr sharedLayoutFor(mlir::MLIRContext *ctx, int64_t cols,
                                 mlir::Type element);

/// Number of warps a kernel runs with (its #tile.config, else 4).
int64_t getNumWarps(mlir::Operation *kernel);

} // namespace tilejit::tile

#endif // TILEJIT_DIALECT_TILE_IR_LAYOUTS_H
