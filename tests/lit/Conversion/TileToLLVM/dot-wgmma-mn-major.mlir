// wgmma with an MN-major B (sm_90a): a 16-bit B loaded [K, N] (N
// contiguous) is staged as loaded, and the dot reads it through a descriptor
// with the transpose immediate tnspB = 1: swizzle mode from the row width
// (or 128B for rows stored as 128-byte column blocks), the stride between
// 8-row groups of K as SBO, the one between column blocks (K * 128 bytes) as
// LBO, and 16 K rows per K step of 16. A stays K-major (a descriptor or
// registers).
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a | FileCheck %s --check-prefix=LAYOUT
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a --tile-to-llvm-pipeline | FileCheck %s

// The chain's second B (v, [keys, 64]) is MN-major; its A is the first dot's
// accumulator in registers. The first dot's B is K-major.
// LAYOUT-LABEL: tile.kernel @chain_mn
// LAYOUT: scf.for
// LAYOUT: tile.shared_load %{{.*}} transpose : memref<2x64x64xbf16, {{.*}}> -> tensor<64x64xbf16, #tile.wgmma_operand<opIdx = 1>>
// LAYOUT: tile.shared_load %{{.*}} : memref<2x64x64xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>> -> tensor<64x64xbf16, #tile.wgmma_operand<opIdx = 1>>
// LAYOUT: tile.dot {{.*}}#tile.dot_operand<opIdx = 0, parent = <wpc = [4, 1]>, kWidth = 2>>, tensor<64x64xbf16, #tile.wgmma_operand<opIdx = 1>> -> tensor<64x64xf32, #tile.mma<wpc = [4, 1]>>
// 128B swizzle (1 << 62), SBO = 1024 bytes (64 << 32), LBO = 64 * 128
// bytes (512 << 16); the K-major descriptors keep LBO = 1.
// CHECK-LABEL: llvm.func @chain_mn
// CHECK-DAG: llvm.mlir.constant(4611686293305360384 : i64)
// CHECK-DAG: llvm.mlir.constant(4611686293338849280 : i64)
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, $32, $33, p, 1, 1, 0, 0;
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;
tile.kernel @chain_mn(%a: !tile.ptr<bf16>, %k: !tile.ptr<bf16>, %v: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<64x256xbf16, strides = [256, 1]>
  %kv = tile.make_view %k : !tile.ptr<bf16> -> !tile.view<256x64xbf16, strides = [64, 1]>
  %vv = tile.make_view %v : !tile.ptr<bf16> -> !tile.view<256x64xbf16, strides = [64, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x64xf32, strides = [64, 1]>
  %o = scf.for %j = %c0 to %c256 step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %at = tile.load %av[%c0, %j] : !tile.view<64x256xbf16, strides = [256, 1]> -> tensor<64x64xbf16>
    %kt = tile.load %kv[%j, %c0] : !tile.view<256x64xbf16, strides = [64, 1]> -> tensor<64x64xbf16>
    %bt = tile.transpose %kt [1, 0] : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %at, %bt, %zero : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %e = math.exp %s : tensor<64x64xf32>
    %p = arith.truncf %e : tensor<64x64xf32> to tensor<64x64xbf16>
    %vt = tile.load %vv[%j, %c0] : !tile.view<256x64xbf16, strides = [64, 1]> -> tensor<64x64xbf16>
    %d = tile.dot %p, %vt, %acc : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %o, %cv[%c0, %c0] : tensor<64x64xf32>, !tile.view<64x64xf32, strides = [64, 1]>
  tile.return
}

// 64-byte N rows (N = 32): the 64B swizzle (2 << 62), SBO = 512 bytes
// (32 << 32), LBO = 32 * 128 bytes (256 << 16); A and B both through
// descriptors.
// LAYOUT-LABEL: tile.kernel @gemm_mn
// LAYOUT: tile.shared_load %{{.*}} : memref<2x32x32xbf16, #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>> -> tensor<32x32xbf16, #tile.wgmma_operand<opIdx = 1>>
// CHECK-LABEL: llvm.func @gemm_mn
// CHECK-DAG: llvm.mlir.constant(-9223371899415756800 : i64)
// CHECK-DAG: llvm.mlir.constant(-9223371899399045120 : i64)
// CHECK-COUNT-2: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {{.*}}}, $16, $17, p, 1, 1, 0, 1;
tile.kernel @gemm_mn(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 32, 32], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<64x256xbf16, strides = [256, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<256x32xbf16, strides = [32, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x32xf32, strides = [32, 1]>
  %acc = scf.for %k = %c0 to %c256 step %c32 iter_args(%sum = %zero) -> (tensor<64x32xf32>) : i32 {
    %at = tile.load %av[%c0, %k] : !tile.view<64x256xbf16, strides = [256, 1]> -> tensor<64x32xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<256x32xbf16, strides = [32, 1]> -> tensor<32x32xbf16>
    %d = tile.dot %at, %bt, %sum : tensor<64x32xbf16>, tensor<32x32xbf16> -> tensor<64x32xf32>
    scf.yield %d : tensor<64x32xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<64x32xf32>, !tile.view<64x32xf32, strides = [32, 1]>
  tile.return
}

// Rows wider than 128 bytes: A's K = 128 and B's N = 128 (256-byte rows)
// are stored as two 128-byte column blocks. A's K steps move 32 bytes inside
// a block, then to the next block (64 rows x 128 bytes = 8192 bytes: 512 in
// the descriptor's 16-byte units); B's 16 K rows (2048 bytes: 128), and its
// LBO steps between its N blocks (128 rows x 128 bytes: 1024 << 16).
// LAYOUT-LABEL: tile.kernel @gemm_wide
// LAYOUT: tile.shared_load %{{.*}} : memref<2x128x128xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>> -> tensor<128x128xbf16, #tile.wgmma_operand<opIdx = 1>>
// CHECK-LABEL: llvm.func @gemm_wide
// CHECK-DAG: llvm.mlir.constant(4611686293305360384 : i64)
// CHECK-DAG: llvm.mlir.constant(4611686293372403712 : i64)
// CHECK-DAG: llvm.mlir.constant(512 : i64)
// CHECK-DAG: llvm.mlir.constant(896 : i64)
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}}, $64, $65, p, 1, 1, 0, 1;
tile.kernel @gemm_wide(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 128, 128], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<64x128xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<64x512xbf16, strides = [512, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<512x128xbf16, strides = [128, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x128xf32, strides = [128, 1]>
  %acc = scf.for %k = %c0 to %c512 step %c128 iter_args(%sum = %zero) -> (tensor<64x128xf32>) : i32 {
    %at = tile.load %av[%c0, %k] : !tile.view<64x512xbf16, strides = [512, 1]> -> tensor<64x128xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<512x128xbf16, strides = [128, 1]> -> tensor<128x128xbf16>
    %d = tile.dot %at, %bt, %sum : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xf32>
    scf.yield %d : tensor<64x128xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<64x128xf32>, !tile.view<64x128xf32, strides = [128, 1]>
  tile.return
}
