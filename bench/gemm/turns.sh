#!/usr/bin/env bash
# Builds the variants of LIST (turns.txt, pairs.txt) into DIR and the
# turn-taking rewrite (turns.py) of each two-warpgroup one as NAMEt next to it;
# prints ptxas registers and any C75xx warning.
# Usage: bench/gemm/turns.sh TILEJIT DIR LIST
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/build_shapes.sh" "$1" "$2" "$3"
for p in "$2"/*.ptx; do
  n=${p%.ptx}; [[ $n == *t ]] && continue
  grep -q "reqntid 384" "$p" || continue
  /usr/bin/python3 "$here/turns.py" "$p" "${n}t.ptx"
  cp "$n.json" "${n}t.json"; cp "$n.cfg" "${n}t.cfg"
  printf "%-28s " "$(basename "$n")t"; ptxas -arch=sm_90a -v "${n}t.ptx" -o /dev/null 2>&1 | grep -E "registers|spill|C75" | tr -s ' \n' ' '; echo
done
