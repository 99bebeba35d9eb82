#!/usr/bin/env bash
# The SSD's span schedule from two tilejit builds in one folder, for
# ssd_prefill_gpu.py to check and time side by side in one call: each variant
# of ssd_variants.sh as b_NAME (the build before a change) and a_NAME (after).
# Usage: ssd_builds.sh BEFORE_TILEJIT AFTER_TILEJIT DIR [HEADS] (SSD_VARIANTS:
# the names to build, default "plan"); then, on the GPU host,
# python3 bench/ssd/ssd_prefill_gpu.py DIR (carry DIR when it is git-ignored).
set -euo pipefail
before=$1 after=$2 dir=$3 heads=${4:-128}
here=$(cd "$(dirname "$0")" && pwd)
export SSD_VARIANTS=${SSD_VARIANTS:-plan}
rm -rf "$dir"
mkdir -p "$dir"
for side in b a; do
  tj=$before
  [ "$side" = a ] && tj=$after
  tmp=$(mktemp -d)
  echo "== $side: $tj"
  "$here/ssd_variants.sh" "$tj" "$tmp" "$heads"
  while read -r name rest; do
    for f in "$tmp/$name".*; do cp "$f" "$dir/${side}_$(basename "$f")"; done
    echo "${side}_$name $rest" >>"$dir/variants.txt"
  done <"$tmp/variants.txt"
  cp "$tmp/heads" "$dir/heads"
  rm -rf "$tmp"
done
