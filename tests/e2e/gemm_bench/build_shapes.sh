#!/usr/bin/env bash
# PTX + launch metadata for accumulation.py / prefill.py: each line
# "NAME KERNEL N K BM BN BK STAGES WARPS ARCH" of LIST becomes DIR/NAME.{ptx,json,cfg}
# (`tilejit compile` with those constants); prints ptxas -v registers/spills.
# Usage: build_shapes.sh TILEJIT DIR LIST
set -euo pipefail
tj="$1" dir="$2" list="$3"
mkdir -p "$dir"; rm -f "$dir"/*
while read -r name kernel n k bm bn bk st w arch; do
  [ -z "$name" ] && continue; [[ "$name" == \#* ]] && continue
  "$tj" compile "$kernel" --arch "$arch" -o "$dir/$name.ptx" --meta "$dir/$name.json" \
    --set n=$n --set k=$k --set block_m=$bm --set block_n=$bn --set block_k=$bk --set stages=$st --set warps=$w
  echo "{\"kernel\":\"$kernel\",\"n\":$n,\"k\":$k,\"bm\":$bm,\"bn\":$bn,\"bk\":$bk,\"stages\":$st,\"warps\":$w,\"arch\":\"$arch\"}" > "$dir/$name.cfg"
  printf "%-28s " "$name"; ptxas -arch="$arch" -v "$dir/$name.ptx" -o /dev/null 2>&1 | grep -E "registers|spill" | tr -s ' \n' ' '; echo
done < "$list"
