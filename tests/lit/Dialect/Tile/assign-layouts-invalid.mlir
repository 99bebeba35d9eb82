// Diagnostics of tile-assign-layouts: configuration mistakes are reported here,
// naming the tile, instead of being left to lowering.
// Register layouts enumerate a thread's registers over power-of-two bases, so a
// tile dimension of another size would reach outside the tile (a 128x96 wgmma
// accumulator did, on the H200: 22% of the outputs wrong); it is refused.
// RUN: tilejit-opt %s --tile-assign-layouts -split-input-file -verify-diagnostics
// RUN: not tilejit compile gemm_e4m3 --arch sm_90a --set block_n=96 -o %t.ptx 2>&1 | FileCheck %s --check-prefix=KERNEL
// RUN: tilejit compile gemm_e4m3 --arch sm_90a --set block_n=64 -o %t.ptx

// A registered kernel refuses such a tile size before it builds: the
// constant's declared range says powers of two.
// KERNEL: tilejit: error: kernel 'gemm_e4m3': constant 'block_n' is 96; it must be a power of two in [1, 512]

tile.kernel @non_power_of_two(%x: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %x : !tile.ptr<f32> -> !tile.view<96xf32, strides = [1]>
  // expected-error @+1 {{'tile.load' op has a tile dimension that is not a power of two, which no register layout distributes: tile<96xf32>}}
  %t = tile.load %v[%c0] : !tile.view<96xf32, strides = [1]> -> tensor<96xf32>
  tile.store %t, %v[%c0] : tensor<96xf32>, !tile.view<96xf32, strides = [1]>
  tile.return
}

// -----

// A 32x16 accumulator holds four 16x8 mma blocks: eight warps cannot share it.
tile.kernel @dot_smaller_than_warps() attributes {config = #tile.config<tile = [32, 16, 32], warps = 8>} {
  %a = arith.constant dense<1.0> : tensor<32x32xbf16>
  %b = arith.constant dense<1.0> : tensor<32x16xbf16>
  // expected-error @+1 {{cannot be spread over the kernel's 8 warps}}
  %acc = arith.constant dense<0.0> : tensor<32x16xf32>
  // expected-error @+1 {{cannot be spread over the kernel's 8 warps}}
  %d = tile.dot %a, %b, %acc : tensor<32x32xbf16>, tensor<32x16xbf16> -> tensor<32x16xf32>
  tile.return
}
