#!/usr/bin/env bash
# Issue 30 part 3 on the H100 / H200: the skinny decode projections (skinny = 1,
# docs/decode-projections.md, "The skinny form") against today's plan at
# B = 2, 4, 8, 16, 32, interleaved batch by batch:
#   base       the plan's defaults (GEMV at B = 1, direct tiles from a few rows)
#   sk         both projections skinny with the plan's skinny tiles: in_proj
#              32 weight rows on 2 warps after quantize_e4m3, out_proj 64 rows
#              on one warpgroup (wgmma m64n8), split in K by decodeKSplits
#   sk-in      only in_proj_conv skinny (out_proj as today)
#   sk-out     only out_proj skinny
#   sk-in16    in_proj 16 weight rows on 1 warp (644 programs)
#   sk-in64    in_proj 64 weight rows on 4 warps (wgmma, 161 programs)
#   sk-inq     in_proj quantizing in the kernel (quantized_input 0: no quant launch)
#   sk-st3     3 stages on both (two K steps in flight)
#   sk-out-s8  out_proj in 8 K splits (336 programs)
#   sk-pf      prefetch = 1 on both (the first programs' weight into L2 before the wait)
#   sk-out32   out_proj 32 weight rows on 2 warps (mma.sync, exact sums, 3 splits:
#              252 programs) instead of wgmma's m64n8 (R1h's reduced e4m3 sums)
#   gemm       the competitor at every batch: both projections on the split tile
#              GEMM (k_splits 4) in 64 x 128 tiles of one warpgroup (the fastest
#              B = 8 plan the H100 measured before the skinny form)
# B = 8 (FULL, default 8) runs every variant; the other batches base, sk and gemm
# (24 runs, about 4 minutes; RUNS trims). Each run checks its own batch against f64
# (and B = 3 against the interpreter) before timing it; one line per run: step
# per layer, in_proj and out_proj per launch (us, TB/s) of the FP8 layer, then
# that layer's quantize_e4m3 and split_k_sum lines where the run has them.
# Usage: skinny_gpu.sh TILEJIT OUT   (BATCHES, FULL, RUNS: names to keep,
# RUN_TIMEOUT)
set -u
tj=$1 out=$2
mkdir -p "$out"
kernelLine() { # log role: "15.30 us 1.82 TB/s" of the FP8 layers
  grep -m1 -E "^kernel [a-z_0-9]+ +$2 +fp8 layer" "$1" |
    sed -E 's/.*: +([0-9.]+) us per launch, +([0-9.]+) MB moved, ([0-9.]+) TB\/s.*/\1 us \3 TB\/s/'
}
run() { # name batch args...
  name=$1 b=$2
  shift 2
  [ -z "${RUNS:-}" ] || [[ " $RUNS " == *" $name "* ]] || return 0
  start=$(date +%s)
  timeout "${RUN_TIMEOUT:-60}" "$tj" run --layers 2 --steps 1 --batch "$b" --time-batch "$b" \
    "$@" </dev/null >"$out/skinny-$name-B$b.log" 2>&1
  rc=$?
  log=$out/skinny-$name-B$b.log
  printf '%-10s B=%-3s exit %s (%2s s): %s | in_proj %s | out_proj %s\n' "$name" "$b" "$rc" \
    "$(( $(date +%s) - start ))" "$(grep -m1 -o 'step B=.*per layer' "$log")" \
    "$(kernelLine "$log" in_proj)" "$(kernelLine "$log" out_proj)"
  grep -E "^kernel +(quantize_e4m3|split_k_sum) .*fp8 layer" "$log" | head -2 | sed 's/^/    /'
}
in=(--set in_proj_conv.skinny=1)
outp=(--set out_proj.skinny=1)
gemm=(--set out_proj.k_splits=4 --set out_proj.block_m=64 --set out_proj.block_n=128
  --set out_proj.warps=4)
for b in ${BATCHES:-2 4 8 16 32}; do
  run base "$b"
  run sk "$b" "${in[@]}" "${outp[@]}"
  run gemm "$b" "${gemm[@]}"
  [ "$b" = "${FULL:-8}" ] || continue
  run sk-in "$b" "${in[@]}"
  run sk-out "$b" "${outp[@]}"
  run sk-in16 "$b" "${in[@]}" "${outp[@]}" --set in_proj_conv.block_n=16 --set in_proj_conv.warps=1
  run sk-in64 "$b" "${in[@]}" "${outp[@]}" --set in_proj_conv.block_n=64 --set in_proj_conv.warps=4
  run sk-inq "$b" "${in[@]}" "${outp[@]}" --set in_proj_conv.quantized_input=0
  run sk-st3 "$b" "${in[@]}" "${outp[@]}" --set in_proj_conv.stages=3 --set out_proj.stages=3
  run sk-out-s8 "$b" "${in[@]}" "${outp[@]}" --set out_proj.k_splits=8
  run sk-pf "$b" "${in[@]}" "${outp[@]}" --set in_proj_conv.prefetch=1 --set out_proj.prefetch=1
  run sk-out32 "$b" "${in[@]}" "${outp[@]}" --set out_proj.block_n=32 --set out_proj.warps=2
done
