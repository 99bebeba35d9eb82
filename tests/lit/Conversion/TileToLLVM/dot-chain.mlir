// Chained dots (tile-assign-layouts' DotChains.h): an accumulator that feeds
// the next dot's A operand, through elementwise ops and a conversion to bf16,
// stays in registers when both dots stack their warps along M (the m16n8
// accumulator fragment is the m16n8k16 A fragment).
// RUN: tilejit-opt %s --tile-layout-pipeline | FileCheck %s --check-prefix=LAYOUT
// RUN: tilejit-opt %s --tile-layout-pipeline --tile-to-llvm-pipeline | FileCheck %s

// Scratch holds one 64x32 bf16 operand at a time (4 KiB): the chained
// 64x64 bf16 A operand (8 KiB) never goes through it, so no barrier or
// shared store lies between the two dots but the B operand's.
// LAYOUT-LABEL: tile.kernel @chain
// LAYOUT: tile.dot {{.*}} -> tensor<64x64xf32, #tile.mma<wpc = [4, 1]>>
// LAYOUT: tile.convert_layout %{{.*}} : tensor<64x64xbf16, #tile.mma<wpc = [4, 1]>> -> tensor<64x64xbf16, #tile.dot_operand<opIdx = 0, parent = <wpc = [4, 1]>, kWidth = 2>>
// LAYOUT: tile.dot {{.*}} -> tensor<64x32xf32, #tile.mma<wpc = [4, 1]>>
// CHECK-LABEL: llvm.func @chain
// CHECK-SAME: tile.shared_bytes = 4096
// CHECK-COUNT-8: mma.sync.aligned.m16n8k16
// CHECK-NOT: vector<2xbf16>, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-COUNT-2: llvm.store {{.*}} : vector<8xbf16>, !llvm.ptr<3>
// CHECK-NOT: llvm.store {{.*}} !llvm.ptr<3>
// CHECK-COUNT-8: mma.sync.aligned.m16n8k16
tile.kernel @chain(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %v: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %zero2 = arith.constant dense<0.0> : tensor<64x32xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<64x32xbf16, strides = [32, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<32x64xbf16, strides = [64, 1]>
  %vv = tile.make_view %v : !tile.ptr<bf16> -> !tile.view<64x32xbf16, strides = [32, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x32xf32, strides = [32, 1]>
  %at = tile.load %av[%c0, %c0] : !tile.view<64x32xbf16, strides = [32, 1]> -> tensor<64x32xbf16>
  %bt = tile.load %bv[%c0, %c0] : !tile.view<32x64xbf16, strides = [64, 1]> -> tensor<32x64xbf16>
  %vt = tile.load %vv[%c0, %c0] : !tile.view<64x32xbf16, strides = [32, 1]> -> tensor<64x32xbf16>
  %s = tile.dot %at, %bt, %zero : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
  %e = math.exp %s : tensor<64x64xf32>
  %p = arith.truncf %e : tensor<64x64xf32> to tensor<64x64xbf16>
  %o = tile.dot %p, %vt, %zero2 : tensor<64x64xbf16>, tensor<64x32xbf16> -> tensor<64x32xf32>
  tile.store %o, %cv[%c0, %c0] : tensor<64x32xf32>, !tile.view<64x32xf32, strides = [32, 1]>
  tile.return
}

// The same pair whose M (32) cannot hold 4 warps stacked along M keeps each
// dot's squarest grid; its A operand goes through scratch memory as before.
// LAYOUT-LABEL: tile.kernel @chain_short
// LAYOUT: tile.convert_layout %{{.*}} : tensor<32x64xbf16, #tile.mma<wpc = [1, 4]>> -> tensor<32x64xbf16, #tile.dot_operand<opIdx = 0, parent = <wpc = [2, 2]>, kWidth = 2>>
tile.kernel @chain_short(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %v: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [32, 64, 64], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %zero = arith.constant dense<0.0> : tensor<32x64xf32>
  %zero2 = arith.constant dense<0.0> : tensor<32x32xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<32x32xbf16, strides = [32, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<32x64xbf16, strides = [64, 1]>
  %vv = tile.make_view %v : !tile.ptr<bf16> -> !tile.view<64x32xbf16, strides = [32, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<32x32xf32, strides = [32, 1]>
  %at = tile.load %av[%c0, %c0] : !tile.view<32x32xbf16, strides = [32, 1]> -> tensor<32x32xbf16>
  %bt = tile.load %bv[%c0, %c0] : !tile.view<32x64xbf16, strides = [64, 1]> -> tensor<32x64xbf16>
  %vt = tile.load %vv[%c0, %c0] : !tile.view<64x32xbf16, strides = [32, 1]> -> tensor<64x32xbf16>
  %s = tile.dot %at, %bt, %zero : tensor<32x32xbf16>, tensor<32x64xbf16> -> tensor<32x64xf32>
  %p = arith.truncf %s : tensor<32x64xf32> to tensor<32x64xbf16>
  %o = tile.dot %p, %vt, %zero2 : tensor<32x64xbf16>, tensor<64x32xbf16> -> tensor<32x32xf32>
  tile.store %o, %cv[%c0, %c0] : tensor<32x32xf32>, !tile.view<32x32xf32, strides = [32, 1]>
  tile.return
}
