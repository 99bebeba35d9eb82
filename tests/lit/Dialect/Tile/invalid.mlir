// One case per diagnostic of the tile dialect's types, attributes and ops.
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Types and the config attribute
//===----------------------------------------------------------------------===//

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

// -----

//===----------------------------------------------------------------------===//
// Kernel structure and grid queries
//===----------------------------------------------------------------------===//

// expected-error @+1 {{attribute 'config' failed to satisfy constraint}}
tile.kernel @config_not_a_config() attributes {config = 4 : i32} {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op kernels return nothing, got 1 result(s)}}
tile.kernel @with_result() -> i32 {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op parameter 1 must be a !tile.ptr or a scalar (i1, i8, i32, i64, f16, bf16, f32), got tile<4xf32>}}
tile.kernel @tile_param(%n: i32, %t: tensor<4xf32>) {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op parameter 0 must be a !tile.ptr or a scalar (i1, i8, i32, i64, f16, bf16, f32), got f8E4M3FN}}
tile.kernel @fp8_param(%s: f8E4M3FN) {
  tile.return
}

// -----

tile.kernel @program_id_axis() {
  // expected-error @+1 {{'tile.program_id' op attribute 'axis' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum value is 2}}
  %0 = tile.program_id 3 : i32
  tile.return
}

// -----

tile.kernel @num_programs_axis() {
  // expected-error @+1 {{'tile.num_programs' op attribute 'axis' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0}}
  %0 = tile.num_programs -1 : i32
  tile.return
}

// -----

module @return_outside_kernel {
  // expected-error @+1 {{'tile.return' op expects parent op 'tile.kernel'}}
  tile.return
}

// -----

//===----------------------------------------------------------------------===//
// Creation and shape ops
//===----------------------------------------------------------------------===//

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

// -----

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

tile.kernel @make_view_pointee(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{'tile.make_view' op base points to 'f32' but the view holds 'bf16'}}
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xbf16, strides = [1]>
  tile.return
}

// -----

tile.kernel @make_view_sizes(%p: !tile.ptr<f32>, %m: i32) {
  // expected-error @+1 {{'tile.make_view' op view has 2 dynamic size(s) but 1 were given}}
  %v = tile.make_view %p sizes(%m) : !tile.ptr<f32> -> !tile.view<?x?xf32, strides = [64, 1]>
  tile.return
}

// -----

tile.kernel @make_view_strides(%p: !tile.ptr<f32>, %ld: i64) {
  // expected-error @+1 {{'tile.make_view' op view has 0 dynamic stride(s) but 1 were given}}
  %v = tile.make_view %p strides(%ld) : !tile.ptr<f32> -> !tile.view<8x64xf32, strides = [64, 1]>
  tile.return
}

// -----

tile.kernel @load_offsets(%p: !tile.ptr<f32>, %i: i32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<8x64xf32, strides = [64, 1]>
  // expected-error @+1 {{'tile.load' op view of rank 2 needs 2 offsets, got 1}}
  %0 = tile.load %v[%i] : !tile.view<8x64xf32, strides = [64, 1]> -> tensor<8x64xf32>
  tile.return
}

// -----

tile.kernel @load_rank(%p: !tile.ptr<f32>, %i: i32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<8x64xf32, strides = [64, 1]>
  // expected-error @+1 {{'tile.load' op tile rank 1 differs from view rank 2 (tile<512xf32>)}}
  %0 = tile.load %v[%i, %i] : !tile.view<8x64xf32, strides = [64, 1]> -> tensor<512xf32>
  tile.return
}

// -----

tile.kernel @load_element(%p: !tile.ptr<f32>, %i: i32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  // expected-error @+1 {{'tile.load' op tile element type 'bf16' differs from view element type 'f32'}}
  %0 = tile.load %v[%i] : !tile.view<64xf32, strides = [1]> -> tensor<64xbf16>
  tile.return
}

// -----

tile.kernel @load_padding(%p: !tile.ptr<f32>, %i: i32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  // expected-error @+1 {{'tile.load' op padding type 'f16' differs from element type 'f32'}}
  %0 = tile.load %v[%i] padding(0.0 : f16) : !tile.view<64xf32, strides = [1]> -> tensor<64xf32>
  tile.return
}

// -----

tile.kernel @store_offsets(%p: !tile.ptr<f32>, %i: i32, %s: f32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.store' op view of rank 1 needs 1 offsets, got 2}}
  tile.store %x, %v[%i, %i] : tensor<64xf32>, !tile.view<64xf32, strides = [1]>
  tile.return
}

// -----

tile.kernel @store_rank(%p: !tile.ptr<f32>, %i: i32, %s: f32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  %x = tile.splat %s : tensor<1x64xf32>
  // expected-error @+1 {{'tile.store' op tile rank 2 differs from view rank 1 (tile<1x64xf32>)}}
  tile.store %x, %v[%i] : tensor<1x64xf32>, !tile.view<64xf32, strides = [1]>
  tile.return
}

// -----

tile.kernel @store_element(%p: !tile.ptr<bf16>, %i: i32, %s: f32) {
  %v = tile.make_view %p : !tile.ptr<bf16> -> !tile.view<64xbf16, strides = [1]>
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.store' op tile element type 'f32' differs from view element type 'bf16'}}
  tile.store %x, %v[%i] : tensor<64xf32>, !tile.view<64xbf16, strides = [1]>
  tile.return
}

// -----

tile.kernel @addptr_tile_scalar(%p: !tile.ptr<f32>, %i: i32) {
  %ps = tile.splat %p : tensor<128x!tile.ptr<f32>>
  // expected-error @+1 {{'tile.addptr' op pointer and offset shapes differ: tile<128x!tile.ptr<f32>> vs i32 (splat the scalar first)}}
  %0 = tile.addptr %ps, %i : tensor<128x!tile.ptr<f32>>, i32
  tile.return
}

// -----

tile.kernel @addptr_shapes(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<128x!tile.ptr<f32>>
  %r = tile.arange 0 to 64 : tensor<64xi32>
  // expected-error @+1 {{'tile.addptr' op pointer and offset shapes differ: tile<128x!tile.ptr<f32>> vs tile<64xi32> (splat the scalar first)}}
  %0 = tile.addptr %ps, %r : tensor<128x!tile.ptr<f32>>, tensor<64xi32>
  tile.return
}

// -----

tile.kernel @ptr_load_mask_shape(%p: !tile.ptr<f32>, %b: i1) {
  %ps = tile.splat %p : tensor<128x!tile.ptr<f32>>
  %m = tile.splat %b : tensor<64xi1>
  // expected-error @+1 {{'tile.ptr_load' op failed to verify that mask is i1 of the shape of ptrs}}
  %0 = "tile.ptr_load"(%ps, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<128x!tile.ptr<f32>>, tensor<64xi1>) -> tensor<128xf32>
  tile.return
}

// -----

tile.kernel @ptr_load_result(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{'tile.ptr_load' op failed to verify that result is the pointee of ptrs}}
  %0 = "tile.ptr_load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tile.ptr<f32>) -> bf16
  tile.return
}

// -----

tile.kernel @ptr_store_value(%p: !tile.ptr<f32>, %s: bf16) {
  // expected-error @+1 {{'tile.ptr_store' op failed to verify that value is the pointee of ptrs}}
  "tile.ptr_store"(%p, %s) : (!tile.ptr<f32>, bf16) -> ()
  tile.return
}

// -----

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

tile.kernel @convert_shape(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.convert' op source and result shapes differ: tile<64xf32> vs tile<32xbf16>}}
  %0 = tile.convert %x rounding rne : tensor<64xf32> -> tensor<32xbf16>
  tile.return
}

// -----

tile.kernel @convert_tile_to_scalar(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.convert' op source and result shapes differ: tile<64xf32> vs bf16}}
  %0 = tile.convert %x rounding rne : tensor<64xf32> -> bf16
  tile.return
}

// -----

tile.kernel @convert_widening_rounding(%s: bf16) {
  %x = tile.splat %s : tensor<64xbf16>
  // expected-error @+1 {{'tile.convert' op widening conversion tile<64xbf16> -> tile<64xf32> is exact: drop rounding/saturate}}
  %0 = tile.convert %x rounding rne : tensor<64xbf16> -> tensor<64xf32>
  tile.return
}

// -----

tile.kernel @convert_widening_saturate(%p: !tile.ptr<f8E4M3FN>) {
  %s = tile.ptr_load %p : !tile.ptr<f8E4M3FN>
  // expected-error @+1 {{'tile.convert' op widening conversion f8E4M3FN -> f16 is exact: drop rounding/saturate}}
  %0 = tile.convert %s saturate : f8E4M3FN -> f16
  tile.return
}

// -----

tile.kernel @convert_narrowing_no_rounding(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.convert' op narrowing conversion tile<64xf32> -> tile<64xbf16> must state its rounding}}
  %0 = tile.convert %x : tensor<64xf32> -> tensor<64xbf16>
  tile.return
}

// -----

tile.kernel @convert_f16_to_bf16_no_rounding(%s: f16) {
  // expected-error @+1 {{'tile.convert' op narrowing conversion f16 -> bf16 must state its rounding}}
  %0 = tile.convert %s : f16 -> bf16
  tile.return
}

// -----

tile.kernel @convert_e4m3_no_saturate(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.convert' op conversion to f8E4M3FN must saturate (e4m3fn has no infinity)}}
  %0 = tile.convert %x rounding rne : tensor<64xf32> -> tensor<64xf8E4M3FN>
  tile.return
}

// -----

tile.kernel @convert_saturate_not_e4m3(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.convert' op saturate applies only to conversions to f8E4M3FN}}
  %0 = tile.convert %x rounding rne saturate : tensor<64xf32> -> tensor<64xbf16>
  tile.return
}

// -----

tile.kernel @convert_integer(%s: i32) {
  // expected-error @+1 {{'tile.convert' op operand #0 must be}}
  %0 = tile.convert %s rounding rne : i32 -> f32
  tile.return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions, scans, dot
//===----------------------------------------------------------------------===//

tile.kernel @reduce_axis(%s: f32) {
  %x = tile.splat %s : tensor<64x128xf32>
  // expected-error @+1 {{'tile.reduce' op axis 2 out of range [0, 2) for tile<64x128xf32>}}
  %0 = tile.reduce sum %x axis 2 : tensor<64x128xf32> -> tensor<64xf32>
  tile.return
}

// -----

tile.kernel @reduce_negative_axis(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.reduce' op axis -1 out of range [0, 1) for tile<64xf32>}}
  %0 = tile.reduce max %x axis -1 : tensor<64xf32> -> f32
  tile.return
}

// -----

tile.kernel @reduce_result(%s: f32) {
  %x = tile.splat %s : tensor<64x128xf32>
  // expected-error @+1 {{'tile.reduce' op result must be tile<128xf32>, got tile<64xf32>}}
  %0 = tile.reduce sum %x axis 0 : tensor<64x128xf32> -> tensor<64xf32>
  tile.return
}

// -----

tile.kernel @reduce_to_scalar_type(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.reduce' op result must be f32, got tile<1xf32>}}
  %0 = tile.reduce sum %x axis 0 : tensor<64xf32> -> tensor<1xf32>
  tile.return
}

// -----

tile.kernel @reduce_i1(%b: i1) {
  %x = tile.splat %b : tensor<64xi1>
  // expected-error @+1 {{'tile.reduce' op cannot max i1 tiles}}
  %0 = tile.reduce max %x axis 0 : tensor<64xi1> -> i1
  tile.return
}

// -----

tile.kernel @scan_axis(%s: f32) {
  %x = tile.splat %s : tensor<64x128xf32>
  // expected-error @+1 {{'tile.scan' op axis 2 out of range [0, 2) for tile<64x128xf32>}}
  %0 = tile.scan sum %x axis 2 : tensor<64x128xf32>
  tile.return
}

// -----

tile.kernel @scan_i1(%b: i1) {
  %x = tile.splat %b : tensor<64xi1>
  // expected-error @+1 {{'tile.scan' op cannot sum i1 tiles}}
  %0 = tile.scan sum %x axis 0 : tensor<64xi1>
  tile.return
}

// -----

tile.kernel @dot_rank(%s: bf16) {
  %a = tile.splat %s : tensor<2x64x32xbf16>
  %b = tile.splat %s : tensor<32x64xbf16>
  %acc = arith.constant dense<0.0> : tensor<64x64xf32>
  // expected-error @+1 {{'tile.dot' op operands must be 2-D tiles, got tile<2x64x32xbf16>, tile<32x64xbf16>, tile<64x64xf32>}}
  %0 = tile.dot %a, %b, %acc : tensor<2x64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
  tile.return
}

// -----

tile.kernel @dot_element(%s: bf16, %h: f16) {
  %a = tile.splat %s : tensor<64x32xbf16>
  %b = tile.splat %h : tensor<32x64xf16>
  %acc = arith.constant dense<0.0> : tensor<64x64xf32>
  // expected-error @+1 {{'tile.dot' op operand element types differ: 'bf16' vs 'f16'}}
  %0 = tile.dot %a, %b, %acc : tensor<64x32xbf16>, tensor<32x64xf16> -> tensor<64x64xf32>
  tile.return
}

// -----

tile.kernel @dot_inner(%s: bf16) {
  %a = tile.splat %s : tensor<64x32xbf16>
  %b = tile.splat %s : tensor<16x64xbf16>
  %acc = arith.constant dense<0.0> : tensor<64x64xf32>
  // expected-error @+1 {{'tile.dot' op inner dimensions differ: tile<64x32xbf16> x tile<16x64xbf16> (K = 32 vs 16)}}
  %0 = tile.dot %a, %b, %acc : tensor<64x32xbf16>, tensor<16x64xbf16> -> tensor<64x64xf32>
  tile.return
}

// -----

tile.kernel @dot_acc(%s: bf16) {
  %a = tile.splat %s : tensor<64x32xbf16>
  %b = tile.splat %s : tensor<32x64xbf16>
  %acc = arith.constant dense<0.0> : tensor<64x128xf32>
  // expected-error @+1 {{'tile.dot' op accumulator must be tile<64x64xf32>, got tile<64x128xf32>}}
  %0 = tile.dot %a, %b, %acc : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x128xf32>
  tile.return
}

// -----

tile.kernel @dot_acc_f16(%s: f16) {
  %a = tile.splat %s : tensor<64x32xf16>
  %acc = arith.constant dense<0.0> : tensor<64x64xf16>
  // expected-error @+1 {{'tile.dot' op operand #2 must be tile of 32-bit float}}
  %0 = tile.dot %a, %a, %acc : tensor<64x32xf16>, tensor<64x32xf16> -> tensor<64x64xf16>
  tile.return
}

// -----

// The name becomes the PTX .entry verbatim (found by the `pipeline` fuzz
// target: ptxas refused '.t_e4m3').
// expected-error @+1 {{'tile.kernel' op name 'convert.t_e4m3' is not a PTX identifier (a letter, then letters, digits, '_' or '$')}}
tile.kernel @convert.t_e4m3() {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op name '9lives' is not a PTX identifier}}
tile.kernel @"9lives"() {
  tile.return
}
