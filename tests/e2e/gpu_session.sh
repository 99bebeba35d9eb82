#!/usr/bin/env bash
# One device session: unpack the bundle (make bundle) and the Python GPU kit
# (ninja tilejit-python-gpu-kit in a TILEJIT_STATIC_LLVM=ON, TILEJIT_PYTHON=ON
# build), then run the named parts, each logged under $OUT:
#   main     tests/e2e/main_job_gpu.sh (decode and prefill, sm_90a and sm_90, defects;
#            MAIN_RUNS picks its runs)
#   gputests the bundle's tilejit-gpu-tests (Catch2, every GPU test case)
#   python   the whole tests/python suite on the GPU (PYTHON_TESTS: other pytest
#            arguments, e.g. some files; PYTHON_TIMEOUT, default 300 s)
#   opsbench bench/ops_torch_bench.py (tilejit.ops next to plain torch)
#   vllm     bench/ops_vllm_bench.py (tilejit.ops next to vLLM's Triton ops; their
#            files laid out by bench/peers/extract_vllm.sh in .peers/, carried)
#   stream   bench/prefill/stream_gpu.py (the prefill's gated norm, conv and quant in
#            their plan forms and variants beside a copy floor and vLLM's
#            rms_norm_gated; STREAM_ARGS, e.g. --only norm)
#   launch   bench/ops_launch_bench.py (each op's host cost: cached, uncached, recording)
#   gemmtail bench/gemm/tail.py (the prefill GEMMs unsplit, tail-split and the library)
#   importorder tests/e2e/python_import_order.sh (tilejit before and after torch)
#   sanitize tests/e2e/sanitize_gpu.sh (compute-sanitizer over every kernel build;
#            SANITIZE_TIMEOUT, default 400 s)
#   hoppersan compute-sanitizer memcheck, racecheck and synccheck over the
#            bundle's [gpu][hopper] test (the TMA / mbarrier GEMMs)
#   model    tests/e2e/model_gpu.sh (the published-layout checkpoint, generated here,
#            through `tilejit run --model` and examples/embed)
#   ssd      bench/ssd/ssd_variants.sh + ssd_prefill_gpu.py (the plan's SSD launches
#            and issue 31's variants of the span and chunk-parallel schedules, each
#            checked against the f64 R5, then timed at five shapes; SSD_HEADS,
#            default 128)
#   ncussd   bench/ssd/ncu_ssd.sh (Nsight Compute over the prefill SSD's kernels at
#            T = 8192: stalls, pipes, hottest lines; NCU_SSD_ARGS to `tilejit run`)
#   pdl      bench/decode/pdl_gpu.sh (decode with and without programmatic dependent
#            launch, interleaved; compute-sanitizer over the PDL launches)
#   skinny   bench/decode/skinny_gpu.sh (the skinny decode projections and their
#            variants against the plan at B = 2..32; BATCHES, FULL, RUNS)
#   compare  bench/compare_builds.sh: the tree before a change (its bundle carried as
#            bundle-before/tilejit-bundle.tar.xz) against this one, interleaved, decode
#            and prefill (COMPARE_MODES, ROUNDS)
#   tunedb   bench/tunedb_gpu.sh (tilejit tune for the plans' kernels, exported to
#            $OUT/h200.tune.json: commit it as tunedb/h200.tune.json)
# Usage: tests/e2e/gpu_session.sh PART... (with bundle/tilejit-bundle.tar.xz and,
# for python, bundle/tilejit-python-gpu-kit.tar.xz carried)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=/tmp/tj
# Logs go to one folder packed into $OUT/logs.tar.xz at the end: the device
# returns at most 8 files.
out=$work/logs/$(date +%H%M%S)
mkdir -p "$out"
trap 'tar -C "$work/logs" -cJf "${OUT:-$work}/logs.tar.xz" .' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
# Each archive is unpacked when carried: the two together pass the device's
# 64 MiB, so the python part may come in a call of its own.
# A bundle cut short (carried while still being written) must not leave a
# partial tree that the next call would take as unpacked.
if [ ! -x "$work/tilejit-bundle/bin/tilejit" ] && [ -f "$root/bundle/tilejit-bundle.tar.xz" ]; then
  tar -xJf "$root/bundle/tilejit-bundle.tar.xz" -C "$work" || {
    rm -rf "$work/tilejit-bundle"
    exit 1
  }
fi
if [ -f "$root/bundle/tilejit-python-gpu-kit.tar.xz" ] && [ ! -d "$work/kit" ]; then
  tar -xJf "$root/bundle/tilejit-python-gpu-kit.tar.xz" -C "$work" &&
    "$work/kit/build-module.sh" python3 >"$out/kit.log" 2>&1 || { cat "$out/kit.log"; exit 1; }
fi
export TILEJIT_CACHE_DIR=$work/cache PYTHONUNBUFFERED=1
for part in "$@"; do
  case $part in
  main) "$root/tests/e2e/main_job_gpu.sh" "$work/tilejit-bundle/bin/tilejit" "$out/main" \
          ${MAIN_RUNS:-} ;;
  # The GPU tests' cold compiles need a cache directory without entries.
  gputests) (cd "$work" && rm -rf "$work/cache-gputests" && mkdir -p "$work/cache-gputests" &&
             TILEJIT_CACHE_DIR=$work/cache-gputests timeout 400 "$work/tilejit-bundle/bin/tilejit-gpu-tests" \
               >"$out/gputests.log" 2>&1; echo "gpu tests: exit $?"; tail -n 4 "$out/gputests.log") ;;
  python) (cd "$root/tests/python" && PYTHONPATH=$work/kit timeout "${PYTHON_TIMEOUT:-300}" python3 -m pytest -q \
             -rs -s ${PYTHON_TESTS:-.} >"$out/python.log" 2>&1; echo "python suite: exit $?"; tail -n 3 "$out/python.log";
           grep -E "outside one ulp" "$out/python.log") ;;
  opsbench) PYTHONPATH=$work/kit timeout 200 python3 "$root/bench/ops_torch_bench.py" \
              >"$out/opsbench.log" 2>&1; echo "ops bench: exit $?"; tail -n 25 "$out/opsbench.log" ;;
  vllm) PYTHONPATH=$work/kit:$root/.peers timeout "${VLLM_TIMEOUT:-400}" python3 \
          "$root/bench/ops_vllm_bench.py" ${VLLM_ARGS:-} >"$out/vllm.log" 2>&1
        echo "vllm bench: exit $?"; grep -v "^ \|^Traceback\|^  File" "$out/vllm.log" | tail -n 40 ;;
  stream) PYTHONPATH=$work/kit:$root/.peers timeout 300 python3 "$root/bench/prefill/stream_gpu.py" \
            ${STREAM_ARGS:-} >"$out/stream.log" 2>&1; echo "stream bench: exit $?"
          grep -E "^(CHECK FAIL|PERF)|passed|FAILED|Error" "$out/stream.log" | tail -n 120 ;;
  launch) PYTHONPATH=$work/kit timeout "${LAUNCH_TIMEOUT:-300}" python3 \
            "$root/bench/ops_launch_bench.py" ${LAUNCH_ARGS:-} >"$out/launch.log" 2>&1
          echo "launch bench: exit $?"; tail -n 25 "$out/launch.log" ;;
  gemmtail) PYTHONPATH=$work/kit timeout 300 python3 "$root/bench/gemm/tail.py" \
              >"$out/gemmtail.log" 2>&1; echo "gemm tail bench: exit $?"
            grep -E "^(GPU|PERF)|^CHECK.*: [1-9]|Error" "$out/gemmtail.log" | tail -n 60 ;;
  importorder) "$root/tests/e2e/python_import_order.sh" "$work/kit" >"$out/importorder.log" 2>&1
               echo "import order: exit $?"; tail -n 60 "$out/importorder.log" ;;
  compare) if [ ! -x "$work/before/tilejit-bundle/bin/tilejit" ]; then
             mkdir -p "$work/before" &&
               tar -xJf "$root/bundle-before/tilejit-bundle.tar.xz" -C "$work/before" || exit 1
           fi
           for mode in ${COMPARE_MODES:-decode prefill}; do
             "$root/bench/compare_builds.sh" "$work/before/tilejit-bundle/bin/tilejit" \
               "$work/tilejit-bundle/bin/tilejit" "$out/compare" "$mode"
           done ;;
  # Issue 31: the plan's SSD launches and each variant (ssd_variants.sh),
  # checked against the f64 R5, then timed, at SSD_HEADS heads (NemotronH: 128).
  ssd) "$root/bench/ssd/ssd_variants.sh" "$work/tilejit-bundle/bin/tilejit" "$work/ssd" \
         "${SSD_HEADS:-128}" >"$out/ssd-ptxas.log" 2>&1 || { cat "$out/ssd-ptxas.log"; exit 1; }
       timeout 300 python3 "$root/bench/ssd/ssd_prefill_gpu.py" "$work/ssd" >"$out/ssd.log" 2>&1
       echo "ssd bench: exit $?"; grep -E "^FAIL" "$out/ssd.log"
       tail -n $(($(wc -l <"$work/ssd/variants.txt") + 2)) "$out/ssd.log" ;;
  ncussd) "$root/bench/ssd/ncu_ssd.sh" "$work/tilejit-bundle/bin/tilejit" "$out/ncussd" \
    ${NCU_SSD_ARGS:-} ;;
  pdl) "$root/bench/decode/pdl_gpu.sh" "$work/tilejit-bundle/bin/tilejit" "$out/pdl" ;;
  skinny) timeout 280 "$root/bench/decode/skinny_gpu.sh" "$work/tilejit-bundle/bin/tilejit" \
            "$out/skinny" ;;
  model) "$root/tests/e2e/model_gpu.sh" "$work/tilejit-bundle/bin" "$out/model" ;;
  tunedb) "$root/bench/tunedb_gpu.sh" "$work/tilejit-bundle/bin/tilejit" "$out/tunedb" \
            "${OUT:-$work}/h200.tune.json" ;;
  # The TMA / mbarrier GEMMs under compute-sanitizer (issue 20): each tool over
  # the bundle's [hopper] GPU test (e4m3 and bf16, persistent or not).
  hoppersan) for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
               (cd "$work" && rm -rf "$work/cache-san" && mkdir -p "$work/cache-san" &&
                TILEJIT_CACHE_DIR=$work/cache-san timeout "${SANITIZE_TIMEOUT:-150}" compute-sanitizer --tool "$tool" \
                  "$work/tilejit-bundle/bin/tilejit-gpu-tests" '[gpu][hopper]' \
                  >"$out/hoppersan-$tool.log" 2>&1
                echo "compute-sanitizer $tool: exit $?"; grep -E 'ERROR SUMMARY|HAZARD|RACECHECK SUMMARY|test cases' "$out/hoppersan-$tool.log" | tail -3)
             done ;;
  sanitize) OUT=$out timeout "${SANITIZE_TIMEOUT:-400}" "$root/tests/e2e/sanitize_gpu.sh" \
              >"$out/sanitize.log" 2>&1; echo "sanitize: exit $?"; tail -n 12 "$out/sanitize.log" ;;
  esac
done
