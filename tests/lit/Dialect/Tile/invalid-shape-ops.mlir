// The creation and shape ops (splat, arange, broadcast, expand_dims, reshape,
// transpose): one case per diagnostic.
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

tile.kernel @splat_element(%s: i32) {
  // expected-error @+1 {{'tile.splat' op failed to verify that source is the element type of the result}}
  %0 = "tile.splat"(%s) : (i32) -> tensor<4xf32>
  tile.return
}

// -----

tile.kernel @splat_dynamic(%s: f32) {
  // expected-error @+1 {{'result' must be tile of 32-bit float or 16-bit float or bfloat16 type or f8E4M3FN type or 1-bit signless integer or 8-bit signless integer or 32-bit signless integer or 64-bit signless integer or A global-memory pointer to elements of one type, but got 'tensor<?xf32>'}}
  %0 = tile.splat %s : tensor<?xf32>
  tile.return
}

// -----

tile.kernel @arange_empty() {
  // expected-error @+1 {{'tile.arange' op needs start < end, got 8 to 8}}
  %0 = tile.arange 8 to 8 : tensor<0xi32>
  tile.return
}

// -----

tile.kernel @arange_negative_bounds() {
  // expected-error @+1 {{'tile.arange' op needs start < end, got -2 to -4}}
  %0 = tile.arange -2 to -4 : tensor<2xi32>
  tile.return
}

// -----

tile.kernel @arange_length() {
  // expected-error @+1 {{'tile.arange' op result must be tile<64xi32>, got tile<128xi32>}}
  %0 = tile.arange 0 to 64 : tensor<128xi32>
  tile.return
}

// -----

tile.kernel @arange_rank0() {
  // expected-error @+1 {{'tile.arange' op result must be tile<1xi32>, got tile<i32>}}
  %0 = tile.arange 0 to 1 : tensor<i32>
  tile.return
}

// -----

tile.kernel @broadcast_rank(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.broadcast' op source and result ranks differ: tile<64xf32> vs tile<32x64xf32> (use tile.expand_dims first)}}
  %0 = tile.broadcast %x : tensor<64xf32> -> tensor<32x64xf32>
  tile.return
}

// -----

tile.kernel @broadcast_dim(%s: f32) {
  %x = tile.splat %s : tensor<2x64xf32>
  // expected-error @+1 {{'tile.broadcast' op cannot broadcast tile<2x64xf32> to tile<32x64xf32>: dimension 0 is 2, expected 1 or 32}}
  %0 = tile.broadcast %x : tensor<2x64xf32> -> tensor<32x64xf32>
  tile.return
}

// -----

tile.kernel @expand_dims_axis(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.expand_dims' op axis 2 out of range [0, 1] for tile<64xf32>}}
  %0 = tile.expand_dims %x axis 2 : tensor<64xf32> -> tensor<64x1xf32>
  tile.return
}

// -----

tile.kernel @expand_dims_negative_axis(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.expand_dims' op axis -1 out of range [0, 1] for tile<64xf32>}}
  %0 = tile.expand_dims %x axis -1 : tensor<64xf32> -> tensor<64x1xf32>
  tile.return
}

// -----

tile.kernel @expand_dims_shape(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.expand_dims' op result shape must be [1, 64], got [64, 1]}}
  %0 = tile.expand_dims %x axis 0 : tensor<64xf32> -> tensor<64x1xf32>
  tile.return
}

// -----

tile.kernel @reshape_count(%s: f32) {
  %x = tile.splat %s : tensor<8x64xf32>
  // expected-error @+1 {{'tile.reshape' op element count changes: tile<8x64xf32> has 512, tile<1024xf32> has 1024}}
  %0 = tile.reshape %x : tensor<8x64xf32> -> tensor<1024xf32>
  tile.return
}

// -----

tile.kernel @reshape_element(%s: f32) {
  %x = tile.splat %s : tensor<8x64xf32>
  // expected-error @+1 {{'tile.reshape' op requires the same element type for all operands and results}}
  %0 = tile.reshape %x : tensor<8x64xf32> -> tensor<512xbf16>
  tile.return
}

// -----

tile.kernel @transpose_order_size(%s: f32) {
  %x = tile.splat %s : tensor<8x64xf32>
  // expected-error @+1 {{'tile.transpose' op order has 3 entries for rank 2}}
  %0 = tile.transpose %x [1, 0, 2] : tensor<8x64xf32> -> tensor<64x8xf32>
  tile.return
}

// -----

tile.kernel @transpose_not_permutation(%s: f32) {
  %x = tile.splat %s : tensor<8x64xf32>
  // expected-error @+1 {{'tile.transpose' op order must be a permutation of [0, 2)}}
  %0 = tile.transpose %x [1, 1] : tensor<8x64xf32> -> tensor<64x64xf32>
  tile.return
}

// -----

tile.kernel @transpose_shape(%s: f32) {
  %x = tile.splat %s : tensor<8x64xf32>
  // expected-error @+1 {{'tile.transpose' op result shape must be [64, 8], got [8, 64]}}
  %0 = tile.transpose %x [1, 0] : tensor<8x64xf32> -> tensor<8x64xf32>
  tile.return
}
