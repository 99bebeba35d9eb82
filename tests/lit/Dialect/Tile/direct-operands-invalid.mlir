// Split-K chains must start from zeros, and split-K layouts hold only kContig
// operands.
// RUN: tilejit-opt %s --tile-layout-pipeline --split-input-file --verify-diagnostics

tile.kernel @split_k_from_a_tile(%w: !tile.ptr<bf16>, %y: !tile.ptr<f32>) attributes {config = #tile.config<tile = [16, 8, 256], warps = 2, split_k = 2, direct = 1>} {
  %c0 = arith.constant 0 : i32
  %wv = tile.make_view %w : !tile.ptr<bf16> -> !tile.view<16x256xbf16, strides = [256, 1]>
  %xv = tile.make_view %w : !tile.ptr<bf16> -> !tile.view<256x8xbf16, strides = [1, 256]>
  %yv = tile.make_view %y : !tile.ptr<f32> -> !tile.view<16x8xf32, strides = [8, 1]>
  %a = tile.load %wv[%c0, %c0] : !tile.view<16x256xbf16, strides = [256, 1]> -> tensor<16x256xbf16>
  %b = tile.load %xv[%c0, %c0] : !tile.view<256x8xbf16, strides = [1, 256]> -> tensor<256x8xbf16>
  %init = tile.load %yv[%c0, %c0] : !tile.view<16x8xf32, strides = [8, 1]> -> tensor<16x8xf32>
  // expected-error @+1 {{with split_k = 2 needs its accumulator chain to start from zeros}}
  %d = tile.dot %a, %b, %init : tensor<16x256xbf16>, tensor<256x8xbf16> -> tensor<16x8xf32>
  tile.store %d, %yv[%c0, %c0] : tensor<16x8xf32>, !tile.view<16x8xf32, strides = [8, 1]>
  tile.return
}

// -----

tile.kernel @standard_operand_of_split_k() {
  // expected-error @+1 {{dot_operand of a split-K parent (wpk = 2) must be kContig}}
  %c = arith.constant dense<0.0> : tensor<16x32xbf16, #tile.dot_operand<opIdx = 0, parent = #tile.mma<wpc = [1, 1], wpk = 2>, kWidth = 2>>
  tile.return
}

// -----

tile.kernel @wpk_three() {
  // expected-error @+1 {{mma wpk must be a power of two, got 3}}
  %c = arith.constant dense<0.0> : tensor<16x8xf32, #tile.mma<wpc = [1, 1], wpk = 3>>
  tile.return
}

// -----

tile.kernel @contig_f32() {
  // expected-error @+1 {{dot_operand kContig needs kWidth 2 (16-bit) or 4 (8-bit)}}
  %c = arith.constant dense<0.0> : tensor<16x8xf32, #tile.dot_operand<opIdx = 0, parent = #tile.mma<wpc = [1, 1]>, kWidth = 1, kContig = true>>
  tile.return
}

// -----

// expected-error @+1 {{config split_k must be a power of two in [1, warps = 4], got 8}}
tile.kernel @split_k_too_large() attributes {config = #tile.config<tile = [16], warps = 4, split_k = 8>} {
  tile.return
}
