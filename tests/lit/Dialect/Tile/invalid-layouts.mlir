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

// -----

// The verifier checks every layout against its tile and the kernel's warps
// (at 13c8ee2 these verified and the lowering asserted or crashed).
tile.kernel @warps_disagree() attributes {config = #tile.config<tile = [128], warps = 4>} {
  // expected-error @+1 {{tile<128xf32> has layout #tile.blocked<spt = [4], tpw = [32], wpc = [8], order = [0]> over 8 warps, but the kernel runs 4}}
  %c = arith.constant dense<0.0> : tensor<128xf32, #tile.blocked<spt = [4], tpw = [32], wpc = [8], order = [0]>>
  tile.return
}

// -----

tile.kernel @rank_1_layout_on_2d_tile() {
  // expected-error @+1 {{tile<128x128xf32> is rank 2 but its layout #tile.blocked<spt = [4], tpw = [32], wpc = [4], order = [0]> is rank 1}}
  %c = arith.constant dense<0.0> : tensor<128x128xf32, #tile.blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>>
  tile.return
}

// -----

tile.kernel @mma_on_1d_tile() {
  // expected-error @+1 {{tile<64xf32> is rank 1 but its layout #tile.mma<wpc = [2, 2]> is rank 2}}
  %c = arith.constant dense<0.0> : tensor<64xf32, #tile.mma<wpc = [2, 2]>>
  tile.return
}

// -----

tile.kernel @mma_rows_not_tiled() {
  // expected-error @+1 {{tile<16x32xf32> cannot be spread over 4 warps in layout #tile.mma<wpc = [2, 2]> (at most 1024 elements a thread)}}
  %c = arith.constant dense<0.0> : tensor<16x32xf32, #tile.mma<wpc = [2, 2]>>
  tile.return
}

// -----

tile.kernel @too_many_registers() {
  // expected-error @+1 {{tile<1048576xf32> cannot be spread over 4 warps in layout #tile.blocked<spt = [1], tpw = [32], wpc = [4], order = [0]> (at most 1024 elements a thread)}}
  %c = arith.constant dense<0.0> : tensor<1048576xf32, #tile.blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>>
  tile.return
}

// -----

tile.kernel @not_a_layout() {
  // expected-error @+1 {{tile<64xf32> has encoding "rows", which is not a register layout (or a slice of a dimension its parent lacks)}}
  %c = arith.constant dense<0.0> : tensor<64xf32, "rows">
  tile.return
}

// -----

tile.kernel @slice_of_wrong_rank() {
  // expected-error @+1 {{tile<64x64xf32> is rank 2 but its layout #tile.slice<dim = 0, parent = #tile.blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>> is rank 0}}
  %c = arith.constant dense<0.0> : tensor<64x64xf32, #tile.slice<dim = 0, parent = #tile.blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>>>
  tile.return
}

// -----

tile.kernel @mma_negative_warps() {
  // expected-error @+1 {{mma wpc entries must be powers of two, got -2}}
  %c = arith.constant dense<0.0> : tensor<32x32xf32, #tile.mma<wpc = [-2, -2]>>
  tile.return
}
