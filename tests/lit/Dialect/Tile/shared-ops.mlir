// Round trip of the shared-memory staging ops and of the #tile.dot_operand
// and #tile.shared attributes, then the diagnostics of their verifiers.
// RUN: tilejit-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics | FileCheck %s

#mma = #tile.mma<wpc = [2, 2]>
#shared = #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>
// CHECK-LABEL: tile.kernel @staging
// CHECK: tile.shared_alloc : memref<2x64x32xbf16, #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>>
// CHECK: tile.async_copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}] : <64x64xbf16, strides = [64, 1]>, memref<2x64x32xbf16
// CHECK: tile.async_commit
// CHECK: tile.async_wait 1
// CHECK: tile.shared_load %{{.*}}[%{{.*}}] offsets [0, 16] : memref<2x64x32xbf16, {{.*}}> -> tensor<64x16xbf16, #tile.dot_operand<opIdx = 0, parent = <wpc = [2, 2]>, kWidth = 2>>
// CHECK: tile.shared_load %{{.*}}[%{{.*}}] transpose : memref<2x64x32xbf16, {{.*}}> -> tensor<32x64xbf16, #tile.dot_operand<opIdx = 1, parent = <wpc = [2, 2]>, kWidth = 2>>
tile.kernel @staging(%p: !tile.ptr<bf16>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<bf16> -> !tile.view<64x64xbf16, strides = [64, 1]>
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #shared>
  tile.async_copy %v[%c0, %c0], %buf[%c0] : !tile.view<64x64xbf16, strides = [64, 1]>, memref<2x64x32xbf16, #shared>
  tile.async_commit
  tile.async_wait 1
  %a = tile.shared_load %buf[%c0] offsets [0, 16] : memref<2x64x32xbf16, #shared> -> tensor<64x16xbf16, #tile.dot_operand<opIdx = 0, parent = #mma, kWidth = 2>>
  %b = tile.shared_load %buf[%c0] transpose : memref<2x64x32xbf16, #shared> -> tensor<32x64xbf16, #tile.dot_operand<opIdx = 1, parent = #mma, kWidth = 2>>
  tile.return
}

// -----

// expected-error @+1 {{dot_operand opIdx must be 0 (A) or 1 (B), got 2}}
"test.op"() {layout = #tile.dot_operand<opIdx = 2, parent = <wpc = [1, 1]>, kWidth = 2>} : () -> ()

// -----

// expected-error @+1 {{dot_operand kWidth must be 1, 2 or 4, got 3}}
"test.op"() {layout = #tile.dot_operand<opIdx = 0, parent = <wpc = [1, 1]>, kWidth = 3>} : () -> ()

// -----

// expected-error @+1 {{shared layout vec must be a power of two, got 6}}
"test.op"() {layout = #tile.shared<vec = 6, perPhase = 1, maxPhase = 1>} : () -> ()

// -----

tile.kernel @alloc_vec() {
  // expected-error @+1 {{'tile.shared_alloc' op shared layout vec must make 16-byte chunks of 'bf16', got vec = 16}}
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #tile.shared<vec = 16, perPhase = 1, maxPhase = 1>>
  tile.return
}

// -----

tile.kernel @alloc_phases() {
  // expected-error @+1 {{'tile.shared_alloc' op rows of 8 elements must hold at least maxPhase = 8 whole chunks of 8}}
  %buf = tile.shared_alloc : memref<2x64x8xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>>
  tile.return
}

// -----

tile.kernel @alloc_space() {
  // expected-error @+1 {{'tile.shared_alloc' op result #0 must be 3-D memref of f16, bf16 or f8E4M3FN in a #tile.shared memory space}}
  %buf = tile.shared_alloc : memref<2x64x32xbf16>
  tile.return
}

// -----

#shared = #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>
tile.kernel @copy_rank(%p: !tile.ptr<bf16>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<bf16> -> !tile.view<64xbf16, strides = [1]>
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #shared>
  // expected-error @+1 {{'tile.async_copy' op needs a 2-D view and 2 offsets, got a 1-D view and 1 offsets}}
  tile.async_copy %v[%c0], %buf[%c0] : !tile.view<64xbf16, strides = [1]>, memref<2x64x32xbf16, #shared>
  tile.return
}

// -----

#shared = #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>
tile.kernel @copy_type(%p: !tile.ptr<f16>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<f16> -> !tile.view<64x64xf16, strides = [64, 1]>
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #shared>
  // expected-error @+1 {{'tile.async_copy' op view element type 'f16' differs from the buffer's 'bf16'}}
  tile.async_copy %v[%c0, %c0], %buf[%c0] : !tile.view<64x64xf16, strides = [64, 1]>, memref<2x64x32xbf16, #shared>
  tile.return
}

// -----

#shared = #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>
tile.kernel @copy_contiguous(%p: !tile.ptr<bf16>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<bf16> -> !tile.view<64x64xbf16, strides = [1, 64]>
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #shared>
  // expected-error @+1 {{'tile.async_copy' op needs the view's last dimension contiguous (stride 1)}}
  tile.async_copy %v[%c0, %c0], %buf[%c0] : !tile.view<64x64xbf16, strides = [1, 64]>, memref<2x64x32xbf16, #shared>
  tile.return
}

// -----

#shared = #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>
tile.kernel @copy_stride(%p: !tile.ptr<bf16>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<bf16> -> !tile.view<64x64xbf16, strides = [68, 1]>
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #shared>
  // expected-error @+1 {{'tile.async_copy' op needs the view's last size and row stride static multiples of 8 elements (16 bytes)}}
  tile.async_copy %v[%c0, %c0], %buf[%c0] : !tile.view<64x64xbf16, strides = [68, 1]>, memref<2x64x32xbf16, #shared>
  tile.return
}

// -----

#shared = #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>
tile.kernel @load_fit() {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #shared>
  // expected-error @+1 {{'tile.shared_load' op a 64x32 part at offsets [0, 16] does not fit a 64x32 slot}}
  %a = tile.shared_load %buf[%c0] offsets [0, 16] : memref<2x64x32xbf16, #shared> -> tensor<64x32xbf16, #tile.dot_operand<opIdx = 0, parent = <wpc = [2, 2]>, kWidth = 2>>
  tile.return
}

// -----

#shared = #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>
tile.kernel @load_layout() {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #shared>
  // expected-error @+1 {{'tile.shared_load' op result needs a #tile.dot_operand or #tile.wgmma_operand layout}}
  %a = tile.shared_load %buf[%c0] : memref<2x64x32xbf16, #shared> -> tensor<64x32xbf16>
  tile.return
}

// -----

#shared = #tile.shared<vec = 16, perPhase = 4, maxPhase = 2>
tile.kernel @load_trans8() {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x32x32xf8E4M3FN, #shared>
  // expected-error @+1 {{'tile.shared_load' op needs K contiguous in the slot for operand 1 of 'f8E4M3FN' (ldmatrix.trans reads only a 16-bit B)}}
  %b = tile.shared_load %buf[%c0] : memref<2x32x32xf8E4M3FN, #shared> -> tensor<32x32xf8E4M3FN, #tile.dot_operand<opIdx = 1, parent = <wpc = [2, 2]>, kWidth = 4>>
  tile.return
}

// -----

#shared = #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>
tile.kernel @load_offsets() {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x32xbf16, #shared>
  // expected-error @+1 {{'tile.shared_load' op offsets must move along K only, by multiples of 16, got [32, 0]}}
  %a = tile.shared_load %buf[%c0] offsets [32, 0] : memref<2x64x32xbf16, #shared> -> tensor<32x32xbf16, #tile.dot_operand<opIdx = 0, parent = <wpc = [2, 2]>, kWidth = 2>>
  tile.return
}

// -----

// #tile.wgmma_operand: whole K-contiguous slots (A as stored, B transposed).
#wg = #tile.shared<vec = 16, perPhase = 1, maxPhase = 8>
// CHECK-LABEL: tile.kernel @wgmma_operands
// CHECK: tile.shared_load %{{.*}}[%{{.*}}] : memref<2x64x128xf8E4M3FN, {{.*}}> -> tensor<64x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 0>>
// CHECK: tile.shared_load %{{.*}}[%{{.*}}] transpose : memref<2x64x128xf8E4M3FN, {{.*}}> -> tensor<128x64xf8E4M3FN, #tile.wgmma_operand<opIdx = 1>>
tile.kernel @wgmma_operands() {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x128xf8E4M3FN, #wg>
  %a = tile.shared_load %buf[%c0] : memref<2x64x128xf8E4M3FN, #wg> -> tensor<64x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 0>>
  %b = tile.shared_load %buf[%c0] transpose : memref<2x64x128xf8E4M3FN, #wg> -> tensor<128x64xf8E4M3FN, #tile.wgmma_operand<opIdx = 1>>
  tile.return
}

// -----

// expected-error @+1 {{wgmma_operand opIdx must be 0 (A) or 1 (B), got 2}}
"test.op"() {layout = #tile.wgmma_operand<opIdx = 2>} : () -> ()

// -----

#wg = #tile.shared<vec = 16, perPhase = 1, maxPhase = 8>
tile.kernel @wgmma_b_not_k_major() {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x128xf8E4M3FN, #wg>
  // expected-error @+1 {{'tile.shared_load' op a #tile.wgmma_operand result must be a whole slot without offsets, with K contiguous (or N, for a 16-bit B)}}
  %b = tile.shared_load %buf[%c0] : memref<2x64x128xf8E4M3FN, #wg> -> tensor<64x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 1>>
  tile.return
}

// -----

#wg = #tile.shared<vec = 16, perPhase = 1, maxPhase = 8>
tile.kernel @wgmma_part() {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x128xf8E4M3FN, #wg>
  // expected-error @+1 {{'tile.shared_load' op a #tile.wgmma_operand result must be a whole slot without offsets, with K contiguous (or N, for a 16-bit B)}}
  %a = tile.shared_load %buf[%c0] offsets [0, 64] : memref<2x64x128xf8E4M3FN, #wg> -> tensor<64x64xf8E4M3FN, #tile.wgmma_operand<opIdx = 0>>
  tile.return
}
