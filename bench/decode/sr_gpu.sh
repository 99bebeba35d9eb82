#!/usr/bin/env bash
# R8s's stochastic rounding of a 16-bit SSM page against nearest even (issue 30
# part 5): for each page type, `tilejit run` decode on two layers both ways,
# interleaved so they share the GPU's state. Each run checks its step first
# (B = 1 against f64, B = 3 against the interpreter), then times B = 1, 8, 64
# and 256. Prints each run's checks and a table of ssm_update per launch (both
# layers), its bytes and TB/s, and the step per layer, with stochastic over
# nearest. Logs under OUT/.
# Usage: sr_gpu.sh TILEJIT OUT  (PAGES, default "bf16 f16"; RUN_TIMEOUT,
# default 150 s per run)
set -u
tj=$1 out=$2
mkdir -p "$out"
for page in ${PAGES:-bf16 f16}; do
  for mode in nearest stochastic; do
    name=$page-$mode
    flag=
    [ "$mode" = stochastic ] && flag=--stochastic-rounding
    start=$(date +%s)
    # shellcheck disable=SC2086
    timeout "${RUN_TIMEOUT:-150}" "$tj" run --layers 2 --steps 1 --batch 1 \
      --time-batch 1,8,64,256 --ssm-state-dtype "$page" $flag </dev/null >"$out/$name.log" 2>&1
    rc=$?
    checks=$(grep -E '^(check gpu|gpu against the interpreter).*(PASS|FAIL)' "$out/$name.log")
    [ "$rc" = 0 ] || checks="$checks $(tail -n 1 "$out/$name.log")"
    printf '%-16s exit %s (%s s): %s\n' "$name" "$rc" "$(( $(date +%s) - start ))" \
      "$(echo "$checks" | tr '\n' ' ')"
  done
done
# The kernel lines: "kernel ssm_update ssm_update <fp8|bf16> layer B=<b>: <us> us per
# launch, <MB> MB moved, <x> TB/s; ..."; the step lines: "step B=<b> L=2: ... = <us>
# us per layer; ...".
printf '\n%-6s %5s | %-30s | %-30s | %s\n' page B "nearest: us fp8/bf16 layer, TB/s" \
  "stochastic: us fp8/bf16, TB/s" "ratio, MB; step/layer near/sr"
for page in ${PAGES:-bf16 f16}; do
  for b in 1 8 64 256; do
    row() { # log -> "fp8us bf16us tbs mb step"
      awk -v b="B=$b:" -v s="B=$b" '
        $1 == "kernel" && $2 == "ssm_update" && $6 == b { us[$4] = $7; mb = $11; tbs = $14 }
        $1 == "step" && $2 == s { for (i = 1; i <= NF; ++i) if ($i == "us" && $(i + 2) == "layer;") step = $(i - 1) }
        function or(v) { return v == "" ? "-" : v }
        END { printf "%s %s %s %s %s", or(us["fp8"]), or(us["bf16"]), or(tbs), or(mb), or(step) }' "$1"
    }
    read -r nf nb nt mb ns <<<"$(row "$out/$page-nearest.log")"
    read -r sf sb st _ ss <<<"$(row "$out/$page-stochastic.log")"
    ratio=$(awk -v a="${sb:-0}" -v c="${nb:-0}" 'BEGIN { if (c > 0) printf "%.2fx", a / c; else print "-" }')
    printf '%-6s %5s | %8s %8s %7s TB/s | %8s %8s %7s TB/s | %6s %8s MB; %s / %s\n' "$page" \
      "$b" "$nf" "$nb" "$nt" "$sf" "$sb" "$st" "$ratio" "$mb" "$ns" "$ss"
  done
done
