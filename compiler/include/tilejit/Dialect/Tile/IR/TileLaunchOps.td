// Programmatic dependent launch as tile ops: a kernel launched after another
// on the same stream may start before that one has finished, when it says
// where it begins to depend on it (PTX griddepcontrol, sm_90 and later).
//
// Semantics. Until a program passes `tile.grid_dep_wait`, the kernels before
// it on the stream may still be running: it may read only memory no kernel
// writes (parameters marked `tile.invariant`: weights) and write nothing.
// After the wait, everything those kernels wrote is visible. The runtime
// launches a kernel that holds a wait with programmatic stream
// serialization; any other kernel starts after its predecessor has ended, as
// always, and a wait is then a no-op. `tile.grid_dep_launch` lets the next
// kernel start once every program of this one has passed it (or ended); it
// changes no result, only when the next kernel's programs are scheduled.
#ifndef TILEJIT_TILE_LAUNCH_OPS_TD
#define TILEJIT_TILE_LAUNCH_OPS_TD

def Tile_GridDepWaitOp : Tile_Op<"grid_dep_wait"> {
  let summary = "Waits until the kernels before this one have finished";
  let description = [{
    Blocks the program until every kernel launched before this one on the
    stream has completed and its memory operations are visible
    (griddepcontrol.wait). At most one per kernel, in the kernel's body
    itself (not in a loop or a branch, so every program passes it). Before
    it, global memory is read only through parameters marked
    `tile.invariant` (and only by `tile.load`, `tile.ptr_load` and
    `tile.async_copy`), and written not at all; `tile.prefetch_l2` may come
    anywhere.

    ```mlir
    tile.grid_dep_wait
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Tile_GridDepLaunchOp : Tile_Op<"grid_dep_launch"> {
  let summary = "Lets the next kernel on the stream start its programs";
  let description = [{
    Signals that the kernel launched after this one may be scheduled once
    every program of this kernel has signalled or ended
    (griddepcontrol.launch_dependents). Once it has passed in every
    program, all of this kernel's programs have been scheduled, so the next
    kernel's programs only fill the multiprocessors this one leaves and start
    their weight loads while this one drains. Correctness never depends on
    where it stands: the next kernel's `tile.grid_dep_wait` still waits for
    this kernel to end.

    ```mlir
    tile.grid_dep_launch
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_PrefetchL2Op : Tile_Op<"prefetch_l2"> {
  let summary = "Starts bringing a byte range of global memory into L2";
  let description = [{
    Asks for the `bytes` bytes at `ptr` in the L2 cache
    (cp.async.bulk.prefetch.L2, issued by one thread of the program). A hint:
    it reads nothing into registers, writes nothing and needs no wait, so it
    may come before `tile.grid_dep_wait` on any memory. `ptr` and `bytes` must
    be multiples of 16 bytes and the range inside the pointer's allocation
    (the interpreter checks both).

    ```mlir
    tile.prefetch_l2 %w, %bytes : !tile.ptr<f8E4M3FN>
    ```
  }];
  let arguments = (ins Tile_PointerType:$ptr, I32:$bytes);
  let assemblyFormat = "$ptr `,` $bytes attr-dict `:` type($ptr)";
  let hasVerifier = 1;
}

#endif // TILEJIT_TILE_LAUNCH_OPS_TD
