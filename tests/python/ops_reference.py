"""Plain-torch f64 references of the ops tilejit.ops computes, written from
docs/numerics.md and independent of tilejit: sequential over tokens (R5, never
a second chunked algorithm), with exactly the rounding points each op names.
e4m3 rounding and decoding come from mamba2_reference (numpy, from the bit
layout)."""

import numpy as np
import torch

from mamba2_reference import e4m3_decode, round_e4m3

F64 = torch.float64


def bf16(t):
    """The bf16 rounding point (f64 -> f32 -> bf16, as torch converts)."""
    return t.to(F64).float().bfloat16().to(F64)


def silu(v):
    return v / (1 + torch.exp(-v))


def softplus(v):
    return torch.where(v > 20, v, torch.log1p(torch.exp(v)))


def discretize(dt, dt_bias, apply_softplus, dt_min, dt_max):
    """R4: dt' = clamp(softplus(dt + dt_bias)) (softplus only when asked)."""
    v = dt.to(F64) + dt_bias.to(F64)
    return (softplus(v) if apply_softplus else v).clamp(dt_min, dt_max)


def ssm_scan(x, dt, A, B, C, D, dt_bias, apply_softplus, state=None, dt_min=0.0,
             dt_max=float("inf")):
    """R5 over one sequence, token by token: x [L, H, P], dt [L, H], B and C
    [L, G, N], per-head A, D, dt_bias [H]; from `state` [H, P, N] or zeros.
    Returns y [L, H, P] and the final state, f64, unrounded."""
    x, B, C = x.to(F64), B.to(F64), C.to(F64)
    length, heads, head_dim = x.shape
    groups, n = B.shape[1], B.shape[2]
    Bh, Ch = B.repeat_interleave(heads // groups, 1), C.repeat_interleave(heads // groups, 1)
    A, D = A.to(F64), D.to(F64)
    S = (torch.zeros(heads, head_dim, n, dtype=F64, device=x.device) if state is None
         else state.to(F64).clone())
    d = discretize(dt, dt_bias, apply_softplus, dt_min, dt_max)
    y = torch.empty(length, heads, head_dim, dtype=F64, device=x.device)
    for t in range(length):
        S = S * torch.exp(A * d[t])[:, None, None] + \
            (d[t][:, None] * x[t])[:, :, None] * Bh[t][:, None, :]
        y[t] = torch.einsum("hpn,hn->hp", S, Ch[t]) + D[:, None] * x[t]
    return y, S


def conv_sequence(xs, weight, bias, state=None):
    """R3 over one sequence: xs [L, C], weight [C, 4] (tap 3 multiplies the
    current token), bias [C], from `state` [C, 3] (oldest first) or zeros.
    Returns silu(pre) [L, C] (f64, unrounded) and the new state [C, 3]."""
    xs, w, b = xs.to(F64), weight.to(F64), bias.to(F64)
    length, channels = xs.shape
    past = torch.zeros(3, channels, dtype=F64, device=xs.device) if state is None \
        else state.to(F64).t()
    u = torch.cat([past, xs])
    pre = b + sum(w[:, j] * u[j:j + length] for j in range(4))
    return silu(pre), u[-3:].t()


def gated_rms_norm(y, z, weight, eps, group, rounding=2):
    """R6 (norm_before_gate=False): v = y * silu(z) (v = y without z); per group
    r = 1/sqrt(mean(v^2) + eps); with rounding=2 R6's two rounding points
    bf16(w * bf16(v * r)), with 1 the single-rounding variant bf16(w * v * r)."""
    v = y.to(F64) * (silu(z.to(F64)) if z is not None else 1)
    rows, width = v.shape
    g = v.view(rows, width // group, group)
    r = 1 / torch.sqrt((g * g).mean(-1, keepdim=True) + eps)
    normed = (g * r).view(rows, width)
    if rounding == 2:
        normed = bf16(normed)
    return bf16(weight.to(F64) * normed)


def quant_e4m3(x, scale):
    """R1's static activation quant from the f64 quotient: e4m3 values, f64."""
    q = round_e4m3(x.to(F64).cpu().numpy() / float(scale))
    return torch.from_numpy(q)


def e4m3_values(t):
    """The values of e4m3 codes (a float8_e4m3fn or uint8 tensor), f64, on the CPU."""
    codes = t.view(torch.uint8).cpu().numpy()
    return torch.from_numpy(np.asarray(e4m3_decode(codes), np.float64))


def w8a8(a_values, w_values, scale_x, scale_w):
    """R1's accumulation and output: (s_x * s_w) * sum_k a[m, k] w[n, k], f64
    (unrounded), with |a| |w| sums for the reduced-precision band of R1h."""
    acc = a_values @ w_values.t()
    return (float(scale_x) * float(scale_w)) * acc, \
        (float(scale_x) * float(scale_w)) * (a_values.abs() @ w_values.abs().t())
