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
class SharedMemoryEmitter;

class Emitter {
public:
  Emitter(tile::KernelOp kernel, mlir::LLVM::LLVMFuncOp func, const EmitterTable &table);
  ~Emitter();

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

  /// Row-major position of `index` in `shape`, rows `pad` elements apart
  /// more than their length.
  Value linearize(llvm::ArrayRef<Value> index, llvm::ArrayRef<int64_t> shape,
                  Location loc, int64_t pad = 0);

  /// The kernel's shared memory: buffers, scratch and barriers.
  SharedMemoryEmitter &shared() { return *shared_; }

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
  Value lane_, warp_;
  std::unique_ptr<SharedMemoryEmitter> shared_;
};

/// The LLVM type of one element: f8E4M3FN -> i8, !tile.ptr -> !llvm.ptr<1>.
Type llvmElementType(mlir::MLIRContext *ctx, Type tileOrScalar);

/// Multiplying index by `stride` in i64 and adding to a global pointer.
Value gep(Emitter &e, Value ptr, Type elementType, Value offset, Location loc);

} // namespace tilejit::lowering

#endif // TILEJIT_LIB_CONVERSION_TILETOLLVM_EMITTER_H
