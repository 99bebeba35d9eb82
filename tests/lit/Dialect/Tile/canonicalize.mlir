// Folders and canonicalization patterns of the tile ops.
// RUN: tilejit-opt %s -split-input-file -allow-unregistered-dialect -canonicalize | FileCheck %s

// CHECK-LABEL: tile.kernel @splat_of_constant
// CHECK-DAG: %[[F:.*]] = arith.constant dense<2.500000e+00> : tensor<4x8xf32>
// CHECK-DAG: %[[I:.*]] = arith.constant dense<7> : tensor<16xi32>
// CHECK-NOT: tile.splat
// CHECK: "use"(%[[F]], %[[I]])
tile.kernel @splat_of_constant() {
  %f = arith.constant 2.5 : f32
  %i = arith.constant 7 : i32
  %0 = tile.splat %f : tensor<4x8xf32>
  %1 = tile.splat %i : tensor<16xi32>
  "use"(%0, %1) : (tensor<4x8xf32>, tensor<16xi32>) -> ()
  tile.return
}

// -----

// A splat of a value only known at run time stays.
// CHECK-LABEL: tile.kernel @splat_of_argument
// CHECK-SAME: (%[[S:.*]]: f32)
// CHECK: %[[T:.*]] = tile.splat %[[S]] : tensor<4xf32>
// CHECK: "use"(%[[T]])
tile.kernel @splat_of_argument(%s: f32) {
  %0 = tile.splat %s : tensor<4xf32>
  "use"(%0) : (tensor<4xf32>) -> ()
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @broadcast_same_type
// CHECK-SAME: (%[[P:.*]]: !tile.ptr<f32>)
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NOT: tile.broadcast
// CHECK: "use"(%[[X]])
tile.kernel @broadcast_same_type(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<4x64x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<4x64x!tile.ptr<f32>>
  %0 = tile.broadcast %x : tensor<4x64xf32> -> tensor<4x64xf32>
  "use"(%0) : (tensor<4x64xf32>) -> ()
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @broadcast_of_broadcast
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NEXT: %[[B:.*]] = tile.broadcast %[[X]] : tensor<1x1xf32> -> tensor<32x64xf32>
// CHECK-NEXT: "use"(%[[B]])
tile.kernel @broadcast_of_broadcast(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<1x1x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<1x1x!tile.ptr<f32>>
  %0 = tile.broadcast %x : tensor<1x1xf32> -> tensor<1x64xf32>
  %1 = tile.broadcast %0 : tensor<1x64xf32> -> tensor<32x64xf32>
  "use"(%1) : (tensor<32x64xf32>) -> ()
  tile.return
}

// -----

// A broadcast that repeats a row is real work and stays.
// CHECK-LABEL: tile.kernel @broadcast_stays
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NEXT: %[[B:.*]] = tile.broadcast %[[X]] : tensor<1x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT: "use"(%[[B]])
tile.kernel @broadcast_stays(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<1x64x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<1x64x!tile.ptr<f32>>
  %0 = tile.broadcast %x : tensor<1x64xf32> -> tensor<32x64xf32>
  "use"(%0) : (tensor<32x64xf32>) -> ()
  tile.return
}

// -----

// Shape ops of a splat are a splat of the result shape.
// CHECK-LABEL: tile.kernel @shape_of_splat
// CHECK-SAME: (%[[S:.*]]: f32)
// CHECK-DAG: %[[B:.*]] = tile.splat %[[S]] : tensor<32x64xf32>
// CHECK-DAG: %[[E:.*]] = tile.splat %[[S]] : tensor<64x1xf32>
// CHECK-DAG: %[[R:.*]] = tile.splat %[[S]] : tensor<8x8xf32>
// CHECK-NOT: tile.broadcast
// CHECK-NOT: tile.expand_dims
// CHECK-NOT: tile.reshape
// CHECK: "use"(%[[B]], %[[E]], %[[R]])
tile.kernel @shape_of_splat(%s: f32) {
  %row = tile.splat %s : tensor<1x64xf32>
  %0 = tile.broadcast %row : tensor<1x64xf32> -> tensor<32x64xf32>
  %v = tile.splat %s : tensor<64xf32>
  %1 = tile.expand_dims %v axis 1 : tensor<64xf32> -> tensor<64x1xf32>
  %2 = tile.reshape %v : tensor<64xf32> -> tensor<8x8xf32>
  "use"(%0, %1, %2) : (tensor<32x64xf32>, tensor<64x1xf32>, tensor<8x8xf32>) -> ()
  tile.return
}

// -----

// Shape ops of a splat constant fold to a constant of the result shape.
// CHECK-LABEL: tile.kernel @shape_of_splat_constant
// CHECK-DAG: %[[E:.*]] = arith.constant dense<1.000000e+00> : tensor<1x64xf32>
// CHECK-DAG: %[[T:.*]] = arith.constant dense<1.000000e+00> : tensor<64x8xf32>
// CHECK-NOT: tile.expand_dims
// CHECK-NOT: tile.transpose
// CHECK: "use"(%[[E]], %[[T]])
tile.kernel @shape_of_splat_constant() {
  %c = arith.constant dense<1.0> : tensor<64xf32>
  %m = arith.constant dense<1.0> : tensor<8x64xf32>
  %0 = tile.expand_dims %c axis 0 : tensor<64xf32> -> tensor<1x64xf32>
  %1 = tile.transpose %m [1, 0] : tensor<8x64xf32> -> tensor<64x8xf32>
  "use"(%0, %1) : (tensor<1x64xf32>, tensor<64x8xf32>) -> ()
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @reshape_of_reshape
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NEXT: %[[R:.*]] = tile.reshape %[[X]] : tensor<8x64xf32> -> tensor<16x32xf32>
// CHECK-NEXT: "use"(%[[R]])
tile.kernel @reshape_of_reshape(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<8x64x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<8x64x!tile.ptr<f32>>
  %0 = tile.reshape %x : tensor<8x64xf32> -> tensor<512xf32>
  %1 = tile.reshape %0 : tensor<512xf32> -> tensor<16x32xf32>
  "use"(%1) : (tensor<16x32xf32>) -> ()
  tile.return
}

// -----

// A reshape back to the original shape vanishes with the chain.
// CHECK-LABEL: tile.kernel @reshape_round_trip
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NOT: tile.reshape
// CHECK: "use"(%[[X]])
tile.kernel @reshape_round_trip(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<8x64x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<8x64x!tile.ptr<f32>>
  %0 = tile.reshape %x : tensor<8x64xf32> -> tensor<512xf32>
  %1 = tile.reshape %0 : tensor<512xf32> -> tensor<8x64xf32>
  "use"(%1) : (tensor<8x64xf32>) -> ()
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @transpose_identity
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NOT: tile.transpose
// CHECK: "use"(%[[X]])
tile.kernel @transpose_identity(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<8x64x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<8x64x!tile.ptr<f32>>
  %0 = tile.transpose %x [0, 1] : tensor<8x64xf32> -> tensor<8x64xf32>
  "use"(%0) : (tensor<8x64xf32>) -> ()
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @transpose_of_transpose_identity
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NOT: tile.transpose
// CHECK: "use"(%[[X]])
tile.kernel @transpose_of_transpose_identity(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<2x4x8x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<2x4x8x!tile.ptr<f32>>
  %0 = tile.transpose %x [1, 2, 0] : tensor<2x4x8xf32> -> tensor<4x8x2xf32>
  %1 = tile.transpose %0 [2, 0, 1] : tensor<4x8x2xf32> -> tensor<2x4x8xf32>
  "use"(%1) : (tensor<2x4x8xf32>) -> ()
  tile.return
}

// -----

// Result dim i of the pair is source dim inner[outer[i]].
// CHECK-LABEL: tile.kernel @transpose_of_transpose_composes
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NEXT: %[[T:.*]] = tile.transpose %[[X]] [2, 0, 1] : tensor<2x4x8xf32> -> tensor<8x2x4xf32>
// CHECK-NEXT: "use"(%[[T]])
tile.kernel @transpose_of_transpose_composes(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<2x4x8x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<2x4x8x!tile.ptr<f32>>
  %0 = tile.transpose %x [1, 2, 0] : tensor<2x4x8xf32> -> tensor<4x8x2xf32>
  %1 = tile.transpose %0 [1, 2, 0] : tensor<4x8x2xf32> -> tensor<8x2x4xf32>
  "use"(%1) : (tensor<8x2x4xf32>) -> ()
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @transpose_stays
// CHECK: %[[X:.*]] = tile.ptr_load
// CHECK-NEXT: %[[T:.*]] = tile.transpose %[[X]] [1, 0] : tensor<8x64xf32> -> tensor<64x8xf32>
// CHECK-NEXT: "use"(%[[T]])
tile.kernel @transpose_stays(%p: !tile.ptr<f32>) {
  %ps = tile.splat %p : tensor<8x64x!tile.ptr<f32>>
  %x = tile.ptr_load %ps : tensor<8x64x!tile.ptr<f32>>
  %0 = tile.transpose %x [1, 0] : tensor<8x64xf32> -> tensor<64x8xf32>
  "use"(%0) : (tensor<64x8xf32>) -> ()
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @convert_same_type
// CHECK-SAME: (%[[S:.*]]: bf16)
// CHECK: %[[X:.*]] = tile.splat %[[S]] : tensor<64xbf16>
// CHECK-NOT: tile.convert
// CHECK: "use"(%[[X]], %[[S]])
tile.kernel @convert_same_type(%s: bf16) {
  %x = tile.splat %s : tensor<64xbf16>
  %0 = tile.convert %x : tensor<64xbf16> -> tensor<64xbf16>
  %1 = tile.convert %s : bf16 -> bf16
  "use"(%0, %1) : (tensor<64xbf16>, bf16) -> ()
  tile.return
}

// -----

// A conversion that changes the type stays.
// CHECK-LABEL: tile.kernel @convert_stays
// CHECK: %[[C:.*]] = tile.convert %{{.*}} rounding rne : tensor<64xf32> -> tensor<64xbf16>
// CHECK: "use"(%[[C]])
tile.kernel @convert_stays(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
  %0 = tile.convert %x rounding rne : tensor<64xf32> -> tensor<64xbf16>
  "use"(%0) : (tensor<64xbf16>) -> ()
  tile.return
}

// -----

// CHECK-LABEL: tile.kernel @addptr_zero
// CHECK-SAME: (%[[P:.*]]: !tile.ptr<f32>)
// CHECK: %[[PS:.*]] = tile.splat %[[P]] : tensor<128x!tile.ptr<f32>>
// CHECK-NOT: tile.addptr
// CHECK: "use"(%[[P]], %[[PS]])
tile.kernel @addptr_zero(%p: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i64
  %0 = tile.addptr %p, %c0 : !tile.ptr<f32>, i64
  %ps = tile.splat %p : tensor<128x!tile.ptr<f32>>
  %z = arith.constant dense<0> : tensor<128xi32>
  %1 = tile.addptr %ps, %z : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  "use"(%0, %1) : (!tile.ptr<f32>, tensor<128x!tile.ptr<f32>>) -> ()
  tile.return
}

// -----

// A nonzero offset stays.
// CHECK-LABEL: tile.kernel @addptr_nonzero
// CHECK-SAME: (%[[P:.*]]: !tile.ptr<f32>)
// CHECK: %[[C:.*]] = arith.constant 1 : i32
// CHECK: %[[Q:.*]] = tile.addptr %[[P]], %[[C]] : !tile.ptr<f32>, i32
// CHECK: "use"(%[[Q]])
tile.kernel @addptr_nonzero(%p: !tile.ptr<f32>) {
  %c1 = arith.constant 1 : i32
  %0 = tile.addptr %p, %c1 : !tile.ptr<f32>, i32
  "use"(%0) : (!tile.ptr<f32>) -> ()
  tile.return
}
