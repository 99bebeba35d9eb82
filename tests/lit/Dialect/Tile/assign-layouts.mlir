// tile-assign-layouts: loads start in coalescing blocked layouts, a dot's
// accumulator takes the mma layout the arch's matrix path gives it, and its
// operands are converted into that path's operand layouts.
// RUN: tilejit-opt %s --tile-assign-layouts=arch=sm_90a | FileCheck %s
// RUN: tilejit-opt %s --tile-assign-layouts=arch=sm_90 | FileCheck %s --check-prefix=SM90

// On sm_90a the K-contiguous e4m3 GEMM takes wgmma: operands in
// #tile.wgmma_operand layouts, the accumulator's warps stacked along M. On
// sm_90 (no wgmma) it keeps mma.sync, its warps the squarest grid.
// CHECK-LABEL: tile.kernel @wgmma
// CHECK: tile.load {{.*}} -> tensor<128x128xf8E4M3FN, #tile.blocked<spt = [1, 16], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>>
// CHECK: tile.convert_layout {{.*}} -> tensor<128x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 0>>
// CHECK: tile.convert_layout {{.*}} -> tensor<128x64xf8E4M3FN, #tile.wgmma_operand<opIdx = 1>>
// CHECK: tile.dot {{.*}} -> tensor<128x64xf32, #tile.mma<wpc = [4, 1]>>
// SM90-LABEL: tile.kernel @wgmma
// SM90-NOT: wgmma_operand
// SM90: tile.dot {{.*}} -> tensor<128x64xf32, #tile.mma<wpc = [2, 2]>>
tile.kernel @wgmma(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>, %m: i32) attributes {config = #tile.config<tile = [128, 64, 128], warps = 4, stages = 3>} {
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

// mma.sync on every arch: the zero accumulator is rebuilt in the mma layout
// (a constant costs nothing to make again), A is converted to its fragments.
// CHECK-LABEL: tile.kernel @mma_sync
// CHECK: arith.constant dense<0.000000e+00> : tensor<128x128xf32, #tile.mma<wpc = [2, 4]>>
// CHECK: tile.convert_layout {{.*}} -> tensor<128x32xbf16, #tile.dot_operand<opIdx = 0, parent = <wpc = [2, 4]>, kWidth = 2>>
tile.kernel @mma_sync(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %m: i32, %ld: i64) attributes {config = #tile.config<tile = [128, 128, 32], warps = 8, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %av = tile.make_view %a sizes(%m) : !tile.ptr<bf16> -> !tile.view<?x512xbf16, strides = [512, 1]>
  %bv = tile.make_view %b strides(%ld) : !tile.ptr<bf16> -> !tile.view<512x256xbf16, strides = [?, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x256xf32, strides = [256, 1]>
  %pid = tile.program_id 0 : i32
  %row = arith.muli %pid, %c128 : i32
  %acc = scf.for %k = %c0 to %c512 step %c32 iter_args(%sum = %zero) -> (tensor<128x128xf32>) : i32 {
    %at = tile.load %av[%row, %k] : !tile.view<?x512xbf16, strides = [512, 1]> -> tensor<128x32xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<512x256xbf16, strides = [?, 1]> -> tensor<32x128xbf16>
    %d = tile.dot %at, %bt, %sum : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x128xf32>, !tile.view<?x256xf32, strides = [256, 1]>
  tile.return
}
