// tile-verify-lowerable, first in tile-layout-pipeline and again at the start of
// convert-tile-to-llvm: an op or a type the GPU lowering has no form for is a
// diagnostic at the op (at 13c8ee2 an unregistered op crashed tile-assign-layouts).
// RUN: tilejit-opt %s -split-input-file -allow-unregistered-dialect -tile-layout-pipeline -verify-diagnostics
// RUN: tilejit-opt %s -split-input-file -allow-unregistered-dialect -convert-tile-to-llvm -verify-diagnostics

tile.kernel @unregistered_op(%x: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %x : !tile.ptr<f32> -> !tile.view<128xf32, strides = [1]>
  %t = tile.load %v[%c0] : !tile.view<128xf32, strides = [1]> -> tensor<128xf32>
  // expected-error @+1 {{'foo.bar' op is not an operation of a loaded dialect: it has no GPU lowering}}
  %u = "foo.bar"(%t) : (tensor<128xf32>) -> tensor<128xf32>
  tile.store %u, %v[%c0] : tensor<128xf32>, !tile.view<128xf32, strides = [1]>
  tile.return
}

// -----

tile.kernel @op_without_emitter() {
  // expected-error @+1 {{'llvm.mlir.zero' op has no GPU lowering}}
  %z = llvm.mlir.zero : !llvm.ptr
  tile.return
}

// -----

tile.kernel @index_value() {
  // expected-error @+1 {{'arith.constant' op has a result of type 'index', which the GPU lowering cannot hold}}
  %i = arith.constant 0 : index
  tile.return
}

// -----

tile.kernel @f64_tile() {
  // expected-error @+1 {{'arith.constant' op has a result of type 'tensor<4xf64>', which the GPU lowering cannot hold}}
  %c = arith.constant dense<1.0> : tensor<4xf64>
  tile.return
}

// -----

tile.kernel @i16_scalar() {
  // expected-error @+1 {{'arith.constant' op has a result of type 'i16', which the GPU lowering cannot hold}}
  %c = arith.constant 0 : i16
  tile.return
}
