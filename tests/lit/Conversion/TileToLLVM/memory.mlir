// Loads and stores through views: 16-byte vectors when the contiguous
// dimension, the offsets and the other strides allow, scalar otherwise;
// always predicated by the view's bounds.
// RUN: tilejit-opt %s --tile-layout-pipeline --tile-to-llvm-pipeline | FileCheck %s --check-prefix=LLVM
// RUN: tilejit dump vector_add --stage ptx | FileCheck %s --check-prefix=VEC

// LLVM-LABEL: llvm.func @copy_rows
// LLVM-SAME: nvvm.kernel
// LLVM-SAME: nvvm.reqntid = array<i32: 128, 1, 1>
// Four f32 per access: one v4.b32 predicated load and store per register group.
// LLVM: llvm.inline_asm has_side_effects {{.*}}@$4 ld.global.v4.b32
// LLVM: llvm.inline_asm has_side_effects {{.*}}@$0 st.global.v4.b32
tile.kernel @copy_rows(%src: !tile.ptr<f32>, %dst: !tile.ptr<f32>, %rows: i32) attributes {config = #tile.config<tile = [4, 128], warps = 4, vector = 4>} {
  %pid = tile.program_id 0 : i32
  %c4 = arith.constant 4 : i32
  %row = arith.muli %pid, %c4 : i32
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %src sizes(%rows) : !tile.ptr<f32> -> !tile.view<?x128xf32, strides = [128, 1]>
  %w = tile.make_view %dst sizes(%rows) : !tile.ptr<f32> -> !tile.view<?x128xf32, strides = [128, 1]>
  %t = tile.load %v[%row, %c0] : !tile.view<?x128xf32, strides = [128, 1]> -> tensor<4x128xf32>
  tile.store %t, %w[%row, %c0] : tensor<4x128xf32>, !tile.view<?x128xf32, strides = [128, 1]>
  tile.return
}

// A dynamic row stride rules out vectors: every element is its own access.
// LLVM-LABEL: llvm.func @dynamic_stride
// LLVM-NOT: ld.global.v
// LLVM: @$1 ld.global.b32
tile.kernel @dynamic_stride(%src: !tile.ptr<f32>, %dst: !tile.ptr<f32>, %rows: i32, %stride: i64) attributes {config = #tile.config<tile = [4, 128], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %src sizes(%rows) strides(%stride) : !tile.ptr<f32> -> !tile.view<?x128xf32, strides = [?, 1]>
  %w = tile.make_view %dst sizes(%rows) : !tile.ptr<f32> -> !tile.view<?x128xf32, strides = [128, 1]>
  %t = tile.load %v[%c0, %c0] : !tile.view<?x128xf32, strides = [?, 1]> -> tensor<4x128xf32>
  tile.store %t, %w[%c0, %c0] : tensor<4x128xf32>, !tile.view<?x128xf32, strides = [128, 1]>
  tile.return
}

// A row index is widened to i64 before its stride multiplies it: 2^20 tokens
// of in_proj's 10304 bf16 columns lie 2^33 elements deep, past i32. The
// stride is an i64 constant, never an i32 one.
// LLVM-LABEL: llvm.func @wide_rows
// LLVM-NOT: llvm.mlir.constant(10304 : i32)
// LLVM-DAG: %[[STRIDE:.*]] = llvm.mlir.constant(10304 : i64) : i64
// LLVM-DAG: %[[ROW:.*]] = llvm.sext %{{.*}} : i32 to i64
// LLVM: llvm.mul %[[ROW]], %[[STRIDE]] : i64
// LLVM-NOT: llvm.mlir.constant(10304 : i32)
// LLVM: llvm.return
tile.kernel @wide_rows(%src: !tile.ptr<bf16>, %dst: !tile.ptr<bf16>, %tokens: i32) attributes {config = #tile.config<tile = [1, 128], warps = 1, vector = 4>} {
  %row = tile.program_id 0 : i32
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %src sizes(%tokens) : !tile.ptr<bf16> -> !tile.view<?x10304xbf16, strides = [10304, 1]>
  %w = tile.make_view %dst sizes(%tokens) : !tile.ptr<bf16> -> !tile.view<?x10304xbf16, strides = [10304, 1]>
  %t = tile.load %v[%row, %c0] : !tile.view<?x10304xbf16, strides = [10304, 1]> -> tensor<1x128xbf16>
  tile.store %t, %w[%row, %c0] : tensor<1x128xbf16>, !tile.view<?x10304xbf16, strides = [10304, 1]>
  tile.return
}

// The example vector add loads and stores 16 bytes per thread access.
// VEC: .entry vector_add
// VEC: @%p{{[0-9]+}} ld.global.v4.b32
// VEC: @%p{{[0-9]+}} st.global.v4.b32
