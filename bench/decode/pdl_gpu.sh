#!/usr/bin/env bash
# Issue 30, part 1 on the H200: programmatic dependent launch in decode, the
# variants interleaved in one session so they share the GPU's state:
#   off       every decode kernel built with dependent = 0 (no wait: the tree
#             before PDL) and TILEJIT_PDL=0 (B = 1, 8, where the check and the
#             timed plans launch the same kernels)
#   nopdl     the default kernels, TILEJIT_PDL=0: each kernel starts after the
#             one before has ended, its wait a no-op
#   pdl       the defaults: dependent = 1 (wait at the start, then signal) with
#             programmatic launches
#   weights   dependent = 2 for the GEMV projections: their first K group's
#             weight loads issue before the wait
#   prefetch  as weights, and the first row of programs prefetches its weight
#             rows into L2 before the wait
# ROUNDS rounds (default 1) of each batch; then compute-sanitizer racecheck and
# synccheck over a checked PDL decode run. Logs under OUT/pdl-*.log; one
# summary line (the step's per-layer time) per run.
# Usage: pdl_gpu.sh TILEJIT OUT
set -u
tj=$1 out=$2
mkdir -p "$out"
# --set must name kernels both the checked plan (--batch 1) and the timed
# one launch: from B = 64 on, in_proj is a GEMM and in_proj_conv is absent.
small="in_proj_conv ssm_update gated_rmsnorm out_proj"
sets() { # constant value kernels...
  c=$1 v=$2
  shift 2
  for k in "$@"; do printf -- '--set %s.%s=%s ' "$k" "$c" "$v"; done
}
run() { # name env... -- args...
  name=$1
  shift
  env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  start=$(date +%s)
  env "${env[@]}" timeout "${RUN_TIMEOUT:-240}" "$tj" run "$@" </dev/null >"$out/$name.log" 2>&1
  rc=$?
  printf '%-28s exit %s (%s s): %s | %s\n' "$name" "$rc" "$(( $(date +%s) - start ))" \
    "$(grep -m1 -o 'step B=.*per layer' "$out/$name.log")" "$(tail -n 1 "$out/$name.log")"
}
for round in $(seq 1 "${ROUNDS:-1}"); do
  for b in 1 8 64 256; do
    proj="in_proj_conv out_proj"
    [ "$b" -ge 64 ] && proj=out_proj
    common=(--batch 1 --time-batch "$b" --steps 2)
    # shellcheck disable=SC2046,SC2086
    {
      [ "$b" -lt 64 ] && run "pdl-off-B$b-r$round" TILEJIT_PDL=0 -- "${common[@]}" $(sets dependent 0 $small)
      run "pdl-nopdl-B$b-r$round" TILEJIT_PDL=0 -- "${common[@]}"
      run "pdl-pdl-B$b-r$round" TILEJIT_PDL=1 -- "${common[@]}"
      run "pdl-weights-B$b-r$round" TILEJIT_PDL=1 -- "${common[@]}" $(sets dependent 2 $proj)
      run "pdl-prefetch-B$b-r$round" TILEJIT_PDL=1 -- "${common[@]}" $(sets dependent 2 $proj) $(sets prefetch 1 $proj)
    }
  done
done
# The PDL launches under compute-sanitizer: a checked decode step (3 rows, 2
# layers, graph-captured like every step) with programmatic edges.
for tool in racecheck synccheck; do
  TILEJIT_PDL=1 timeout "${SANITIZE_TIMEOUT:-200}" compute-sanitizer --tool "$tool" \
    "$tj" run --batch 3 --layers 2 --time-batch 0 >"$out/pdl-sanitize-$tool.log" 2>&1
  echo "compute-sanitizer $tool over PDL decode: exit $?; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|HAZARD' "$out/pdl-sanitize-$tool.log" | tail -2 | tr '\n' ' ') $(grep -c 'checks passed' "$out/pdl-sanitize-$tool.log") pass line(s)"
done
