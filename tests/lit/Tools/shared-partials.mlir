// Layers share the split-K partials but may split K differently: at 64 rows
// the portable sm_90 plan splits the FP8 out_proj 6 ways and the bf16 one 11
// ways. The shared buffer must hold the larger (sized by the first layer it
// held 6 x 64 x 2688 and the bf16 layer wrote past it: an illegal address on
// the H100 in the 3- and 23-layer steps).
// RUN: tilejit run --backend compile-only --plan-arch sm_90 --layers 3 --batch 64 --dry-run 2>&1 | FileCheck %s
// CHECK: launch out_proj (out_proj, fp8 layer) layer 0 {{.*}} constants [{{.*}},k_splits=6,{{.*}}]
// CHECK: launch out_proj (out_proj, bf16 layer) layer 4 {{.*}} constants [{{.*}},k_splits=11,{{.*}}]
// CHECK: buffer out_proj_partials activation f32 [11, 64, 2688]
