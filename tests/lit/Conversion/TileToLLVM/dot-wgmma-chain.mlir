// Chained wgmma dots (sm_90a): an A operand that tile-pipeline-dots does not
// stage (a computed tile, or a tile loaded outside the loop) comes in
// registers, as mma.sync's A fragments, which are wgmma's register A for
// .m64nNk16; the accumulator of a wgmma dot (#tile.mma<wpc = [warps, 1]>)
// is already in that layout, so the chain needs no shared-memory round trip.
// B stays in a slot read through a descriptor.
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a | FileCheck %s --check-prefix=LAYOUT
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a --tile-to-llvm-pipeline | FileCheck %s

// LAYOUT-LABEL: tile.kernel @chain
// LAYOUT: scf.for
// LAYOUT: tile.dot {{.*}}#tile.wgmma_operand<opIdx = 0>>, tensor<64x64xbf16, #tile.wgmma_operand<opIdx = 1>> -> tensor<64x64xf32, #tile.mma<wpc = [4, 1]>>
// LAYOUT: tile.convert_layout %{{.*}} : tensor<64x64xbf16, #tile.mma<wpc = [4, 1]>> -> tensor<64x64xbf16, #tile.dot_operand<opIdx = 0, parent = <wpc = [4, 1]>, kWidth = 2>>
// LAYOUT: tile.dot {{.*}}#tile.dot_operand<opIdx = 0, parent = <wpc = [4, 1]>, kWidth = 2>>, tensor<64x64xbf16, #tile.wgmma_operand<opIdx = 1>> -> tensor<64x64xf32, #tile.mma<wpc = [4, 1]>>

// The first dot reads both operands through descriptors (four K steps of
// 16); the second takes A as four .b32 registers and B's descriptor, with
// one transpose immediate (B's). Nothing between them touches shared memory
// (B's slot address is only read into its descriptor).
// CHECK-LABEL: llvm.func @chain
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, $32, $33, p, 1, 1, 0, 0;
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK-NOT: {{llvm.store|llvm.load|barrier|ldmatrix|stmatrix}}
// A's words for all four K steps are packed before the one wgmma.fence (a
// register written after it would make ptxas insert another).
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NOT: {{llvm.store|llvm.load|barrier|ldmatrix|stmatrix|wgmma.fence|llvm.bitcast}}
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, {$32, $33, $34, $35}, $36, p, 1, 1, 0;
// CHECK-NOT: {{llvm.store|llvm.load|barrier|ldmatrix|stmatrix|wgmma.fence|llvm.bitcast}}
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, {$32, $33, $34, $35}, $36, p, 1, 1, 0;
// CHECK-NOT: {{llvm.store|llvm.load|barrier|ldmatrix|stmatrix|wgmma.fence|llvm.bitcast}}
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, {$32, $33, $34, $35}, $36, p, 1, 1, 0;
// CHECK-NOT: {{llvm.store|llvm.load|barrier|ldmatrix|stmatrix|wgmma.fence|llvm.bitcast}}
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}}, {$32, $33, $34, $35}, $36, p, 1, 1, 0;
tile.kernel @chain(%a: !tile.ptr<bf16>, %k: !tile.ptr<bf16>, %vt: !tile.ptr<bf16>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<64x256xbf16, strides = [256, 1]>
  %kv = tile.make_view %k : !tile.ptr<bf16> -> !tile.view<256x64xbf16, strides = [64, 1]>
  %vv = tile.make_view %vt : !tile.ptr<bf16> -> !tile.view<64x256xbf16, strides = [256, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x64xf32, strides = [64, 1]>
  %o = scf.for %j = %c0 to %c256 step %c64 iter_args(%acc = %zero) -> (tensor<64x64xf32>) : i32 {
    %at = tile.load %av[%c0, %j] : !tile.view<64x256xbf16, strides = [256, 1]> -> tensor<64x64xbf16>
    %kt = tile.load %kv[%j, %c0] : !tile.view<256x64xbf16, strides = [64, 1]> -> tensor<64x64xbf16>
    %bt = tile.transpose %kt [1, 0] : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = tile.dot %at, %bt, %zero : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %e = math.exp %s : tensor<64x64xf32>
    %p = arith.truncf %e : tensor<64x64xf32> to tensor<64x64xbf16>
    %vtt = tile.load %vv[%c0, %j] : !tile.view<64x256xbf16, strides = [256, 1]> -> tensor<64x64xbf16>
    %v = tile.transpose %vtt [1, 0] : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %d = tile.dot %p, %v, %acc : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %o, %cv[%c0, %c0] : tensor<64x64xf32>, !tile.view<64x64xf32, strides = [64, 1]>
  tile.return
}
