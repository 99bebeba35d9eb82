// tile-assign-layouts reports a tile its chosen layout cannot spread over the
// kernel's warps (a configuration mistake) instead of leaving it to lowering.
// RUN: tilejit-opt %s --tile-assign-layouts -verify-diagnostics

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
