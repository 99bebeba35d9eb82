// What a kernel may do before tile.grid_dep_wait: read invariant parameters
// (weights), prefetch anything; after it, anything.
// RUN: tilejit-opt %s | tilejit-opt | FileCheck %s
// RUN: tilejit-opt %s --tile-layout-pipeline --tile-to-llvm-pipeline | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: tile.kernel @gemv_start
// CHECK: tile.prefetch_l2 %{{.*}}, %{{.*}} : <f32>
// CHECK: tile.load
// CHECK: tile.grid_dep_wait
// CHECK: tile.grid_dep_launch
// LLVM-LABEL: llvm.func @gemv_start
// One thread prefetches; every thread waits, then signals.
// LLVM: llvm.cond_br
// LLVM: nvvm.cp.async.bulk.prefetch %{{.*}}, %{{.*}} : <1>
// LLVM: nvvm.griddepcontrol {{ *}}wait
// LLVM: nvvm.griddepcontrol {{ *}}launch_dependents
// LLVM: st.global
tile.kernel @gemv_start(%w: !tile.ptr<f32> {tile.invariant}, %x: !tile.ptr<f32>, %out: !tile.ptr<f32>) attributes {config = #tile.config<tile = [128], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %bytes = arith.constant 256 : i32
  tile.prefetch_l2 %x, %bytes : !tile.ptr<f32>
  %wv = tile.make_view %w : !tile.ptr<f32> -> !tile.view<128xf32, strides = [1]>
  %wt = tile.load %wv[%c0] : !tile.view<128xf32, strides = [1]> -> tensor<128xf32>
  tile.grid_dep_wait
  tile.grid_dep_launch
  %xv = tile.make_view %x : !tile.ptr<f32> -> !tile.view<128xf32, strides = [1]>
  %xt = tile.load %xv[%c0] : !tile.view<128xf32, strides = [1]> -> tensor<128xf32>
  %y = arith.mulf %wt, %xt : tensor<128xf32>
  %ov = tile.make_view %out : !tile.ptr<f32> -> !tile.view<128xf32, strides = [1]>
  tile.store %y, %ov[%c0] : tensor<128xf32>, !tile.view<128xf32, strides = [1]>
  tile.return
}
