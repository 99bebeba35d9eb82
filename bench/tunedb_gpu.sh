#!/usr/bin/env bash
# The shipped tuning database, measured on a GPU host (docs/tune.md): `tilejit
# tune` for every kernel of the decode step at each batch of TUNE_ROWS as the
# plan launches it (bench/tune_plan_sets.py: the plan's constants by --set and
# --start, one tune per distinct kernel instance) and ssd_prefill at its
# prefill length, into a fresh database; `tilejit tunedb ls`, the export to
# EXPORT (commit it as tunedb/h200.tune.json), and a decode run configured
# from the export, which says which entries it used. One summary line per
# command; logs in OUT. Tunes stop starting once TUNE_TOTAL_S have passed, so
# the export always runs within one GPU call.
# Usage: tunedb_gpu.sh TILEJIT OUT EXPORT (TUNE_ROWS, default "1 8 64 256";
# TUNE_BUDGET_S, default 15 s of measurement per tune; RUN_TIMEOUT, default
# 60 s per tune; TUNE_TOTAL_S, default 420)
set -u
tj=$1 out=$2 export=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
db=$out/tune-work.json
rm -f "$db" "$db.lock" "$export"
export TILEJIT_TUNE_DB=$db
begin=$(date +%s)
one() { # name command...
  name=$1
  shift
  start=$(date +%s)
  timeout "${RUN_TIMEOUT:-60}" "$@" </dev/null >"$out/$name.log" 2>&1
  rc=$?
  printf '%-34s (%s s) exit %s: %s\n' "$name" "$(($(date +%s) - start))" "$rc" \
    "$(grep -E '^(winner|default|tuned|recorded)' "$out/$name.log" | tr '\n' ' ' | cut -c1-300)"
  [ "$rc" = 0 ] || echo "    last: $(tail -n 1 "$out/$name.log")"
  return $rc
}
in_time() {
  [ $(($(date +%s) - begin)) -lt "${TUNE_TOTAL_S:-420}" ] && return 0
  echo "skipped $1: TUNE_TOTAL_S=${TUNE_TOTAL_S:-420} s have passed"
  return 1
}
for rows in ${TUNE_ROWS:-1 8 64 256}; do
  if ! /usr/bin/env python3 "$here/tune_plan_sets.py" "$tj" "$rows" \
    >"$out/sets-$rows.txt" 2>"$out/sets-$rows.log"; then
    echo "rows=$rows: the plan's launches could not be listed: $(tail -n 1 "$out/sets-$rows.log")"
    continue
  fi
  while IFS=$'\t' read -r name kernel sets; do
    in_time "$name at rows=$rows" || continue
    # shellcheck disable=SC2086 # the --set/--start words split by design
    one "tune-$name-$rows" "$tj" tune "$kernel" --shape "rows=$rows" $sets \
      --budget-s "${TUNE_BUDGET_S:-15}"
  done <"$out/sets-$rows.txt"
done
in_time ssd_prefill &&
  one tune-ssd_prefill-8192 "$tj" tune ssd_prefill --shape tokens=8192 \
    --budget-s "${TUNE_BUDGET_S:-15}"
"$tj" tunedb ls 2>&1 | tee "$out/tunedb-ls.log"
if ! "$tj" tunedb export "$export" >"$out/export.log" 2>&1; then
  echo "tunedb export failed:"
  cat "$out/export.log"
  exit 1
fi
echo "exported $(grep -c '"kernel"' "$export") entries to $export ($(($(date +%s) - begin)) s)"
# As `make run` uses it: the plans look it up and say what they use.
RUN_TIMEOUT=120 one run-with-export env TILEJIT_TUNE_DB="$export" "$tj" run --layers 2 --batch 1 --steps 1 \
  --time-batch 1,8,64,256
grep -E "^tuning database|uses |refused" "$out/run-with-export.log"
