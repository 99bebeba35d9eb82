"""The builds sanitize_kernels.py lists and launches: each registered kernel, or a
variant of it (KERNEL@VARIANT), with every constant its recipe depends on spelled
out, at reduced model geometry; and the one random stream the recipes draw from."""
import numpy as np

from sanitize_support import bf16

# Reduced model geometry (docs/numerics.md#geometry scaled down; the kernels'
# structure is the same at any of these sizes).
IN_PROJ = {"hidden": 200, "inner": 128, "channels": 256, "heads": 8}  # 392 output columns
OUT_PROJ = {"inner": 384, "hidden": 200}
SSM = {"heads": 8, "head_dim": 32, "state": 32, "groups": 2}          # xBC: 256 + 2*2*32
SSD_DT_STRIDE, SSD_DT_COL = 648, 640  # dt read in place from a z | xBC | dt row (256 + 384 + 8)
CONV_PREFILL = {"inner": 128, "channels": 256, "heads": 8, "block_t": 32}
GEMM_NK = {"n": 512, "k": 512}

# name -> (registered kernel, constants passed as --set). Everything a recipe
# depends on is spelled out here, not taken from the registry's defaults.
BUILDS = {
    "vector_add": ("vector_add", {}),
    "softmax": ("softmax", {}),
    "cumsum": ("cumsum", {}),
    "read_bytes": ("read_bytes", {"block": 2048, "steps": 4}),
    "gemm_bf16": ("gemm_bf16", GEMM_NK),
    "gemm_e4m3": ("gemm_e4m3", GEMM_NK),
    "quantize_e4m3": ("quantize_e4m3", {"width": 2688, "block": 1024}),
    "gated_rmsnorm": ("gated_rmsnorm", {"width": 4096, "group_size": 512, "fp8_out": 0,
                                        "z_stride": 0}),
    # decode's FP8 layers: the norm quantizes for out_proj; prefill reads z in place.
    "gated_rmsnorm@fp8_out": ("gated_rmsnorm", {"width": 1024, "group_size": 256,
                                                "fp8_out": 1, "z_stride": 1100}),
    "conv_update": ("conv_update", {"channels": 6144, "block": 256}),
    # The decode plan's choices: GEMV below 16 rows, 16-row tensor-core tiles above.
    "in_proj_conv@gemv_fp8": ("in_proj_conv", {**IN_PROJ, "fp8": 1, "block_m": 1,
                                               "block_n": 16, "block_k": 128}),
    "in_proj_conv@gemv_bf16": ("in_proj_conv", {**IN_PROJ, "fp8": 0, "block_m": 1,
                                                "block_n": 8, "block_k": 128}),
    "in_proj_conv@tile_fp8": ("in_proj_conv", {**IN_PROJ, "fp8": 1, "block_m": 16,
                                               "block_n": 32, "block_k": 64}),
    "in_proj_conv@tile_bf16": ("in_proj_conv", {**IN_PROJ, "fp8": 0, "block_m": 16,
                                                "block_n": 32, "block_k": 64}),
    "out_proj@gemv_fp8": ("out_proj", {**OUT_PROJ, "fp8": 1, "block_m": 1, "block_n": 4,
                                       "block_k": 512}),
    "out_proj@gemv_bf16": ("out_proj", {**OUT_PROJ, "fp8": 0, "block_m": 1, "block_n": 4,
                                        "block_k": 256}),
    "out_proj@tile_fp8": ("out_proj", {**OUT_PROJ, "fp8": 1, "block_m": 16, "block_n": 64,
                                       "block_k": 64}),
    "out_proj@tile_bf16": ("out_proj", {**OUT_PROJ, "fp8": 0, "block_m": 16, "block_n": 64,
                                        "block_k": 64}),
    # The prefill plan's GEMM tile (both projections): 64 x 128, wgmma on sm_90a.
    "out_proj@wgmma_fp8": ("out_proj", {**OUT_PROJ, "fp8": 1, "block_m": 64, "block_n": 128,
                                        "block_k": 128, "warps": 4, "stages": 3}),
    "out_proj@wgmma_bf16": ("out_proj", {**OUT_PROJ, "fp8": 0, "block_m": 64, "block_n": 128,
                                         "block_k": 64, "warps": 4, "stages": 3}),
    "ssm_update": ("ssm_update", {**SSM, "block_p": 16, "warps": 4}),
    "ssd_prefill": ("ssd_prefill", {**SSM, "chunk": 32, "block_p": 16, "warps": 4,
                                    "dt_stride": SSD_DT_STRIDE, "dt_col": SSD_DT_COL}),
    # The prefill plan's span schedule: the three launches run together by each of
    # these builds' recipe (spans of two chunks, so sequences cross spans).
    "ssd_prefill@spans": ("ssd_prefill", {**SSM, "chunk": 32, "block_p": 16, "warps": 4,
                                          "dt_stride": SSD_DT_STRIDE, "dt_col": SSD_DT_COL,
                                          "span_states": 1}),
    "ssd_span_state": ("ssd_span_state", {**SSM, "chunk": 32, "block_p": 16, "warps": 4,
                                          "dt_stride": SSD_DT_STRIDE, "dt_col": SSD_DT_COL}),
    "ssd_state_pass": ("ssd_state_pass", {"heads": 8, "head_dim": 32, "state": 32,
                                          "block": 256, "warps": 4}),
    "conv_prefill": ("conv_prefill", {**CONV_PREFILL, "block_c": 1024, "rows_per_step": 16,
                                      "warps": 4}),
}

rng = np.random.default_rng(20261130)


def randn_bf16(*shape, scale=1.0):
    return bf16(rng.standard_normal(shape) * scale)


def constants(name):
    return BUILDS[name][1]
