// tile-warp-specialize (producer = 1): on sm_90a the K loop's staged dot
// operands come by TMA from a producer warpgroup through mbarrier rings: one
// !tile.tensormap parameter per operand (sourced from the make_view), rings
// of `stages` slots, a "full" ring of one arrival and an "empty" ring of one
// arrival per consumer warpgroup; the kernel body is the consumer region,
// which waits for each slot and releases it after its dots. Without wgmma
// (sm_90, sm_110a, sm_121a) the consumers are mma.sync warps reading the
// slots by ldmatrix: one producer warp and no register split, and an "empty"
// ring of one arrival per consumer warp, each released per warp.
// Lowering: the warp branch with setmaxnreg, mbarrier waits that spin on
// try_wait, one elected thread issuing cp.async.bulk.tensor, the tensor maps as
// 64-byte aligned grid-constant parameters, and barrier 1 for the consumers.
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a | FileCheck %s
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_121a | FileCheck %s --check-prefix=MMASYNC
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90 --tile-to-llvm-pipeline | FileCheck %s --check-prefix=MMALLVM
// RUN: tilejit dump out_proj --arch sm_90 --set fp8=0 --set block_m=128 --set block_n=128 --set block_k=64 --set warps=8 --set stages=4 --set producer=1 --stage ptx | FileCheck %s --check-prefix=MMAPTX
// RUN: tilejit dump out_proj --arch sm_90 --set fp8=0 --set block_m=128 --set block_n=256 --set block_k=64 --set warps=8 --set stages=3 --set producer=2 --stage mlir | FileCheck %s --check-prefix=INLINE
// RUN: tilejit dump out_proj --arch sm_90 --set fp8=0 --set block_m=128 --set block_n=256 --set block_k=64 --set warps=8 --set stages=3 --set producer=2 --stage ptx | FileCheck %s --check-prefix=INLINEPTX
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a --tile-to-llvm-pipeline | FileCheck %s --check-prefix=LLVM
// RUN: tilejit dump gemm_e4m3 --arch sm_90a --set producer=1 --set stages=4 --stage ptx | FileCheck %s --check-prefix=PTX
// RUN: tilejit dump gemm_e4m3 --arch sm_90a --set producer=1 --set warps=4 --set block_m=64 --stage ptx | FileCheck %s --check-prefix=PAIR
// RUN: tilejit dump gemm_e4m3 --arch sm_90a --set producer=1 --set block_n=128 --set stages=4 --stage mlir | FileCheck %s --check-prefix=ROWS
// RUN: tilejit dump gemm_e4m3 --arch sm_90a --set producer=1 --set block_n=128 --set stages=4 --stage ptx | FileCheck %s --check-prefix=ROWSPTX
// RUN: tilejit dump gemm_e4m3 --arch sm_90a --set producer=1 --set block_n=256 --set stages=4 --stage mlir | FileCheck %s --check-prefix=DIRECT
// RUN: tilejit dump gemm_e4m3 --arch sm_90a --set block_n=128 --set stages=3 --stage mlir | FileCheck %s --check-prefix=DIRECT
// RUN: tilejit dump out_proj --arch sm_90a --set fp8=0 --set block_m=128 --set block_n=128 --set block_k=64 --set warps=8 --set stages=4 --set producer=1 --set persistent=8 --stage mlir | FileCheck %s --check-prefix=BF16

// One consumer warpgroup: two programs share a multiprocessor, so each gives
// its producer 24 registers and its consumers 232 within half the file.
// PAIR: .reqntid 256, 1, 1
// PAIR-NEXT: .minnctapersm 2
// PAIR: setmaxnreg.dec.sync.aligned.u32 24;
// PAIR: setmaxnreg.inc.sync.aligned.u32 232;

// bf16 sums are exact: the wgmma chains its accumulator and one group stays in
// flight; the previous slot is released once its group is done (predicated:
// not in a tile's first iteration), the last after the loop. Persistent: the
// producer and the consumers walk the same tile loop, and each K iteration's
// ring position counts on across tiles: both tile loops carry the K steps
// taken so far, advanced by the tile's trip count (never below 0).
// BF16: // ----- mlir.tile-warp-specialize -----
// BF16: tile.warp_specialize producer_regs = 40, consumer_regs = 232 producer {
// BF16: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[PBASE:.*]] = %c0_i32) -> (i32)
// BF16: scf.for
// BF16: arith.addi %[[PBASE]], %{{.*}} : i32
// BF16: tile.mbarrier_wait
// BF16: tile.tma_copy
// BF16: %[[PTRIP:.*]] = arith.maxsi
// BF16-NEXT: %[[PNEXT:.*]] = arith.addi %[[PBASE]], %[[PTRIP]] : i32
// BF16-NEXT: scf.yield %[[PNEXT]] : i32
// BF16: } consumer {
// BF16: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[CBASE:.*]] = %c0_i32) -> (i32)
// BF16: scf.for
// BF16: arith.addi %[[CBASE]], %{{.*}} : i32
// BF16: tile.mbarrier_wait
// BF16: %[[D:.*]] = tile.dot_async
// BF16-NEXT: tile.dot_wait {pending = 1 : i32}
// BF16: tile.mbarrier_arrive %{{.*}}[%{{.*}}] if %{{.*}}
// BF16-NEXT: scf.yield %[[D]]
// BF16: tile.dot_wait %{{.*}} {pending = 0 : i32}
// BF16: tile.mbarrier_arrive %{{.*}}[%{{.*}}] if %{{.*}}
// BF16: %[[CTRIP:.*]] = arith.maxsi
// BF16-NEXT: %[[CNEXT:.*]] = arith.addi %[[CBASE]], %[[CTRIP]] : i32
// BF16-NEXT: scf.yield %[[CNEXT]] : i32
// BF16-NEXT: } {tile.tile_loop}
// BF16: // ----- mlir.tile-pipeline-dots -----

// A producer GEMM stores its accumulator as whole rows (16 bytes a thread)
// through shared memory when the rings leave room for the tile: 4 slots of
// 32 KiB leave 98 KiB for a 32 KiB 128x128 bf16 tile; the consumers meet at
// barrier 1 around the scratch. 4 slots of 48 KiB (128x256) leave 34 KiB, too
// few for 64 KiB: direct stores, as without a producer warpgroup.
// ROWS: // ----- mlir.tile-assign-layouts -----
// ROWS: tile.convert_layout %{{.*}} : tensor<128x128xbf16, #tile.mma<wpc = [8, 1]>> -> tensor<128x128xbf16, #tile.blocked<spt = [1, 8], tpw = [2, 16], wpc = [8, 1], order = [1, 0]>>
// ROWS-NEXT: tile.store
// ROWSPTX: wgmma.mma_async
// ROWSPTX: bar.sync 1, 256;
// ROWSPTX: st.global.v4.b32
// DIRECT: // ----- mlir.tile-assign-layouts -----
// DIRECT-NOT: #tile.mma<wpc = [{{[0-9]+}}, 1]>> -> tensor<{{.*}}xbf16, #tile.blocked
// DIRECT: tile.store %{{.*}} : tensor<128x{{128|256}}xbf16, #tile.mma<wpc = [{{[0-9]+}}, 1]>>
// DIRECT: // ----- mlir.tile-warp-specialize -----

// CHECK-LABEL: tile.kernel @gemm_ws
// CHECK-SAME: %{{.*}}: !tile.tensormap<[128, 128], f8E4M3FN> {tile.name = "a.tensormap", tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [-1, 512], size_args = [3, -1], strides = [512, 1]>}
// CHECK-SAME: %{{.*}}: !tile.tensormap<[64, 128], f8E4M3FN> {tile.name = "w.tensormap", tile.tensormap_source = #tile.tensormap_source<base = 1, sizes = [64, 512], size_args = [-1, -1], strides = [512, 1]>}
// CHECK-DAG: %[[ABUF:.*]] = tile.shared_alloc : memref<3x128x128xf8E4M3FN, #tile.shared<vec = 16, perPhase = 1, maxPhase = 8>>
// CHECK-DAG: %[[WBUF:.*]] = tile.shared_alloc : memref<3x64x128xf8E4M3FN, #tile.shared<vec = 16, perPhase = 1, maxPhase = 8>>
// CHECK: %[[FULL:.*]] = tile.mbarrier_alloc arrivals = 1 : <3>
// CHECK: %[[EMPTY:.*]] = tile.mbarrier_alloc arrivals = 2 : <3>
// CHECK: tile.warp_specialize producer_regs = 40, consumer_regs = 232 producer {
// CHECK: scf.for
// CHECK: %[[PARITY:.*]] = arith.xori
// CHECK: tile.mbarrier_wait %[[EMPTY]][%[[SLOT:.*]]], %[[PARITY]]
// CHECK-NEXT: tile.mbarrier_expect_tx %[[FULL]][%[[SLOT]]], 24576
// CHECK: tile.tma_copy %{{.*}}[%{{.*}}, %{{.*}}], %[[ABUF]][%[[SLOT]]], %[[FULL]]
// CHECK: tile.tma_copy %{{.*}}[%{{.*}}, %{{.*}}], %[[WBUF]][%[[SLOT]]], %[[FULL]]
// CHECK: } consumer {
// CHECK-NOT: tile.load
// CHECK: scf.for
// CHECK: tile.mbarrier_wait %[[FULL]][%[[CSLOT:.*]]], %{{.*}}
// CHECK-NEXT: tile.shared_load %[[ABUF]][%[[CSLOT]]] : {{.*}} -> tensor<128x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 0>>
// CHECK-NEXT: tile.shared_load %[[WBUF]][%[[CSLOT]]] transpose : {{.*}} -> tensor<128x64xf8E4M3FN, #tile.wgmma_operand<opIdx = 1>>
// CHECK-NEXT: tile.dot
// CHECK-NEXT: tile.mbarrier_arrive %[[EMPTY]][%[[CSLOT]]]
// CHECK-NEXT: scf.yield
// CHECK: tile.store
// CHECK-NEXT: }
// CHECK-NEXT: tile.return

// MMASYNC-LABEL: tile.kernel @gemm_ws
// MMASYNC-SAME: !tile.tensormap<[128, 128], f8E4M3FN>
// MMASYNC-SAME: !tile.tensormap<[64, 128], f8E4M3FN>
// MMASYNC: %[[FULL:.*]] = tile.mbarrier_alloc arrivals = 1 : <3>
// MMASYNC: %[[EMPTY:.*]] = tile.mbarrier_alloc arrivals = 8 : <3>
// MMASYNC: tile.warp_specialize producer_warps = 1 producer {
// MMASYNC: tile.tma_copy
// MMASYNC: } consumer {
// MMASYNC: tile.mbarrier_wait %[[FULL]][%[[SLOT:.*]]], %{{.*}}
// MMASYNC-NEXT: tile.shared_load {{.*}}[%[[SLOT]]] : {{.*}} -> tensor<128x128xf8E4M3FN, #tile.dot_operand<opIdx = 0
// MMASYNC-NEXT: tile.shared_load {{.*}}[%[[SLOT]]] transpose : {{.*}} -> tensor<128x64xf8E4M3FN, #tile.dot_operand<opIdx = 1
// MMASYNC-NEXT: tile.dot
// MMASYNC-NEXT: tile.mbarrier_arrive %[[EMPTY]][%[[SLOT]]] per_warp
// MMASYNC-NOT: tile.async_copy

// Eight consumer warps and one producer warp (288 threads), no setmaxnreg;
// each warp's lane 0 arrives on the slot it has read.
// MMALLVM-LABEL: llvm.func @gemm_ws
// MMALLVM-SAME: nvvm.reqntid = array<i32: 288, 1, 1>
// MMALLVM-NOT: setmaxnreg
// MMALLVM: cp.async.bulk.tensor.2d
// MMALLVM: ldmatrix
// MMALLVM: mma.sync
// MMALLVM: mbarrier.arrive.shared::cta.b64

// MMAPTX: .reqntid 288, 1, 1
// MMAPTX-NOT: setmaxnreg
// MMAPTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// MMAPTX: ldmatrix.sync.aligned
// MMAPTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// MMAPTX-NOT: wgmma

// producer = 2: no producer warp. Thread 0 of the consumers issues the
// first stages - 1 = 2 K steps before the loop, then at the top of each
// iteration the step 2 ahead (when the loop has it); every warp waits for its
// slot and releases it. 256 threads: the whole register file is the 8 warps'.
// INLINE: // ----- mlir.tile-warp-specialize -----
// INLINE: %[[FULL:.*]] = tile.mbarrier_alloc arrivals = 1 : <3>
// INLINE: %[[EMPTY:.*]] = tile.mbarrier_alloc arrivals = 8 : <3>
// INLINE-NOT: tile.warp_specialize
// INLINE: tile.single_thread {
// INLINE: scf.for
// INLINE: scf.if
// INLINE: tile.mbarrier_wait %[[EMPTY]]
// INLINE: tile.mbarrier_expect_tx %[[FULL]][%{{.*}}], 49152
// INLINE-COUNT-2: tile.tma_copy
// INLINE: scf.for
// INLINE: tile.single_thread {
// INLINE: scf.if
// INLINE: tile.mbarrier_wait %[[EMPTY]]
// INLINE: tile.mbarrier_expect_tx %[[FULL]]
// INLINE-COUNT-2: tile.tma_copy
// INLINE: tile.mbarrier_wait %[[FULL]][%[[SLOT:.*]]], %{{.*}}
// INLINE-NEXT: tile.shared_load {{.*}}[%[[SLOT]]]
// INLINE-NEXT: tile.shared_load {{.*}}[%[[SLOT]]] transpose
// INLINE: tile.dot
// INLINE: tile.mbarrier_arrive %[[EMPTY]][%[[SLOT]]] per_warp
// INLINE: // ----- mlir.tile-pipeline-dots -----
// INLINEPTX: .reqntid 256, 1, 1
// INLINEPTX-NOT: setmaxnreg
// INLINEPTX: cp.async.bulk.tensor.2d
// INLINEPTX: ldmatrix.sync.aligned
// INLINEPTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// INLINEPTX-NOT: wgmma

// LLVM-LABEL: llvm.func @gemm_ws
// LLVM-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// LLVM-SAME: nvvm.minctasm = 1 : i32
// LLVM-SAME: nvvm.reqntid = array<i32: 384, 1, 1>
// LLVM-SAME: tile.tensormaps = [#tile.tensormap_source<param = 4, base = 0, sizes = [-1, 512], size_args = [3, -1], strides = [512, 1], box = [128, 128], element_bytes = 1>, #tile.tensormap_source<param = 5, base = 1, sizes = [64, 512], size_args = [-1, -1], strides = [512, 1], box = [64, 128], element_bytes = 1>]
// LLVM-COUNT-3: mbarrier.init.shared::cta.b64
// LLVM: fence.mbarrier_init.release.cluster
// LLVM-NEXT: nvvm.barrier0
// LLVM: setmaxnreg.dec.sync.aligned.u32 40;
// LLVM: mbarrier.try_wait.parity.shared::cta.b64
// LLVM: mbarrier.arrive.expect_tx.shared::cta.b64
// LLVM: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// LLVM: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// LLVM: setmaxnreg.inc.sync.aligned.u32 232;
// LLVM: mbarrier.try_wait.parity.shared::cta.b64
// LLVM: wgmma.mma_async
// LLVM: wgmma.wait_group.sync.aligned 0;
// LLVM: mbarrier.arrive.shared::cta.b64

// PTX: .entry gemm_e4m3(
// PTX: .param .align 64 .b8 gemm_e4m3_param_5[128],
// PTX-NEXT: .param .align 64 .b8 gemm_e4m3_param_6[128]
// PTX: .reqntid 384, 1, 1
// PTX-NEXT: .minnctapersm 1
// PTX: setmaxnreg.dec.sync.aligned.u32 40;
// PTX: cvta.param.u64
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: setmaxnreg.inc.sync.aligned.u32 232;
// PTX: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
tile.kernel @gemm_ws(%a: !tile.ptr<f8E4M3FN> {tile.name = "a"}, %w: !tile.ptr<f8E4M3FN> {tile.name = "w"}, %c: !tile.ptr<f32> {tile.name = "c"}, %m: i32 {tile.name = "m"}) attributes {config = #tile.config<tile = [128, 64, 128], warps = 8, stages = 3, producer = 1>} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %av = tile.make_view %a sizes(%m) : !tile.ptr<f8E4M3FN> -> !tile.view<?x512xf8E4M3FN, strides = [512, 1]>
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<64x512xf8E4M3FN, strides = [512, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x64xf32, strides = [64, 1]>
  %pid = tile.program_id 0 : i32
  %row = arith.muli %pid, %c128 : i32
  %acc = scf.for %k = %c0 to %c512 step %c128 iter_args(%sum = %zero) -> (tensor<128x64xf32>) : i32 {
    %at = tile.load %av[%row, %k] : !tile.view<?x512xf8E4M3FN, strides = [512, 1]> -> tensor<128x128xf8E4M3FN>
    %wt = tile.load %wv[%c0, %k] : !tile.view<64x512xf8E4M3FN, strides = [512, 1]> -> tensor<64x128xf8E4M3FN>
    %bt = tile.transpose %wt [1, 0] : tensor<64x128xf8E4M3FN> -> tensor<128x64xf8E4M3FN>
    %d = tile.dot %at, %bt, %sum : tensor<128x128xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<128x64xf32>
    scf.yield %d : tensor<128x64xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x64xf32>, !tile.view<?x64xf32, strides = [64, 1]>
  tile.return
}
