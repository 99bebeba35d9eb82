#!/usr/bin/env bash
# The main job on a GPU host, as issue 16 asks it to be shown: `tilejit run`
# decode and prefill with default options, compiled for sm_90a and with
# TILEJIT_ARCH=sm_90, then planted defects (check-only runs) that must exit 1.
# Each run's output goes to OUT/<name>.log; a summary line per run is printed.
# Usage: main_job_gpu.sh TILEJIT OUT [runs...] (runs: decode-sm_90a decode-sm_90
# prefill-sm_90a prefill-sm_90 defects; default all)
set -u
tj=$1 out=$2
shift 2
mkdir -p "$out"
runs=${*:-decode-sm_90a decode-sm_90 prefill-sm_90a prefill-sm_90 defects}
summary() { # name want rc log
  last=$(tail -n 1 "$4")
  ok=no
  [ "$3" = "$2" ] && ok=yes
  printf '%-34s exit %s (want %s, %s): %s\n' "$1" "$3" "$2" "$ok" "$last"
}
one() { # name want arch args...
  name=$1 want=$2 arch=$3
  shift 3
  start=$(date +%s)
  if [ "$arch" = sm_90a ]; then "$tj" run "$@" >"$out/$name.log" 2>&1
  else TILEJIT_ARCH=$arch "$tj" run "$@" >"$out/$name.log" 2>&1; fi
  rc=$?
  summary "$name ($(( $(date +%s) - start )) s)" "$want" "$rc" "$out/$name.log"
}
for run in $runs; do
  case $run in
  decode-sm_90a) one decode-sm_90a 0 sm_90a ;;
  decode-sm_90) one decode-sm_90 0 sm_90 ;;
  prefill-sm_90a) one prefill-sm_90a 0 sm_90a --mode prefill ;;
  prefill-sm_90) one prefill-sm_90 0 sm_90 --mode prefill ;;
  defects)
    for d in drop-k-step scale-column drop-input-scale drop-carry; do
      one "defect-decode-$d" 1 sm_90a --plant-defect "$d" --time-batch 0 --batch 3
    done
    for d in drop-k-step scale-column; do # the reduced-sum (R1h) GEMMs of prefill
      one "defect-prefill-$d" 1 sm_90a --mode prefill --plant-defect "$d" --time-batch 0
    done ;;
  esac
done
