#!/usr/bin/env bash
# The shipped tuning database, measured on a GPU host (docs/tune.md): `tilejit
# tune` for the kernels the model plans look up (in_proj_conv at the decode
# batches `make run` times, ssd_prefill at its prefill length) into a fresh
# database, `tilejit tunedb ls`, the export to EXPORT (commit it as
# tunedb/h200.tune.json), and a decode run configured from the export, which
# says which entries it used. One summary line per command; logs in OUT.
# Usage: tunedb_gpu.sh TILEJIT OUT EXPORT (TUNE_ROWS, default "1 8 64 256";
# TUNE_BUDGET_S, default 30 s of measurement per tune)
set -u
tj=$1 out=$2 export=$3
mkdir -p "$out"
db=$out/tune-work.json
rm -f "$db" "$db.lock" "$export"
export TILEJIT_TUNE_DB=$db
one() { # name command...
  name=$1
  shift
  start=$(date +%s)
  timeout "${RUN_TIMEOUT:-150}" "$@" </dev/null >"$out/$name.log" 2>&1
  rc=$?
  printf '%-24s (%s s) exit %s: %s\n' "$name" "$(($(date +%s) - start))" "$rc" \
    "$(grep -E '^(winner|default|tuned|recorded)' "$out/$name.log" | tr '\n' ' ' | cut -c1-300)"
  [ "$rc" = 0 ] || echo "    last: $(tail -n 1 "$out/$name.log")"
  return $rc
}
for rows in ${TUNE_ROWS:-1 8 64 256}; do
  one "tune-in_proj_conv-$rows" "$tj" tune in_proj_conv --shape "rows=$rows" \
    --budget-s "${TUNE_BUDGET_S:-30}"
done
one tune-ssd_prefill-8192 "$tj" tune ssd_prefill --shape tokens=8192 \
  --budget-s "${TUNE_BUDGET_S:-30}"
"$tj" tunedb ls 2>&1 | tee "$out/tunedb-ls.log"
if ! "$tj" tunedb export "$export" >"$out/export.log" 2>&1; then
  echo "tunedb export failed:"
  cat "$out/export.log"
  exit 1
fi
echo "exported $(grep -c '"kernel"' "$export") entries to $export"
# As `make run` uses it: the plans look it up and say what they use.
one run-with-export env TILEJIT_TUNE_DB="$export" "$tj" run --layers 2 --batch 1 --steps 1 \
  --time-batch 1,64
grep -E "^tuning database|uses " "$out/run-with-export.log"
