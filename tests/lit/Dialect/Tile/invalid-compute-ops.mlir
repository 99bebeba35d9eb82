// Conversion, reductions, scans and dot: one case per diagnostic.
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

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
