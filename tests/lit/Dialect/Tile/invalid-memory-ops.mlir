// The memory ops (make_view, load, store, addptr, ptr_load, ptr_store): one case
// per diagnostic.
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

tile.kernel @make_view_pointee(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{'tile.make_view' op base points to 'f32' but the view holds 'bf16'}}
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xbf16, strides = [1]>
  tile.return
}

// -----

tile.kernel @make_view_sizes(%p: !tile.ptr<f32>, %m: i32) {
  // expected-error @+1 {{'tile.make_view' op view has 2 dynamic size(s) but 1 were given}}
  %v = tile.make_view %p sizes(%m) : !tile.ptr<f32> -> !tile.view<?x?xf32, strides = [64, 1]>
  tile.return
}

// -----

tile.kernel @make_view_strides(%p: !tile.ptr<f32>, %ld: i64) {
  // expected-error @+1 {{'tile.make_view' op view has 0 dynamic stride(s) but 1 were given}}
  %v = tile.make_view %p strides(%ld) : !tile.ptr<f32> -> !tile.view<8x64xf32, strides = [64, 1]>
  tile.return
}

// -----

tile.kernel @load_offsets(%p: !tile.ptr<f32>, %i: i32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<8x64xf32, strides = [64, 1]>
  // expected-error @+1 {{'tile.load' op view of rank 2 needs 2 offsets, got 1}}
  %0 = tile.load %v[%i] : !tile.view<8x64xf32, strides = [64, 1]> -> tensor<8x64xf32>
  tile.return
}

// -----

tile.kernel @load_rank(%p: !tile.ptr<f32>, %i: i32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<8x64xf32, strides = [64, 1]>
  // expected-error @+1 {{'tile.load' op tile rank 1 differs from view rank 2 (tile<512xf32>)}}
  %0 = tile.load %v[%i, %i] : !tile.view<8x64xf32, strides = [64, 1]> -> tensor<512xf32>
  tile.return
}

// -----

tile.kernel @load_element(%p: !tile.ptr<f32>, %i: i32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  // expected-error @+1 {{'tile.load' op tile element type 'bf16' differs from view element type 'f32'}}
  %0 = tile.load %v[%i] : !tile.view<64xf32, strides = [1]> -> tensor<64xbf16>
  tile.return
}

// -----

tile.kernel @load_padding(%p: !tile.ptr<f32>, %i: i32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  // expected-error @+1 {{'tile.load' op padding type 'f16' differs from element type 'f32'}}
  %0 = tile.load %v[%i] padding(0.0 : f16) : !tile.view<64xf32, strides = [1]> -> tensor<64xf32>
  tile.return
}

// -----

tile.kernel @store_offsets(%p: !tile.ptr<f32>, %i: i32, %s: f32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.store' op view of rank 1 needs 1 offsets, got 2}}
  tile.store %x, %v[%i, %i] : tensor<64xf32>, !tile.view<64xf32, strides = [1]>
  tile.return
}

// -----

tile.kernel @store_rank(%p: !tile.ptr<f32>, %i: i32, %s: f32) {
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  %x = tile.splat %s : tensor<1x64xf32>
  // expected-error @+1 {{'tile.store' op tile rank 2 differs from view rank 1 (tile<1x64xf32>)}}
  tile.store %x, %v[%i] : tensor<1x64xf32>, !tile.view<64xf32, strides = [1]>
  tile.return
}

// -----

tile.kernel @store_element(%p: !tile.ptr<bf16>, %i: i32, %s: f32) {
  %v = tile.make_view %p : !tile.ptr<bf16> -> !tile.view<64xbf16, strides = [1]>
  %x = tile.splat %s : tensor<64xf32>
  // expected-error @+1 {{'tile.store' op tile element type 'f32' differs from view element type 'bf16'}}
  tile.store %x, %v[%i] : tensor<64xf32>, !tile.view<64xbf16, strides = [1]>
  tile.return
}

// -----

tile.kernel @addptr_tile_scalar(%p: !tile.ptr<f32>, %i: i32) {
  %ps = tile.splat %p : tensor<128x!tile.ptr<f32>>
  // expected-error @+1 {{'tile.addptr' op pointer and offset shapes differ: tile<128x!tile.ptr<f32>> vs i32 (splat the scalar first)}}
  %0 = tile.addptr %ps, %i : tensor<128x!tile.ptr<f32>>, i32
  tile.return
}

// -----

tile.kernel @addptr_shapes(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<128x!tile.ptr<f32>>
  %r = tile.arange 0 to 64 : tensor<64xi32>
  // expected-error @+1 {{'tile.addptr' op pointer and offset shapes differ: tile<128x!tile.ptr<f32>> vs tile<64xi32> (splat the scalar first)}}
  %0 = tile.addptr %ps, %r : tensor<128x!tile.ptr<f32>>, tensor<64xi32>
  tile.return
}

// -----

tile.kernel @ptr_load_mask_shape(%p: !tile.ptr<f32>, %b: i1) {
  %ps = tile.splat %p : tensor<128x!tile.ptr<f32>>
  %m = tile.splat %b : tensor<64xi1>
  // expected-error @+1 {{'tile.ptr_load' op failed to verify that mask is i1 of the shape of ptrs}}
  %0 = "tile.ptr_load"(%ps, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<128x!tile.ptr<f32>>, tensor<64xi1>) -> tensor<128xf32>
  tile.return
}

// -----

tile.kernel @ptr_load_result(%p: !tile.ptr<f32>) {
  // expected-error @+1 {{'tile.ptr_load' op failed to verify that result is the pointee of ptrs}}
  %0 = "tile.ptr_load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tile.ptr<f32>) -> bf16
  tile.return
}

// -----

tile.kernel @ptr_store_value(%p: !tile.ptr<f32>, %s: bf16) {
  // expected-error @+1 {{'tile.ptr_store' op failed to verify that value is the pointee of ptrs}}
  "tile.ptr_store"(%p, %s) : (!tile.ptr<f32>, bf16) -> ()
  tile.return
}
