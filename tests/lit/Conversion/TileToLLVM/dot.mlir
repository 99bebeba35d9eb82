// tile.dot lowering. Staged operands (tile-pipeline-dots) move global ->
// shared by 16-byte cp.async (0 source bytes out of bounds: zero fill) and
// shared -> registers by ldmatrix x4 (.trans, layout col, for a row-major
// [K, N] bf16 B); one wait_group + barrier per iteration; mma.sync on the
// fragments. Other operands reach the fragments through scratch memory.
// RUN: tilejit-opt %s --tile-layout-pipeline --tile-to-llvm-pipeline | FileCheck %s
// RUN: tilejit dump gemm_bf16 --arch sm_90 --stage ptx | FileCheck %s --check-prefix=PTX
// RUN: tilejit dump gemm_e4m3 --arch sm_90 --stage ptx | FileCheck %s --check-prefix=PTX8
// RUN: tilejit-opt %s --tile-layout-pipeline | FileCheck %s --check-prefix=FOLD

// CHECK-LABEL: llvm.func @gemm_bf16
// Two 8 KiB slots (64x64 bf16) each for A and B: 32 KiB of buffers.
// CHECK-SAME: tile.shared_bytes = 32768
// CHECK: %[[SIZE:.*]] = llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i32
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %[[SIZE]]
// CHECK: nvvm.cp.async.commit.group
// CHECK: llvm.cond_br
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier0
// CHECK: nvvm.cp.async.shared.global
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>, num = 4
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>, num = 4
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: llvm.br
// CHECK: nvvm.cp.async.wait.group 0
tile.kernel @gemm_bf16(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %m: i32) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %av = tile.make_view %a sizes(%m) : !tile.ptr<bf16> -> !tile.view<?x256xbf16, strides = [256, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<256x64xbf16, strides = [64, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x64xf32, strides = [64, 1]>
  %pid = tile.program_id 0 : i32
  %row = arith.muli %pid, %c64 : i32
  %acc = scf.for %k = %c0 to %c256 step %c64 iter_args(%sum = %zero) -> (tensor<64x64xf32>) : i32 {
    %at = tile.load %av[%row, %k] : !tile.view<?x256xbf16, strides = [256, 1]> -> tensor<64x64xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<256x64xbf16, strides = [64, 1]> -> tensor<64x64xbf16>
    %d = tile.dot %at, %bt, %sum : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    scf.yield %d : tensor<64x64xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<64x64xf32>, !tile.view<?x64xf32, strides = [64, 1]>
  tile.return
}

// w[N, K] read transposed: K-contiguous rows, so plain ldmatrix for B too.
// CHECK-LABEL: llvm.func @gemm_e4m3_wt
// CHECK-NOT: mma_layout<col>
// CHECK: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
// CHECK: llvm.return
tile.kernel @gemm_e4m3_wt(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 3>} {
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

// Operands computed in registers go through scratch memory: shared stores
// (a thread's consecutive elements as one vector, into swizzled 16-byte
// chunks), then ldmatrix reads the fragments, then the same mma.sync.
// CHECK-LABEL: llvm.func @computed_operands
// CHECK-NOT: nvvm.cp.async
// The transposed operand takes its fragments' layout in the transpose itself
// (one trip through scratch).
// CHECK: llvm.store {{.*}} {alignment = {{[0-9]+}} : i64} : vector<{{[0-9]+}}xbf16>, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: nvvm.ldmatrix
// FOLD-LABEL: tile.kernel @computed_operands
// FOLD: tile.transpose {{.*}} -> tensor<16x32xbf16, #tile.dot_operand<opIdx = 1
// FOLD-NOT: tile.convert_layout {{.*}} tensor<16x32xbf16
// FOLD: tile.dot
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
tile.kernel @computed_operands(%x: bf16, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [32, 32, 16], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %a = tile.splat %x : tensor<32x16xbf16>
  %b = arith.addf %a, %a : tensor<32x16xbf16>
  %bt = tile.transpose %b [1, 0] : tensor<32x16xbf16> -> tensor<16x32xbf16>
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %d = tile.dot %b, %bt, %zero : tensor<32x16xbf16>, tensor<16x32xbf16> -> tensor<32x32xf32>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<32x32xf32, strides = [32, 1]>
  tile.store %d, %cv[%c0, %c0] : tensor<32x32xf32>, !tile.view<32x32xf32, strides = [32, 1]>
  tile.return
}

// The example GEMMs: staged operands, ldmatrix, mma.sync.
// PTX: .entry gemm_bf16
// PTX: cp.async.cg.shared.global
// PTX: cp.async.wait_group 2
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX8: .entry gemm_e4m3
// PTX8: cp.async.cg.shared.global
// PTX8: cp.async.wait_group 1
// PTX8-NOT: ldmatrix.sync.aligned.m8n8.x4.trans
// PTX8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX8: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
