// tile-assign-layouts with `direct = 1` and `split_k`: the operands of a dot are
// loaded (and quantized) straight in their kContig fragment layouts, no
// tile.convert_layout and no shared-memory staging before the dot; the split-K
// accumulator is #tile.mma<..., wpk = 4> and reaches its store summed, through
// one tile.convert_layout.
// RUN: tilejit-opt %s --tile-layout-pipeline=arch=sm_90a | FileCheck %s

// A skinny W8A8 product: 16 weight rows times 8 activation rows, K = 512 split
// over 4 warp groups; the activation is read through a transposed view
// (K contiguous) and quantized on the way.
// CHECK-LABEL: tile.kernel @skinny
// CHECK-NOT: tile.shared_alloc
// CHECK-NOT: tile.convert_layout
// CHECK: %[[W:.*]] = tile.load {{.*}} -> tensor<16x512xf8E4M3FN, #tile.dot_operand<opIdx = 0, parent = <wpc = [1, 1], wpk = 4>, kWidth = 4, kContig = true>>
// CHECK: tile.load {{.*}} -> tensor<512x8xbf16, #tile.dot_operand<opIdx = 1, parent = <wpc = [1, 1], wpk = 4>, kWidth = 4, kContig = true>>
// CHECK: %[[X:.*]] = tile.convert {{.*}} -> tensor<512x8xf8E4M3FN, #tile.dot_operand<opIdx = 1
// CHECK: %[[D:.*]] = tile.dot %[[W]], %[[X]], {{.*}} -> tensor<16x8xf32, #tile.mma<wpc = [1, 1], wpk = 4>>
// CHECK: %[[S:.*]] = tile.convert_layout %[[D]] : tensor<16x8xf32, #tile.mma<wpc = [1, 1], wpk = 4>> -> tensor<16x8xf32, #tile.blocked
// CHECK: tile.store %[[S]]
tile.kernel @skinny(%w: !tile.ptr<f8E4M3FN>, %x: !tile.ptr<bf16>, %y: !tile.ptr<f32>, %s: f32) attributes {config = #tile.config<tile = [16, 8, 512], warps = 4, split_k = 4, direct = 1>} {
  %c0 = arith.constant 0 : i32
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<16x512xf8E4M3FN, strides = [512, 1]>
  %xv = tile.make_view %x : !tile.ptr<bf16> -> !tile.view<512x8xbf16, strides = [1, 512]>
  %yv = tile.make_view %y : !tile.ptr<f32> -> !tile.view<16x8xf32, strides = [8, 1]>
  %wt = tile.load %wv[%c0, %c0] : !tile.view<16x512xf8E4M3FN, strides = [512, 1]> -> tensor<16x512xf8E4M3FN>
  %xt = tile.load %xv[%c0, %c0] : !tile.view<512x8xbf16, strides = [1, 512]> -> tensor<512x8xbf16>
  %xf = tile.convert %xt : tensor<512x8xbf16> -> tensor<512x8xf32>
  %inv = tile.splat %s : tensor<512x8xf32>
  %xs = arith.mulf %xf, %inv : tensor<512x8xf32>
  %xq = tile.convert %xs rounding rne saturate : tensor<512x8xf32> -> tensor<512x8xf8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<16x8xf32>
  %d = tile.dot %wt, %xq, %zero : tensor<16x512xf8E4M3FN>, tensor<512x8xf8E4M3FN> -> tensor<16x8xf32>
  tile.store %d, %yv[%c0, %c0] : tensor<16x8xf32>, !tile.view<16x8xf32, strides = [8, 1]>
  tile.return
}
