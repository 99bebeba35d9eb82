// The tile dialect's types and its #tile.config attribute: one case per diagnostic.
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{pointee must be a scalar element type (f32, f16, bf16, f8E4M3FN, i1, i8, i32, i64), got 'tensor<4xf32>'}}
tile.kernel @ptr_to_tile(%p: !tile.ptr<tensor<4xf32>>) {
  tile.return
}

// -----

// expected-error @+1 {{pointee must be a scalar element type (f32, f16, bf16, f8E4M3FN, i1, i8, i32, i64), got 'f64'}}
tile.kernel @ptr_to_f64(%p: !tile.ptr<f64>) {
  tile.return
}

// -----

tile.kernel @view_rank0(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{view must have rank >= 1}}
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<f32, strides = []>
  tile.return
}

// -----

tile.kernel @view_strides_count(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{view of rank 2 has 1 strides}}
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<4x8xf32, strides = [1]>
  tile.return
}

// -----

tile.kernel @view_element(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{view element must be a scalar element type, got '!tile.ptr<f32>'}}
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<4x!tile.ptr<f32>, strides = [1]>
  tile.return
}

// -----

tile.kernel @view_negative_stride(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{view stride must be non-negative, got -1}}
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<4xf32, strides = [-1]>
  tile.return
}

// -----

// 2^32 + 16 rows: truncated to i32, the bound would have been 16.
tile.kernel @view_size_past_i32(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{view size 4294967312 does not fit i32 (at most 2147483647)}}
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<4294967312xf32, strides = [1]>
  tile.return
}

// -----

// The last element's byte offset, 3 * 2^61 * 4, wraps i64.
tile.kernel @view_extent_past_i64(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{view dimension 1 (size 4, stride 2305843009213693952) reaches past 2^63 bytes from the base}}
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<8x4xf32, strides = [1, 2305843009213693952]>
  tile.return
}

// -----

// expected-error @+1 {{config needs at least one tile size}}
tile.kernel @config_no_tile() attributes {config = #tile.config<tile = [], warps = 4>} {
  tile.return
}

// -----

// expected-error @+1 {{config tile sizes must be positive, got 0}}
tile.kernel @config_zero_tile() attributes {config = #tile.config<tile = [64, 0], warps = 4>} {
  tile.return
}

// -----

// expected-error @+1 {{config warps must be a power of two in [1, 32], got 3}}
tile.kernel @config_warps() attributes {config = #tile.config<tile = [64], warps = 3>} {
  tile.return
}

// -----

// expected-error @+1 {{config warps must be a power of two in [1, 32], got 64}}
tile.kernel @config_warps_too_many() attributes {config = #tile.config<tile = [64], warps = 64>} {
  tile.return
}

// -----

// expected-error @+1 {{config stages must be in [1, 8], got 9}}
tile.kernel @config_stages() attributes {config = #tile.config<tile = [64], warps = 4, stages = 9>} {
  tile.return
}

// -----

// expected-error @+1 {{config vector width must be a power of two in [1, 16], got 32}}
tile.kernel @config_vector() attributes {config = #tile.config<tile = [64], warps = 4, vector = 32>} {
  tile.return
}

// -----

// expected-error @+1 {{config split_k must be a power of two in [1, warps = 4], got 0}}
tile.kernel @config_split_k() attributes {config = #tile.config<tile = [64], warps = 4, split_k = 0>} {
  tile.return
}

// -----

// expected-error @+1 {{unknown config key 'unroll' (expected stages, vector, split_k, direct, producer or persistent)}}
tile.kernel @config_unknown_key() attributes {config = #tile.config<tile = [64], warps = 4, unroll = 2>} {
  tile.return
}

// -----

// expected-error @+1 {{config key 'stages' given twice}}
tile.kernel @config_repeated_key() attributes {config = #tile.config<tile = [64], warps = 4, stages = 2, stages = 3>} {
  tile.return
}
