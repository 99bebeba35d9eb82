// Math and conversions: PTX approximations for exp/log/rsqrt (the .ftz forms:
// one MUFU instruction each), fma.rn for math.fma, hardware
// conversions for bf16 (cvt.rn) and e4m3 (cvt.rn.satfinite).
// RUN: tilejit-opt %s --tile-layout-pipeline --tile-to-llvm-pipeline | FileCheck %s
// RUN: tilejit-opt %s --tile-layout-pipeline --tile-to-llvm-pipeline | tilejit-opt | FileCheck %s

// CHECK-LABEL: llvm.func @math
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.rsqrt.approx.ftz.f"
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: llvm.fptrunc {{.*}} : f32 to bf16
// CHECK: llvm.call_intrinsic "llvm.nvvm.ff.to.e4m3x2.rn"
// CHECK: llvm.call_intrinsic "llvm.nvvm.e4m3x2.to.f16x2.rn"
tile.kernel @math(%p: !tile.ptr<f32>, %q: !tile.ptr<bf16>, %r: !tile.ptr<f8E4M3FN>) attributes {config = #tile.config<tile = [128], warps = 4>} {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<f32> -> !tile.view<128xf32, strides = [1]>
  %x = tile.load %v[%c0] : !tile.view<128xf32, strides = [1]> -> tensor<128xf32>
  %e = math.exp %x : tensor<128xf32>
  %l = math.log1p %e : tensor<128xf32>
  %r0 = math.rsqrt %l : tensor<128xf32>
  %s = math.fma %r0, %x, %e : tensor<128xf32>
  %b = tile.convert %s rounding rne : tensor<128xf32> -> tensor<128xbf16>
  %w = tile.make_view %q : !tile.ptr<bf16> -> !tile.view<128xbf16, strides = [1]>
  tile.store %b, %w[%c0] : tensor<128xbf16>, !tile.view<128xbf16, strides = [1]>
  %f8 = tile.convert %s rounding rne saturate : tensor<128xf32> -> tensor<128xf8E4M3FN>
  %u = tile.make_view %r : !tile.ptr<f8E4M3FN> -> !tile.view<128xf8E4M3FN, strides = [1]>
  tile.store %f8, %u[%c0] : tensor<128xf8E4M3FN>, !tile.view<128xf8E4M3FN, strides = [1]>
  %back = tile.load %u[%c0] : !tile.view<128xf8E4M3FN, strides = [1]> -> tensor<128xf8E4M3FN>
  %wide = tile.convert %back : tensor<128xf8E4M3FN> -> tensor<128xf32>
  tile.store %wide, %v[%c0] : tensor<128xf32>, !tile.view<128xf32, strides = [1]>
  tile.return
}
