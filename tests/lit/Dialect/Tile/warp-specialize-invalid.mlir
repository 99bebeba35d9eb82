// tile-warp-specialize refuses, naming the load and the reason, what TMA
// cannot copy: a box row that is not one swizzle span (a K step of 256 e4m3
// bytes), a view that is not made from a kernel parameter, a K loop of one
// stage, and producer = 2 on wgmma consumers. (Every arch in the table has
// TMA; one without it would be refused, never have the producer dropped.) Run
// without an arch, the pass refuses to guess one.
// RUN: not tilejit compile gemm_e4m3 --arch sm_90a --set producer=1 --set block_k=256 -o %t.ptx 2>&1 | FileCheck %s --check-prefix=BOX
// RUN: not tilejit compile gemm_e4m3 --arch sm_90a --set producer=1 --set stages=1 -o %t.ptx 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not tilejit compile gemm_e4m3 --arch sm_90a --set producer=2 -o %t.ptx 2>&1 | FileCheck %s --check-prefix=INLINE
// RUN: tilejit-opt %s --split-input-file --verify-diagnostics --tile-layout-pipeline=arch=sm_90a
// RUN: not tilejit-opt %s --split-input-file --tile-warp-specialize 2>&1 | FileCheck %s --check-prefix=NOARCH

// BOX: 'tile.load' op cannot be copied by TMA for producer = 1: a tensor map's box rows must be 32, 64 or 128 bytes (one swizzle span), got 256
// INLINE: producer = 2 (a consumer thread issues the copies) is for mma.sync consumers; wgmma's take producer = 1
// STAGES: producer = 1 needs stages >= 2 (a slot being read while the next is copied), got 1
// NOARCH: error: 'tile.kernel' op producer = 1 needs a target arch to check for TMA (the pass's arch option)

tile.kernel @computed(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>, %m: i32) attributes {config = #tile.config<tile = [128, 64, 128], warps = 8, stages = 3, producer = 1>} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %rows = arith.muli %m, %c2 : i32
  %av = tile.make_view %a sizes(%rows) : !tile.ptr<f8E4M3FN> -> !tile.view<?x512xf8E4M3FN, strides = [512, 1]>
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<64x512xf8E4M3FN, strides = [512, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x64xf32, strides = [64, 1]>
  %acc = scf.for %k = %c0 to %c512 step %c128 iter_args(%sum = %zero) -> (tensor<128x64xf32>) : i32 {
    // expected-error @+1 {{'tile.load' op cannot be copied by TMA for producer = 1: a size of its view is neither a constant nor a parameter}}
    %at = tile.load %av[%c0, %k] : !tile.view<?x512xf8E4M3FN, strides = [512, 1]> -> tensor<128x128xf8E4M3FN>
    %wt = tile.load %wv[%c0, %k] : !tile.view<64x512xf8E4M3FN, strides = [512, 1]> -> tensor<64x128xf8E4M3FN>
    %bt = tile.transpose %wt [1, 0] : tensor<64x128xf8E4M3FN> -> tensor<128x64xf8E4M3FN>
    %d = tile.dot %at, %bt, %sum : tensor<128x128xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<128x64xf32>
    scf.yield %d : tensor<128x64xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<128x64xf32>, !tile.view<?x64xf32, strides = [64, 1]>
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op producer = 1 needs a top-level K loop (or one in the persistent tile loop) whose dot operands are loaded tiles that can be staged in shared memory}}
tile.kernel @noloop(%c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64], warps = 4, stages = 2, producer = 1>} {
  tile.return
}
