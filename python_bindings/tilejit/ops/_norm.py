"""rms_norm_gated (mamba_ssm's and vLLM's gated RMSNorm): docs/numerics.md R6 on
the registered `gated_rmsnorm` kernel."""

import torch

from ._launch import (as_tensor, check, check_aligned, check_strides, fail, launch,
                      matrix_rows, row_stride)


def rms_norm_gated(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True,
                   upcast=True):
    """The gated group RMSNorm with R6's two rounding points:
    out = bf16(w * bf16(v * rsqrt(mean_group(v^2) + eps))), v = x * silu(z)
    (v = x when z is None).

    x (..., width) and z (same shape) bf16, rows of any stride; weight (width,)
    bf16; group_size divides width (None: the whole row). Supported:
    norm_before_gate=False, bias=None, upcast=True; the others are refused.
    Returns a new bf16 tensor shaped as x.
    """
    op = "rms_norm_gated"
    x, weight, bias, z = (as_tensor(op, n, v) for n, v in
                          [("x", x), ("weight", weight), ("bias", bias), ("z", z)])
    if norm_before_gate:
        raise fail(op, "norm_before_gate=True (the signature's default) is not supported: "
                       "tilejit's gated_rmsnorm gates before it normalizes (R6, as NemotronH "
                       "does); pass norm_before_gate=False")
    if bias is not None:
        raise fail(op, "bias is not supported: tilejit's gated_rmsnorm has no bias (R6); "
                       "pass bias=None")
    if not upcast:
        raise fail(op, "upcast=False is not supported: tilejit computes in f32 (R6)")
    y = matrix_rows(op, "x", x, (torch.bfloat16,))
    rows, width = y.shape
    device = x.device
    check(op, "weight", weight, (torch.bfloat16,), (width,), device)
    check_strides(op, "weight", weight, (1,))
    check_aligned(op, "weight", weight)
    group = width if group_size is None else group_size
    if not isinstance(group, int) or group <= 0 or width % group:
        raise fail(op, f"group_size {group_size!r} does not divide the width {width}")
    args = dict(y=y, weight=weight, rows=rows, eps=float(eps))
    constants = dict(width=width, group_size=group, gate=int(z is not None))
    if z is not None:
        check(op, "z", z, (torch.bfloat16,), tuple(x.shape), device)
        zr = matrix_rows(op, "z", z, (torch.bfloat16,), any_row_stride=True)
        constants["z_stride"] = row_stride(op, "z", zr, width)
        args["z"] = zr
    out = check_aligned(op, "the output", torch.empty(rows, width, dtype=torch.bfloat16,
                                                      device=device), (0,))
    launch("gated_rmsnorm", constants, device, (rows, width // group), out=out, **args)
    return out.view(x.shape)
