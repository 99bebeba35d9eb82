// tile.dot with operands loaded straight into kContig fragments and K split over
// warp groups: each lane reads 16 bytes of K per row in one vector load (two mma
// steps), no cp.async or ldmatrix; the partial sums meet in scratch memory once,
// after the dot, and are added in group order.
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a --tile-to-llvm-pipeline | FileCheck %s

// K = 512 over 4 groups: 128 per group, two 64-byte K pairs: per lane 2 x 2
// 16-byte weight loads (rows g and g + 8) and 2 x 2 for the 16 bf16 of its
// activation column, 4 mma steps.
// CHECK-LABEL: llvm.func @skinny
// CHECK-NOT: nvvm.cp.async
// CHECK-NOT: nvvm.ldmatrix
// CHECK-COUNT-8: ld.global.v4.b32
// CHECK-NOT: ld.global
// CHECK-COUNT-4: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
// CHECK-NOT: mma.sync
// CHECK: nvvm.barrier0
// CHECK: llvm.store {{.*}} !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-3: llvm.fadd
// CHECK-NOT: llvm.fadd
// CHECK: st.global
tile.kernel @skinny(%w: !tile.ptr<f8E4M3FN>, %x: !tile.ptr<bf16>, %y: !tile.ptr<f32>, %s: f32) attributes {config = #tile.config<tile = [16, 8, 512], warps = 4, split_k = 4, direct = 1>} {
  %c0 = arith.constant 0 : i32
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<16x512xf8E4M3FN, strides = [512, 1]>
  %xv = tile.make_view %x : !tile.ptr<bf16> -> !tile.view<512x8xbf16, strides = [1, 512]>
  %yv = tile.make_view %y : !tile.ptr<f32> -> !tile.view<16x8xf32, strides = [8, 1]>
  %wt = tile.load %wv[%c0, %c0] : !tile.view<16x512xf8E4M3FN, strides = [512, 1]> -> tensor<16x512xf8E4M3FN>
  %xt = tile.load %xv[%c0, %c0] : !tile.view<512x8xbf16, strides = [1, 512]> -> tensor<512x8xbf16>
  %xf = tile.convert %xt : tensor<512x8xbf16> -> tensor<512x8xf32>
  %inv = tile.splat %s : tensor<512x8xf32>
  %xs = arith.mulf %xf, %inv : tensor<512x8xf32>
  %xq = tile.convert %xs rounding rne saturate : tensor<512x8xf32> -> tensor<512x8xf8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<16x8xf32>
  %d = tile.dot %wt, %xq, %zero : tensor<16x512xf8E4M3FN>, tensor<512x8xf8E4M3FN> -> tensor<16x8xf32>
  tile.store %d, %yv[%c0, %c0] : tensor<16x8xf32>, !tile.view<16x8xf32, strides = [8, 1]>
  tile.return
}
