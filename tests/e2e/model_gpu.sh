#!/usr/bin/env bash
# Checkpoints as published, on a GPU host (issue 21): the reduced NemotronH
# checkpoint of tests/fixtures/PublishedCheckpoint.h, generated here by the
# bundle's tilejit-test-checkpoint in its three forms (hybrid_override_pattern,
# layers_block_type, every tensor under "language_model."), each through
# `tilejit run --model` decode and prefill over all of its Mamba layers, then
# examples/embed (the embedding API on caller memory) on it and on the synthetic
# weights. One line per run: its name, time, exit code, the weights line (the
# config's layer kinds) and the run's last line; each log in OUT/<name>.log.
# Usage: model_gpu.sh BIN_DIR OUT (BACKEND=interp: the same on the interpreter,
# smaller, to try the script without a GPU)
set -u
bin=$1 out=$2
backend=${BACKEND:-gpu}
mkdir -p "$out"
one() { # name command...
  name=$1
  shift
  start=$(date +%s)
  timeout "${RUN_TIMEOUT:-200}" "$@" </dev/null >"$out/$name.log" 2>&1
  rc=$?
  ok=no
  [ "$rc" = 0 ] && ok=yes
  printf '%-28s (%s s) exit %s (want 0, %s)\n' "$name" "$(($(date +%s) - start))" "$rc" "$ok"
  grep -E '^(weights: [^g0-9]|model:|engine:|tuning database|prefill:|decode:|step B=|prefill T=[0-9]+ L=[0-9]+: median)' \
    "$out/$name.log" | sed 's/^/    /'
  echo "    last: $(tail -n 1 "$out/$name.log")"
}
if [ "$backend" = gpu ]; then
  decode=(--time-batch 1,64) prefill=(--tokens 2048) example=(--backend gpu)
  synthetic=(--layers 0 --rows 8 --tokens 512 --steps 50)
else
  decode=() prefill=() example=(--backend interpreter)
  synthetic=(--layers 1 --tokens 8 --steps 2)
fi
for form in pattern block-types wrapped; do
  dir=$out/published-$form
  case $form in
  pattern) flags=() ;;
  block-types) flags=(--block-types) ;;
  wrapped) flags=(--prefix language_model.) ;;
  esac
  if ! "$bin/tilejit-test-checkpoint" "$dir" "${flags[@]}" >"$out/make-$form.log" 2>&1; then
    echo "tilejit-test-checkpoint $form failed:"
    cat "$out/make-$form.log"
    continue
  fi
  # Every Mamba layer (the default on the GPU; --layers 5 on the interpreter).
  one "model-$form-decode" "$bin/tilejit" run --backend "$backend" --model "$dir" --layers 5 \
    "${decode[@]}"
  # The reduced head_dim (16) takes ssd_prefill blocks of 16 rows.
  one "model-$form-prefill" "$bin/tilejit" run --backend "$backend" --mode prefill \
    --model "$dir" --layers 5 --set ssd_prefill.block_p=16 "${prefill[@]}"
done
one embed-checkpoint "$bin/tilejit-embed-example" "$out/published-pattern" --layers 0 \
  --rows 4 --tokens 64 --steps 20 --set ssd_prefill.block_p=16 "${example[@]}"
one embed-synthetic "$bin/tilejit-embed-example" "${synthetic[@]}" "${example[@]}"
