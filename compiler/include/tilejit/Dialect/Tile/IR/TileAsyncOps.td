// Hopper's asynchronous pipeline as tile ops (made by tile-warp-specialize,
// after layouts): mbarrier rings, TMA copies into shared-memory slots, and
// the split of a program's warps into a producer and consumers, and the
// region one thread runs (a consumer issuing its own copies).
//
// Semantics: an mbarrier completes a phase when all of its expected arrivals
// and transaction bytes are in; a wait names the phase it waits for by parity
// (phase i has parity i % 2) and returns once that phase has completed. A
// freshly allocated barrier is in phase 0, so a wait for parity 1 returns at
// once: that is how a producer's first pass over an empty ring starts.
#ifndef TILEJIT_TILE_ASYNC_OPS_TD
#define TILEJIT_TILE_ASYNC_OPS_TD

def Tile_MbarrierAllocOp : Tile_Op<"mbarrier_alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "A ring of mbarriers in shared memory, initialized";
  let description = [{
    Allocates and initializes `count` mbarriers, each expecting `arrivals`
    arrivals per phase (and the bytes an `tile.mbarrier_expect_tx` adds).
    Every thread of the program must reach it: the barriers are initialized
    by one thread and published to all by a barrier of the whole program.
    Only at the top level of a kernel.

    ```mlir
    %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<4>
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<1>]>:$arrivals);
  let results = (outs Tile_BarriersType:$result);
  let assemblyFormat = "`arrivals` `=` $arrivals attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_MbarrierArriveOp : Tile_Op<"mbarrier_arrive"> {
  let summary = "Each warpgroup (or warp) of the executing threads arrives once";
  let description = [{
    One arrival on barrier `slot` of the ring per warpgroup (4 warps) that
    executes it, made after every earlier op of that warpgroup, including its
    asynchronous tensor-core reads of shared memory (a consumer releasing a
    slot it has read). A ring released this way expects one arrival per
    consumer warpgroup. With `per_warp`, one arrival per warp instead, after
    that warp's earlier ops: for consumers whose reads of the slot are warp
    instructions (ldmatrix for mma.sync), which the warps of a warpgroup do
    not finish together; such a ring expects one arrival per consumer warp.
    With `if %cond`, only where `cond` holds (a predicated arrival: no branch
    between a wgmma and its wait).

    ```mlir
    tile.mbarrier_arrive %empty[%slot] : !tile.barriers<4>
    tile.mbarrier_arrive %empty[%slot] per_warp : !tile.barriers<4>
    tile.mbarrier_arrive %empty[%previous] if %notFirst : !tile.barriers<4>
    ```
  }];
  let arguments = (ins Tile_BarriersType:$barriers, I32:$slot, Optional<I1>:$predicate,
                       UnitAttr:$per_warp);
  let assemblyFormat = [{
    $barriers `[` $slot `]` (`if` $predicate^)? (`per_warp` $per_warp^)? attr-dict
        `:` type($barriers)
  }];
}

def Tile_MbarrierExpectTxOp : Tile_Op<"mbarrier_expect_tx"> {
  let summary = "Arrives once and expects `bytes` of asynchronous copies";
  let description = [{
    The executing thread arrives on barrier `slot` and adds `bytes` to the
    transaction bytes its current phase waits for: the phase completes when
    the TMA copies that name the barrier have written that many bytes. Only
    where one thread runs it: in the producer region of `tile.warp_specialize`
    or in a `tile.single_thread`.

    ```mlir
    tile.mbarrier_expect_tx %full[%slot], 32768 : !tile.barriers<4>
    ```
  }];
  let arguments = (ins Tile_BarriersType:$barriers, I32:$slot,
                       ConfinedAttr<I32Attr, [IntMinValue<1>]>:$bytes);
  let assemblyFormat = [{
    $barriers `[` $slot `]` `,` $bytes attr-dict `:` type($barriers)
  }];
  let hasVerifier = 1;
}

def Tile_MbarrierWaitOp : Tile_Op<"mbarrier_wait"> {
  let summary = "Waits until the phase of the given parity has completed";
  let description = [{
    Blocks the executing threads until barrier `slot` has completed the
    phase whose parity is `parity` (i32, 0 or 1). What the completing
    arrivals and copies wrote before it is then visible to them.

    ```mlir
    tile.mbarrier_wait %full[%slot], %parity : !tile.barriers<4>
    ```
  }];
  let arguments = (ins Tile_BarriersType:$barriers, I32:$slot, I32:$parity);
  let assemblyFormat = [{
    $barriers `[` $slot `]` `,` $parity attr-dict `:` type($barriers)
  }];
}

def Tile_TmaCopyOp : Tile_Op<"tma_copy", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Starts a TMA copy of a box of a view into a shared-memory slot";
  let description = [{
    Slot `slot` of `buffer` receives the box of the tensor map's view whose
    first element is at `offsets` (row, column), swizzled as the buffer's
    `#tile.shared` layout describes; elements outside the view are zero. The
    copy is asynchronous: it adds its bytes to barrier `slot` of the ring
    `barriers`,
    whose phase completes when all of them are written. The box must be the
    slot's shape. Only where one thread issues it: in the producer region of
    `tile.warp_specialize` or in a `tile.single_thread`.

    ```mlir
    tile.tma_copy %a_map[%row, %k], %buf[%slot], %full : !tile.tensormap<[128, 128], f8E4M3FN>, memref<4x128x128xf8E4M3FN, #shared>, !tile.barriers<4>
    ```
  }];
  let arguments = (ins Tile_TensorMapType:$map, Variadic<I32>:$offsets,
                       Tile_SharedBuffer:$buffer, I32:$slot,
                       Tile_BarriersType:$barriers);
  let assemblyFormat = [{
    $map `[` $offsets `]` `,` $buffer `[` $slot `]` `,` $barriers attr-dict
        `:` type($map) `,` type($buffer) `,` type($barriers)
  }];
  let hasVerifier = 1;
}

def Tile_WarpSpecializeOp : Tile_Op<"warp_specialize", [
    RecursiveMemoryEffects, NoTerminator, HasParent<"KernelOp">]> {
  let summary = "Splits the program's warps into a TMA producer and consumers";
  let description = [{
    The program runs with `producer_warps` more warps than its `#tile.config`
    warps: a warpgroup (4, the default) or one warp. One thread of the first
    of them runs the `producer` region; the config's warps run the `consumer`
    region, in which every tile layout is theirs alone. With register budgets
    (a producer warpgroup only: setmaxnreg acts per warpgroup), the producer
    lowers its budget to `producer_regs` per thread and the consumers raise
    theirs to `consumer_regs`; without them every thread keeps the kernel's
    (the targets without setmaxnreg, and mma.sync consumers, which a single
    producer warp serves). Values flow in from above; nothing flows out, and
    nothing follows it in the kernel but `tile.return`. The regions talk
    through mbarrier rings only.

    ```mlir
    tile.warp_specialize producer_regs = 40, consumer_regs = 232 producer {
      scf.for ... { tile.mbarrier_wait ...; tile.mbarrier_expect_tx ...; tile.tma_copy ... }
    } consumer {
      ... tile.dot ...; tile.mbarrier_arrive ...; tile.store ...
    }
    tile.warp_specialize producer_warps = 1 producer { ... } consumer { ... }
    ```
  }];
  let arguments = (ins
      OptionalAttr<ConfinedAttr<I32Attr, [IntMinValue<24>, IntMaxValue<256>]>>:$producer_regs,
      OptionalAttr<ConfinedAttr<I32Attr, [IntMinValue<24>, IntMaxValue<256>]>>:$consumer_regs,
      OptionalAttr<ConfinedAttr<I32Attr, [IntMinValue<1>, IntMaxValue<4>]>>:$producer_warps);
  let regions = (region MaxSizedRegion<1>:$producer, MaxSizedRegion<1>:$consumer);
  let assemblyFormat = [{
    (`producer_regs` `=` $producer_regs^ `,` `consumer_regs` `=` $consumer_regs)?
        (`producer_warps` `=` $producer_warps^)?
        `producer` $producer `consumer` $consumer attr-dict
  }];
  let extraClassDeclaration = [{
    /// The warps beside the config's: the attribute, else a warpgroup.
    int64_t getNumProducerWarps() { return getProducerWarps().value_or(4); }
  }];
  let hasVerifier = 1;
}

def Tile_SingleThreadOp : Tile_Op<"single_thread", [
    RecursiveMemoryEffects, NoTerminator, SingleBlock]> {
  let summary = "One thread of the program runs the region; the others skip it";
  let description = [{
    Thread 0 of warp 0 runs `body`; every other thread goes straight past.
    For a consumer that issues its own TMA copies (`producer = 2`): the
    copies and the `tile.mbarrier_expect_tx` that counts their bytes are
    issued once, by that thread, while the other threads wait on the ring.
    Values flow in from above; nothing flows out.

    ```mlir
    tile.single_thread {
      tile.mbarrier_wait %empty[%slot], %parity : !tile.barriers<3>
      tile.mbarrier_expect_tx %full[%slot], 32768 : !tile.barriers<3>
      tile.tma_copy ...
    }
    ```
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict";
}

def Tile_DotAsyncOp : Tile_Op<"dot_async", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "Starts acc + a x b on the tensor cores; the result is in flight";
  let description = [{
    `tile.dot`'s product on Hopper's warpgroup MMA (operands in
    `#tile.wgmma_operand` layouts, read from shared memory), issued as one
    group and not waited for: the result may be read only through a
    `tile.dot_wait` that leaves fewer groups pending than were started after
    it, and its operands' slots stay in use until then. The products are
    summed as the hardware sums them (for e4m3: with fewer bits than f32,
    R1h); `tile-warp-specialize` starts each K block's e4m3 products from a
    zero accumulator and adds them in f32 itself.

    ```mlir
    %p = tile.dot_async %a, %b, %zero : tensor<128x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 0>>, tensor<128x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 1>> -> tensor<128x128xf32, #tile.mma<wpc = [8, 1]>>
    ```
  }];
  let arguments = (ins Tile_DotOperandTile:$a, Tile_DotOperandTile:$b, Tile_AccTile:$acc);
  let results = (outs Tile_AccTile:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_DotWaitOp : Tile_Op<"dot_wait", [AllTypesMatch<["values", "results"]>]> {
  let summary = "Waits until at most `pending` started dot groups are in flight";
  let description = [{
    Blocks the executing warpgroups until no more than `pending` of the
    `tile.dot_async` groups they started are unfinished, then yields
    `values` (results of earlier `tile.dot_async` ops, now complete, or any
    other tiles, unchanged). With `pending = 1` the group started last stays
    in flight while the one before it is read.

    ```mlir
    %done = tile.dot_wait %prev {pending = 1} : tensor<128x128xf32, #tile.mma<wpc = [8, 1]>>
    ```
  }];
  let arguments = (ins Variadic<Tile_AccTile>:$values,
                       ConfinedAttr<I32Attr, [IntMinValue<0>]>:$pending);
  let results = (outs Variadic<Tile_AccTile>:$results);
  let assemblyFormat = "($values^)? attr-dict (`:` type($values)^)?";
}

#endif // TILEJIT_TILE_ASYNC_OPS_TD
