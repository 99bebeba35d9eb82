// -debug-only=PASS prints what each pass decided and why, under the pass's own
// DEBUG_TYPE (docs/tile-dialect.md#what-a-pass-decided--debug-only). Debian's
// LLVM has no -debug-only of its own; tilejit-opt registers it, and tilejit's
// code keeps its LLVM_DEBUG traces (the build keeps assertions on).
// REQUIRES: asserts
// RUN: tilejit-opt %s --mlir-disable-threading --tile-assign-layouts=arch=sm_90a -debug-only=tile-assign-layouts -o /dev/null 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: tilejit-opt %s --mlir-disable-threading --tile-assign-layouts=arch=sm_90 -debug-only=tile-assign-layouts -o /dev/null 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: tilejit-opt %s --mlir-disable-threading --tile-layout-pipeline=arch=sm_90a -debug-only=tile-pipeline-dots -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: tilejit-opt %s --mlir-disable-threading --tile-layout-pipeline=arch=sm_90a --tile-to-llvm-pipeline -debug-only=convert-tile-to-llvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=LLVM
// One -debug-only may name several passes; without it nothing is traced.
// (One thread: kernels would otherwise be traced in any order.)
// RUN: tilejit-opt %s --mlir-disable-threading --tile-layout-pipeline=arch=sm_90a -debug-only=tile-pipeline-dots,tile-assign-layouts -o /dev/null 2>&1 | FileCheck %s --check-prefixes=LAYOUT,PIPE
// RUN: tilejit-opt %s --mlir-disable-threading --tile-layout-pipeline=arch=sm_90a -o /dev/null 2>&1 | count 0

// LAYOUT: tile-assign-layouts: kernel @wgmma, 4 warps, arch 'sm_90a' (wgmma)
// LAYOUT: tile-assign-layouts: dot at loc({{.*}}:[[#@LINE+27]]:10): wgmma
// LAYOUT: tile-assign-layouts: 'tile.load' at loc({{.*}}:[[#@LINE+23]]:11): tile<128x128xf8E4M3FN> starts in #tile.blocked<spt = [1, 16], tpw = [4, 8], wpc = [4, 1], order = [1, 0]> (16-element accesses)
// LAYOUT: tile-assign-layouts: convert_layout {{.*}} -> #tile.wgmma_operand<opIdx = 0> for 'tile.dot'
// LAYOUT: tile-assign-layouts: convert_layout {{.*}} -> #tile.wgmma_operand<opIdx = 1> for 'tile.dot'
// LAYOUT: tile-assign-layouts: dot at {{.*}}: accumulator #tile.mma<wpc = [4, 1]>
// SM90: tile-assign-layouts: dot at loc({{.*}}:[[#@LINE+22]]:10): mma.sync, since the target has no wgmma
// SM90: tile-assign-layouts: dot at {{.*}}: accumulator #tile.mma<wpc = [2, 2]>
// PIPE: tile-pipeline-dots: operand A of the dot at loc({{.*}}:[[#@LINE+20]]:10): staged through shared memory
// PIPE: tile-pipeline-dots: operand B of the dot at {{.*}}: staged through shared memory
// PIPE: tile-pipeline-dots: loop at {{.*}}: staged operands: 2, slots per ring: 3, iterations copied ahead: 2
// LLVM: convert-tile-to-llvm: dot at {{.*}}: wgmma
// LLVM: convert-tile-to-llvm: kernel @wgmma: 128 threads, 73728 bytes of dynamic shared memory
// A K-contiguous e4m3 GEMM: wgmma on sm_90a, both operands staged.
tile.kernel @wgmma(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>, %m: i32) attributes {config = #tile.config<tile = [128, 64, 128], warps = 4, stages = 3>} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %av = tile.make_view %a sizes(%m) : !tile.ptr<f8E4M3FN> -> !tile.view<?x512xf8E4M3FN, strides = [512, 1]>
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<64x512xf8E4M3FN, strides = [512, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x64xf32, strides = [64, 1]>
  %pid = tile.program_id 0 : i32
  %row = arith.muli %pid, %c128 : i32
  %acc = scf.for %k = %c0 to %c512 step %c128 iter_args(%sum = %zero) -> (tensor<128x64xf32>) : i32 {
    %at = tile.load %av[%row, %k] : !tile.view<?x512xf8E4M3FN, strides = [512, 1]> -> tensor<128x128xf8E4M3FN>
    %wt = tile.load %wv[%c0, %k] : !tile.view<64x512xf8E4M3FN, strides = [512, 1]> -> tensor<64x128xf8E4M3FN>
    %bt = tile.transpose %wt [1, 0] : tensor<64x128xf8E4M3FN> -> tensor<128x64xf8E4M3FN>
    %d = tile.dot %at, %bt, %sum : tensor<128x128xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<128x64xf32>
    scf.yield %d : tensor<128x64xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x64xf32>, !tile.view<?x64xf32, strides = [64, 1]>
  tile.return
}

// LAYOUT: tile-assign-layouts: kernel @mma_sync, 8 warps, arch 'sm_90a' (wgmma)
// LAYOUT: tile-assign-layouts: dot at loc({{.*}}:[[#@LINE+25]]:10): mma.sync, since A is not a load, or B not the only use of a [1, 0] transpose of one
// LAYOUT: tile-assign-layouts: 'arith.constant' at {{.*}} rebuilt in #tile.mma<wpc = [2, 4]> for 'scf.for'
// LAYOUT: tile-assign-layouts: convert_layout {{.*}} -> #tile.dot_operand<opIdx = 0, parent = <wpc = [2, 4]>, kWidth = 2> for 'tile.dot'
// PIPE: tile-pipeline-dots: operand A of the dot at {{.*}}: staged through shared memory
// PIPE: tile-pipeline-dots: operand B of the dot at {{.*}}: stays in registers, since its view's rows and row stride are not static multiples of 16 bytes
// PIPE: tile-pipeline-dots: loop at {{.*}}: staged operands: 1, slots per ring: 2, iterations copied ahead: 1
// LLVM: convert-tile-to-llvm: 'tile.convert_layout' at loc({{.*}}:[[#@LINE+18]]:11): through shared memory
// LLVM: convert-tile-to-llvm: dot at {{.*}}: mma.sync
// LLVM: convert-tile-to-llvm: kernel @mma_sync: 256 threads, 24576 bytes of dynamic shared memory
// B read as [K, N] (N contiguous): no wgmma descriptor for it, so mma.sync; A is
// staged, B's run-time row stride keeps it in registers.
tile.kernel @mma_sync(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %m: i32, %ld: i64) attributes {config = #tile.config<tile = [128, 128, 32], warps = 8, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %av = tile.make_view %a sizes(%m) : !tile.ptr<bf16> -> !tile.view<?x512xbf16, strides = [512, 1]>
  %bv = tile.make_view %b strides(%ld) : !tile.ptr<bf16> -> !tile.view<512x256xbf16, strides = [?, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x256xf32, strides = [256, 1]>
  %pid = tile.program_id 0 : i32
  %row = arith.muli %pid, %c128 : i32
  %acc = scf.for %k = %c0 to %c512 step %c32 iter_args(%sum = %zero) -> (tensor<128x128xf32>) : i32 {
    %at = tile.load %av[%row, %k] : !tile.view<?x512xbf16, strides = [512, 1]> -> tensor<128x32xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<512x256xbf16, strides = [?, 1]> -> tensor<32x128xbf16>
    %d = tile.dot %at, %bt, %sum : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x128xf32>, !tile.view<?x256xf32, strides = [256, 1]>
  tile.return
}
