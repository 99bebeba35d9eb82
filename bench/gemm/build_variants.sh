#!/usr/bin/env bash
# GEMM variants for bench.py: builds DIR/var/NAME.{ptx,json,cfg,cubin} for each
# line "NAME KERNEL BLOCK_M BLOCK_N BLOCK_K STAGES WARPS [ARCH]" of VARIANTS
# (ARCH defaults to sm_90a; sm_90 PTX runs on an H200 too and keeps mma.sync),
# prints IR->PTX time and ptxas registers/spills, and DIR/mb/mma_peak.cubin (nvcc).
# Usage: build_variants.sh TILEJIT DIR VARIANTS
set -euo pipefail
tilejit="$1" dir="$2" variants="$3"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir/var" "$dir/mb"
rm -f "$dir"/var/*
while read -r name kernel bm bn bk stages warps arch; do
  [ -z "$name" ] && continue; [[ "$name" == \#* ]] && continue
  arch=${arch:-sm_90a}
  "$tilejit" compile "$kernel" --arch "$arch" -o "$dir/var/$name.ptx" --meta "$dir/var/$name.json" \
    --set block_m="$bm" --set block_n="$bn" --set block_k="$bk" --set stages="$stages" \
    --set warps="$warps" --time
  echo "{\"kernel\": \"$kernel\", \"bm\": $bm, \"bn\": $bn}" >"$dir/var/$name.cfg"
  ptxas -arch="$arch" -v "$dir/var/$name.ptx" -o "$dir/var/$name.cubin" 2>&1 |
    grep -E "registers|spill|arning" | tr -s ' \n' ' '
  echo
done <"$variants"
nvcc -cubin -gencode=arch=compute_90a,code=sm_90a -o "$dir/mb/mma_peak.cubin" "$here/mma_peak.cu"
