// out_proj's tail_splits (docs/decode-projections.md#the-last-wave): the plan
// and the kernel.
//
// The H200's prefill plan at T = 8192 with out_proj.tail_splits=3: out_proj's
// 704 tiles of 128 x 256 leave 44 for the 132 programs' last wave, so its last
// 4 row tiles (512 rows) are split 3 ways: 660 whole tiles + 132 pieces, one
// launch of (792, 1) items, then split_k_sum over those 512 rows. in_proj's
// last wave (116 of 132) is nearly full: unsplit.
// RUN: tilejit run --backend interp --plan-arch sm_90a --mode prefill --set out_proj.tail_splits=3 --dry-run 2>&1 | FileCheck %s --check-prefix=PLAN
// PLAN: launch out_proj (in_proj, fp8 layer) layer 0 slot 0 grid [41, 64, 1] constants [{{.*}}tail_splits=1,{{.*}}] args (act_q, l0.in_proj.weight, zxbcdt, 8192, {{.*}})
// PLAN: launch out_proj (out_proj, fp8 layer) layer 0 slot 0 grid [792, 1, 1] constants [{{.*}}tail_splits=3,{{.*}}] args (normed, l0.out_proj.weight, act1, out_proj_partials, 8192, 512, {{.*}})
// PLAN-NEXT: launch split_k_sum (out_proj_sum, fp8 layer) layer 0 slot -1 grid [3, 512, 1] constants [{{.*}}splits=3,tail_only=1,{{.*}}] args (out_proj_partials, act1, 8192, 512, {{.*}})
// PLAN: buffer out_proj_partials activation f32 [3, 512, 2688]
//
// The kernel: the whole tiles and the pieces take different K ranges, so both
// tile loops carry their running ring count, advanced by each tile's own trip
// count; each program stores its tile both ways, one of them a view of no rows.
// RUN: tilejit dump out_proj --arch sm_90a --set block_m=128 --set block_n=256 --set block_k=128 --set warps=8 --set stages=3 --set producer=1 --set persistent=8 --set tail_splits=3 --stage mlir 2>&1 | FileCheck %s --check-prefix=KERNEL
// KERNEL: // ----- mlir.tile-warp-specialize -----
// KERNEL: tile.kernel @out_proj({{.*}}tile.name = "partials", tile.shape = [3, "tail", 2688]}, {{.*}}tile.name = "rows"}, {{.*}}tile.name = "tail"}
// KERNEL: producer {
// KERNEL: scf.for {{.*}} iter_args(%[[PBASE:.*]] = %c0_i32) -> (i32)
// KERNEL: scf.for %[[K:.*]] = %[[LB:.*]] to %[[UB:.*]] step
// KERNEL: arith.addi %[[PBASE]], %{{.*}} : i32
// KERNEL: tile.tma_copy
// KERNEL: arith.subi %[[UB]], %[[LB]] : i32
// KERNEL: } consumer {
// KERNEL: scf.for {{.*}} iter_args(%[[CBASE:.*]] = %c0_i32) -> (i32)
// KERNEL: scf.for {{.*}} iter_args
// KERNEL: arith.addi %[[CBASE]], %{{.*}} : i32
// KERNEL: tile.store {{.*}} : tensor<128x256xf32, {{.*}}>, <?x2688xf32, strides = [2688, 1]>
// KERNEL: tile.store {{.*}} : tensor<128x256xbf16, {{.*}}>, <?x2688xbf16, strides = [2688, 1]>
// KERNEL: } {tile.tile_loop}
