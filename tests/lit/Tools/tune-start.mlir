// `tilejit tune --dry-run` for a decode kernel at a plan's constants
// (docs/tune.md): --set fixes a constant, --start starts a tunable one at the
// plan's value (the first candidate), the default is still tried, and a
// candidate that builds a kernel already kept is pruned as a repeat.
//
// RUN: tilejit tune ssm_update --dry-run --shape rows=64 --set dt_stride=10304 --set dt_col=10240 --start warps=8 2>&1 | FileCheck %s --check-prefix=START
// START: ssm_update at rows=64 for sm_90a: 9 candidates, 9 kept, 0 pruned
// START-NEXT: kept   block_p=16,warps=8  (256 threads
// START-NEXT: kept   block_p=16,warps=4 (default)
//
// RUN: tilejit tune out_proj --dry-run --shape rows=1 --set producer=0 --set persistent=0 --set warps=4 --set block_k=512 --set block_n=4 2>&1 | FileCheck %s --check-prefix=REPEAT
// REPEAT: out_proj at rows=1 for sm_90a: 3 candidates, 2 kept, 1 pruned
// REPEAT: pruned block_k=512,block_n=4,loads_in_flight=16,persistent=0,producer=0,warps=4  -- the same kernel as block_k=512,block_n=4,loads_in_flight=8,persistent=0,producer=0,warps=4 (default)
