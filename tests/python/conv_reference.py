"""f64 references of vLLM's causal_conv1d ops as tilejit.ops implements them
(docs/numerics.md R3, R3d and the rolling rules of docs/python-ops.md): one
row or sequence at a time, sequentially, in plain torch, with vLLM's rounding
points (x rounded to the page's dtype; the output rounded to the page's dtype,
then to x's)."""

import torch

F64 = torch.float64


def rounded(v, dtype):
    """v (f64) rounded to `dtype` (nearest even), back in f64."""
    return v.to(dtype).to(F64)


def silu(v):
    return v / (1 + torch.exp(-v))


def conv_outputs(u, weight, bias, activation):
    """The causal conv over u [(K - 1) + L, C] (the window then the tokens):
    pre[t] = bias + sum_j w[:, j] u[t + j]; SiLU when `activation`. f64,
    unrounded: [L, C]."""
    w = weight.to(F64)
    width = w.shape[1]
    length = u.shape[0] - (width - 1)
    pre = sum(w[:, j] * u[j:j + length] for j in range(width))
    if bias is not None:
        pre = pre + bias.to(F64)
    return silu(pre) if activation else pre


def update_row(xs, page, weight, bias, activation, state_dtype, accepted=None, tokens=None):
    """One row of causal_conv1d_update: xs [L, C] (the row's tokens), page
    [P, C] (the slot's taps, oldest first, f64 values of the page). `accepted`
    (num_accepted_tokens) starts the window at tap accepted - 1; `tokens` is
    max_query_len of a varlen call (None: L). Returns the unrounded outputs
    [L, C] and the new page [P, C]: vLLM's rolling keeps K - 1 taps (plus
    tokens - 1 with `accepted`), fewer by tokens - L in a varlen row; the first
    `kept` = that - L come from the old page from tap offset + shift (shift 1
    with `accepted`, else L), the rest are the row's tokens."""
    width = weight.shape[-1]
    length = xs.shape[0]
    tokens = length if tokens is None else tokens
    offset = 0 if accepted is None else accepted - 1
    x = rounded(xs.to(F64), state_dtype)
    window = page[offset:offset + width - 1]
    y = conv_outputs(torch.cat([window, x]), weight, bias, activation)
    state_len = width - 1 + (tokens - 1 if accepted is not None else 0) - (tokens - length)
    kept = state_len - length
    shift = 1 if accepted is not None else length
    new = page.clone()
    for i in range(max(state_len, 0)):
        new[i] = page[offset + shift + i] if i < kept else x[i - kept]
    return y, new


def prefill_sequence(xs, weight, bias, activation, state_dtype, initial=None):
    """One sequence of causal_conv1d_fn (R3): xs [L, C]; `initial` [K - 1, C]
    the slot's taps or None (zeros). Returns the unrounded outputs [L, C] and
    the new taps [K - 1, C] (the last K - 1 inputs, the old taps before them
    when L < K - 1)."""
    width = weight.shape[-1]
    x = rounded(xs.to(F64), state_dtype)
    past = torch.zeros(width - 1, x.shape[1], dtype=F64) if initial is None else initial
    u = torch.cat([past, x])
    return conv_outputs(u, weight, bias, activation), u[-(width - 1):]


def as_output(y, state_dtype, out_dtype):
    """vLLM's output rounding: to the page's dtype, then to x's."""
    return rounded(rounded(y, state_dtype), out_dtype)


# An f32 output's "ulp" also covers the GPU's exp (a few f32 ulp in SiLU).
ULP = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10, torch.float32: 2.0 ** -20}


def band(state_dtype, out_dtype):
    """(atol, rtol) of an output: one ulp of each distinct rounding point (the
    f32 sum moves a value across a rounding boundary at most once each) and
    the f32 sum's error near zero."""
    return 1e-5, ULP[state_dtype] + (ULP[out_dtype] if out_dtype != state_dtype else 0)
