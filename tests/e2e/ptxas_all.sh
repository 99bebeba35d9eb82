#!/usr/bin/env bash
# Every registered kernel, for every arch: `tilejit compile` writes PTX whose
# .target is the exact arch, and ptxas for that arch assembles it; so do the
# prefill GEMMs fed by TMA (every arch has it) from a producer warp(group) or
# from a consumer thread, persistent or not, and gated_rmsnorm's forms for
# tilejit.ops (f16/f32 operands, a padded group, a 16384-channel one). The
# kernels of the model's plans are PlanPtxasTest's.
# Exit 77 (CTest: skipped) with the reason when ptxas is not installed.
set -euo pipefail
tilejit="$1"
ptxas=$(command -v ptxas || true)
[ -n "$ptxas" ] || { [ -x /usr/local/cuda/bin/ptxas ] && ptxas=/usr/local/cuda/bin/ptxas; }
if [ -z "$ptxas" ]; then
  echo "SKIP: ptxas not found (install the CUDA toolkit to validate PTX)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
count=0
# assemble ARCH KERNEL [--set ...]: compile for ARCH, check the .target line,
# assemble with ptxas for ARCH.
assemble() {
  local arch=$1
  shift
  "$tilejit" compile "$@" --arch "$arch" -o "$dir/k.$arch.ptx"
  grep -q "^\.target $arch\$" "$dir/k.$arch.ptx" ||
    { echo "FAIL: $* $arch: no '.target $arch' line"; exit 1; }
  "$ptxas" -arch="$arch" "$dir/k.$arch.ptx" -o "$dir/k.$arch.cubin" ||
    { echo "FAIL: ptxas -arch=$arch rejected $*"; exit 1; }
  count=$((count + 1))
}
for kernel in $("$tilejit" list --names); do
  for arch in sm_90 sm_90a sm_110a sm_121a; do
    assemble "$arch" "$kernel"
  done
done
# ARCHES|CONSTANTS: producer = 2 (a consumer thread issues the copies) is for
# mma.sync consumers, which sm_90a's wgmma GEMMs are not; every variant fits
# GB10's 99 KiB except where its arch list leaves sm_121a out.
for variant in \
  "sm_90 sm_90a sm_110a|gemm_e4m3 --set producer=1 --set block_n=256 --set stages=4" \
  "sm_90 sm_90a sm_110a sm_121a|gated_rmsnorm --set width=768 --set group_size=96 --set layer_norm=1 --set bias=1 --set norm_before_gate=1 --set y_type=1 --set z_type=2 --set weight_type=2 --set bias_type=1 --set out_type=1" \
  "sm_90 sm_90a sm_110a sm_121a|gated_rmsnorm --set width=16384 --set group_size=16384 --set y_type=2 --set z_type=2 --set weight_type=2 --set out_type=2" \
  "sm_90 sm_90a sm_110a sm_121a|gemm_e4m3 --set producer=1 --set block_n=256 --set stages=2" \
  "sm_90 sm_90a sm_110a sm_121a|gemm_e4m3 --set producer=1 --set persistent=8 --set warps=4 --set block_m=64" \
  "sm_90 sm_90a sm_110a|out_proj --set fp8=0 --set block_m=128 --set block_n=256 --set block_k=64 --set warps=8 --set stages=4 --set producer=1 --set persistent=8" \
  "sm_90 sm_110a sm_121a|out_proj --set fp8=0 --set block_m=128 --set block_n=256 --set block_k=64 --set warps=8 --set stages=2 --set producer=2" \
  "sm_90 sm_110a|out_proj --set fp8=0 --set block_m=128 --set block_n=256 --set block_k=64 --set warps=8 --set stages=3 --set producer=2 --set persistent=8" \
  "sm_90 sm_110a sm_121a|gemm_e4m3 --set producer=2 --set warps=4"; do
  producer=${variant#*|}
  for arch in ${variant%%|*}; do
    # shellcheck disable=SC2086
    assemble "$arch" $producer
  done
done
# tilejit.ops' forms of the conv kernels: f16, f32 and mixed operands, no
# activation or bias, vLLM's null block, the update's general form; and
# ssm_update's varlen speculative-decoding form with its metadata checks.
for forms in \
  "ssm_update --set split=1 --set varlen=1 --set spec=1 --set dst_slots=1 --set slots_stride=2 --set dst_stride=2 --set checked=1" \
  "conv_update --set general=1 --set null_block=1 --set checked=1" \
  "conv_update --set x_type=1 --set weight_type=1 --set bias_type=1 --set state_type=1 --set out_type=1 --set width=3 --set silu=0" \
  "conv_update --set x_type=2 --set weight_type=2 --set bias_type=2 --set out_type=2 --set tokens=4 --set spec=1 --set varlen=1 --set apc=1 --set has_bias=0 --set slots_i64=1 --set checked=1" \
  "conv_prefill --set x_type=1 --set weight_type=1 --set bias_type=1 --set state_type=1 --set out_type=1 --set silu=0 --set null_block=1 --set checked=1" \
  "conv_prefill --set x_type=2 --set weight_type=2 --set state_type=2 --set out_type=2 --set has_bias=0 --set fast_silu=0" \
  "conv_prefill --set state_type=2 --set weight_type=1 --set inner=0"; do
  for arch in sm_90 sm_90a sm_110a sm_121a; do
    # shellcheck disable=SC2086
    assemble "$arch" $forms
  done
done
echo "ptxas accepted $count kernel/arch pairs"
