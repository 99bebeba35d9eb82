#!/usr/bin/env bash
# Nsight Compute over one checked decode step per batch (one Mamba layer, no
# timing), clocks left alone: where each decode kernel's time goes (DRAM and
# L2 throughput, occupancy, warp stalls). The full details go to
# OUT/ncu-B<b>.txt, a digest per kernel launch to stdout.
# Usage: bench/decode/ncu_decode.sh TILEJIT OUT [ARGS...]  (BATCHES="1 8 64"
# by default; ARGS go to `tilejit run`, e.g. --set out_proj.k_splits=1)
set -uo pipefail
tj=$1 out=$2
shift 2
mkdir -p "$out"
for b in ${BATCHES:-1 8 64}; do
  timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
    --section Occupancy -o "$out/decode-B$b" -f \
    "$tj" run --layers 1 --steps 1 --batch "$b" --time-batch 0 "$@" \
    >"$out/ncu-run-B$b.log" 2>&1
  echo "== B=$b: ncu exit $? | $(grep -m1 -E 'check|passed|FAIL' "$out/ncu-run-B$b.log")"
  ncu -i "$out/decode-B$b.ncu-rep" --page details --print-units base >"$out/ncu-B$b.txt" 2>&1
  awk '/^  [a-zA-Z_0-9]+.*\(.*\)x\(/ {split($1, n, "("); name=n[1]}
       /Duration|DRAM Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per Thread|Warp Cycles Per Issued|Block Limit Registers|Grid Size|Block Size/ {
         sub(/^ +/, ""); printf "  %-22s | %s\n", name, $0}' "$out/ncu-B$b.txt"
done
