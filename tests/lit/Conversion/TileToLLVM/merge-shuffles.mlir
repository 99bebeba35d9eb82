// merge-shuffles: a repeated shuffle of one block (same value, lane, mask and
// kind) takes the first one's result; a shuffle from another lane, of
// another kind or in another block stays.
// RUN: tilejit-opt %s --merge-shuffles | FileCheck %s

// CHECK-LABEL: llvm.func @repeated
// CHECK: %[[A:[0-9]+]] = nvvm.shfl.sync idx %{{[0-9]+}}, %arg0, %arg1, %{{[0-9]+}} : f32 -> f32
// CHECK-NOT: nvvm.shfl.sync idx %{{[0-9]+}}, %arg0, %arg1
// CHECK: nvvm.shfl.sync idx %{{[0-9]+}}, %arg0, %arg2, %{{[0-9]+}} : f32 -> f32
// CHECK: nvvm.shfl.sync bfly %{{[0-9]+}}, %arg0, %arg1, %{{[0-9]+}} : f32 -> f32
// CHECK: llvm.fadd %[[A]], %[[A]]
// CHECK: ^bb1:
// CHECK: nvvm.shfl.sync idx %{{[0-9]+}}, %arg0, %arg1, %{{[0-9]+}} : f32 -> f32
llvm.func @repeated(%v: f32, %lane: i32, %other: i32) -> f32 {
  %mask = llvm.mlir.constant(-1 : i32) : i32
  %clamp = llvm.mlir.constant(31 : i32) : i32
  %a = nvvm.shfl.sync idx %mask, %v, %lane, %clamp : f32 -> f32
  %b = nvvm.shfl.sync idx %mask, %v, %lane, %clamp : f32 -> f32
  %c = nvvm.shfl.sync idx %mask, %v, %other, %clamp : f32 -> f32
  %d = nvvm.shfl.sync bfly %mask, %v, %lane, %clamp : f32 -> f32
  %s = llvm.fadd %a, %b : f32
  %t = llvm.fadd %s, %c : f32
  %u = llvm.fadd %t, %d : f32
  llvm.br ^bb1
^bb1:
  %e = nvvm.shfl.sync idx %mask, %v, %lane, %clamp : f32 -> f32
  %w = llvm.fadd %u, %e : f32
  llvm.return %w : f32
}
