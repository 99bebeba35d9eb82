#!/usr/bin/env bash
# PTX of every SSD variant ssd_prefill_gpu.py times beside the plan's (issue 31):
# the plan's three span launches (ssd_span_state, ssd_state_pass, ssd_prefill
# span_states=1) per variant of chunk, block_p, warps, precision (R5p-m) and
# span length, as DIR/NAME{,.state,.pass}.{ptx,json}, DIR/variants.txt lines
# "NAME CHUNK BLOCK_P STATE_BLOCK_P SPAN_TOKENS [BLOCK_M]" (with BLOCK_M: the
# chunk-parallel schedule, ssd_chunk_scan) and DIR/heads; prints each
# ssd_prefill's and ssd_span_state's registers and spills (ptxas -v). A
# variant may build its output kernel for another arch (out_arch): sm_90 PTX
# keeps every dot on mma.sync where sm_90a puts some on wgmma, the same tiles
# otherwise (the driver runs sm_90 PTX on an H100/H200).
# Usage: ssd_variants.sh TILEJIT DIR [HEADS] [ARCH]   (SSD_VARIANTS: the names to
# build, all by default)
set -euo pipefail
tj=$1 dir=$2 heads=${3:-64} arch=${4:-sm_90a}
mkdir -p "$dir"
: >"$dir/variants.txt"
echo "$heads" >"$dir/heads"
inner=$((heads * 64))
geo=(--set heads="$heads" --set head_dim=64 --set state=128)
# in_proj's row: z | xBC | dt
ssd=("${geo[@]}" --set groups=8 --set dt_stride=$((2 * inner + 2048 + heads))
  --set dt_col=$((2 * inner + 2048)))

# schedule KERNEL NAME CHUNK PRECISION BLOCK_P WARPS STATE_BLOCK_P STATE_WARPS LINE:
# a schedule's three launches (ssd_span_state, ssd_state_pass with the settings
# in pass_extra, the output KERNEL with those in out_extra), LINE in variants.txt,
# and the registers and spills of the output kernel (built for out_arch, if
# set) and ssd_span_state.
schedule() {
  local kernel=$1 name=$2 q=$3 prec=$4 bp=$5 w=$6 sbp=$7 sw=$8 line=$9
  [ -z "${SSD_VARIANTS:-}" ] || [[ " $SSD_VARIANTS " == *" $name "* ]] || return 0
  local common=("${ssd[@]}" --set chunk="$q" --set precision="$prec")
  local karch=${out_arch:-$arch}
  "$tj" compile "$kernel" --arch "$karch" "${common[@]}" "${out_extra[@]}" \
    --set block_p="$bp" --set warps="$w" -o "$dir/$name.ptx" --meta "$dir/$name.json"
  "$tj" compile ssd_span_state --arch "$arch" "${common[@]}" "${state_extra[@]}" \
    --set block_p="$sbp" --set warps="$sw" -o "$dir/$name.state.ptx" --meta "$dir/$name.state.json"
  "$tj" compile ssd_state_pass --arch "$arch" "${geo[@]}" --set block=1024 \
    "${pass_extra[@]}" -o "$dir/$name.pass.ptx" --meta "$dir/$name.pass.json"
  echo "$line" >>"$dir/variants.txt"
  command -v ptxas >/dev/null || return 0
  for ptx in "$name" "$name.state"; do
    printf '%-22s ' "$ptx"
    [ "$ptx" = "$name" ] && printf 'wgmma=%s ' "$(grep -c wgmma.mma_async "$dir/$ptx.ptx" || true)"
    ptxas -arch="$([ "$ptx" = "$name" ] && echo "$karch" || echo "$arch")" -v \
      "$dir/$ptx.ptx" -o /dev/null 2>&1 |
      grep -E "registers|spill" | tr -s ' \n' ' '
    echo
  done
}

# variant NAME CHUNK BLOCK_P WARPS PRECISION STATE_BLOCK_P STATE_WARPS SPAN_TOKENS:
# the plan's span schedule (ssd_prefill span_states=1).
variant() {
  out_extra=(--set span_states=1) pass_extra=()
  state_extra=()
  schedule ssd_prefill "$1" "$2" "$5" "$3" "$4" "$6" "$7" "$1 $2 $3 $6 $8"
}

# chunked NAME CHUNK BLOCK_M BLOCK_P WARPS PRECISION STATE_BLOCK_P STATE_WARPS [UNROLL
# [OUT_ARCH]]: the chunk-parallel schedule (ssd_span_state over one-chunk spans,
# ssd_state_pass writing the pages, UNROLL spans a step, ssd_chunk_scan built for
# OUT_ARCH), line "NAME CHUNK BLOCK_P STATE_BLOCK_P CHUNK BLOCK_M".
chunked() {
  out_extra=(--set block_m="$3") pass_extra=(--set write_page=1 --set unroll="${9:-1}")
  state_extra=()
  out_arch=${10:-} schedule ssd_chunk_scan "$1" "$2" "$6" "$4" "$5" "$7" "$8" \
    "$1 $2 $4 $7 $2 $3"
}

# The plan's (the baseline), then one design choice changed at a time.
variant plan 32 32 4 0 32 4 512
variant span256 32 32 4 0 32 4 256
variant span1024 32 32 4 0 32 4 1024
variant head_p64w8 32 64 8 0 32 4 512
variant p16 32 16 4 0 32 4 512
variant c64 64 32 4 0 32 4 512
variant c64_p64w8 64 64 8 0 64 8 512
variant upstream 32 32 4 1 32 4 512
variant upstream_c64 64 32 4 1 32 4 512
variant upstream_p64w8 32 64 8 1 32 4 512
variant exact 32 32 4 0 32 4 512
variant split 32 32 4 2 32 4 512
variant split_p64w8 32 64 8 2 32 4 512
# The chunk-parallel schedule: chunk, state rows and warps, precision (block_m 64
# and ssd_span_state at chunk 256 spill: ptxas lines above).
chunked ch64 64 32 32 4 0 32 4
chunked ch128 128 32 32 4 0 32 8
chunked ch256 256 32 32 4 0 32 8
chunked ch128_p64w8 128 32 64 8 0 32 8
chunked ch128_up 128 32 32 4 1 32 8
chunked ch64_u4 64 32 32 4 0 32 4 4
chunked ch128_u4 128 32 32 4 0 32 8 4
# Issue 31: ssd_chunk_scan's C B^T on wgmma (sm_90a; it needs block_m 64 on 4
# warps, one warpgroup's 64-row blocks), beside the same tiles on mma.sync (sm_90
# PTX, the _s variants). mix.x, C S_in and the diagonal block stay on mma.sync
# (docs/models.md, its chunked-SSD section, says why).
chunked ch128_w 128 64 32 4 0 32 8
chunked ch128_s 128 64 32 4 0 32 8 1 sm_90
chunked ch64_w 64 64 32 4 0 32 4
chunked ch64_s 64 64 32 4 0 32 4 1 sm_90
chunked ch128_up_w 128 64 32 4 1 32 8
chunked ch128_up_s 128 64 32 4 1 32 8 1 sm_90
