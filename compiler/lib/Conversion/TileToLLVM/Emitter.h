// The tile -> LLVM/NVVM emitter: state shared by the op-family emitters.
//
// A kernel is lowered by walking its body in order. Every tile value maps to
// the scalars its thread holds (one per register of its layout, see
// Layouts.h); scalars map to one value. Op families register one emit
// function per op class (populate...Emitters), in the manner of pattern sets.
#ifndef TILEJIT_LIB_CONVERSION_TILETOLLVM_EMITTER_H
#define TILEJIT_LIB_CONVERSION_TILETOLLVM_EMITTER_H

#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/IR/OpTable.h"
#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <optional>

namespace tilejit::lowering {

using mlir::Location;
using mlir::LogicalResult;
using mlir::Operation;
using mlir::Type;
using mlir::Value;
using Regs = llvm::SmallVector<Value>;
using tile::Distributed;
using tile::Index;

/// A view at run time: base pointer, sizes (i32) and strides (i64) per dim.
struct ViewValue {
  Value base;
  Regs sizes, strides;
  tile::ViewType type;
};

class Emitter;
using EmitFn = std::function<LogicalResult(Emitter &, Operation *)>;
using EmitterTable = tile::OpTable<EmitFn>;

void populateElementwiseEmitters(EmitterTable &table);
void populateMemoryEmitters(EmitterTable &table);
void populateLayoutEmitters(EmitterTable &table);
void populateReduceEmitters(EmitterTable &table);
void populateDotEmitters(EmitterTable &table);
void populateControlFlowEmitters(EmitterTable &table);
void populateSharedEmitters(EmitterTable &table);
void populateAsyncEmitters(EmitterTable &table);

/// Every op family's emitters.
EmitterTable makeEmitterTable();
/// Diagnoses the first op of `kernel` that is unregistered, has no emitter,
/// or has an operand, result or block argument of a type the lowering cannot
/// hold (tile-verify-lowerable).
LogicalResult verifyLowerable(tile::KernelOp kernel, const EmitterTable &table);

/// `dst` (a 16-bit tile in a #tile.dot_operand layout) from `src`, its
/// same tile or (`transposed`) its transpose, through a swizzled scratch tile
/// read by ldmatrix: vector stores and one ldmatrix per four fragment words
/// instead of one 16-bit load per element. nullopt where ldmatrix cannot
/// read it (the caller moves it element by element).
std::optional<Regs> operandThroughLdmatrix(Emitter &e, Value src, Value dst,
                                           bool transposed);
/// How many registers of `d` go to or from scratch as one vector access along
/// `dim` of rows `rowLength` long, at byte `offset` (at most 16 bytes).
unsigned sharedVectorWidth(const Distributed &d, unsigned dim, int64_t rowLength,
                           unsigned bytes, int64_t offset);

class Emitter {
public:
  Emitter(tile::KernelOp kernel, mlir::LLVM::LLVMFuncOp func, const EmitterTable &table);

  /// Emits the kernel body into the function; the diagnostic names the op
  /// that has no GPU lowering.
  LogicalResult run();
  /// Emits every op of `block` except its terminator.
  LogicalResult emitBlock(mlir::Block &block);
  /// Postpones `work` (a wgmma dot's wait and promotion) until the next op
  /// that may depend on it: cp.async copies and scalar arithmetic are emitted
  /// first, so a K loop's refill copies issue while the tensor cores run.
  void defer(std::function<void()> work);

  mlir::OpBuilder b;
  mlir::MLIRContext *ctx;
  int64_t numWarps;
  /// Bytes of dynamic shared memory the kernel needs (max over ops).
  int64_t sharedBytes = 0;
  /// Threads a barrier() waits for: 0 for the whole program; the consumer
  /// warps' count inside a tile.warp_specialize consumer region (the producer
  /// warpgroup never reaches those barriers).
  int64_t barrierThreads = 0;
  /// Set when a dot was lowered to a tensor-core instruction that adds its
  /// products with fewer bits than f32 (e4m3 wgmma); the runtime's checks
  /// choose the wider R1h band from it (docs/numerics.md).
  bool reducedSums = false;

  // Values.
  Regs &regs(Value v);
  void map(Value v, Regs values) { regs_[v] = std::move(values); }
  ViewValue &view(Value v) { return views_[v]; }
  void mapView(Value v, ViewValue view) { views_[v] = std::move(view); }

  // Types and constants.
  /// The LLVM type of one element: f8E4M3FN -> i8, !tile.ptr -> !llvm.ptr<1>.
  Type elementType(Type tileOrScalar);
  Value i32(int64_t v, Location loc);
  Value i64(int64_t v, Location loc);
  Value zero(Type llvmType, Location loc);

  // Layouts and indices.
  const Distributed &layout(mlir::RankedTensorType type);
  /// A split-K accumulator's partial sums over [wpk, M, N] (tile::partialSums).
  const Distributed &partialLayout(mlir::RankedTensorType type);
  /// Per dimension, the part of an element's index that depends on the thread
  /// (hoisted to the kernel entry).
  const Regs &threadIndex(const Distributed &d);
  /// Index of register r, per dimension (i32).
  Regs elementIndex(const Distributed &d, unsigned r, Location loc);
  /// i1: this thread holds the first copy of its elements (replicated
  /// lanes/warps skip stores).
  Value isOwner(const Distributed &d, Location loc);
  /// Emits `body` in a block only the owners of `d`'s elements run.
  void ifOwner(const Distributed &d, Location loc, llvm::function_ref<void()> body);
  Value lane() const { return lane_; }
  Value warp() const { return warp_; }

  // Shared memory: tile.shared_alloc and tile.mbarrier_alloc buffers at fixed
  // offsets from the start, then the scratch space.
  /// Base address (!llvm.ptr<3>) of a tile.shared_alloc or mbarrier buffer.
  Value sharedBuffer(Operation *alloc, Location loc);

  // Shared memory scratch (one buffer reused by every op, between barriers).
  void barrier(Location loc);
  /// Address of element `linear` of type `llvmType` at byte `offset` of scratch.
  Value sharedAddress(Value linear, Type llvmType, int64_t offset, Location loc);
  void reserveShared(int64_t bytes) {
    sharedBytes = std::max(sharedBytes, scratchBase_ + bytes);
  }
  /// Writes a distributed tile to scratch, row-major in `d.shape`, at `offset`.
  /// `pad` elements follow every row (the last dimension): rows then start on
  /// different banks, so threads reading down a column do not conflict.
  void storeShared(const Distributed &d, const Regs &values, Type llvmType,
                   int64_t offset, Location loc, int64_t pad = 0);
  /// Reads a distributed tile from scratch: register r takes the element at
  /// row-major position `source(index of r)` of a buffer shaped `srcShape`.
  /// `alongRows`: the dimension of `d` that `source` maps onto the buffer's
  /// last (a conversion's last, a transpose's permuted one), one step there
  /// one element along a row: a thread's consecutive elements there are read
  /// as vectors.
  Regs loadShared(const Distributed &d, Type llvmType, llvm::ArrayRef<int64_t> srcShape,
                  const std::function<Regs(llvm::ArrayRef<Value>)> &source,
                  int64_t offset, Location loc,
                  std::optional<unsigned> alongRows = std::nullopt, int64_t pad = 0);
  /// The row padding (elements) of a tile of `shape` stored from `from` and
  /// read back into `to`: the wider of the two sides' vector accesses and at
  /// least one 4-byte bank, so every row starts on another bank than the one
  /// before it while vectors stay aligned (the 2-D tiles of a layout
  /// conversion; 0 for a 1-D tile).
  int64_t scratchRowPad(const Distributed &from, const Distributed &to, Type llvmType,
                        llvm::ArrayRef<int64_t> shape, std::optional<unsigned> alongRows);
  /// Row-major position of `index` in `shape`, rows `pad` elements apart
  /// more than their length.
  Value linearize(llvm::ArrayRef<Value> index, llvm::ArrayRef<int64_t> shape,
                  Location loc, int64_t pad = 0);

  /// shfl.sync of any scalar up to 64 bits (moved as one or two i32) across
  /// the whole warp: `lane` is the source lane (idx) or the lane mask (bfly).
  Value shuffle(Value v, Value lane, mlir::NVVM::ShflKind kind, Location loc);

  /// Calls an LLVM/NVVM intrinsic by name.
  Value intrinsic(llvm::StringRef name, Type result, mlir::ValueRange args, Location loc);
  /// Inline PTX returning `results` (a struct when several).
  llvm::SmallVector<Value> inlineAsm(llvm::StringRef text, llvm::StringRef constraints,
                                     mlir::TypeRange results, mlir::ValueRange args,
                                     bool sideEffects, Location loc);

private:
  tile::KernelOp kernel_;
  mlir::LLVM::LLVMFuncOp func_;
  const EmitterTable &table_;
  /// Runs the deferred work, if any.
  void runDeferred();

  std::function<void()> deferred_;
  llvm::DenseMap<Value, Regs> regs_;
  llvm::DenseMap<Value, ViewValue> views_;
  llvm::DenseMap<mlir::Type, std::unique_ptr<Distributed>> layouts_, partialLayouts_;
  std::map<const Distributed *, Regs> threadIndex_;
  mlir::OpBuilder::InsertPoint prologue_;
  Value lane_, warp_, shared_, sharedStart_;
  llvm::DenseMap<Operation *, int64_t> bufferOffsets_;
  int64_t scratchBase_ = 0;
};

/// The LLVM type of one element: f8E4M3FN -> i8, !tile.ptr -> !llvm.ptr<1>.
Type llvmElementType(mlir::MLIRContext *ctx, Type tileOrScalar);

/// Multiplying index by `stride` in i64 and adding to a global pointer.
Value gep(Emitter &e, Value ptr, Type elementType, Value offset, Location loc);

} // namespace tilejit::lowering

#endif // TILEJIT_LIB_CONVERSION_TILETOLLVM_EMITTER_H
