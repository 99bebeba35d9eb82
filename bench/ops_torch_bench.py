#!/usr/bin/env python3
"""tilejit.ops next to the plain-torch path a user has without mamba_ssm, in the
same run on the same GPU, at NemotronH geometry (docs/numerics.md#geometry): each op
called as a user calls it (argument checks, metadata, allocation included),
then the torch equivalent on the same inputs.

Method: after a warm-up (compilation stays out), each trial times `--calls`
back-to-back calls between two CUDA events and divides by the count; n trials
give the median, min and max per call in microseconds. The last column is the
largest |tilejit - torch| over the op's output (a sanity check, not a band:
tests/python/test_ops_*.py hold the bands). Inputs are fresh random values,
never zeros.

Usage: ops_torch_bench.py [--trials N] [--calls C] [--tokens T] [--batch B]
Needs torch with CUDA and the tilejit package (PYTHONPATH or pip install)."""

import argparse
import statistics

import torch
import torch.nn.functional as F

import tilejit as tj
import tilejit.ops as ops

Hd, H, P, N, G, K = 2688, 64, 64, 128, 8, 4
I, Cd = H * P, H * P + 2 * G * N
E4M3 = getattr(torch, "float8_e4m3fn", None)  # torch >= 2.1 (the GPU hosts)


def timed(fn, trials, calls):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(trials):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1000 / calls)
    return statistics.median(per_call), min(per_call), max(per_call)


def graph_timed(fn, trials, calls):
    """`calls` calls of fn captured in one CUDA graph (after warm-up calls on a
    side stream), replayed `trials` times: median, min and max per call in
    microseconds. A capture that fails raises."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(trials):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1000 / calls)
    return statistics.median(per_call), min(per_call), max(per_call)


def rnd(*shape, lo=-1.0, hi=1.0, dtype=torch.float32):
    return (torch.rand(*shape, device="cuda") * (hi - lo) + lo).to(dtype)


# --- plain-torch paths -------------------------------------------------------

def torch_ssm_update(state, x, dt, A, B, C, D, dt_bias, slots):
    s = state[slots]
    d = F.softplus(dt.float() + dt_bias)                               # [b, H]
    Bh = B.float().repeat_interleave(H // G, 1)
    Ch = C.float().repeat_interleave(H // G, 1)
    s = s * torch.exp(A * d)[:, :, None, None] + \
        (d[:, :, None] * x.float())[..., None] * Bh[:, :, None, :]
    state[slots] = s
    return (torch.einsum("bhpn,bhn->bhp", s, Ch) + D[:, None] * x.float()).bfloat16()


def torch_chunked_ssd(x, dt, A, B, C, D, dt_bias, Q=128):
    """The chunked SSD of one sequence (T a multiple of Q) in segsum form."""
    T = x.shape[0]
    c = T // Q
    xs = x.float().view(c, Q, H, P)
    Bq, Cq = B.float().view(c, Q, G, N), C.float().view(c, Q, G, N)
    d = F.softplus(dt.float() + dt_bias).view(c, Q, H)
    cs = torch.cumsum((d * A).permute(0, 2, 1), -1)
    mask = torch.tril(torch.ones(Q, Q, dtype=torch.bool, device=x.device))
    L = torch.exp((cs[..., :, None] - cs[..., None, :]).masked_fill(~mask, -torch.inf))
    CB = torch.einsum("cign,cjgn->cgij", Cq, Bq).repeat_interleave(H // G, dim=1)
    xdt = xs * d[..., None]
    y = torch.einsum("chij,cjhp->cihp", CB * L, xdt)
    decay = torch.exp(cs[..., -1:] - cs)
    states = torch.einsum("chj,cjhn,cjhp->chpn", decay, Bq.repeat_interleave(H // G, dim=2), xdt)
    S, inputs = torch.zeros(H, P, N, device=x.device), []
    total = torch.exp(cs[..., -1])
    for k in range(c):
        inputs.append(S)
        S = S * total[k][:, None, None] + states[k]
    y = y + torch.einsum("cihn,chpn->cihp", Cq.repeat_interleave(H // G, dim=2),
                         torch.stack(inputs)) * torch.exp(cs).permute(0, 2, 1)[..., None]
    return (y + xs * D[:, None]).reshape(T, H, P), S


def torch_conv_fn(x_tokens, weight, bias):
    T = x_tokens.shape[0]
    u = x_tokens.t().unsqueeze(0).float()
    return F.silu(F.conv1d(u, weight.float()[:, None], bias.float(), padding=K - 1,
                           groups=Cd)[..., :T]).bfloat16()[0]


def torch_conv_update(x, state, weight, bias, slots):
    window = torch.cat([state[slots], x[:, :, None]], dim=-1)          # [b, C, 4]
    out = F.silu((window.float() * weight.float()).sum(-1) + bias.float()).bfloat16()
    state[slots] = window[:, :, 1:]
    return out


def torch_norm(y, z, w, group=512, eps=1e-5):
    v = y.float() * F.silu(z.float())
    g = v.view(v.shape[0], -1, group)
    r = torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + eps)
    return (w.float() * (g * r).view_as(v).bfloat16().float()).bfloat16()


def torch_quant(x, scale):
    return (x.float() / scale).clamp(-448, 448).to(E4M3)   # R1 saturates; torch's cast does not


def torch_linear(x, weight, s_w, s_x):
    """Quant + torch._scaled_mm, rows padded to a multiple of 16 (cuBLASLt asks it)."""
    a = torch_quant(x, s_x)
    rows = a.shape[0]
    if rows % 16:
        a = torch.cat([a, torch.zeros(16 - rows % 16, a.shape[1], device=a.device).to(E4M3)])
    return torch._scaled_mm(a, weight.t(), scale_a=s_x, scale_b=s_w,
                            out_dtype=torch.bfloat16)[:rows]


# --- the table -----------------------------------------------------------------

def row(name, tj_fn, torch_fn, trials, calls, compare):
    t = timed(tj_fn, trials, calls)
    r = timed(torch_fn, trials, calls)
    diff = compare()
    print(f"{name:<44} {trials:>3} {t[0]:>9.1f} {t[1]:>9.1f} {t[2]:>9.1f}   "
          f"{r[0]:>9.1f} {r[1]:>9.1f} {r[2]:>9.1f}   {diff:>9.3g}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=64)
    a = parser.parse_args()
    torch.manual_seed(0)
    T, b, slots = a.tokens, a.batch, 2 * a.batch
    rt = tj.runtime()
    print(f"device: {torch.cuda.get_device_name()} ({rt.arch}); torch {torch.__version__}; "
          f"tilejit {tj.__version__}; T={T}, batch={b}; per call, microseconds")
    print(f"{'op':<44} {'n':>3} {'tj med':>9} {'tj min':>9} {'tj max':>9}   "
          f"{'torch med':>9} {'min':>9} {'max':>9}   {'max|diff|':>9}")

    A = -torch.exp(rnd(H, lo=-2, hi=0.5))
    dt_bias, D = rnd(H, lo=-1, hi=0), rnd(H)

    # selective_state_update, decode (R5d): b rows over 2b slots, vLLM's broadcasts.
    xbc = rnd(b, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    x, B, C = xbc[:, :I].view(b, H, P), xbc[:, I:I + G * N].view(b, G, N), \
        xbc[:, I + G * N:].view(b, G, N)
    dt = rnd(b, H, lo=-3, hi=1, dtype=torch.bfloat16)
    state = rnd(slots, H, P, N)
    state_t = state.clone()
    idx = torch.randperm(slots, device="cuda")[:b].to(torch.int32)
    out = torch.empty(b, H, P, dtype=torch.bfloat16, device="cuda")
    update = lambda s: ops.selective_state_update(  # noqa: E731
        s, x, dt[:, :, None].expand(b, H, P), A[:, None, None].expand(H, P, N), B, C,
        D=D[:, None].expand(H, P), dt_bias=dt_bias[:, None].expand(H, P), dt_softplus=True,
        state_batch_indices=idx, out=out, check_slots=False)
    row(f"selective_state_update b={b}", lambda: update(state),
        lambda: torch_ssm_update(state_t, x, dt, A, B, C, D, dt_bias, idx.long()),
        a.trials, a.calls,
        lambda: float((update(state_t.clone()).float() - torch_ssm_update(
            state_t.clone(), x, dt, A, B, C, D, dt_bias, idx.long()).float()).abs().max()))

    # causal_conv1d_update, decode (R3d), vLLM's channel-last pages.
    xd = rnd(b, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    weight = rnd(Cd, K, lo=-0.5, hi=0.5, dtype=torch.bfloat16)
    bias = rnd(Cd, lo=-0.1, hi=0.1, dtype=torch.bfloat16)
    page = rnd(slots, K - 1, Cd, dtype=torch.bfloat16).transpose(1, 2)
    page_t = page.clone()
    row(f"causal_conv1d_update b={b}",
        lambda: ops.causal_conv1d_update(xd, page, weight, bias, activation="silu",
                                         conv_state_indices=idx, check_slots=False),
        lambda: torch_conv_update(xd, page_t, weight, bias, idx.long()), a.trials, a.calls,
        lambda: float((ops.causal_conv1d_update(xd, page.clone(), weight, bias, "silu",
                                                idx, check_slots=False).float()
                       - torch_conv_update(xd, page.clone(), weight, bias,
                                           idx.long()).float()).abs().max()))

    # causal_conv1d_fn, prefill (R3): one fresh sequence of T tokens, x read channel-last.
    zx = rnd(T, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    qsl = torch.tensor([0, T], dtype=torch.int32, device="cuda")
    pages = torch.zeros(1, Cd, K - 1, dtype=torch.bfloat16, device="cuda")
    one = torch.zeros(1, dtype=torch.int32, device="cuda")
    conv = lambda: ops.causal_conv1d_fn(zx.t(), weight, bias, pages, qsl,  # noqa: E731
                                        cache_indices=one, check_slots=False)
    row(f"causal_conv1d_fn T={T}", conv, lambda: torch_conv_fn(zx, weight, bias),
        a.trials, a.calls,
        lambda: float((conv().float() - torch_conv_fn(zx, weight, bias).float()).abs().max()))

    # mamba_chunk_scan_combined_varlen, prefill (R5p): one fresh sequence of T tokens.
    xbc_p = rnd(T, Cd, dtype=torch.bfloat16)
    xp = xbc_p[:, :I].view(T, H, P)
    Bp, Cp = xbc_p[:, I:I + G * N].view(T, G, N), xbc_p[:, I + G * N:].view(T, G, N)
    dtp = rnd(T, H, lo=-4, hi=-1, dtype=torch.bfloat16)
    cu = torch.tensor([0, T], dtype=torch.int32, device="cuda")
    cu_chunks = torch.arange(0, T + 1, 128, dtype=torch.int32, device="cuda")
    seq_idx = torch.zeros(cu_chunks.numel() - 1, dtype=torch.int32, device="cuda")
    last = torch.tensor([seq_idx.numel() - 1], dtype=torch.int32, device="cuda")
    yp = torch.empty(T, H, P, dtype=torch.bfloat16, device="cuda")
    scan = lambda: ops.mamba_chunk_scan_combined_varlen(  # noqa: E731
        xp, dtp, A, Bp, Cp, 128, cu, cu_chunks, last, seq_idx, yp, D=D, dt_bias=dt_bias,
        dt_softplus=True, state_dtype=torch.float32)
    row(f"mamba_chunk_scan_combined_varlen T={T}", scan,
        lambda: torch_chunked_ssd(xp, dtp, A, Bp, Cp, D, dt_bias), max(3, a.trials // 4), 1,
        lambda: (scan(), float((yp.float() - torch_chunked_ssd(
            xp, dtp, A, Bp, Cp, D, dt_bias)[0]).abs().max()))[1])

    # rms_norm_gated (R6), T rows of 4096, groups of 512.
    y = rnd(T, I, lo=-2, hi=2, dtype=torch.bfloat16)
    z = rnd(T, I, lo=-3, hi=3, dtype=torch.bfloat16)
    wn = rnd(I, lo=0.5, hi=1.5, dtype=torch.bfloat16)
    norm = lambda: ops.rms_norm_gated(y, wn, None, z=z, eps=1e-5, group_size=512,  # noqa: E731
                                      norm_before_gate=False)
    row(f"rms_norm_gated T={T}", norm, lambda: torch_norm(y, z, wn), a.trials, a.calls,
        lambda: float((norm().float() - torch_norm(y, z, wn).float()).abs().max()))

    # The static quant and the W8A8 linear (R1): in_proj at the decode batches and at T tokens.
    xq = rnd(T, Hd, lo=-4, hi=4, dtype=torch.bfloat16)
    s_x, s_w = torch.tensor(0.02, device="cuda"), torch.tensor(0.01, device="cuda")
    quant = lambda: ops.scaled_fp8_quant(xq, s_x)[0]  # noqa: E731
    row(f"scaled_fp8_quant T={T}", quant, lambda: torch_quant(xq, s_x), a.trials, a.calls,
        lambda: float((quant().float() - torch_quant(xq, s_x).float()).abs().max()))
    w_in = rnd(Cd + I + H, Hd, lo=-1, hi=1).to(E4M3)
    for m in (1, 8, 64, 256, T):  # the decode batches of issue 18, and prefill
        xm = xq[:m]
        lin = lambda: ops.w8a8_linear(xm, w_in, s_w, s_x)  # noqa: E731
        row(f"w8a8_linear in_proj M={m}", lin, lambda: torch_linear(xm, w_in, s_w, s_x),
            a.trials, a.calls,
            lambda: float((lin().float() - torch_linear(xm, w_in, s_w, s_x).float()
                           ).abs().max()))


if __name__ == "__main__":
    main()
