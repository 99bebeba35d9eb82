#!/usr/bin/env bash
# PTX + launch metadata for accumulation.py / prefill.py / hopper.py: each line
# "NAME KERNEL N K BM BN BK STAGES WARPS ARCH [KEY=VALUE ...]" of LIST becomes
# DIR/NAME.{ptx,json,cfg} (`tilejit compile` with those constants, the extra ones
# such as producer=1 too); prints ptxas -v registers/spills.
# Usage: build_shapes.sh TILEJIT DIR LIST
set -euo pipefail
tj="$1" dir="$2" list="$3"
mkdir -p "$dir"; rm -f "$dir"/*
while read -r name kernel n k bm bn bk st w arch extra; do
  [ -z "$name" ] && continue; [[ "$name" == \#* ]] && continue
  sets=(); json=""
  for kv in $extra; do sets+=(--set "$kv"); json="$json,\"${kv%%=*}\":${kv#*=}"; done
  # out_proj (the prefill GEMM) names its dimensions hidden (N) and inner (K).
  case $kernel in out_proj) dims=(--set hidden=$n --set inner=$k) ;; *) dims=(--set n=$n --set k=$k) ;; esac
  "$tj" compile "$kernel" --arch "$arch" -o "$dir/$name.ptx" --meta "$dir/$name.json" \
    "${dims[@]}" --set block_m=$bm --set block_n=$bn --set block_k=$bk --set stages=$st --set warps=$w \
    "${sets[@]}"
  echo "{\"kernel\":\"$kernel\",\"n\":$n,\"k\":$k,\"bm\":$bm,\"bn\":$bn,\"bk\":$bk,\"stages\":$st,\"warps\":$w,\"arch\":\"$arch\"$json}" > "$dir/$name.cfg"
  printf "%-28s " "$name"; ptxas -arch="$arch" -v "$dir/$name.ptx" -o /dev/null 2>&1 | grep -E "registers|spill" | tr -s ' \n' ' '; echo
done < "$list"
