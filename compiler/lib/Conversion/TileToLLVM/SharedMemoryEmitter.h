// The shared-memory half of the tile -> LLVM/NVVM emitter: the buffers
// tile.shared_alloc and tile.mbarrier_alloc place at fixed offsets from the
// start of the dynamic shared memory, then one scratch space every op reuses
// between barriers (layout conversions, reductions, ldmatrix staging).
#ifndef TILEJIT_LIB_CONVERSION_TILETOLLVM_SHAREDMEMORYEMITTER_H
#define TILEJIT_LIB_CONVERSION_TILETOLLVM_SHAREDMEMORYEMITTER_H

#include "Emitter.h"

namespace tilejit::lowering {

class SharedMemoryEmitter {
public:
  /// Lays out `kernel`'s buffers; `e`'s builder is in the function's entry
  /// block, where the base addresses are computed.
  SharedMemoryEmitter(Emitter &e, tile::KernelOp kernel);

  /// Bytes of dynamic shared memory the kernel needs (max over ops).
  int64_t bytes() const { return bytes_; }
  /// Base address (!llvm.ptr<3>) of a tile.shared_alloc or mbarrier buffer.
  Value buffer(Operation *alloc, Location loc);

  /// A barrier of the threads that share the scratch space: the whole
  /// program, or inside a tile.warp_specialize consumer region the consumer
  /// warps (the producer never reaches those barriers).
  void barrier(Location loc);
  /// Barriers from now on count `threads` threads (0: the whole program).
  void setBarrierThreads(int64_t threads) { barrierThreads_ = threads; }
  /// Makes room for `bytes` of scratch.
  void reserve(int64_t bytes) { bytes_ = std::max(bytes_, scratchBase_ + bytes); }
  /// Address of element `linear` of type `llvmType` at byte `offset` of scratch.
  Value address(Value linear, Type llvmType, int64_t offset, Location loc);
  /// Writes a distributed tile to scratch, row-major in `d.shape`, at `offset`.
  /// `pad` elements follow every row (the last dimension): rows then start on
  /// different banks, so threads reading down a column do not conflict.
  void store(const Distributed &d, const Regs &values, Type llvmType, int64_t offset,
             Location loc, int64_t pad = 0);
  /// Reads a distributed tile from scratch: register r takes the element at
  /// row-major position `source(index of r)` of a buffer shaped `srcShape`.
  /// `alongRows`: the dimension of `d` that `source` maps onto the buffer's
  /// last (a conversion's last, a transpose's permuted one), one step there
  /// one element along a row: a thread's consecutive elements there are read
  /// as vectors.
  Regs load(const Distributed &d, Type llvmType, llvm::ArrayRef<int64_t> srcShape,
            const std::function<Regs(llvm::ArrayRef<Value>)> &source, int64_t offset,
            Location loc, std::optional<unsigned> alongRows = std::nullopt,
            int64_t pad = 0);
  /// The row padding (elements) of a tile of `shape` stored from `from` and
  /// read back into `to`: the wider of the two sides' vector accesses and at
  /// least one 4-byte bank, so every row starts on another bank than the one
  /// before it while vectors stay aligned (the 2-D tiles of a layout
  /// conversion; 0 for a 1-D tile).
  int64_t rowPad(const Distributed &from, const Distributed &to, Type llvmType,
                 llvm::ArrayRef<int64_t> shape, std::optional<unsigned> alongRows);

private:
  Emitter &e;
  Value start_, scratch_;
  llvm::DenseMap<Operation *, int64_t> bufferOffsets_;
  int64_t scratchBase_ = 0, bytes_ = 0, barrierThreads_ = 0;
};

/// How many registers of `d` go to or from scratch as one vector access along
/// `dim` of rows `rowLength` long, at byte `offset` (at most 16 bytes).
unsigned sharedVectorWidth(const Distributed &d, unsigned dim, int64_t rowLength,
                           unsigned bytes, int64_t offset);

} // namespace tilejit::lowering

#endif // TILEJIT_LIB_CONVERSION_TILETOLLVM_SHAREDMEMORYEMITTER_H
