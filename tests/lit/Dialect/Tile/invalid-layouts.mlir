// Diagnostics of the register layout attributes (tile-assign-layouts sets them;
// hand-written IR must get them right too).
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

tile.kernel @rank_mismatch() {
  // expected-error @+1 {{blocked layout needs spt, tpw, wpc and order of one rank}}
  %c = arith.constant dense<0.0> : tensor<64x64xf32, #tile.blocked<spt = [1, 4], tpw = [32], wpc = [4, 1], order = [1, 0]>>
  tile.return
}

// -----

tile.kernel @not_power_of_two() {
  // expected-error @+1 {{blocked layout entries must be powers of two, got 3}}
  %c = arith.constant dense<0.0> : tensor<64xf32, #tile.blocked<spt = [3], tpw = [32], wpc = [4], order = [0]>>
  tile.return
}

// -----

tile.kernel @lanes() {
  // expected-error @+1 {{blocked layout tpw must multiply to 32 lanes, got 16}}
  %c = arith.constant dense<0.0> : tensor<64x64xf32, #tile.blocked<spt = [1, 4], tpw = [4, 4], wpc = [4, 1], order = [1, 0]>>
  tile.return
}

// -----

tile.kernel @order() {
  // expected-error @+1 {{blocked layout order must be a permutation of [0, 2)}}
  %c = arith.constant dense<0.0> : tensor<64x64xf32, #tile.blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 1]>>
  tile.return
}
