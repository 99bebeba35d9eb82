"""The gated group norm of mamba_ssm's layernorm_gated (layernorm_fn, rmsnorm_fn)
and vLLM's rms_norm_gated: docs/numerics.md R6 and its LayerNorm, bias and
norm-before-gate forms on the registered `gated_rmsnorm` kernel."""

from ._launch import (FLOAT_TYPES, as_tensor, check, check_aligned, check_strides,
                      element_type, fail, launch, matrix_rows, row_stride)
from ._plan import cached
from ._recording import per_call

# The largest group gated_rmsnorm holds in one tile (its group_size range;
# mamba_ssm's kernel takes up to 64 KB of x).
MAX_GROUP = 16384


@cached
def rms_norm_gated(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True,
                   upcast=True):
    """vLLM's rms_norm_gated (and mamba_ssm's rms_norm_ref signature): the
    gated group RMSNorm of R6. norm_before_gate=True (the default) is
    out = (w * norm(x) + bias) * silu(z); False is out = w * norm(x * silu(z))
    + bias, R6's form. upcast=False (rms_norm_ref computing each step in x's
    dtype) is refused. See gated_norm for the operands."""
    if not upcast:
        raise fail("rms_norm_gated", "upcast=False is not supported: it names mamba_ssm's "
                                     "reference computing every step in x's dtype, and "
                                     "tilejit's kernel computes in f32 (R6); pass upcast=True")
    return gated_norm("rms_norm_gated", x, weight, bias, z, eps, group_size, norm_before_gate,
                      layer_norm=False)


@cached
def layernorm_fn(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True,
                 is_rms_norm=False):
    """mamba_ssm's layernorm_fn, forward only (the result carries no autograd
    graph): a group LayerNorm (is_rms_norm=False) or RMSNorm, gated by z after
    the norm (norm_before_gate=True) or before it. See gated_norm."""
    return gated_norm("layernorm_fn", x, weight, bias, z, eps, group_size, norm_before_gate,
                      layer_norm=not is_rms_norm)


@cached
def rmsnorm_fn(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True):
    """mamba_ssm's rmsnorm_fn, forward only: layernorm_fn with is_rms_norm=True."""
    return gated_norm("rmsnorm_fn", x, weight, bias, z, eps, group_size, norm_before_gate,
                      layer_norm=False)


def gated_norm(op, x, weight, bias, z, eps, group_size, norm_before_gate, layer_norm):
    """R6 and its forms: v = x * silu(z) when z gates before the norm (else v = x);
    per group of group_size channels (None: the whole row) x̂ = (v - mean) /
    sqrt(var + eps) (mean 0 for the RMS form), rounded to x's dtype (R6's first
    rounding point); out = w * x̂ + bias, times silu(z) when z gates after the
    norm, rounded once to x's dtype.

    x (..., width) f32, f16 or bf16 and z (None or shaped as x, any float
    dtype): rows contiguous, any distance apart (read in place); weight and
    bias (None or (width,)) any float dtype, contiguous. Returns a new tensor
    of x's dtype shaped as x."""
    x, weight, bias, z = (as_tensor(op, n, v) for n, v in
                          [("x", x), ("weight", weight), ("bias", bias), ("z", z)])
    y = matrix_rows(op, "x", x, FLOAT_TYPES, any_row_stride=True)
    rows, width = y.shape
    device = x.device
    group = width if group_size is None else group_size
    if not isinstance(group, int) or group <= 0 or width % group:
        raise fail(op, f"group_size {group_size!r} does not divide the width {width}")
    if (group & (group - 1) and group % 8) or group > MAX_GROUP:
        raise fail(op, f"a norm group of {group} channels is not supported: tilejit holds a "
                       f"group in one tile of up to {MAX_GROUP} channels, a power of two or "
                       "padded to one from a multiple of 8 (16-byte aligned rows)")
    gated = z is not None
    constants = dict(width=width, group_size=group, gate=int(gated), bias=int(bias is not None),
                     layer_norm=int(layer_norm), norm_before_gate=int(gated and norm_before_gate),
                     y_type=element_type(y), out_type=element_type(y),
                     y_stride=row_stride(op, "x", y, width))
    args = dict(y=y, weight=_vector(op, "weight", weight, width, device), rows=rows,
                eps=float(eps))
    constants["weight_type"] = element_type(weight)
    if bias is not None:
        args["bias"] = _vector(op, "bias", bias, width, device)
        constants["bias_type"] = element_type(bias)
    if gated:
        check(op, "z", z, FLOAT_TYPES, tuple(x.shape), device)
        zr = matrix_rows(op, "z", z, FLOAT_TYPES, any_row_stride=True)
        constants["z_stride"] = row_stride(op, "z", zr, width)
        constants["z_type"] = element_type(zr)
        args["z"] = zr
    out = check_aligned(op, "the output", per_call("empty", rows, width, dtype=y.dtype,
                                                   device=device), (0,))
    # Many rows: two a program keep more bytes in flight (1.16x faster than
    # one at 8192 rows on the H100, docs/BENCHMARKS.md).
    per_program = 2 if rows >= 1024 and 2 * group <= MAX_GROUP else 1
    constants["rows_per_program"] = per_program
    launch("gated_rmsnorm", constants, device, (-(-rows // per_program), width // group),
           out=out, **args)
    return out.view(x.shape)


def _vector(op, name, t, width, device):
    """A per-channel parameter (width,) of any float dtype, contiguous and aligned."""
    check(op, name, t, FLOAT_TYPES, (width,), device)
    check_strides(op, name, t, (1,))
    return check_aligned(op, name, t)
