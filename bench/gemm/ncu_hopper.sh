#!/usr/bin/env bash
# Nsight Compute on the issue 20 GEMMs: one launch of each variant of
# bundle/ncu (build_shapes.sh with hopper_ncu.txt) and of the library on the
# same shape (one_launch.py), clocks left alone; the report's details for the
# GEMM kernels go to $OUT/ncu.txt, a digest to stdout.
# Usage: bench/gemm/ncu_hopper.sh M NAME...
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp}
m=$1; shift
timeout 400 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
  --launch-skip 0 --launch-count 60 -o "$out/gemm" \
  python3 "$here/one_launch.py" "$here/../../bundle/ncu" "$m" "$@" >"$out/ncu-run.log" 2>&1
echo "ncu exit $?"; tail -3 "$out/ncu-run.log"
ncu -i "$out/gemm.ncu-rep" --page details --print-units base >"$out/ncu.txt" 2>&1
# Last profiled launch of each GEMM kernel: its name line and the key rows.
awk '/^  [a-zA-Z_0-9]+.*\(.*\)x\(/ {name=$0} /Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|L1\/TEX Cache Throughput|Issue Slots Busy|Executed Ipc Active|Registers Per Thread|Warp Cycles Per Issued|No Eligible|Stall/ {print name " | " $0}' \
  "$out/ncu.txt" | grep -Ei 'gemm|nvjet|xmma|cutlass|sm90' | tail -60
