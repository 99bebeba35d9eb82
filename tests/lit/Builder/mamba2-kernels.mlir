// The Mamba2 kernels written with the C++ builder print IR that verifies and
// round-trips through tilejit-opt, with the C++ call sites as locations.
// RUN: tilejit dump gated_rmsnorm --stage tile > %t.rms.mlir
// RUN: tilejit-opt %t.rms.mlir | tilejit-opt | FileCheck %s --check-prefix=RMS
// RUN: tilejit dump gated_rmsnorm --stage tile --set group_size=256 | FileCheck %s --check-prefix=RMS256
// RUN: tilejit dump conv_update --stage tile > %t.conv.mlir
// RUN: tilejit-opt %t.conv.mlir | tilejit-opt | FileCheck %s --check-prefix=CONV
// RUN: FileCheck %s --check-prefix=LOC < %t.conv.mlir
// RUN: tilejit-opt %t.conv.mlir --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// RUN: not tilejit dump gated_rmsnorm --stage tile --set groups=2 2>&1 | FileCheck %s --check-prefix=BADSET

// RMS-LABEL: tile.kernel @gated_rmsnorm
// RMS-SAME: config = #tile.config<tile = [1, 512], warps = 2, vector = 8>
// RMS: tile.load {{.*}} -> tensor<1x512xbf16>
// RMS: tile.reduce sum {{.*}} axis 1 : tensor<1x512xf32> -> tensor<1xf32>
// RMS: math.rsqrt
// Two rounding points (R6): bf16(v * r), then bf16(w * ...).
// RMS: tile.convert {{.*}} rounding rne : tensor<1x512xf32> -> tensor<1x512xbf16>
// RMS: tile.convert {{.*}} rounding rne : tensor<1x512xf32> -> tensor<1x512xbf16>
// RMS-NEXT: tile.store

// RMS256: tile.reduce sum {{.*}} : tensor<1x256xf32> -> tensor<1xf32>

// CONV-LABEL: tile.kernel @conv_update
// CONV: tile.ptr_load {{.*}} : !tile.ptr<i32>
// CONV: tile.addptr {{.*}} : tensor<256x!tile.ptr<bf16>>, tensor<256xi32>
// The taps shift in place, then the output (zero for padding rows) is stored.
// CONV: tile.ptr_store
// CONV: tile.ptr_store
// CONV: tile.ptr_store
// CONV: arith.select
// CONV: tile.ptr_store

// LOC: loc("{{.*}}models/mamba2/ConvUpdate.cpp":{{[0-9]+}}:{{[0-9]+}})

// BADSET: kernel 'gated_rmsnorm' has no constant 'groups' (it has: width, group_size, fp8_out, z_stride, y_stride, gate, norm_before_gate, layer_norm, bias, rows_per_program, warps, param_rows, quant_fma, fast_silu, y_type, z_type, weight_type, bias_type, out_type, dependent)
