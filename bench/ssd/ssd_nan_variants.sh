#!/usr/bin/env bash
# PTX of the prefill plan's three SSD launches (ssd_span_state, ssd_state_pass,
# ssd_prefill span_states=1) at NemotronH geometry, for ssd_prefill_gpu.py:
# DIR/NAME{,.state,.pass}.{ptx,json} and a line "NAME 32 32 32" in
# DIR/variants.txt. Issue 33's NaN ordering inside a chunk was measured this
# way, one tilejit build per variant of chunkOutput.
# Usage: ssd_nan_variants.sh TILEJIT DIR NAME [ARCH]
set -euo pipefail
tj=$1 dir=$2 name=$3 arch=${4:-sm_90a}
mkdir -p "$dir"
geo=(--set heads=64 --set head_dim=64 --set state=128)
ssd=("${geo[@]}" --set groups=8 --set dt_stride=10304 --set dt_col=10240)
"$tj" compile ssd_prefill --arch "$arch" "${ssd[@]}" --set span_states=1 \
  -o "$dir/$name.ptx" --meta "$dir/$name.json"
"$tj" compile ssd_span_state --arch "$arch" "${ssd[@]}" --set chunk=32 \
  -o "$dir/$name.state.ptx" --meta "$dir/$name.state.json"
"$tj" compile ssd_state_pass --arch "$arch" "${geo[@]}" --set block=1024 \
  -o "$dir/$name.pass.ptx" --meta "$dir/$name.pass.json"
echo "$name 32 32 32" >>"$dir/variants.txt"
printf '%-12s ' "$name"; ptxas -arch="$arch" -v "$dir/$name.ptx" -o /dev/null 2>&1 |
  grep -E "registers|spill" | tr -s ' \n' ' '; echo
