"""A plain numpy f64 reference of the NemotronH decode mixer step (docs/numerics.md
R1-R8, decode: R7 with R3d + R5d), written from the math, independent of tilejit:
only the weights and scales are read from the object under test."""

import numpy as np

from conftest import from_bf16_bits, round_bf16, silu, bf16_bits


def _e4m3_table():
    """The finite non-negative e4m3fn values by code 0..126 (0x7F is NaN)."""
    codes = np.arange(127)
    exp, man = codes >> 3, codes & 7
    return np.where(exp == 0, man / 8.0 * 2.0 ** -6, (1 + man / 8.0) * 2.0 ** (exp - 7.0))


_E4M3 = _e4m3_table()


def e4m3_decode(codes):
    codes = np.asarray(codes, np.int64)
    mag = _E4M3[np.minimum(codes & 0x7F, 126)]
    return np.where(codes & 0x80, -mag, mag)


def round_e4m3(x):
    """Nearest e4m3fn value (ties to the even code), saturating at +-448."""
    x = np.asarray(x, np.float64)
    mag = np.minimum(np.abs(x), 448.0)
    hi = np.clip(np.searchsorted(_E4M3, mag), 1, 126)
    lo = hi - 1
    dlo, dhi = mag - _E4M3[lo], _E4M3[hi] - mag
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    return np.sign(x) * _E4M3[pick]


def linear(x, weight, fp8, weight_scale, input_scale):
    """R1 (static activation quant, f64 accumulation) or R1b; bf16 output."""
    if fp8:
        a = round_e4m3(np.float32(x) / np.float32(input_scale))
        scale = float(np.float32(input_scale) * np.float32(weight_scale))
        return round_bf16(scale * (a @ e4m3_decode(weight).T))
    return round_bf16(x @ from_bf16_bits(weight).T)


def softplus(v):
    return np.where(v > 20, v, np.log1p(np.exp(np.minimum(v, 20))))


def decode_layer(cfg, w, hidden, slots, conv_page, ssm_page):
    """One layer: hidden [R, Hd] f64 (bf16 values) -> out [R, Hd]; the pages
    (conv uint16 bits [S, Cd, K-1], ssm f32 [S, H, P, N]) updated in place."""
    H, P, G, N = cfg.num_heads, cfg.head_dim, cfg.num_groups, cfg.state_size
    inner, gn = H * P, G * N
    cd = inner + 2 * gn
    zxbcdt = linear(hidden, w["in_proj.weight"], w["fp8"], w["in_proj.weight_scale"],
                    w["in_proj.input_scale"])
    conv_w = from_bf16_bits(w["conv1d.weight"])
    conv_b = from_bf16_bits(w["conv1d.bias"])
    A = -np.exp(w["A_log"].astype(np.float64))
    out = np.zeros_like(hidden)
    for r, slot in enumerate(slots):
        if slot < 0:
            continue
        z, xbc, dt = zxbcdt[r, :inner], zxbcdt[r, inner:inner + cd], zxbcdt[r, inner + cd:]
        taps = from_bf16_bits(conv_page[slot])                        # R3d
        pre = conv_b + (conv_w[:, :-1] * taps).sum(1) + conv_w[:, -1] * xbc
        xc = round_bf16(silu(pre))
        conv_page[slot] = np.concatenate([conv_page[slot][:, 1:], bf16_bits(xbc)[:, None]], 1)
        x = xc[:inner].reshape(H, P)
        B, C = xc[inner:inner + gn].reshape(G, N), xc[inner + gn:].reshape(G, N)
        dtp = np.clip(softplus(dt + w["dt_bias"]), cfg.dt_min, cfg.dt_max)   # R4
        g = np.arange(H) // (H // G)
        S = ssm_page[slot].astype(np.float64)                          # R5d
        S = (np.exp(A * dtp)[:, None, None] * S
             + dtp[:, None, None] * B[g][:, None, :] * x[:, :, None])
        y = round_bf16((S * C[g][:, None, :]).sum(-1) + w["D"][:, None] * x).reshape(inner)
        ssm_page[slot] = S.astype(np.float32)
        v = (y * silu(z)).reshape(G, inner // G)                       # R6
        r_ = 1.0 / np.sqrt((v * v).mean(-1, keepdims=True) + cfg.eps)
        normed = round_bf16(from_bf16_bits(w["norm.weight"]) * round_bf16(v * r_).reshape(inner))
        out[r] = linear(normed[None], w["out_proj.weight"], w["fp8"],
                        w["out_proj.weight_scale"], w["out_proj.input_scale"])[0]
    return out


def decode_step(cfg, weights, hidden, slots, pages):
    """Every layer in order; `pages` is a list of (conv, ssm) per layer, updated."""
    x = hidden
    for w, (conv, ssm) in zip(weights, pages):
        x = decode_layer(cfg, w, x, slots, conv, ssm)
    return x
