#!/usr/bin/env bash
# Nsight Compute on issue 35's portable bf16 GEMMs (bundle/ncu, built by
# build_shapes.sh from inline_ncu.txt) beside torch.matmul on the same shape:
# warp stalls, shared-memory bank conflicts, pipe use. Report in $OUT.
# Usage: bench/gemm/ncu_inline.sh M NAME...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp}
m=$1; shift
timeout 300 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
  --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --section LaunchStats --section Occupancy \
  --launch-skip 12 --launch-count 3 -o "$out/inline" \
  python3 "$here/one_launch.py" "$here/../../bundle/ncu" "$m" "$@" >"$out/ncu-run.log" 2>&1
echo "ncu exit $?"; tail -3 "$out/ncu-run.log"
ncu -i "$out/inline.ncu-rep" --page details --print-units base >"$out/ncu.txt" 2>&1
grep -E '^  [a-zA-Z_0-9]+|Duration|Throughput|Bank|Issue Slots|Ipc|Registers Per|Warp Cycles Per Issued|Eligible|Active Warps|Achieved Occ|Stall|Theoretical Occ' "$out/ncu.txt" | head -150
# Every collected metric (the stall reasons among them), for reading at home.
ncu -i "$out/inline.ncu-rep" --page raw --csv --print-units base >"$out/raw.csv" 2>&1
