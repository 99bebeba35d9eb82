// Reductions combine registers, then lanes by butterfly shuffles, then warps
// through shared memory; scans take log2(n) steps, by shfl.sync.up when lanes
// alone hold the axis, else through shared memory.
// RUN: tilejit dump softmax --stage ptx | FileCheck %s --check-prefix=SOFTMAX
// RUN: tilejit dump cumsum --stage ptx | FileCheck %s --check-prefix=SCAN
// RUN: tilejit-opt %s --tile-layout-pipeline | FileCheck %s --check-prefix=LAYOUT
// RUN: tilejit-opt %s --tile-layout-pipeline --tile-to-llvm-pipeline | FileCheck %s --check-prefix=LANES

// Max then sum over 1024 columns held by 4 warps: 5 shuffle rounds each.
// SOFTMAX: .entry softmax
// SOFTMAX-COUNT-5: shfl.sync.bfly.b32
// SOFTMAX: bar.sync 0
// SOFTMAX: ex2.approx
// SOFTMAX-COUNT-5: shfl.sync.bfly.b32

// A 128-long scan: 7 Hillis-Steele steps, each between two barriers.
// SCAN: .entry cumsum
// SCAN-COUNT-14: bar.sync 0
// SCAN-NOT: bar.sync 0
// SCAN: ret;

// The reduction's result takes the slice of its operand's layout, so the
// expand_dims back and the broadcast move no data.
// LAYOUT-LABEL: tile.kernel @row_sum
// LAYOUT: tile.reduce sum {{.*}} -> tensor<64xf32, #tile.slice<dim = 1, parent = #[[B:.*]]>>
// LAYOUT: tile.expand_dims {{.*}} -> tensor<64x1xf32, #[[B]]>
// LAYOUT-NOT: tile.convert_layout
tile.kernel @row_sum(%p: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 64], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64x64xf32, strides = [64, 1]>
  %t = tile.load %v[%c0, %c0] : !tile.view<64x64xf32, strides = [64, 1]> -> tensor<64x64xf32>
  %s = tile.reduce sum %t axis 1 : tensor<64x64xf32> -> tensor<64xf32>
  %e = tile.expand_dims %s axis 1 : tensor<64xf32> -> tensor<64x1xf32>
  %b = tile.broadcast %e : tensor<64x1xf32> -> tensor<64x64xf32>
  %d = arith.subf %t, %b : tensor<64x64xf32>
  tile.store %d, %v[%c0, %c0] : tensor<64x64xf32>, !tile.view<64x64xf32, strides = [64, 1]>
  tile.return
}

// A 32-long scan held by the lanes of every warp: 5 shfl.sync.up steps, each
// adding the value `step` lanes below where the lane's position allows, and
// no shared memory.
// LANES-LABEL: llvm.func @lane_scan
// LANES-SAME: tile.shared_bytes = 0
// LANES-NOT: nvvm.barrier0
// LANES-COUNT-5: nvvm.shfl.sync up
// LANES-NOT: nvvm.barrier0
// LANES: llvm.return
tile.kernel @lane_scan(%p: !tile.ptr<f32>) attributes {config = #tile.config<tile = [32], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<32xf32, strides = [1]>
  %t = tile.load %v[%c0] : !tile.view<32xf32, strides = [1]> -> tensor<32xf32, #tile.blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>>
  %s = tile.scan sum %t axis 0 : tensor<32xf32, #tile.blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>>
  tile.store %s, %v[%c0] : tensor<32xf32, #tile.blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>>, !tile.view<32xf32, strides = [1]>
  tile.return
}
