#!/usr/bin/env bash
# The static side of bench/prefill/stream_gpu.py's forms, no GPU needed: for
# each form of gated_rmsnorm, conv_prefill and quantize_e4m3 (the plan's
# constants plus the form's), the PTX instruction count, the IEEE divisions
# (div.rn.f32, several SASS instructions each), barriers, the widths of the
# global loads and stores, threads and ptxas's registers and spills.
# Usage: bench/prefill/stream_ptx.sh [path/to/tilejit]   (ptxas on PATH)
set -euo pipefail
tj=${1:-build/bin/tilejit}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

form() { # kernel label constants...
  local kernel=$1 label=$2
  shift 2
  local sets=()
  for c in "$@"; do sets+=(--set "$c"); done
  "$tj" compile "$kernel" --arch sm_90a "${sets[@]}" -o "$dir/k.ptx" --meta "$dir/k.json"
  local ptxas
  ptxas=$(ptxas -arch=sm_90a -v "$dir/k.ptx" -o /dev/null 2>&1)
  printf '%-14s %-26s %5d instrs %2d div.rn %d bar  threads %3d  %3d regs %4d B spilled  ld: %s  st: %s\n' \
    "$kernel" "$label" "$(grep -cE '^\s+[a-z@]' "$dir/k.ptx")" \
    "$(grep -c 'div.rn' "$dir/k.ptx" || true)" "$(grep -c 'bar.sync' "$dir/k.ptx" || true)" \
    "$(sed -n 's/.*"threads": \([0-9]*\).*/\1/p' "$dir/k.json")" \
    "$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' <<<"$ptxas")" \
    "$(sed -n 's/.*, \([0-9]*\) bytes spill stores.*/\1/p' <<<"$ptxas")" \
    "$(grep -o 'ld\.global[.a-z0-9]*' "$dir/k.ptx" | sort | uniq -c | awk '{printf "%sx%s ", $1, $2}')" \
    "$(grep -o 'st\.global[.a-z0-9]*' "$dir/k.ptx" | sort | uniq -c | awk '{printf "%sx%s ", $1, $2}')"
}

norm=(fp8_out=1 z_stride=10304 dependent=1)
form gated_rmsnorm "old plan, param_rows=0" "${norm[@]}" param_rows=0
form gated_rmsnorm "plan (param_rows=1)" "${norm[@]}"
form gated_rmsnorm "pr+quant_fma" "${norm[@]}" param_rows=1 quant_fma=1
form gated_rmsnorm "pr+fast_silu" "${norm[@]}" param_rows=1 fast_silu=1
form gated_rmsnorm "pr+qf+fs" "${norm[@]}" param_rows=1 quant_fma=1 fast_silu=1
form gated_rmsnorm "pr+qf+fs rows2" "${norm[@]}" param_rows=1 quant_fma=1 fast_silu=1 rows_per_program=2
form gated_rmsnorm "pr+qf+fs rows4 w4" "${norm[@]}" param_rows=1 quant_fma=1 fast_silu=1 rows_per_program=4 warps=4
form gated_rmsnorm "pr+qf+fs w1" "${norm[@]}" param_rows=1 quant_fma=1 fast_silu=1 warps=1
form gated_rmsnorm "ops, param_rows=0" param_rows=0
form gated_rmsnorm "ops, param_rows" param_rows=1
form gated_rmsnorm "ops, pr+fast_silu" param_rows=1 fast_silu=1
conv=(block_t=32)
form conv_prefill "plan" "${conv[@]}"
form conv_prefill "splits 4" "${conv[@]}" splits=4
form conv_prefill "rows_per_step 4" "${conv[@]}" rows_per_step=4
form conv_prefill "block_c 512" "${conv[@]}" block_c=512
form conv_prefill "block_c 1024 warps 8" "${conv[@]}" warps=8
form conv_prefill "block_c 512 rps 16" "${conv[@]}" block_c=512 rows_per_step=16
form quantize_e4m3 "plan" width=2688
form quantize_e4m3 "flat 2048" width=2688 flat=1 block=2048
form quantize_e4m3 "flat 4096" width=2688 flat=1 block=4096
form quantize_e4m3 "flat 4096 w8" width=2688 flat=1 block=4096 warps=8
