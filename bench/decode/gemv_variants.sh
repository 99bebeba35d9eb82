#!/usr/bin/env bash
# Issue 30, parts 2 and 3 on the H200: the chunked decode GEMV (block_m rows
# against one read of the weight) against today's decode projections, the
# variants interleaved batch by batch so they share the GPU's state:
#   base      the plan's defaults (GEMV at B = 1, direct tensor cores from a
#             few rows, 16-row tiles from 16, the GEMM for in_proj from 64)
#   rowmajor  chunked = 1 on both projections, the weight read row-major
#   packed    chunked = 1, the weight packed at upload (k16-rows<block_n>)
#   packed-f8 packed, loads_in_flight 8 (fewer loads in flight, fewer registers)
#   packed-bn32 packed, in_proj_conv block_n 32 (half the programs, longer runs)
# then torch's quant + torch._scaled_mm (and torch.matmul for bf16) at each
# batch (decode_torch_bench.py). Each tilejit run checks B = 1 against f64 and
# times one batch; its log holds the per-kernel table (us, MB, TB/s, floor).
# Prints one line per run: the step per layer, in_proj and out_proj per launch.
# Usage: gemv_variants.sh TILEJIT OUT   (BATCHES="1 2 4 8 16 32 64" by default;
# LAYERS: Mamba layers of the timed graph, default the model's)
set -u
tj=$1 out=$2
mkdir -p "$out"
layers=()
[ -n "${LAYERS:-}" ] && layers=(--layers "$LAYERS")
sets() { # constant value kernels...
  c=$1 v=$2
  shift 2
  for k in "$@"; do printf -- '--set %s.%s=%s ' "$k" "$c" "$v"; done
}
kernelLine() { # log role: "in_proj 15.30 us 1.82 TB/s" of the FP8 layers
  grep -m1 -E "^kernel [a-z_]+ +$2 +fp8 layer" "$1" |
    sed -E 's/.*: +([0-9.]+) us per launch, +([0-9.]+) MB moved, ([0-9.]+) TB\/s.*/\1 us \3 TB\/s/'
}
run() { # name args...
  name=$1
  shift
  start=$(date +%s)
  timeout "${RUN_TIMEOUT:-120}" "$tj" run "${layers[@]}" "$@" </dev/null >"$out/$name.log" 2>&1
  rc=$?
  printf '%-22s exit %s (%3s s): %s | in_proj %s | out_proj %s\n' "$name" "$rc" \
    "$(( $(date +%s) - start ))" "$(grep -m1 -o 'step B=.*per layer' "$out/$name.log")" \
    "$(kernelLine "$out/$name.log" in_proj)" "$(kernelLine "$out/$name.log" out_proj)"
}
proj="in_proj_conv out_proj"
for b in ${BATCHES:-1 2 4 8 16 32 64}; do
  common=(--batch 1 --time-batch "$b" --steps 1)
  # shellcheck disable=SC2046
  {
    run "base-B$b" "${common[@]}"
    run "rowmajor-B$b" "${common[@]}" $(sets chunked 1 $proj) $(sets packed 0 $proj)
    run "packed-B$b" "${common[@]}" $(sets chunked 1 $proj)
    run "packed-f8-B$b" "${common[@]}" $(sets chunked 1 $proj) $(sets loads_in_flight 8 $proj)
    run "packed-bn32-B$b" "${common[@]}" $(sets chunked 1 $proj) --set in_proj_conv.block_n=32 \
      --set in_proj_conv.block_k=64
  }
  python3 "$(dirname "$0")/decode_torch_bench.py" --rows "$b" 2>&1 | tee "$out/torch-B$b.log" |
    grep -E "fp8" | sed "s/^/torch B=$b /"
done
