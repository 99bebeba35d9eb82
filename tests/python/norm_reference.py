"""f64 reference of the gated group norm in all its forms (docs/numerics.md R6:
RMSNorm or LayerNorm, optional bias, the gate before or after the norm), written
from the R6 text and independent of tilejit, with the rounding points named
explicitly so a test can pin which ones the kernel implements."""

import torch

from ops_reference import F64, silu


def round_to(t, dtype):
    """A rounding point: f64 -> f32 -> dtype, as torch converts (None: none)."""
    return t if dtype is None else t.to(F64).float().to(dtype).to(F64)


def gated_norm(x, z, weight, bias, eps, group, norm_before_gate, rms, normed_type, out_type):
    """x (rows, width); z None or (rows, width); weight, bias (width,) or None.
    v = x * silu(z) when z gates before the norm, else x; per group
    x̂ = (v - mean) / sqrt(mean((v - mean)^2) + eps) (mean 0 when rms), rounded to
    normed_type (R6's first rounding point; None: single rounding);
    out = (w * x̂ + bias) [* silu(z) when norm_before_gate], rounded to out_type."""
    v = x.to(F64)
    gate = silu(z.to(F64)) if z is not None else None
    if gate is not None and not norm_before_gate:
        v = v * gate
    rows, width = v.shape
    g = v.reshape(rows, width // group, group)
    if not rms:
        g = g - g.mean(-1, keepdim=True)
    normed = round_to((g / torch.sqrt((g * g).mean(-1, keepdim=True) + eps))
                      .reshape(rows, width), normed_type)
    out = weight.to(F64) * normed
    if bias is not None:
        out = out + bias.to(F64)
    if gate is not None and norm_before_gate:
        out = out * gate
    return round_to(out, out_type)
