// scf.for becomes a loop of LLVM blocks carrying every register of its tiles;
// a dot's accumulator stays in the mma layout across iterations.
// RUN: tilejit-opt %s --tile-layout-pipeline | FileCheck %s --check-prefix=LAYOUT
// RUN: tilejit-opt %s --tile-layout-pipeline --tile-to-llvm-pipeline | FileCheck %s --check-prefix=LLVM
// RUN: tilejit dump gemm_bf16 --arch sm_90 --stage ptx | FileCheck %s --check-prefix=MMA
// RUN: tilejit dump gemm_e4m3 --arch sm_90 --stage ptx | FileCheck %s --check-prefix=MMA8

// LAYOUT-LABEL: tile.kernel @accumulate
// LAYOUT: %[[INIT:.*]] = arith.constant dense<0.000000e+00> : tensor<32x32xf32, #tile.mma<wpc = [2, 2]>>
// LAYOUT: scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (tensor<32x32xf32, #tile.mma<wpc = [2, 2]>>)
// LAYOUT: tile.dot {{.*}} -> tensor<32x32xf32, #tile.mma<wpc = [2, 2]>>
// LAYOUT-NOT: tile.convert_layout {{.*}}#tile.mma{{.*}} -> {{.*}}#tile.blocked
// LAYOUT: scf.yield

// LLVM-LABEL: llvm.func @accumulate
// LLVM: llvm.icmp "slt"
// LLVM: llvm.cond_br
// LLVM: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// LLVM: llvm.br ^bb{{[0-9]+}}(%{{.*}} : i32, f32
tile.kernel @accumulate(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %k: i32) attributes {config = #tile.config<tile = [32, 32, 16], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %c16 = arith.constant 16 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<32x256xbf16, strides = [256, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<256x32xbf16, strides = [32, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<32x32xf32, strides = [32, 1]>
  %acc = scf.for %i = %c0 to %k step %c16 iter_args(%sum = %zero) -> (tensor<32x32xf32>) : i32 {
    %at = tile.load %av[%c0, %i] : !tile.view<32x256xbf16, strides = [256, 1]> -> tensor<32x16xbf16>
    %bt = tile.load %bv[%i, %c0] : !tile.view<256x32xbf16, strides = [32, 1]> -> tensor<16x32xbf16>
    %d = tile.dot %at, %bt, %sum : tensor<32x16xbf16>, tensor<16x32xbf16> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  tile.store %acc, %cv[%c0, %c0] : tensor<32x32xf32>, !tile.view<32x32xf32, strides = [32, 1]>
  tile.return
}

// A run-time bound with a step of 4: iv + 4 wraps past 2^31 - 1 for a bound
// near it (the loop would never end); a wrapped step ends the loop at ub.
// LLVM-LABEL: llvm.func @wrapping_step
// LLVM: ^bb{{[0-9]+}}(%[[IV:.*]]: i32):
// LLVM: %[[NEXT:.*]] = llvm.add %[[IV]], %{{.*}} : i32
// LLVM: %[[WRAPPED:.*]] = llvm.icmp "slt" %[[NEXT]], %[[IV]] : i32
// LLVM: llvm.select %[[WRAPPED]], %{{.*}}, %[[NEXT]] : i1, i32
tile.kernel @wrapping_step(%x: !tile.ptr<f32>, %n: i32) attributes {config = #tile.config<tile = [128], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  %v = tile.make_view %x sizes(%n) : !tile.ptr<f32> -> !tile.view<?xf32, strides = [1]>
  %zero = arith.constant dense<0.0> : tensor<128xf32>
  scf.for %i = %c0 to %n step %c4 : i32 {
    tile.store %zero, %v[%i] : tensor<128xf32>, !tile.view<?xf32, strides = [1]>
  }
  tile.return
}

// Constant bounds that cannot wrap, or a unit step: no guard.
// LLVM-LABEL: llvm.func @exact_steps
// LLVM-NOT: llvm.select
// LLVM: llvm.return
tile.kernel @exact_steps(%x: !tile.ptr<f32>, %n: i32) attributes {config = #tile.config<tile = [128], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c128 = arith.constant 128 : i32
  %c4096 = arith.constant 4096 : i32
  %v = tile.make_view %x sizes(%n) : !tile.ptr<f32> -> !tile.view<?xf32, strides = [1]>
  %zero = arith.constant dense<0.0> : tensor<128xf32>
  scf.for %i = %c0 to %c4096 step %c128 : i32 {
    tile.store %zero, %v[%i] : tensor<128xf32>, !tile.view<?xf32, strides = [1]>
  }
  scf.for %i = %c0 to %n step %c1 : i32 {
    tile.store %zero, %v[%i] : tensor<128xf32>, !tile.view<?xf32, strides = [1]>
  }
  tile.return
}

// MMA: .entry gemm_bf16
// MMA: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// MMA8: .entry gemm_e4m3
// MMA8: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32
