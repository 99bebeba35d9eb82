#!/usr/bin/env bash
# One device call for issue 35's portable GEMMs: the PTX variants of
# portable.txt, built here by build_shapes.sh into bundle/portable and
# carried, next to torch.matmul (bf16) and torch._scaled_mm (e4m3) through
# hopper.py, each family in its own process; logs under $OUT.
# Usage: bench/gemm/run_portable.sh [REPS] [M,M,...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$here/../../bundle
out=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
family() { # NAME GLOB MS TIMEOUT
  local dir=$(mktemp -d)
  cp "$bundle"/portable/$2 "$dir/" 2>/dev/null || return 0
  timeout "$4" python3 "$here/hopper.py" "$dir" "${REPS:-30}" "$3" >"$out/$1.log" 2>&1
  echo "== $1: exit $?"; sed -n '/^M  *N/,$p' "$out/$1.log"; grep -E 'Error|error' "$out/$1.log" | head -5
}
REPS=${1:-30}
family bf16 'b*' "${2:-4096,8192}" 240
family e4m3 '[io]*' "${2:-8192}" 150
