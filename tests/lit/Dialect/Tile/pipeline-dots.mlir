// tile-assign-layouts gives dot operands #tile.dot_operand layouts (the mma
// warp grid as square as the tile allows); tile-pipeline-dots then stages
// loop-loaded operands through a `stages`-slot shared ring: a prologue of
// stages-1 copy groups, one wait + refill per iteration, one dot per mma K
// step on its own part of the slots. Operands it cannot copy in 16-byte
// chunks keep the register path (convert_layout).
// RUN: tilejit-opt %s --tile-assign-layouts | FileCheck %s --check-prefix=LAYOUT
// RUN: tilejit-opt %s --tile-layout-pipeline | FileCheck %s

// LAYOUT-LABEL: tile.kernel @gemm_bf16
// LAYOUT: tile.convert_layout {{.*}} -> tensor<128x32xbf16, #tile.dot_operand<opIdx = 0, parent = <wpc = [2, 4]>, kWidth = 2>>
// LAYOUT: tile.convert_layout {{.*}} -> tensor<32x128xbf16, #tile.dot_operand<opIdx = 1, parent = <wpc = [2, 4]>, kWidth = 2>>
// LAYOUT: tile.dot {{.*}} -> tensor<128x128xf32, #tile.mma<wpc = [2, 4]>>

// CHECK-LABEL: tile.kernel @gemm_bf16
// CHECK-DAG: %[[A:.*]] = tile.shared_alloc : memref<3x128x32xbf16, #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>>
// CHECK-DAG: %[[B:.*]] = tile.shared_alloc : memref<3x32x128xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>>
// CHECK: tile.async_copy %{{.*}}, %[[A]][%{{.*}}]
// CHECK: tile.async_copy %{{.*}}, %[[B]][%{{.*}}]
// CHECK-NEXT: tile.async_commit
// CHECK: tile.async_copy
// CHECK: tile.async_copy
// CHECK-NEXT: tile.async_commit
// CHECK: scf.for
// CHECK: tile.async_wait 1
// CHECK: tile.async_copy
// CHECK: tile.async_copy
// CHECK-NEXT: tile.async_commit
// CHECK-NOT: tile.load
// CHECK: %[[A0:.*]] = tile.shared_load %[[A]][%[[SLOT:.*]]] offsets [0, 0] : {{.*}} -> tensor<128x16xbf16, #tile.dot_operand<opIdx = 0
// CHECK: %[[B0:.*]] = tile.shared_load %[[B]][%[[SLOT]]] offsets [0, 0] : {{.*}} -> tensor<16x128xbf16, #tile.dot_operand<opIdx = 1
// CHECK: %[[D0:.*]] = tile.dot %[[A0]], %[[B0]],
// CHECK: %[[A1:.*]] = tile.shared_load %[[A]][%[[SLOT]]] offsets [0, 16]
// CHECK: %[[B1:.*]] = tile.shared_load %[[B]][%[[SLOT]]] offsets [16, 0]
// CHECK: tile.dot %[[A1]], %[[B1]], %[[D0]]
// CHECK: scf.yield
// CHECK: tile.async_wait 0
tile.kernel @gemm_bf16(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %m: i32) attributes {config = #tile.config<tile = [128, 128, 32], warps = 8, stages = 3>} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %av = tile.make_view %a sizes(%m) : !tile.ptr<bf16> -> !tile.view<?x512xbf16, strides = [512, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<512x256xbf16, strides = [256, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x256xf32, strides = [256, 1]>
  %pid = tile.program_id 0 : i32
  %row = arith.muli %pid, %c128 : i32
  %acc = scf.for %k = %c0 to %c512 step %c32 iter_args(%sum = %zero) -> (tensor<128x128xf32>) : i32 {
    %at = tile.load %av[%row, %k] : !tile.view<?x512xbf16, strides = [512, 1]> -> tensor<128x32xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<512x256xbf16, strides = [256, 1]> -> tensor<32x128xbf16>
    %d = tile.dot %at, %bt, %sum : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x128xf32>, !tile.view<?x256xf32, strides = [256, 1]>
  tile.return
}

// w[N, K] transposed into the dot: its slot keeps K contiguous and the read
// transposes; one stage is one slot, refilled between two waits.
// CHECK-LABEL: tile.kernel @gemm_e4m3_wt
// CHECK: %[[A8:.*]] = tile.shared_alloc : memref<1x64x64xf8E4M3FN, #tile.shared<vec = 16, perPhase = 2, maxPhase = 4>>
// CHECK: %[[W:.*]] = tile.shared_alloc : memref<1x64x64xf8E4M3FN, #tile.shared<vec = 16, perPhase = 2, maxPhase = 4>>
// CHECK: scf.for
// CHECK-NEXT: tile.async_wait 0
// CHECK: tile.async_commit
// CHECK-NEXT: tile.async_wait 0
// CHECK-NOT: tile.transpose
// CHECK: tile.shared_load %[[W]][%{{.*}}] offsets [0, 0] transpose : {{.*}} -> tensor<32x64xf8E4M3FN, #tile.dot_operand<opIdx = 1, parent = <wpc = [2, 2]>, kWidth = 4>>
// CHECK: tile.shared_load %[[W]][%{{.*}}] offsets [0, 32] transpose
tile.kernel @gemm_e4m3_wt(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %av = tile.make_view %a : !tile.ptr<f8E4M3FN> -> !tile.view<64x256xf8E4M3FN, strides = [256, 1]>
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<64x256xf8E4M3FN, strides = [256, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x64xf32, strides = [64, 1]>
  %acc = scf.for %k = %c0 to %c256 step %c64 iter_args(%sum = %zero) -> (tensor<64x64xf32>) : i32 {
    %at = tile.load %av[%c0, %k] : !tile.view<64x256xf8E4M3FN, strides = [256, 1]> -> tensor<64x64xf8E4M3FN>
    %wt = tile.load %wv[%c0, %k] : !tile.view<64x256xf8E4M3FN, strides = [256, 1]> -> tensor<64x64xf8E4M3FN>
    %bt = tile.transpose %wt [1, 0] : tensor<64x64xf8E4M3FN> -> tensor<64x64xf8E4M3FN>
    %d = tile.dot %at, %bt, %sum : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<64x64xf32>, !tile.view<64x64xf32, strides = [64, 1]>
  tile.return
}

// A row stride that is not a multiple of 16 bytes, and an e4m3 B stored
// [K, N] (no 8-bit ldmatrix.trans): both stay on the register path.
// CHECK-LABEL: tile.kernel @fallback
// CHECK-NOT: tile.shared_alloc
// CHECK: tile.convert_layout {{.*}}#tile.dot_operand<opIdx = 0
// CHECK: tile.convert_layout {{.*}}#tile.dot_operand<opIdx = 1
tile.kernel @fallback(%a: !tile.ptr<f8E4M3FN>, %b: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [32, 32, 32], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c96 = arith.constant 96 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %av = tile.make_view %a : !tile.ptr<f8E4M3FN> -> !tile.view<32x96xf8E4M3FN, strides = [100, 1]>
  %bv = tile.make_view %b : !tile.ptr<f8E4M3FN> -> !tile.view<96x32xf8E4M3FN, strides = [32, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<32x32xf32, strides = [32, 1]>
  %acc = scf.for %k = %c0 to %c96 step %c32 iter_args(%sum = %zero) -> (tensor<32x32xf32>) : i32 {
    %at = tile.load %av[%c0, %k] : !tile.view<32x96xf8E4M3FN, strides = [100, 1]> -> tensor<32x32xf8E4M3FN>
    %bt = tile.load %bv[%k, %c0] : !tile.view<96x32xf8E4M3FN, strides = [32, 1]> -> tensor<32x32xf8E4M3FN>
    %d = tile.dot %at, %bt, %sum : tensor<32x32xf8E4M3FN>, tensor<32x32xf8E4M3FN> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<32x32xf32>, !tile.view<32x32xf32, strides = [32, 1]>
  tile.return
}
