// Programmatic dependent launch: where a kernel may wait for the kernels
// before it and what it may touch before that (LaunchOps.cpp).
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

tile.kernel @wait_in_branch(%c: i1) {
  scf.if %c {
    // expected-error @+1 {{must be in the kernel's body itself, not in a loop or a branch}}
    tile.grid_dep_wait
  }
  tile.return
}

// -----

tile.kernel @wait_twice() {
  tile.grid_dep_wait
  // expected-error @+1 {{a kernel waits for its predecessors at most once}}
  tile.grid_dep_wait
  tile.return
}

// -----

tile.kernel @store_before_wait(%p: !tile.ptr<f32> {tile.invariant}) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<128xf32, strides = [1]>
  %z = arith.constant dense<0.0> : tensor<128xf32>
  // expected-error @+1 {{writes global memory before tile.grid_dep_wait}}
  tile.store %z, %v[%c0] : tensor<128xf32>, !tile.view<128xf32, strides = [1]>
  tile.grid_dep_wait
  tile.return
}

// -----

tile.kernel @load_before_wait(%x: !tile.ptr<f32> {tile.name = "x"}) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %x : !tile.ptr<f32> -> !tile.view<128xf32, strides = [1]>
  // expected-error @+1 {{reads global memory before tile.grid_dep_wait through parameter 'x', which is not marked tile.invariant}}
  %t = tile.load %v[%c0] : !tile.view<128xf32, strides = [1]> -> tensor<128xf32>
  tile.grid_dep_wait
  tile.return
}

// -----

// A read inside a branch before the wait is before it too.
tile.kernel @ptr_load_in_branch_before_wait(%x: !tile.ptr<f32>, %c: i1) {
  scf.if %c {
    // expected-error @+1 {{reads global memory before tile.grid_dep_wait through parameter 0}}
    %s = tile.ptr_load %x : !tile.ptr<f32>
  }
  tile.grid_dep_wait
  tile.return
}

// -----

// expected-error @+1 {{parameter 0 is marked tile.invariant but is not a !tile.ptr}}
tile.kernel @invariant_scalar(%n: i32 {tile.invariant}) {
  tile.return
}

// -----

tile.kernel @prefetch_unaligned(%w: !tile.ptr<bf16>) {
  %n = arith.constant 24 : i32
  // expected-error @+1 {{prefetches a positive multiple of 16 bytes, got 24}}
  tile.prefetch_l2 %w, %n : !tile.ptr<bf16>
  tile.return
}
