#!/bin/sh
# Lays out vLLM's Mamba2 Triton ops as an importable `vllm` package in DEST, for
# ops_vllm_bench.py to time beside tilejit.ops on the GPU host (which has torch
# and Triton but no vLLM and no network). The op files come unchanged from a git
# mirror of vLLM (the QuixiAI/SlimServe fork, read with `git show`); the modules
# they import from the rest of vLLM are the small stand-ins in vllm_shim/.
# DEST is git-ignored (.peers/): carry it to the GPU host with the tree.
# Usage: extract_vllm.sh MIRROR_GIT_DIR REV DEST
set -eu
mirror=$1 rev=$2 dest=$3
here=$(cd "$(dirname "$0")" && pwd)
ops=vllm/model_executor/layers/mamba/ops
rm -rf "$dest/vllm" "$dest/einops"
mkdir -p "$dest/$ops"
for f in mamba_ssm causal_conv1d layernorm_gated ssd_combined ssd_bmm ssd_chunk_scan \
  ssd_chunk_state ssd_state_passing triton_helpers; do
  git -C "$mirror" show "$rev:$ops/$f.py" >"$dest/$ops/$f.py"
done
# The tuned launch configs of selective_state_update for the Hopper GPUs.
mkdir -p "$dest/$ops/configs/selective_state_update"
git -C "$mirror" ls-tree --name-only "$rev" "$ops/configs/selective_state_update/" |
  grep -E 'H100|H200' | while read -r path; do
    git -C "$mirror" show "$rev:$path" >"$dest/$ops/configs/selective_state_update/$(basename "$path")"
  done
cp -R "$here/vllm_shim/." "$dest/"
for d in vllm/model_executor vllm/model_executor/layers vllm/model_executor/layers/mamba \
  "$ops"; do
  touch "$dest/$d/__init__.py"
done
echo "$rev" >"$dest/VLLM_REV"
echo "vLLM $rev's Mamba2 ops laid out in $dest"
