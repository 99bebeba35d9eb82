// -test-tile-staged-operands: matchStagedOperand, the analysis
// tile-pipeline-dots and tile-warp-specialize share, after tile-assign-layouts:
// a remark on each dot of a loop says whether each operand can be staged
// through shared memory, and why not.
// RUN: tilejit-opt %s --tile-assign-layouts=arch=sm_90a --test-tile-staged-operands --verify-diagnostics -o /dev/null
// What tile-pipeline-dots makes of it: a ring per staged operand.
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a | FileCheck %s

// CHECK-LABEL: tile.kernel @wgmma
// CHECK: tile.shared_alloc : memref<3x128x128xf8E4M3FN
// CHECK: tile.shared_alloc : memref<3x64x128xf8E4M3FN
// Both wgmma operands are staged.
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
    // expected-remark @below {{operand A: staged through shared memory}}
    // expected-remark @below {{operand B: staged through shared memory}}
    %d = tile.dot %at, %bt, %sum : tensor<128x128xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<128x64xf32>
    scf.yield %d : tensor<128x64xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x64xf32>, !tile.view<?x64xf32, strides = [64, 1]>
  tile.return
}

// CHECK-LABEL: tile.kernel @mma_sync
// CHECK: tile.shared_alloc : memref<2x128x32xbf16
// CHECK-NOT: tile.shared_alloc
// CHECK: scf.for
// CHECK: tile.load {{.*}} -> tensor<32x128xbf16
// A is staged; B's run-time row stride keeps it in registers.
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
    // expected-remark @below {{operand A: staged through shared memory}}
    // expected-remark @below {{operand B: stays in registers, since its view's rows and row stride are not static multiples of 16 bytes}}
    %d = tile.dot %at, %bt, %sum : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x128xf32>, !tile.view<?x256xf32, strides = [256, 1]>
  tile.return
}
