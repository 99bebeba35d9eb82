"""Mamba2 ops on torch tensors with the signatures PyTorch users know (mamba_ssm,
causal-conv1d, vLLM), compiled by tilejit on first use for each specialization
(shapes, dtypes, layouts) and cached like the registered kernels' other uses.

CPU tensors run on tilejit's CPU interpreter, CUDA tensors on the GPU on the
current torch stream. Inputs may also be DLPack producers or
__cuda_array_interface__ objects; outputs are torch tensors (DLPack exporters).
What a signature allows and tilejit does not implement is an ArgumentError
naming it, never a call into another implementation. Values the kernels'
correctness depends on (slot indices, varlen metadata) are checked on the
device: check_errors() raises what a check found (docs/python.md, "Checks on
the device"). docs/python.md, "Ops", lists per op what is supported and the
docs/numerics.md op it computes.
"""

from ._checks import check_errors, set_checks
from ._conv import causal_conv1d_fn, causal_conv1d_update
from ._fp8 import scaled_fp8_quant, scaled_mm, w8a8_linear
from ._norm import layernorm_fn, rms_norm_gated, rmsnorm_fn
from ._ssd import mamba_chunk_scan_combined, mamba_chunk_scan_combined_varlen
from ._ssm import NULL_BLOCK_ID, PAD_SLOT_ID, selective_state_update

__all__ = ["NULL_BLOCK_ID", "PAD_SLOT_ID", "causal_conv1d_fn", "causal_conv1d_update",
           "check_errors", "layernorm_fn", "mamba_chunk_scan_combined",
           "mamba_chunk_scan_combined_varlen", "rms_norm_gated", "rmsnorm_fn",
           "scaled_fp8_quant", "scaled_mm", "selective_state_update", "set_checks",
           "w8a8_linear"]
