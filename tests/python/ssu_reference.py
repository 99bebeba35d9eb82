"""The f64 oracle of selective_state_update in every form the op takes
(docs/numerics.md R5d, R8, R8s): per-head or per-p parameters, the gate z,
1-D and 2-D slot tables, padding by index, cu_seqlens and vLLM's speculative
decoding. Sequential and independent of tilejit: each token is one R5 step
in f64; 16-bit pages are rounded only where the op stores them."""

import torch

F64 = torch.float64


def full_forms(heads, head_dim, dstate, A, D, dt_bias):
    """A (H, P, N), D and dt_bias (H, P) in f64 from any of the op's forms."""
    def widen(t, shape):
        if t is None:
            return torch.zeros(shape, dtype=F64)
        t = t.to(F64).cpu()
        while t.dim() < len(shape):
            t = t.unsqueeze(-1)
        return t.expand(shape)
    return (widen(A, (heads, head_dim, dstate)), widen(D, (heads, head_dim)),
            widen(dt_bias, (heads, head_dim)))


def ssm_step(S, x, dt, A, B, C, D, dt_bias, softplus, z=None):
    """One R5 step of one row: S (H, P, N), x and dt (H, P), B and C (G, N);
    returns (y (H, P), the new S). dt may be (H,): one per head."""
    heads = S.shape[0]
    g = torch.arange(heads) // (heads // B.shape[0])
    dt = dt.to(F64)
    if dt.dim() == 1:
        dt = dt[:, None].expand_as(x)
    v = dt + dt_bias
    if softplus:
        v = torch.where(v > 20, v, torch.log1p(torch.exp(torch.clamp(v, max=20))))
    S = S * torch.exp(A * v[:, :, None]) + (v * x)[:, :, None] * B[g][:, None, :]
    y = (S * C[g][:, None, :]).sum(-1) + D * x
    if z is not None:
        y = y * z / (1 + torch.exp(-z))
    return y, S


def run(page, x, dt, A, B, C, D=None, z=None, dt_bias=None, softplus=True, src=None, dst=None,
        accepted=None, cu_seqlens=None, pad=-1):
    """The op's semantics on f64 copies: page (slots, H, P, N) as the call
    found it. Returns y (rows, H, P) (0 on padding rows, NaN on rows no
    sequence covers) and {slot: f64 state written}."""
    page = page.to(F64).cpu()
    rows, heads, head_dim = x.shape
    A, D, dt_bias = full_forms(heads, head_dim, page.shape[-1], A, D, dt_bias)
    x, dt, B, C = (t.to(F64).cpu() for t in (x, dt, B, C))
    z = z.to(F64).cpu() if z is not None else None
    seqs = rows if cu_seqlens is None else len(cu_seqlens) - 1
    bounds = [(i, i + 1) for i in range(rows)] if cu_seqlens is None else \
        [(int(cu_seqlens[i]), int(cu_seqlens[i + 1])) for i in range(seqs)]
    table = lambda t: None if t is None else (t.cpu().view(-1, 1) if t.dim() == 1  # noqa: E731
                                               else t.cpu())
    src = table(src) if src is not None else torch.arange(seqs).view(-1, 1)
    dst = table(dst)
    if accepted is not None and dst is None:
        dst = src
    is_pad = lambda s: s < 0 or s == pad  # noqa: E731
    y = torch.full((rows, heads, head_dim), float("nan"), dtype=F64)
    writes = {}
    for i, (lo, hi) in enumerate(bounds):
        column = max(int(accepted[i]) - 1, 0) if accepted is not None else 0
        slot = int(src[i, column])
        final = int(dst[i, 0]) if dst is not None and accepted is None else slot
        if is_pad(slot) or is_pad(final):
            y[lo:hi] = 0
            continue
        S = page[slot]
        for t, row in enumerate(range(lo, hi)):
            y[row], S = ssm_step(S, x[row], dt[row], A, B[row], C[row], D, dt_bias, softplus,
                                 z[row] if z is not None else None)
            if accepted is not None and not is_pad(int(dst[i, t])):
                writes[int(dst[i, t])] = S
        if accepted is None:
            writes[final] = S
    return y, writes


def ulp(t, dtype):
    """One ulp of the f64 values t in `dtype` (bf16, f16; 0 for f32)."""
    if dtype == torch.float32:
        return torch.zeros_like(t)
    mant, min_exp = (7, -126) if dtype == torch.bfloat16 else (10, -14)
    e = torch.floor(torch.log2(t.abs().clamp(min=2.0 ** min_exp)))
    return torch.exp2(e - mant)


def out_rtol(dtype):
    """R5d's f32 rtol plus half an ulp of the output's rounding."""
    return 3e-4 + {torch.float32: 0.0, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}[dtype]


def state_outside(got, want, dtype):
    """Elements of a stored state outside R8s's band: R5d's f32 band plus one
    page-dtype ulp (nearest-even rounding once, at the store)."""
    got, want = got.to(F64).cpu(), want.to(F64).cpu()
    band = 1e-3 + 3e-4 * want.abs() + ulp(want, dtype)
    return int(((got - want).abs() > band).sum()) + int(torch.isnan(got).sum())
