#!/usr/bin/env bash
# The short call of a session whose device time is nearly spent: the split-K
# decode plans beside the unsplit ones (B = 8, 64, 256) and the SSD's span and
# chunk-parallel schedules (a few variants of each, checked against f64, then
# timed), every part under its own timeout so the logs always come back as one
# archive, $OUT/quick.tar.xz. Needs only the bundle (bundle/tilejit-bundle.tar.xz).
# Usage: tests/e2e/gpu_quick.sh   (QUICK_RUNS: splitk_gpu.sh's runs; QUICK_SSD: the
# variant names kept from bench/ssd/ssd_variants.sh, or none: no SSD part;
# QUICK_SSD_TIMEOUT: the SSD bench's seconds, 130 by default)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
work=/tmp/tj logs=/tmp/tj/quick
mkdir -p "$logs"
trap 'tar -C "$work" -cJf "${OUT:-$work}/quick.tar.xz" quick' EXIT
[ -x "$work/tilejit-bundle/bin/tilejit" ] || tar -xJf "$root/bundle/tilejit-bundle.tar.xz" -C "$work" ||
  { rm -rf "$work/tilejit-bundle"; exit 1; } # no partial tree for the next call
tj=$work/tilejit-bundle/bin/tilejit
export TILEJIT_CACHE_DIR=$work/cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader |
  tee "$logs/gpu.txt"
git -C "$root" log --oneline -1 2>/dev/null | tee "$logs/commit.txt"
RUNS=${QUICK_RUNS:-off-64 plan-64 off-256 plan-256 off-8 s4-8} PARTS=decode RUN_TIMEOUT=40 \
  timeout 200 "$root/bench/decode/splitk_gpu.sh" "$tj" "$logs/splitk" | tee "$logs/splitk.txt"
[ "${QUICK_SSD:-}" = none ] && exit 0
keep=${QUICK_SSD:-plan upstream exact ch64 ch128 ch128_up ch128_u4 ch256}
SSD_VARIANTS=$keep "$root/bench/ssd/ssd_variants.sh" "$tj" "$work/ssd" 128 \
  >"$logs/ssd-ptxas.log" 2>&1 || { tail -5 "$logs/ssd-ptxas.log"; exit 1; }
awk -v keep=" $keep " 'index(keep, " " $1 " ")' "$work/ssd/variants.txt" >"$work/ssd/v" &&
  mv "$work/ssd/v" "$work/ssd/variants.txt"
timeout "${QUICK_SSD_TIMEOUT:-130}" python3 "$root/bench/ssd/ssd_prefill_gpu.py" "$work/ssd" >"$logs/ssd.log" 2>&1
echo "ssd bench: exit $?"
grep -E "^FAIL" "$logs/ssd.log"
tail -n 30 "$logs/ssd.log"
