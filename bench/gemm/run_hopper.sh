#!/usr/bin/env bash
# One device call for issue 20's GEMM pipelines: the PTX variants built here by
# build_shapes.sh into bundle/hopper (hopper.txt) and bundle/hopper_small
# (hopper_small.txt), carried. Each family (e4m3 "in_"/"out_", bf16 "b", and
# the decode-sized ones) runs in its own process under its own timeout, so a
# hang or fault in one leaves the others' figures; logs under $OUT.
# Usage: bench/gemm/run_hopper.sh [REPS] [M,M,...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$here/../../bundle
out=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
family() { # NAME DIR GLOB MS TIMEOUT
  local dir=$(mktemp -d)
  cp "$2"/$3 "$dir/" 2>/dev/null || return 0
  timeout "$5" python3 "$here/hopper.py" "$dir" "${REPS:-30}" "$4" >"$out/$1.log" 2>&1
  echo "== $1: exit $?"; sed -n '/^M  *N/,$p' "$out/$1.log"; grep -E 'Error|error' "$out/$1.log" | head -5
}
REPS=${1:-30}
family e4m3 "$bundle/hopper" '[io]*' "${2:-4096,8192}" 300
family bf16 "$bundle/hopper" 'b*' "${2:-4096,8192}" 200
family small "$bundle/hopper_small" '*' 64,256 100
