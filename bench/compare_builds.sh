#!/usr/bin/env bash
# Two builds of `tilejit run` timed in one session on one GPU, interleaved so they
# share its state: a change that must leave the kernels as they were (issue 34's
# refactor) is held to the build before it. Each run checks its step on the GPU
# (decode at B = 1 against f64 and the interpreter; prefill's mixed batch) before
# it times it: the decode step at every --time-batch, or the prefill of one fresh
# sequence of 8192 tokens. One summary line per run; logs under OUT/.
# Usage: compare_builds.sh BEFORE AFTER OUT MODE  (BEFORE, AFTER: tilejit
# binaries; MODE decode or prefill; ROUNDS, default 2; RUN_TIMEOUT, default 280 s)
set -u
before=$1 after=$2 out=$3 mode=$4
mkdir -p "$out"
run() { # name binary args...
  name=$1 tj=$2
  shift 2
  start=$(date +%s)
  timeout "${RUN_TIMEOUT:-280}" "$tj" run "$@" </dev/null >"$out/$name.log" 2>&1
  rc=$?
  printf '%-18s exit %s (%s s): %s\n' "$name" "$rc" "$(( $(date +%s) - start ))" \
    "$(tail -n 1 "$out/$name.log")"
  grep -E '^(step|prefill) (B|T)=[0-9]+ L=' "$out/$name.log" | sed 's/^/    /'
}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for build in before after; do
    tj=$before
    [ "$build" = after ] && tj=$after
    if [ "$mode" = decode ]; then
      run "$build-decode-r$round" "$tj" --batch 1 --steps 1 --time-batch 1,8,64,256
    else
      run "$build-prefill-r$round" "$tj" --mode prefill --steps 1
    fi
  done
done
