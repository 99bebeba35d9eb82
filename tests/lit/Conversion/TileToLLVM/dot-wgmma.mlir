// tile.dot on wgmma (sm_90a). The capability table picks the path in
// tile-assign-layouts: on sm_90a a loop-loaded, K-contiguous dot gets
// #tile.wgmma_operand operands and a #tile.mma<wpc = [warps, 1]> accumulator,
// tile-pipeline-dots stages both into 128B-swizzled slots, and lowering
// issues wgmma.mma_async on slot descriptors. Without the arch (or on sm_90)
// the same kernel keeps mma.sync fragments.
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a | FileCheck %s --check-prefix=LAYOUT
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90 | FileCheck %s --check-prefix=SYNC
// RUN: tilejit-opt %s --tile-layout-pipeline | FileCheck %s --check-prefix=SYNC
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a --tile-to-llvm-pipeline | FileCheck %s
// RUN: not tilejit-opt %s --tile-layout-pipeline=arch=sm_91 2>&1 | FileCheck %s --check-prefix=BADARCH
// RUN: tilejit dump gemm_e4m3 --arch sm_90a --stage ptx | FileCheck %s --check-prefix=PTX
// RUN: tilejit dump gemm_e4m3 --arch sm_121a --stage ptx | FileCheck %s --check-prefix=PTX121
// RUN: tilejit dump gemm_bf16 --arch sm_90a --stage ptx | FileCheck %s --check-prefix=PTXBF16

// LAYOUT-LABEL: tile.kernel @gemm_e4m3_wt
// LAYOUT: tile.shared_alloc : memref<3x128x128xf8E4M3FN, #tile.shared<vec = 16, perPhase = 1, maxPhase = 8>>
// LAYOUT: tile.shared_alloc : memref<3x64x128xf8E4M3FN, #tile.shared<vec = 16, perPhase = 1, maxPhase = 8>>
// LAYOUT: scf.for
// LAYOUT: tile.async_wait 1
// LAYOUT-NOT: tile.async_copy
// LAYOUT: tile.shared_load {{.*}} -> tensor<128x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 0>>
// LAYOUT: tile.shared_load {{.*}} transpose {{.*}} -> tensor<128x64xf8E4M3FN, #tile.wgmma_operand<opIdx = 1>>
// LAYOUT: tile.dot {{.*}} -> tensor<128x64xf32, #tile.mma<wpc = [4, 1]>>
// The refill for iteration i + 2 follows the dot (wgmma runs asynchronously).
// LAYOUT: tile.async_copy
// LAYOUT: tile.async_copy
// LAYOUT-NEXT: tile.async_commit
// LAYOUT-NEXT: scf.yield
// SYNC-LABEL: tile.kernel @gemm_e4m3_wt
// SYNC-NOT: wgmma_operand
// SYNC: tile.dot {{.*}}#tile.dot_operand<opIdx = 0, parent = <wpc = [2, 2]>, kWidth = 4>
// The arch is parsed where the pass option is read: an unknown one stops there.
// BADARCH: tilejit-opt: for the --arch option: unknown arch 'sm_91' (known arches: sm_90, sm_90a, sm_110a, sm_121a)

// CHECK-LABEL: llvm.func @gemm_e4m3_wt
// Three 16 KiB A slots and three 8 KiB B slots.
// CHECK-SAME: tile.shared_bytes = 73728
// CHECK: nvvm.cp.async.shared.global
// CHECK: llvm.cond_br
// Each thread fences its finished copies into the async proxy before the
// barrier that hands the slot to the tensor cores.
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier0
// Two 64-row blocks x four 32-byte K steps, each m64n64k32 on 32 registers
// that start from zero; block 0's sums are added to the accumulator after
// their own wait, so one block's partial registers are live at a time.
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3
// CHECK-NOT: mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 0;"
// CHECK-COUNT-32: llvm.fadd
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3
// CHECK-NOT: mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// The refill of the slot the previous iteration read issues while the
// tensor cores run; the wait comes after it, then the promotion adds.
// CHECK-NOT: wgmma.wait_group
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 0;"
// CHECK: llvm.fadd
// CHECK: llvm.br
tile.kernel @gemm_e4m3_wt(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>, %m: i32) attributes {config = #tile.config<tile = [128, 64, 128], warps = 4, stages = 3>} {
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

// A tile op between the dot and the refill reads the dot's result: the wait
// (and promotion) is emitted before it, so the copies follow the wait.
// CHECK-LABEL: llvm.func @gemm_e4m3_use_in_loop
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: llvm.inline_asm has_side_effects {{.*}}"wgmma.wait_group.sync.aligned 0;"
// CHECK: nvvm.cp.async.shared.global
// CHECK: llvm.br
tile.kernel @gemm_e4m3_use_in_loop(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [128, 64, 128], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %half = arith.constant dense<0.5> : tensor<128x64xf32>
  %av = tile.make_view %a : !tile.ptr<f8E4M3FN> -> !tile.view<128x512xf8E4M3FN, strides = [512, 1]>
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<64x512xf8E4M3FN, strides = [512, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<128x64xf32, strides = [64, 1]>
  %acc = scf.for %k = %c0 to %c512 step %c128 iter_args(%sum = %zero) -> (tensor<128x64xf32>) : i32 {
    %at = tile.load %av[%c0, %k] : !tile.view<128x512xf8E4M3FN, strides = [512, 1]> -> tensor<128x128xf8E4M3FN>
    %wt = tile.load %wv[%c0, %k] : !tile.view<64x512xf8E4M3FN, strides = [512, 1]> -> tensor<64x128xf8E4M3FN>
    %bt = tile.transpose %wt [1, 0] : tensor<64x128xf8E4M3FN> -> tensor<128x64xf8E4M3FN>
    %d = tile.dot %at, %bt, %sum : tensor<128x128xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<128x64xf32>
    %h = arith.mulf %d, %half : tensor<128x64xf32>
    scf.yield %h : tensor<128x64xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<128x64xf32>, !tile.view<128x64xf32, strides = [64, 1]>
  tile.return
}

// A 64x256 warpgroup tile sums its e4m3 products in two groups of 128
// columns (m64n128k32, 64 partial registers), the second starting 128 rows
// (16 KiB) into the B slot.
// CHECK-LABEL: llvm.func @gemm_e4m3_n256
// CHECK: %[[ROWS128:.*]] = llvm.mlir.constant(1024 : i64) : i64
// CHECK-NOT: m64n256
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK-COUNT-64: llvm.fadd
// CHECK: llvm.add %{{.*}}, %[[ROWS128]] : i64
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// CHECK-NOT: m64n256
// CHECK: llvm.return
tile.kernel @gemm_e4m3_n256(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 256, 128], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<64x256xf32>
  %av = tile.make_view %a : !tile.ptr<f8E4M3FN> -> !tile.view<64x512xf8E4M3FN, strides = [512, 1]>
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<256x512xf8E4M3FN, strides = [512, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x256xf32, strides = [256, 1]>
  %acc = scf.for %k = %c0 to %c512 step %c128 iter_args(%sum = %zero) -> (tensor<64x256xf32>) : i32 {
    %at = tile.load %av[%c0, %k] : !tile.view<64x512xf8E4M3FN, strides = [512, 1]> -> tensor<64x128xf8E4M3FN>
    %wt = tile.load %wv[%c0, %k] : !tile.view<256x512xf8E4M3FN, strides = [512, 1]> -> tensor<256x128xf8E4M3FN>
    %bt = tile.transpose %wt [1, 0] : tensor<256x128xf8E4M3FN> -> tensor<128x256xf8E4M3FN>
    %d = tile.dot %at, %bt, %sum : tensor<64x128xf8E4M3FN>, tensor<128x256xf8E4M3FN> -> tensor<64x256xf32>
    scf.yield %d : tensor<64x256xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<64x256xf32>, !tile.view<64x256xf32, strides = [256, 1]>
  tile.return
}

// bf16 B read as [K, N] (N contiguous) in rows of 16 bytes (N = 8): not
// swizzle atoms, so the dot stays on mma.sync even on sm_90a
// (dot-wgmma-mn-major.mlir has the MN-major B on wgmma).
// LAYOUT-LABEL: tile.kernel @gemm_bf16_kn
// LAYOUT-NOT: wgmma_operand
// LAYOUT: tile.dot {{.*}}#tile.dot_operand
// CHECK-LABEL: llvm.func @gemm_bf16_kn
// CHECK-NOT: wgmma
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: llvm.return
tile.kernel @gemm_bf16_kn(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 8, 64], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<64x8xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<64x256xbf16, strides = [256, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<256x8xbf16, strides = [8, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x8xf32, strides = [8, 1]>
  %acc = scf.for %k = %c0 to %c256 step %c64 iter_args(%sum = %zero) -> (tensor<64x8xf32>) : i32 {
    %at = tile.load %av[%c0, %k] : !tile.view<64x256xbf16, strides = [256, 1]> -> tensor<64x64xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<256x8xbf16, strides = [8, 1]> -> tensor<64x8xbf16>
    %d = tile.dot %at, %bt, %sum : tensor<64x64xbf16>, tensor<64x8xbf16> -> tensor<64x8xf32>
    scf.yield %d : tensor<64x8xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<64x8xf32>, !tile.view<64x8xf32, strides = [8, 1]>
  tile.return
}

// The registered e4m3 GEMM: wgmma on sm_90a, mma.sync on sm_121a; the bf16
// one ([K, N] B, 256-byte rows) runs on wgmma with B MN-major on sm_90a.
// PTX: .extern .shared .align 1024 .b8 tile_shared[];
// PTX: .entry gemm_e4m3
// PTX: cp.async.cg.shared.global
// PTX: cp.async.wait_group 1;
// PTX-NEXT: fence.proxy.async.shared::cta;
// PTX-NEXT: bar.sync 0;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
// PTX: wgmma.commit_group.sync.aligned;
// PTX-NOT: wgmma.wait_group
// PTX: cp.async.cg.shared.global
// PTX: cp.async.commit_group;
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX-NOT: mma.sync
// PTX121: .entry gemm_e4m3
// PTX121-NOT: wgmma
// PTX121: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
// PTXBF16: .entry gemm_bf16
// PTXBF16-NOT: mma.sync
// PTXBF16: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 1;
// PTXBF16-NOT: mma.sync
