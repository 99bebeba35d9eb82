#!/usr/bin/env bash
# GEMM variants for bench.py: builds DIR/var/NAME.{ptx,json,cfg} for each line
# "NAME KERNEL BLOCK_M BLOCK_N BLOCK_K STAGES WARPS" of VARIANTS, prints
# IR->PTX time and ptxas registers/spills, and DIR/mb/mma_peak.cubin (nvcc).
# Usage: build_variants.sh TILEJIT DIR VARIANTS
set -euo pipefail
tilejit="$1" dir="$2" variants="$3"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir/var" "$dir/mb"
rm -f "$dir"/var/*
while read -r name kernel bm bn bk stages warps; do
  [ -z "$name" ] && continue
  "$tilejit" compile "$kernel" --arch sm_90a -o "$dir/var/$name.ptx" --meta "$dir/var/$name.json" \
    --set block_m="$bm" --set block_n="$bn" --set block_k="$bk" --set stages="$stages" \
    --set warps="$warps" --time
  echo "{\"kernel\": \"$kernel\", \"bm\": $bm, \"bn\": $bn}" >"$dir/var/$name.cfg"
  ptxas -arch=sm_90a -v "$dir/var/$name.ptx" -o /dev/null 2>&1 | grep -E "registers|spill" | tr -s ' \n' ' '
  echo
done <"$variants"
nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -o "$dir/mb/mma_peak.cubin" "$here/mma_peak.cu"
