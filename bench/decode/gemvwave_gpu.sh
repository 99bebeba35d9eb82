#!/usr/bin/env bash
# Issue 30 on the H100 / H200: the B = 1 decode GEMVs as P persistent programs
# (gemv_programs, docs/decode-projections.md, "The persistent GEMV") against
# the plan's one-tile-a-program grids (in_proj_conv 644 programs, out_proj 672,
# whose last wave runs the GPU partly empty):
#   base       the plan's defaults (and again last, for the drift)
#   both-P     both projections on P programs, for P in PS (default "132 264
#              396": 1, 2 and 3 programs a multiprocessor on an H100 SXM or
#              H200); each kernel is timed alone, so these rows give each
#              projection's per-launch time at every P
#   in-P       only in_proj_conv on P programs, for P in SPLIT_PS (default
#   out-P      "264"), only out_proj: which projection moves the step
# The walking projections take direct=0: every run also steps B = 3 on the
# GPU against the interpreter (launch by launch, so the walk is checked there
# too), where the plan would otherwise take the direct or skinny tiles (B = 1
# plans the GEMV either way). A walking kernel's IR is not the one the tuning
# database keyed, so its tuned launch choices are pinned: OUT_TILES (default
# "--set out_proj.warps=8", the shipped database's B = 1 out_proj; in_proj's,
# 16 columns, 7 steps in flight on 2 warps, are the plan's own). Each run is
# `tilejit run --layers 2 --steps 1 --batch 1 --time-batch 1`: it checks the
# step against f64 (and the B = 3 step) before timing it. One table row per
# run: exit status, the checks, the step per layer (median, min, max of n graph
# replays) and the FP8 layer's in_proj_conv and out_proj per launch (us, TB/s).
# About 15-20 s a run, 7 runs. Logs under OUT/gemvwave-*.log.
# Usage: gemvwave_gpu.sh TILEJIT OUT   (PS, SPLIT_PS, OUT_TILES, RUNS: names
# to keep, RUN_TIMEOUT)
set -u
tj=$1 out=$2
OUT_TILES=${OUT_TILES:---set out_proj.warps=8}
mkdir -p "$out"
kernelCols() { # log role: "us TB/s" of the FP8 layer's launch
  grep -m1 -E "^kernel [a-z_0-9]+ +$2 +fp8 layer" "$1" |
    sed -E 's/.*: +([0-9.]+) us per launch, +[0-9.]+ MB moved, ([0-9.]+) TB\/s.*/\1 \2/'
}
stepCols() { # log: "median min max n" per layer
  grep -m1 -E '^step B=' "$1" |
    sed -E 's/^step B=[0-9]+ L=([0-9]+): median ([0-9.]+) us \(min ([0-9.]+), max ([0-9.]+), n=([0-9]+).*/\1 \2 \3 \4 \5/' |
    awk '{ printf "%.2f %.2f %.2f %d", $2 / $1, $3 / $1, $4 / $1, $5 }'
}
printf '%-11s %4s %-5s | %8s %8s %8s %4s | %9s %6s | %9s %6s\n' run exit check \
  'step/L' min max n 'in_proj' 'TB/s' 'out_proj' 'TB/s'
run() { # name args...
  name=$1
  shift
  [ -z "${RUNS:-}" ] || [[ " $RUNS " == *" $name "* ]] || return 0
  log=$out/gemvwave-$name.log
  timeout "${RUN_TIMEOUT:-60}" "$tj" run --layers 2 --steps 1 --batch 1 --time-batch 1 \
    "$@" </dev/null >"$log" 2>&1
  rc=$?
  check=-
  grep -q ': PASS' "$log" && check=PASS
  grep -q ': FAIL' "$log" && check=FAIL
  read -r step lo hi n <<<"$(stepCols "$log")"
  read -r inUs inTb <<<"$(kernelCols "$log" in_proj)"
  read -r outUs outTb <<<"$(kernelCols "$log" out_proj)"
  printf '%-11s %4s %-5s | %8s %8s %8s %4s | %9s %6s | %9s %6s\n' "$name" "$rc" \
    "$check" "${step:--}" "${lo:--}" "${hi:--}" "${n:--}" "${inUs:--}" \
    "${inTb:--}" "${outUs:--}" "${outTb:--}"
}
run base
for p in ${PS:-132 264 396}; do
  run "both-$p" --set "in_proj_conv.gemv_programs=$p" --set in_proj_conv.direct=0 \
    --set "out_proj.gemv_programs=$p" --set out_proj.direct=0 $OUT_TILES
done
for p in ${SPLIT_PS:-264}; do
  run "in-$p" --set "in_proj_conv.gemv_programs=$p" --set in_proj_conv.direct=0
  run "out-$p" --set "out_proj.gemv_programs=$p" --set out_proj.direct=0 $OUT_TILES
done
run base-again
