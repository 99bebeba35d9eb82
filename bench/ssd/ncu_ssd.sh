#!/usr/bin/env bash
# Nsight Compute over the prefill SSD's kernels at T = 8192 (one FP8 layer,
# `tilejit run --mode prefill`, checks first, clocks left alone): where
# ssd_prefill and ssd_span_state spend their cycles (warp stalls, pipes,
# occupancy, the hottest SASS lines). Full details go to OUT/ncu-ssd.txt, a
# digest of each profiled launch to stdout.
# Usage: bench/ssd/ncu_ssd.sh TILEJIT OUT [ARGS...]  (ARGS go to `tilejit run`;
# NCU_KERNELS, a regex, default ssd_prefill|ssd_span_state; NCU_COUNT launches)
set -uo pipefail
tj=$1 out=$2
shift 2
mkdir -p "$out"
timeout "${NCU_TIMEOUT:-200}" ncu --clock-control none -k "regex:${NCU_KERNELS:-ssd_prefill|ssd_span_state}" \
  --launch-count "${NCU_COUNT:-6}" --section SpeedOfLight --section WarpStateStats \
  --section ComputeWorkloadAnalysis --section InstructionStats --section LaunchStats \
  --section Occupancy --section MemoryWorkloadAnalysis --section SourceCounters \
  -o "$out/ssd" -f "$tj" run --mode prefill --layers 1 --steps 1 "$@" >"$out/ncu-run.log" 2>&1
echo "ncu exit $? | $(grep -m2 -E 'PASS|FAIL' "$out/ncu-run.log" | tr '\n' ' ')"
ncu -i "$out/ssd.ncu-rep" --page details --print-units base >"$out/ncu-ssd.txt" 2>&1
awk '/^  [a-zA-Z_0-9]+.*\(.*\)x\(/ {split($1, n, "("); name=n[1]; print "== " $0}
     /Duration|Registers Per Thread|Achieved Occupancy|Warp Cycles Per Issued|Issue Slots Busy|Grid Size|Stall|Executed Ipc|Compute \(SM\) Throughput|DRAM Throughput|Shared Memory/ {
       sub(/^ +/, ""); printf "  %-16s | %s\n", substr(name, 1, 16), $0}' "$out/ncu-ssd.txt" | head -n 400
# The stall reasons per issued instruction and the busiest pipes, per launch.
ncu -i "$out/ssd.ncu-rep" --page raw --print-units base >"$out/ncu-raw.txt" 2>&1
awk '/^  [a-zA-Z_0-9]+.*\(.*\)x\(/ {print "== " $1}
     /issue_stalled_[a-z_]*_per_warp_active.pct|inst_executed_pipe_[a-z_]*.avg.pct_of_peak_sustained_active/ && $NF + 0 >= 2 {
       printf "  %-80s %s\n", $1, $NF}' "$out/ncu-raw.txt" | head -n 200
