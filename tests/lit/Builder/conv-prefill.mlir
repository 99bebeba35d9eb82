// conv_prefill reads xBC in place from zxbcdt through a strided view (no copy),
// in [1, block_c] tiles whose xBC rows and outputs travel as 16-byte accesses,
// and its IR round-trips through tilejit-opt.
// RUN: tilejit dump conv_prefill --stage tile > %t.mlir
// RUN: tilejit-opt %t.mlir | tilejit-opt | FileCheck %s
// RUN: tilejit dump conv_prefill --stage tile --set inner=40 --set channels=200 --set heads=8 --set block_c=128 | FileCheck %s --check-prefix=SMALL
// RUN: tilejit dump conv_prefill --stage ptx --arch sm_90a --set rows_per_step=16 --set fast_silu=0 > %t.ptx
// RUN: grep 'ld.global.v4.b32' %t.ptx | count 23
// RUN: grep 'st.global.v4.b32' %t.ptx | count 32
// RUN: not tilejit dump conv_prefill --stage tile --set block_t=48 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: tile.kernel @conv_prefill
// CHECK-SAME: config = #tile.config<tile = [1, 1024], warps = 4, vector = 8>
// The chunk's rows and the sequence's rows of zxbcdt: columns up to the end of
// xBC are visible, rows are 10304 columns apart.
// CHECK: tile.make_view %arg0 sizes({{.*}}) : <bf16> -> <?x10240xbf16, strides = [10304, 1]>
// CHECK: tile.make_view %arg0 sizes({{.*}}) : <bf16> -> <?x10240xbf16, strides = [10304, 1]>
// The old state's taps: a [num_slots, channels] view with the page's strides.
// CHECK: tile.make_view %{{.*}} sizes(%arg11) : <bf16> -> <?x6144xbf16, strides = [18432, 3]>
// A padding sequence stores zero rows and reads nothing.
// CHECK: scf.if
// CHECK: scf.for
// CHECK-NOT: tile.load
// CHECK: tile.store
// CHECK: scf.if
// CHECK: tile.load
// The token loop carries the 3 halo rows, widened to f32 once, and each tap is
// one fused multiply-add.
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (tensor<1x1024xf32>, tensor<1x1024xf32>, tensor<1x1024xf32>)
// CHECK-COUNT-4: math.fma

// SMALL: tile.make_view %arg0 sizes({{.*}}) : <bf16> -> <?x240xbf16, strides = [248, 1]>

// In the PTX: 16 token rows per step, the 3 halo rows, 3 final-state rows and
// the bias are 16-byte loads (23); 16 output rows per step, in the live and the
// padding loop, are 16-byte stores (32).

// BAD: kernel 'conv_prefill': constant 'block_t' is 48; it must be a power of two in [4, 1024]
