// Shared-memory staging as tile ops (made by tile-pipeline-dots, after
// layouts): rings of tile-sized slots in shared memory, filled by cp.async
// copies issued ahead of the loop iteration that reads them.
//
// Semantics: a copy into a slot is complete for the reading threads only
// after the `tile.async_wait` that covers its group; the wait is also the
// barrier that keeps a slot from being refilled while it is still read.
#ifndef TILEJIT_TILE_SHARED_OPS_TD
#define TILEJIT_TILE_SHARED_OPS_TD

def Tile_SharedBuffer : Type<
    And<[MemRefRankOf<[F16, BF16, F8E4M3FN], [3]>.predicate,
         CPred<"::llvm::isa_and_nonnull<::tilejit::tile::SharedLayoutAttr>("
               "::llvm::cast<::mlir::MemRefType>($_self).getMemorySpace())">]>,
    "3-D memref of f16, bf16 or f8E4M3FN in a #tile.shared memory space", "::mlir::MemRefType">;

def Tile_SharedAllocOp : Tile_Op<"shared_alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "A ring of tile-sized buffers in shared memory";
  let description = [{
    `memref<S x R x C x T, #tile.shared<...>>` holds S slots of an R x C tile.
    The buffer lives for the whole kernel (lowering places it at a fixed
    offset of the dynamic shared memory, before the scratch space other ops
    use). Only `tile.async_copy` writes it and `tile.shared_load` reads it.

    ```mlir
    %buf = tile.shared_alloc : memref<3x128x32xbf16, #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>>
    ```
  }];
  let results = (outs Tile_SharedBuffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_AsyncCopyOp : Tile_Op<"async_copy", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Starts copying a tile from a view into a shared-memory slot";
  let description = [{
    Slot `slot` of `buffer` receives the R x C tile of `view` at `offsets`, as
    `tile.load` would read it: elements outside the view become zero. The copy
    is asynchronous (cp.async, 16 bytes per thread and copy, bypassing
    registers); it belongs to the group the next `tile.async_commit` closes,
    and its data may be read only after a `tile.async_wait` that leaves fewer
    groups pending. The view's last dimension must be contiguous, and its
    size, the offset along it and every other stride multiples of 16 bytes.

    ```mlir
    tile.async_copy %a[%row, %k], %buf[%slot] : !tile.view<?x4096xbf16, strides = [4096, 1]>, memref<3x128x32xbf16, #shared>
    ```
  }];
  let arguments = (ins Tile_ViewType:$view, Variadic<I32>:$offsets,
                       Tile_SharedBuffer:$buffer, I32:$slot);
  let assemblyFormat = [{
    $view `[` $offsets `]` `,` $buffer `[` $slot `]` attr-dict `:` type($view) `,` type($buffer)
  }];
  let hasVerifier = 1;
}

def Tile_AsyncCommitOp : Tile_Op<"async_commit"> {
  let summary = "Closes the group of asynchronous copies started so far";
  let description = [{
    ```mlir
    tile.async_commit
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_AsyncWaitOp : Tile_Op<"async_wait"> {
  let summary = "Waits until at most `pending` copy groups are in flight";
  let description = [{
    Waits for this thread's older groups (cp.async.wait_group), then for every
    thread of the program (a barrier), so that all finished copies are
    visible to every thread and no thread still reads a slot that a later
    copy reuses.

    ```mlir
    tile.async_wait 1
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>]>:$pending);
  let assemblyFormat = "$pending attr-dict";
}

def Tile_SharedLoadOp : Tile_Op<"shared_load", [MemoryEffects<[MemRead]>]> {
  let summary = "Reads a shared-memory slot into registers";
  let description = [{
    The part of slot `slot` of `buffer` that starts at `offsets` (slot
    coordinates, zero when absent) and has the result's shape, or with
    `transpose` the transpose of the part (the result is then C x R). The
    result is an operand of a `tile.dot` in a `#tile.dot_operand` layout;
    lowering reads it with ldmatrix, which needs the operand's K dimension
    contiguous in the slot, or for 16-bit elements its M/N dimension
    (ldmatrix.trans). Offsets move along K only, by whole mma K steps
    (8 * kWidth), so a dot can be split into steps that each read their own
    fragments.

    ```mlir
    %a = tile.shared_load %buf[%slot] : memref<3x128x32xbf16, #shared> -> tensor<128x32xbf16, #tile.dot_operand<opIdx = 0, parent = #mma, kWidth = 2>>
    %a1 = tile.shared_load %buf[%slot] offsets [0, 16] : memref<3x128x32xbf16, #shared> -> tensor<128x16xbf16, #tile.dot_operand<opIdx = 0, parent = #mma, kWidth = 2>>
    %w = tile.shared_load %wbuf[%slot] transpose : memref<3x128x64xf8E4M3FN, #shared> -> tensor<64x128xf8E4M3FN, #tile.dot_operand<opIdx = 1, parent = #mma, kWidth = 4>>
    ```
  }];
  let arguments = (ins Tile_SharedBuffer:$buffer, I32:$slot,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets, UnitAttr:$transpose);
  let results = (outs Tile_DotOperandTile:$result);
  let assemblyFormat = [{
    $buffer `[` $slot `]` (`offsets` $offsets^)? (`transpose` $transpose^)? attr-dict
        `:` type($buffer) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The slot dimension K runs along (1: rows hold K; 0: ldmatrix.trans).
    unsigned getKDim();
    /// `offsets`, or zeros.
    ::llvm::SmallVector<int64_t, 2> getSlotOffsets();
  }];
  let hasVerifier = 1;
}

#endif // TILEJIT_TILE_SHARED_OPS_TD
