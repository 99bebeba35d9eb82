#!/usr/bin/env bash
# One device call (2026-12-07): ssd_span_state's window form beside the chunk walk
# (bundle/ssdwin: sm_90a, bundle/ssdwin90: sm_90, both from ssd_variants.sh), the
# 23-layer prefill with and without it, the bundle's GPU tests, and out_proj's tile
# shapes (bundle/tiles from build_shapes.sh). Usage, on the GPU host, with bundle/
# carried: bench/ssd/window_call.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for d in ssdwin ssdwin90; do timeout 150 python3 bench/ssd/ssd_prefill_gpu.py bundle/$d > $OUT/$d.txt 2>&1; echo "$d exit $? pass $(grep -c ^PASS $OUT/$d.txt) fail $(grep -c ^FAIL $OUT/$d.txt)"; sed -n '/^variant/,$p' $OUT/$d.txt; done
TJ=/tmp/tj/tilejit-bundle/bin/tilejit
timeout 150 tests/e2e/gpu_session.sh gputests 2>&1 | tail -4
for v in base win64; do a=(); [ $v = win64 ] && a=(--set ssd_span_state.window=64 --set ssd_span_state.block_p=64); timeout 100 $TJ run --mode prefill "${a[@]}" > $OUT/prefill-$v.log 2>&1; echo "prefill $v exit $?"; grep -E "ssd_|per layer|step|checks" $OUT/prefill-$v.log | tail -8; done
(cd bench/gemm && timeout 170 python3 hopper.py ../../bundle/tiles 30 4096,8192 > $OUT/tiles.log 2>&1; echo "tiles exit $?"); sed -n '/^M  *N/,$p' $OUT/tiles.log | head -40
