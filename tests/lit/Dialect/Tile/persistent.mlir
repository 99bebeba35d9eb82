// tile-persistent (persistent = G): the body becomes one loop over the tiles
// of the logical grid, which arrives in two i32 parameters the runtime appends;
// program_id and num_programs of axes 0 and 1 read tile t's coordinates (G
// tiles along axis 0 at a time) and that grid. A kernel without the key is
// left alone; one that reads axis 2 is refused.
// RUN: tilejit-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(tile.kernel(tile-persistent))' | FileCheck %s

// CHECK-LABEL: tile.kernel @walk
// CHECK-SAME: %[[GX:[a-z0-9]+]]: i32 {tile.grid_dim = 0 : i64, tile.name = "grid_x"}, %[[GY:[a-z0-9]+]]: i32 {tile.grid_dim = 1 : i64, tile.name = "grid_y"})
// CHECK: %[[FIRST:.*]] = tile.program_id 0
// CHECK-NEXT: %[[PROGRAMS:.*]] = tile.num_programs 0
// CHECK-NEXT: %[[TILES:.*]] = arith.muli %[[GX]], %[[GY]]
// CHECK-NEXT: scf.for %[[T:.*]] = %[[FIRST]] to %[[TILES]] step %[[PROGRAMS]]
// CHECK: %[[G:.*]] = arith.constant 4 : i32
// CHECK: %[[PERGROUP:.*]] = arith.muli %[[G]], %[[GY]]
// CHECK: %[[GROUP:.*]] = arith.divsi %[[T]], %[[PERGROUP]]
// CHECK: %[[FIRSTROW:.*]] = arith.muli %[[GROUP]], %{{.*}}
// CHECK: %[[LEFT:.*]] = arith.subi %[[GX]], %[[FIRSTROW]]
// CHECK: %[[ROWS:.*]] = arith.minsi %[[LEFT]], %{{.*}}
// CHECK: %[[WITHIN:.*]] = arith.remsi %[[T]], %[[PERGROUP]]
// CHECK: %[[R:.*]] = arith.remsi %[[WITHIN]], %[[ROWS]]
// CHECK: %[[P0:.*]] = arith.addi %[[FIRSTROW]], %[[R]]
// CHECK: %[[P1:.*]] = arith.divsi %[[WITHIN]], %[[ROWS]]
// CHECK-NOT: tile.program_id
// CHECK: arith.addi %[[P0]], %[[P1]]
// CHECK: arith.addi %[[GX]], %[[GY]]
// CHECK: } {tile.tile_loop}
// CHECK-NEXT: tile.return
tile.kernel @walk(%out: !tile.ptr<i32>) attributes {config = #tile.config<tile = [1], warps = 4, persistent = 4>} {
  %p0 = tile.program_id 0 : i32
  %p1 = tile.program_id 1 : i32
  %n0 = tile.num_programs 0 : i32
  %n1 = tile.num_programs 1 : i32
  %sum = arith.addi %p0, %p1 : i32
  %grid = arith.addi %n0, %n1 : i32
  %v = tile.make_view %out : !tile.ptr<i32> -> !tile.view<1xi32, strides = [1]>
  %t = tile.splat %grid : tensor<1xi32>
  tile.store %t, %v[%sum] : tensor<1xi32>, !tile.view<1xi32, strides = [1]>
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @untouched(%{{[^,]*}})
// CHECK-NOT: scf.for
tile.kernel @untouched(%out: !tile.ptr<i32>) attributes {config = #tile.config<tile = [1], warps = 4>} {
  %p0 = tile.program_id 0 : i32
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op persistent = 2 walks a 2-D grid of tiles, but the kernel reads grid axis 2}}
tile.kernel @axis2(%out: !tile.ptr<i32>) attributes {config = #tile.config<tile = [1], warps = 4, persistent = 2>} {
  %p2 = tile.program_id 2 : i32
  tile.return
}
