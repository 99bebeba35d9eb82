"""The f64 oracle and inputs of the SSD op tests (test_ops_ssd_*.py): R5 token by
token (never a chunked algorithm) with vLLM's options, the gate z and D per
(head, p), recording the state after chosen tokens; and vLLM-style chunk
metadata. Written from docs/numerics.md R5/R5p, independent of tilejit."""

import torch

from ops_reference import F64, discretize


def scan(x, dt, A, B, C, D=None, z=None, dt_bias=None, softplus=False, state=None,
         limit=(0.0, float("inf")), record=()):
    """One sequence: x [L, H, P], dt [L, H], B and C [L, G, N], A [H], D [H] or
    [H, P], z [L, H, P] (y * silu(z)), from `state` [H, P, N] or zeros.
    Returns y [L, H, P], the final state and the states after the tokens
    (0-based) in `record`, all f64."""
    x, B, C = x.to(F64), B.to(F64), C.to(F64)
    length, heads, head_dim = x.shape
    groups = B.shape[1]
    Bh = B.repeat_interleave(heads // groups, 1)
    Ch = C.repeat_interleave(heads // groups, 1)
    A = A.to(F64)
    bias = torch.zeros(heads, dtype=F64) if dt_bias is None else dt_bias.to(F64).cpu()
    d = discretize(dt.cpu(), bias, softplus, *limit).to(x.device)
    Dp = torch.zeros(heads, head_dim, dtype=F64, device=x.device) if D is None else \
        D.to(F64).expand(heads, head_dim) if D.dim() == 2 else D.to(F64)[:, None]
    S = (torch.zeros(heads, head_dim, B.shape[2], dtype=F64, device=x.device)
         if state is None else state.to(F64).clone())
    y = torch.empty(length, heads, head_dim, dtype=F64, device=x.device)
    kept = []
    for t in range(length):
        S = S * torch.exp(A * d[t])[:, None, None] + \
            (d[t][:, None] * x[t])[:, :, None] * Bh[t][:, None, :]
        y[t] = torch.einsum("hpn,hn->hp", S, Ch[t]) + Dp * x[t]
        if z is not None:
            zt = z[t].to(F64)
            y[t] = y[t] * zt / (1 + torch.exp(-zt))
        if t in record:
            kept.append(S.clone())
    return y, S, kept


def inputs(gen, tokens, heads, head_dim, groups, state, dtype):
    """Random operands in `dtype` as vLLM's SSD tests draw them: A = -exp(U),
    dt = softplus(N - 4), x, B, C normal."""
    def draw(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float32).to(dtype)
    A = -torch.exp(torch.rand(heads, generator=gen)).to(dtype)
    dt = torch.nn.functional.softplus(draw(tokens, heads).float() - 4).to(dtype)
    return (A, dt, draw(tokens, heads, head_dim), draw(tokens, groups, state),
            draw(tokens, groups, state))


def chunk_metadata(lengths, chunk_size):
    """vLLM's compute_varlen_chunk_metadata for a batch of `lengths`: chunks of
    chunk_size tiling each sequence from its start. Returns cu_seqlens,
    cu_chunk_seqlens, last_chunk_indices, seq_idx (int32) and each sequence's
    chunk ends (token offsets within the sequence)."""
    cu, bounds, seq_idx, last, ends = [0], [0], [], [], []
    for s, length in enumerate(lengths):
        ends.append([])
        for b in range(0, length, chunk_size):
            e = min(b + chunk_size, length)
            bounds.append(cu[-1] + e)
            seq_idx.append(s)
            ends[-1].append(e - 1)
        last.append(len(seq_idx) - 1)
        cu.append(cu[-1] + length)
    i32 = lambda v: torch.tensor(v, dtype=torch.int32)  # noqa: E731
    return i32(cu), i32(bounds), i32(last), i32(seq_idx), ends
