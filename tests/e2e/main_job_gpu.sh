#!/usr/bin/env bash
# The main job on a GPU host, as issue 16 asks it to be shown: `tilejit run`
# decode and prefill with default options, compiled for sm_90a and with
# TILEJIT_ARCH=sm_90, then planted defects (check-only runs) that must exit 1.
# Each run's output goes to OUT/<name>.log; a summary line per run is printed.
# Usage: main_job_gpu.sh TILEJIT OUT [runs...] (runs: decode-sm_90a decode-sm_90
# decode-sm_121a prefill-sm_90a prefill-sm_90 prefill-sm_121a defects; default
# all; and, for issue 18's experiments, variants: the lines of
# bench/decode/variants.txt, or of VARIANTS_FILE (bench/prefill/variants.txt); for issue 30's 16-bit SSM page, state-bf16: decode
# with --ssm-state-dtype bf16, nearest even and stochastic, on sm_90a and
# sm_90, to compare with decode-sm_90a / decode-sm_90 of the same call). SM90_ARGS: extra options of the sm_90 runs
# (e.g. --time-batch 0: checks only); DECODE_ARGS: of every decode run (e.g.
# --time-batch 1,8).
set -u
tj=$1 out=$2
shift 2
mkdir -p "$out"
runs=${*:-decode-sm_90a decode-sm_90 decode-sm_121a prefill-sm_90a prefill-sm_90 prefill-sm_121a defects}
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
  # A run past RUN_TIMEOUT (default 300 s) is killed and reported as exit 124.
  if [ "$arch" = sm_90a ]; then timeout "${RUN_TIMEOUT:-300}" "$tj" run "$@" </dev/null >"$out/$name.log" 2>&1
  else TILEJIT_ARCH=$arch timeout "${RUN_TIMEOUT:-300}" "$tj" run "$@" </dev/null >"$out/$name.log" 2>&1; fi
  rc=$?
  summary "$name ($(( $(date +%s) - start )) s)" "$want" "$rc" "$out/$name.log"
}
for run in $runs; do
  case $run in
  decode-sm_90a) one decode-sm_90a 0 sm_90a ${DECODE_ARGS:-} ;;
  decode-sm_90) one decode-sm_90 0 sm_90 ${DECODE_ARGS:-} ${SM90_ARGS:-} ;;
  prefill-sm_90a) one prefill-sm_90a 0 sm_90a --mode prefill ;;
  prefill-sm_90) one prefill-sm_90 0 sm_90 --mode prefill ${SM90_ARGS:-} ;;
  # GB10's plan (issue 35: 48 SMs, 99 KiB per program) as the portable sm_90
  # build, every kernel held to 99 KiB: checked, then timed against the H200's
  # floors.
  decode-sm_121a) one decode-sm_121a 0 sm_90a --plan-arch sm_121a ${DECODE_ARGS:-} ;;
  prefill-sm_121a) one prefill-sm_121a 0 sm_90a --plan-arch sm_121a --mode prefill ;;
  state-bf16) # R8s's bf16 page: checked, then timed at every --time-batch
    one decode-sm_90a-bf16-state 0 sm_90a --ssm-state-dtype bf16 ${DECODE_ARGS:-}
    one decode-sm_90a-bf16-state-sr 0 sm_90a --ssm-state-dtype bf16 --stochastic-rounding \
      ${DECODE_ARGS:-}
    one decode-sm_90-bf16-state 0 sm_90 --ssm-state-dtype bf16 ${DECODE_ARGS:-} \
      ${SM90_ARGS:-} ;;
  variants) # every line of VARIANTS_FILE (default bench/decode/variants.txt; VARIANTS: only these names)
    while read -r name args; do
      case $name in '#'* | '') continue ;; esac
      [ -n "${VARIANTS:-}" ] && [[ " $VARIANTS " != *" $name "* ]] && continue
      # shellcheck disable=SC2086
      one "variant-$name" 0 sm_90a $args
    done <"${VARIANTS_FILE:-$(dirname "$0")/../../bench/decode/variants.txt}" ;;
  defects)
    for d in drop-k-step scale-column drop-input-scale drop-carry; do
      one "defect-decode-$d" 1 sm_90a --plant-defect "$d" --time-batch 0 --batch 3
    done
    for d in drop-k-step scale-column drop-carry; do # the R1h GEMMs and the carry of prefill
      one "defect-prefill-$d" 1 sm_90a --mode prefill --plant-defect "$d" --time-batch 0
    done ;;
  esac
done
