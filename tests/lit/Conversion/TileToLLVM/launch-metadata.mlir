// convert-tile-to-llvm leaves each kernel's launch metadata on its llvm.func as
// the tile dialect's discardable attributes (TileDialect.td): threads, dynamic
// shared bytes, programs per multiprocessor, sums, and the parameters the
// runtime supplies. compileToPTX reads them; parsed back, they verify again.
// RUN: tilejit-opt %s --split-input-file --tile-layout-pipeline --tile-to-llvm-pipeline | tilejit-opt --split-input-file | FileCheck %s

// A persistent kernel: the logical grid's two parameters follow the caller's.
// CHECK-LABEL: llvm.func @walk
// CHECK-SAME: tile.grid_dims = array<i64: 1, 2>
// CHECK-SAME: tile.programs_per_sm = 1 : i64
// CHECK-SAME: tile.shared_bytes = 0 : i64
// CHECK-SAME: tile.sums = "exact"
// CHECK-SAME: tile.threads = 128 : i64
tile.kernel @walk(%out: !tile.ptr<i32>) attributes {config = #tile.config<tile = [1], warps = 4, persistent = 4>} {
  %p0 = tile.program_id 0 : i32
  %p1 = tile.program_id 1 : i32
  %sum = arith.addi %p0, %p1 : i32
  %v = tile.make_view %out : !tile.ptr<i32> -> !tile.view<1xi32, strides = [1]>
  %t = tile.splat %sum : tensor<1xi32>
  tile.store %t, %v[%sum] : tensor<1xi32>, !tile.view<1xi32, strides = [1]>
  tile.return
}

// -----

// Eight warps, no appended parameters.
// CHECK-LABEL: llvm.func @plain
// CHECK-NOT: tile.grid_dims
// CHECK-NOT: tile.tensormaps
// CHECK-SAME: tile.threads = 256 : i64
tile.kernel @plain(%out: !tile.ptr<f32>) attributes {config = #tile.config<tile = [256], warps = 8>} {
  %c0 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %v = tile.make_view %out : !tile.ptr<f32> -> !tile.view<256xf32, strides = [1]>
  %t = tile.splat %one : tensor<256xf32>
  tile.store %t, %v[%c0] : tensor<256xf32>, !tile.view<256xf32, strides = [1]>
  tile.return
}
