#!/usr/bin/env bash
# Issue 30 part 3 / issue 32 on the H200 (or H100): split-K projections
# (out_proj's k_splits + split_k_sum, docs/decode-projections.md#split-k)
# against the plans before them, in one session:
#   off      --set out_proj.k_splits=1: every GEMM unsplit (the plan before)
#   plan     the planner's choice (B = 64: in_proj 3, out_proj 11 splits;
#            B = 256: 3 and 6; B = 8: no GEMM)
#   sS       both projections on the split GEMM with S splits at every batch
#   m64-sS   the same on 64 x 128 tiles of one warpgroup (4 warps)
#   p-*      the portable plan (TILEJIT_ARCH=sm_90: TMA into mma.sync, no
#            wgmma): its defaults (p-plan), the fused in_proj_conv it took
#            before (p-fused), or forced onto the split GEMM with S splits
#            (p-sS); g121-*: GB10's plan (99 KiB a program) the same way
#   skinny-1 B = 1 on the skinny projections instead of the GEMVs
# Each run checks its batch against f64 (and B = 3 against the interpreter,
# the forced split included) and times it: the per-kernel lines of the
# projections and their sums (us, MB, TB/s) and the step line are printed.
# Then tilejit.ops' W8A8 linear beside quant + torch._scaled_mm at M = 1, 8,
# 64, 256, 8192 (bench/ops_vllm_bench.py), planned and with
# TILEJIT_FP8_K_SPLITS=1 (unsplit). SANITIZE=1 adds compute-sanitizer
# racecheck over a checked split step (B = 64). PARTS (default "decode ops")
# picks the halves, RUNS (names, e.g. "off-64 plan-64") the decode runs, to fit a
# call's time.
# Logs under OUT/splitk-*.log. Usage: splitk_gpu.sh TILEJIT OUT [PYTHON]
set -u
tj=$1 out=$2 py=${3:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
run() { # name batch args...
  name=$1 b=$2
  shift 2
  [ -z "${RUNS:-}" ] || [[ " $RUNS " == *" $name "* ]] || return 0
  start=$(date +%s)
  env ${RUN_ARCH:+TILEJIT_ARCH=$RUN_ARCH} timeout "${RUN_TIMEOUT:-120}" "$tj" run --layers 2 --steps 1 --batch "$b" --time-batch "$b" \
    "$@" </dev/null >"$out/splitk-$name.log" 2>&1
  rc=$?
  printf '== %-14s B=%-4s exit %s (%s s): %s | %s\n' "$name" "$b" "$rc" \
    "$(( $(date +%s) - start ))" "$(grep -m1 -o 'step B=.*per layer' "$out/splitk-$name.log")" \
    "$(tail -n 1 "$out/splitk-$name.log")"
  grep -E '^kernel +(out_proj|split_k_sum|in_proj_conv) ' "$out/splitk-$name.log" | sed 's/^/   /'
}
parts=" ${PARTS:-decode ops} "
m64=(--set out_proj.block_m=64 --set out_proj.block_n=128 --set out_proj.warps=4)
if [[ $parts == *" decode "* ]]; then
  run off-8 8 --set out_proj.k_splits=1
  run s4-8 8 --set out_proj.k_splits=4
  run m64-s4-8 8 --set out_proj.k_splits=4 "${m64[@]}"
  run off-64 64 --set out_proj.k_splits=1
  run plan-64 64
  run s8-64 64 --set out_proj.k_splits=8
  run off-256 256 --set out_proj.k_splits=1
  run plan-256 256
  run skinny-1 1 --set in_proj_conv.skinny=1 --set out_proj.skinny=1
  for b in 64 256; do
    RUN_ARCH=sm_90 run p-plan-$b $b
    RUN_ARCH=sm_90 run p-fused-$b $b --set in_proj_conv.direct=1
    for s in 2 4; do RUN_ARCH=sm_90 run p-s$s-$b $b --set out_proj.k_splits=$s; done
    RUN_ARCH=sm_90 run g121-plan-$b $b --plan-arch sm_121a
  done
fi
for splits in planned 1; do
  [[ $parts == *" ops "* ]] || break
  start=$(date +%s)
  if [ "$splits" = planned ]; then
    timeout 150 "$py" "$here/../ops_vllm_bench.py" --only w8a8_ >"$out/splitk-ops-$splits.log" 2>&1
  else
    TILEJIT_FP8_K_SPLITS=1 timeout 150 "$py" "$here/../ops_vllm_bench.py" --only w8a8_ \
      >"$out/splitk-ops-$splits.log" 2>&1
  fi
  echo "== ops w8a8 (k_splits $splits): exit $? ($(( $(date +%s) - start )) s)"
  grep -i 'w8a8' "$out/splitk-ops-$splits.log" | sed 's/^/   /'
done
if [ "${SANITIZE:-0}" = 1 ]; then
  timeout 200 compute-sanitizer --tool racecheck "$tj" run --batch 64 --layers 1 \
    --time-batch 0 >"$out/splitk-racecheck.log" 2>&1
  echo "== racecheck over a split step: exit $?; $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' \
    "$out/splitk-racecheck.log" | tail -1)"
fi
