// tile-rematerialize computes an elementwise tree again in the layout its
// consumer needs when its leaves are splats, constants and broadcasts of tiles
// every warp holds whole, instead of converting its result through shared
// memory. tile-assign-layouts leaves the conversion; the layout pipeline runs
// both.
// RUN: tilejit-opt %s --tile-assign-layouts | FileCheck %s --check-prefix=CONVERT
// RUN: tilejit-opt %s --tile-assign-layouts --tile-rematerialize | FileCheck %s
// RUN: tilejit-opt %s --tile-layout-pipeline | FileCheck %s

// An elementwise tree of broadcast rows and columns (a causal decay mask) that
// a product's accumulator layout consumes is computed in that layout: no
// 32x32 conversion remains, the broadcasts take the mma layout directly.
// CONVERT-LABEL: tile.kernel @decay_into_mma
// CONVERT: [[DECAY:%[0-9a-z_]+]] = math.exp
// CONVERT: tile.convert_layout [[DECAY]] {{.*}} -> tensor<32x32xf32, #tile.mma
// CHECK-LABEL: tile.kernel @decay_into_mma
// CHECK-NOT: tile.convert_layout {{.*}} -> tensor<32x32xf32, #tile.mma
// CHECK: tile.broadcast {{.*}} -> tensor<32x32xf32, #tile.mma
// CHECK-NOT: tile.convert_layout {{.*}} -> tensor<32x32xf32, #tile.mma
// CHECK: tile.store
tile.kernel @decay_into_mma(%p: !tile.ptr<bf16>, %l: !tile.ptr<f32>, %q: !tile.ptr<f32>) attributes {config = #tile.config<tile = [32, 32, 32], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %v = tile.make_view %p : !tile.ptr<bf16> -> !tile.view<32x32xbf16, strides = [32, 1]>
  %a = tile.load %v[%c0, %c0] : !tile.view<32x32xbf16, strides = [32, 1]> -> tensor<32x32xbf16>
  %acc = arith.constant dense<0.0> : tensor<32x32xf32>
  %d = tile.dot %a, %a, %acc : tensor<32x32xbf16>, tensor<32x32xbf16> -> tensor<32x32xf32>
  %lv = tile.make_view %l : !tile.ptr<f32> -> !tile.view<32xf32, strides = [1]>
  %lam = tile.load %lv[%c0] : !tile.view<32xf32, strides = [1]> -> tensor<32xf32>
  %li = tile.expand_dims %lam axis 1 : tensor<32xf32> -> tensor<32x1xf32>
  %lj = tile.expand_dims %lam axis 0 : tensor<32xf32> -> tensor<1x32xf32>
  %bi = tile.broadcast %li : tensor<32x1xf32> -> tensor<32x32xf32>
  %bj = tile.broadcast %lj : tensor<1x32xf32> -> tensor<32x32xf32>
  %diff = arith.subf %bi, %bj : tensor<32x32xf32>
  %decay = math.exp %diff : tensor<32x32xf32>
  %mix = arith.mulf %d, %decay : tensor<32x32xf32>
  %w = tile.make_view %q : !tile.ptr<f32> -> !tile.view<32x32xf32, strides = [32, 1]>
  tile.store %mix, %w[%c0, %c0] : tensor<32x32xf32>, !tile.view<32x32xf32, strides = [32, 1]>
  tile.return
}
