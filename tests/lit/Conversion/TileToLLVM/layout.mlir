// A layout conversion through scratch memory writes and reads each thread's
// consecutive elements as one vector (16 bytes at most, aligned in every
// thread), and only the owning copy of replicated warps writes.
// RUN: tilejit-opt %s --tile-to-llvm-pipeline | FileCheck %s

// CHECK-LABEL: llvm.func @round_trip
// CHECK: llvm.cond_br
// CHECK: llvm.store {{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
// CHECK-NOT: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load {{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
// CHECK-NOT: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK: llvm.return
#rows = #tile.blocked<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>
#cols = #tile.blocked<spt = [1, 1], tpw = [32, 1], wpc = [4, 1], order = [1, 0]>
tile.kernel @round_trip(%p: !tile.ptr<f32>) attributes {config = #tile.config<tile = [32, 16], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<32x16xf32, strides = [16, 1]>
  %x = tile.load %v[%c0, %c0] : !tile.view<32x16xf32, strides = [16, 1]> -> tensor<32x16xf32, #rows>
  %y = tile.convert_layout %x : tensor<32x16xf32, #rows> -> tensor<32x16xf32, #cols>
  tile.store %y, %v[%c0, %c0] : tensor<32x16xf32, #cols>, !tile.view<32x16xf32, strides = [16, 1]>
  tile.return
}

// A column every warp holds whole (lane l: row l) broadcast into a layout that
// spreads rows over warps: each element comes from its lane by shfl.sync.idx,
// with no shared memory.
// CHECK-LABEL: llvm.func @broadcast_by_shuffles
// CHECK-SAME: tile.shared_bytes = 0
// CHECK-NOT: nvvm.barrier0
// CHECK: nvvm.shfl.sync idx
// CHECK-NOT: nvvm.barrier0
// CHECK: llvm.return
#col = #tile.blocked<spt = [1, 1], tpw = [32, 1], wpc = [4, 1], order = [1, 0]>
#grid = #tile.blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>
tile.kernel @broadcast_by_shuffles(%p: !tile.ptr<f32>, %q: !tile.ptr<f32>) attributes {config = #tile.config<tile = [32, 32], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<32x1xf32, strides = [1, 1]>
  %x = tile.load %v[%c0, %c0] : !tile.view<32x1xf32, strides = [1, 1]> -> tensor<32x1xf32, #col>
  %b = tile.broadcast %x : tensor<32x1xf32, #col> -> tensor<32x32xf32, #grid>
  %w = tile.make_view %q : !tile.ptr<f32> -> !tile.view<32x32xf32, strides = [32, 1]>
  tile.store %b, %w[%c0, %c0] : tensor<32x32xf32, #grid>, !tile.view<32x32xf32, strides = [32, 1]>
  tile.return
}
