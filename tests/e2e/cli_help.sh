#!/bin/sh
# `tilejit --help` fits on one screen (at most 40 lines) and shows none of
# LLVM's own options; `tilejit run --help` lists the choices of --mode and
# --backend. Usage: cli_help.sh TILEJIT
set -u
tilejit=$1
top=$("$tilejit" --help) || { echo "cli_help.sh: tilejit --help failed" >&2; exit 1; }
printf '%s\n' "$top"
lines=$(printf '%s\n' "$top" | wc -l)
if [ "$lines" -gt 40 ]; then
  echo "cli_help.sh: tilejit --help prints $lines lines, more than 40" >&2
  exit 1
fi
if printf '%s\n' "$top" | grep -q -e '--aarch64' -e '--x86-' -e '--color'; then
  echo "cli_help.sh: tilejit --help lists LLVM's options" >&2
  exit 1
fi
run=$("$tilejit" run --help) || { echo "cli_help.sh: tilejit run --help failed" >&2; exit 1; }
for choice in =decode =prefill =auto =gpu =interp; do
  if ! printf '%s\n' "$run" | grep -q -- "$choice "; then
    echo "cli_help.sh: tilejit run --help does not list '$choice'" >&2
    exit 1
  fi
done
echo "tilejit --help: $lines lines"
