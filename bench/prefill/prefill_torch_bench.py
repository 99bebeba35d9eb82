#!/usr/bin/env python3
"""What a user would run instead of tilejit's prefill: the NemotronH Mamba2 mixer
prefill of one fresh sequence in plain torch (FP8 projections through
torch._scaled_mm with the static activation quant, F.conv1d, the chunked SSD in
segsum form, the gated group RMSNorm), per op and whole, on the H200.
Usage: prefill_torch_bench.py [T]   (default 8192)"""
import statistics, sys
import torch
import torch.nn.functional as F

dev = "cuda"
T = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
Hd, H, P, N, G, Q = 2688, 64, 64, 128, 8, 128
I, Cd = H * P, H * P + 2 * G * N
ZW = I + Cd + H
torch.manual_seed(0)
e4m3 = torch.float8_e4m3fn

def timed(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1000)
    return statistics.median(ts), min(ts), max(ts)

x = (torch.rand(T, Hd, device=dev) * 4 - 2).bfloat16()
w_in = (torch.randn(ZW, Hd, device=dev) * 0.5).to(e4m3)
w_out = (torch.randn(Hd, I, device=dev) * 0.5).to(e4m3)
s_x_in, s_w_in = torch.tensor(0.02, device=dev), torch.tensor(0.01, device=dev)
s_x_out, s_w_out = torch.tensor(0.05, device=dev), torch.tensor(0.01, device=dev)
conv_w = (torch.rand(Cd, 1, 4, device=dev) - 0.5).bfloat16()
conv_b = (torch.rand(Cd, device=dev) * 0.2 - 0.1).bfloat16()
a_log = torch.rand(H, device=dev) * 2.5 - 2
dt_bias = torch.rand(H, device=dev) - 1
Dp = torch.rand(H, device=dev) * 2 - 1
norm_w = (torch.rand(I, device=dev) + 0.5).bfloat16()

def in_proj():
    a = (x.float() / s_x_in).to(e4m3)
    return torch._scaled_mm(a, w_in.t(), scale_a=s_x_in, scale_b=s_w_in, out_dtype=torch.bfloat16)

def conv(zx):
    xbc = zx[:, I:I + Cd].t().unsqueeze(0)
    return F.silu(F.conv1d(xbc.float(), conv_w.float(), conv_b.float(), padding=3, groups=Cd)[..., :T]).bfloat16()[0].t()

def ssd(xbc, dtraw):
    c = T // Q
    xs = xbc[:, :I].float().view(c, Q, H, P)
    B = xbc[:, I:I + G * N].float().view(c, Q, G, N)
    C = xbc[:, I + G * N:].float().view(c, Q, G, N)
    dt = F.softplus(dtraw.float() + dt_bias).view(c, Q, H)
    A = -torch.exp(a_log)
    cs = torch.cumsum((dt * A).permute(0, 2, 1), -1)
    mask = torch.tril(torch.ones(Q, Q, dtype=torch.bool, device=dev))
    Lm = torch.exp((cs[..., :, None] - cs[..., None, :]).masked_fill(~mask, -torch.inf))
    CB = torch.einsum("cign,cjgn->cgij", C, B).repeat_interleave(H // G, dim=1)
    xdt = xs * dt[..., None]
    y = torch.einsum("chij,cjhp->cihp", CB * Lm, xdt)
    wgt = torch.exp(cs[..., -1:] - cs)
    states = torch.einsum("chj,cjhn,cjhp->chpn", wgt, B.repeat_interleave(H // G, dim=2), xdt)
    S = torch.zeros(H, P, N, device=dev); Sin = []
    dec = torch.exp(cs[..., -1])
    for k in range(c):
        Sin.append(S); S = S * dec[k][:, None, None] + states[k]
    y = y + torch.einsum("cihn,chpn->cihp", C.repeat_interleave(H // G, dim=2), torch.stack(Sin)) \
        * torch.exp(cs).permute(0, 2, 1)[..., None]
    return (y + xs * Dp[:, None]).reshape(T, I).bfloat16()

def norm(y, z):
    v = y.float() * F.silu(z.float())
    v = v.view(T, G, I // G)
    r = torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-5)
    return (norm_w.float() * (v * r).bfloat16().float().view(T, I)).bfloat16()

def out_proj(n):
    a = (n.float() / s_x_out).to(e4m3)
    return torch._scaled_mm(a, w_out.t(), scale_a=s_x_out, scale_b=s_w_out, out_dtype=torch.bfloat16)

zx = in_proj(); xbc = conv(zx); y = ssd(xbc, zx[:, I + Cd:]); n = norm(y, zx[:, :I])
def whole():
    zx = in_proj(); xbc = conv(zx); y = ssd(xbc, zx[:, I + Cd:]); out_proj(norm(y, zx[:, :I]))
for name, fn in [("in_proj (quant + _scaled_mm)", in_proj), ("conv1d + silu (F.conv1d)", lambda: conv(zx)),
                 ("SSD (chunked segsum, f32)", lambda: ssd(xbc, zx[:, I + Cd:])),
                 ("gated RMSNorm", lambda: norm(y, zx[:, :I])), ("out_proj (quant + _scaled_mm)", lambda: out_proj(n)),
                 ("whole mixer", whole)]:
    med, lo, hi = timed(fn)
    print(f"torch T={T} {name:32s}: median {med:9.1f} us (min {lo:.1f}, max {hi:.1f}), n=20", flush=True)
