#!/usr/bin/env bash
# A register cap on a variant's ssd_prefill, for ssd_prefill_gpu.py to time beside
# the uncapped one: copies DIR/NAME.* (ssd_variants.sh's files) to DIR/NAME_rCAP.*,
# puts `.maxnreg CAP` on the kernel's entry (CAP 168: three 128-thread programs an
# SM, 128: four), adds the variant's line and prints ptxas's registers and spills.
# Usage: cap_registers.sh DIR NAME CAP
set -euo pipefail
dir=$1 name=$2 cap=$3
capped=${name}_r$cap
for f in "$dir/$name".*; do cp "$f" "$dir/$capped${f#"$dir/$name"}"; done
# The entry's .reqntid line is where its performance directives sit.
grep -q '^\.reqntid' "$dir/$capped.ptx" || { echo "no .reqntid in $dir/$name.ptx" >&2; exit 1; }
sed -i "s/^\(\.reqntid .*\)$/\1\n.maxnreg $cap/" "$dir/$capped.ptx"
line=$(grep "^$name " "$dir/variants.txt")
echo "$capped ${line#"$name "}" >>"$dir/variants.txt"
if command -v ptxas >/dev/null; then
  printf '%-22s ' "$capped"
  ptxas -arch=sm_90a -v "$dir/$capped.ptx" -o /dev/null 2>&1 | grep -E "registers|spill" | tr -s ' \n' ' '
  echo
fi
