#!/bin/sh
# `tilejit run --backend interp` over every --batch in 1..8 and --layers in
# 1..4 (decode), and --layers 1..4 of the prefill: no honest run may fail a
# check (issue #33; docs/hardening.md records the sweep). Prints one line per
# run and the count that failed; exit 1 when any did. Usage:
#   tests/e2e/interp_sweep.sh build/bin/tilejit [LOG_DIR]
set -u
tilejit=$1 logs=${2:-$(mktemp -d)}
mkdir -p "$logs"
failed=0 runs=0
one() {
  name=$1
  shift
  runs=$((runs + 1))
  start=$(date +%s)
  "$tilejit" run --backend interp "$@" >"$logs/$name.log" 2>&1
  rc=$?
  last=$(tail -n 1 "$logs/$name.log")
  if [ "$rc" -ne 0 ] || [ "$last" != "all checks passed" ]; then
    failed=$((failed + 1))
    echo "$name: FAILED (exit $rc): $(grep -E 'TOO WEAK|FAIL|error' "$logs/$name.log" | head -n 3)"
  else
    echo "$name: passed in $(($(date +%s) - start)) s"
  fi
}
for layers in 1 2 3 4; do
  for batch in 1 2 3 4 5 6 7 8; do
    one "decode-b$batch-l$layers" --batch "$batch" --layers "$layers"
  done
  one "prefill-l$layers" --mode prefill --layers "$layers"
done
echo "interp sweep: $failed of $runs runs failed (logs in $logs)"
[ "$failed" -eq 0 ]
