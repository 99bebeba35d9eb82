#!/usr/bin/env python3
"""ssd_prefill on the H200 at NemotronH geometry: correctness against a sequential
f64 torch R5 (one sequence of 8192 and a varlen batch with continued, fresh,
padding and short sequences), then timing of each variant against a plain-torch
chunked SSD in the same run, and (for the span variants, the plan's schedule) at
T = 2048, 32768, 64 x 512, 6000 and 6000 + 40 x 50, each variant first checked
against the f64 R5 of that case.
Usage: bench/ssd/ssd_prefill_gpu.py DIR
DIR/variants.txt lists "NAME CHUNK BLOCK_P [STATE_BLOCK_P [SPAN_TOKENS]]" per line:
with STATE_BLOCK_P, DIR/NAME{,.state,.pass}.{ptx,json} are the plan's three span
launches (spans of SPAN_TOKENS, default 512), else DIR/NAME.{ptx,json} is
ssd_prefill's single walk; DIR/heads (default 64) the SSM heads the PTX was
compiled for. bench/ssd/ssd_variants.sh TILEJIT DIR [HEADS] writes all of it."""
import sys
from pathlib import Path
import cupy as cp, torch
# The spans of PrefillMetadata, as the sanitizer recipes model them.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))
from sanitize_support import spans_of  # noqa: E402
import ptx_launch
from ptx_launch import args_of, time_graph

DIR = Path(sys.argv[1])
dev = "cuda"
H = int((DIR / "heads").read_text()) if (DIR / "heads").exists() else 64
P, N, G = 64, 128, 8
I, Cd, ZW = H * P, H * P + 2 * G * N, 2 * H * P + 2 * G * N + H
torch.manual_seed(0)

def load(name):
    return ptx_launch.load(DIR, name)

def chunks_of(cu, q):
    seq, beg, end = [], [], []
    for s in range(len(cu) - 1):
        for b in range(cu[s], cu[s + 1], q):
            seq.append(s); beg.append(b); end.append(min(b + q, cu[s + 1]))
    t = lambda v: torch.tensor(v, dtype=torch.int32, device=dev)
    return t(seq), t(beg), t(end)

def make_inputs(T):
    xbc = (torch.rand(T, Cd, device=dev) * 2 - 1).bfloat16()
    zx = (torch.rand(T, ZW, device=dev) * 3 - 4).bfloat16()   # dt columns: raw dt in [-4, -1)
    a_log = torch.rand(H, device=dev) * 2.5 - 2
    dt_bias = torch.rand(H, device=dev) - 1
    d = torch.rand(H, device=dev) * 2 - 1
    return xbc, zx, a_log, dt_bias, d

def ref_scan(xbc, dtraw, a_log, dt_bias, d, s0):
    """Sequential R5 in f64 for one sequence; returns y [L, I] f64 and the final state."""
    L = xbc.shape[0]
    x = xbc[:, :I].double().view(L, H, P)
    B = xbc[:, I:I + G * N].double().view(L, G, N).repeat_interleave(H // G, dim=1)
    C = xbc[:, I + G * N:].double().view(L, G, N).repeat_interleave(H // G, dim=1)
    v = dtraw.double() + dt_bias.double()
    dt = torch.where(v > 20, v, torch.log1p(torch.exp(v))).clamp_min(0)
    A = -torch.exp(a_log.double())
    S = s0.double().clone()
    y = torch.empty(L, H, P, dtype=torch.float64, device=dev)
    decay = torch.exp(A[None] * dt)
    for t in range(L):
        S.mul_(decay[t][:, None, None]).add_((dt[t][:, None, None] * x[t][:, :, None]) * B[t][:, None, :])
        y[t] = torch.einsum("hpn,hn->hp", S, C[t]) + d.double()[:, None] * x[t]
    return y.view(L, I), S

def torch_ssd(xbc, dtraw, a_log, dt_bias, d, q):
    """What a user would write in plain torch: the chunked SSD (segsum form), f32, one sequence."""
    L = xbc.shape[0]; c = L // q
    x = xbc[:, :I].float().view(c, q, H, P)
    B = xbc[:, I:I + G * N].float().view(c, q, G, N)
    C = xbc[:, I + G * N:].float().view(c, q, G, N)
    dt = torch.nn.functional.softplus(dtraw.float() + dt_bias).view(c, q, H)
    A = -torch.exp(a_log)
    Adt = (dt * A).permute(0, 2, 1)                       # [c, H, q]
    cs = torch.cumsum(Adt, -1)
    seg = cs[..., :, None] - cs[..., None, :]
    mask = torch.tril(torch.ones(q, q, dtype=torch.bool, device=dev))
    Lm = torch.exp(seg.masked_fill(~mask, -torch.inf))     # [c, H, q, q]
    CB = torch.einsum("cign,cjgn->cgij", C, B).repeat_interleave(H // G, dim=1)
    xdt = x * dt[..., None]
    y = torch.einsum("chij,cjhp->cihp", CB * Lm, xdt)
    w = torch.exp(cs[..., -1:] - cs)                       # [c, H, q]
    Bh = B.repeat_interleave(H // G, dim=2)
    states = torch.einsum("chj,cjhn,cjhp->chpn", w, Bh, xdt)
    S = torch.zeros(H, P, N, device=dev); Sin = []
    dec = torch.exp(cs[..., -1])                           # [c, H]
    for k in range(c):
        Sin.append(S); S = S * dec[k][:, None, None] + states[k]
    Sin = torch.stack(Sin)
    Ch = C.repeat_interleave(H // G, dim=2)
    y = y + torch.einsum("cihn,chpn->cihp", Ch, Sin) * torch.exp(cs).permute(0, 2, 1)[..., None]
    y = y + x * d[:, None]
    return y.reshape(L, I).bfloat16(), S

def bf16_ssd(xbc, dtraw, a_log, dt_bias, d, q, s0):
    """R5p-m's yardstick: the kernel's chunked algorithm in torch with its three
    operands rounded to bf16 once (the decayed CB mix, the decayed dt x of the
    chunk states, the state entering C S_in) and f32 accumulation; one sequence
    continued from s0. Returns y (f32) and the final state."""
    L = xbc.shape[0]; c = (L + q - 1) // q
    pad = c * q - L
    rnd = lambda t: t.bfloat16().float()
    f = lambda t: torch.nn.functional.pad(t.float(), (0, 0, 0, pad))
    x = f(xbc[:, :I]).view(c, q, H, P)
    B = f(xbc[:, I:I + G * N]).view(c, q, G, N).repeat_interleave(H // G, dim=2)
    C = f(xbc[:, I + G * N:]).view(c, q, G, N).repeat_interleave(H // G, dim=2)
    dt = f(torch.nn.functional.softplus(dtraw.float() + dt_bias)).view(c, q, H)
    A = -torch.exp(a_log)
    cs = torch.cumsum(dt * A, 1)                              # [c, q, H]
    seg = cs[:, :, None, :] - cs[:, None, :, :]               # [c, i, j, H]
    mask = torch.tril(torch.ones(q, q, dtype=torch.bool, device=dev))[None, :, :, None]
    decay = torch.where(mask, torch.exp(torch.clamp(seg, max=0)), 0.0)
    CB = torch.einsum("cihn,cjhn->cijh", C, B)
    mix = rnd(CB * decay * dt[:, None, :, :])
    y = torch.einsum("cijh,cjhp->cihp", mix, x)
    w = torch.exp(torch.clamp(cs[:, -1:, :] - cs, max=0)) * dt  # [c, q, H]
    xw = rnd(x * w[..., None])
    states = torch.einsum("cjhp,cjhn->chpn", xw, B)
    S = s0.float().clone(); Sin = []
    for k in range(c):
        Sin.append(S); S = S * torch.exp(cs[k, -1])[:, None, None] + states[k]
    Sin = rnd(torch.stack(Sin))
    y = y + torch.einsum("cihn,chpn->cihp", C, Sin) * torch.exp(cs)[..., None]
    y = y + x * d[:, None]
    return y.reshape(c * q, I)[:L], S

SPAN_TOKENS = 512   # the prefill plan's PlanOptions::ssdSpanTokens

def dt_rows(dtv):
    """The in_proj rows [T, ZW] whose last H columns are the dt view dtv: the
    kernels (built with dt_stride = ZW, dt_col = ZW - H) read dt at dt_col of
    each row, so they take the rows' base, not the dt columns' view."""
    assert dtv.stride() == (ZW, 1) and dtv.storage_offset() >= ZW - H
    return torch.as_strided(dtv, (dtv.shape[0], ZW), (ZW, 1), dtv.storage_offset() - (ZW - H))

def run(name, q, bp, xbc, dtv, a_log, dt_bias, d, cu, slots, init, page, y, span_bp=None,
        span_tokens=SPAN_TOKENS, block_m=None):
    """The launch of variant `name`: ssd_prefill alone, or (span_bp given) the
    prefill plan's three launches over spans of span_tokens: ssd_span_state,
    ssd_state_pass, ssd_prefill with span_states=1 (NAME.state / NAME.pass / NAME);
    with block_m, the chunk-parallel schedule: one-chunk spans, the pass writing
    the pages, ssd_chunk_scan over (row blocks x p blocks, chunks, heads)."""
    fn, meta = load(name)
    dtv = dt_rows(dtv)
    seq, beg, end = chunks_of(cu, q)
    cut = torch.tensor(cu, dtype=torch.int32, device=dev)
    sl = slots if isinstance(slots, list) else slots.tolist()
    ini = init if isinstance(init, list) else init.tolist()
    slots_t = torch.tensor(sl, dtype=torch.int32, device=dev)
    init_t = torch.tensor(ini, dtype=torch.int32, device=dev)
    vals = (xbc, dtv, a_log, dt_bias, d, cut, slots_t, init_t, seq, beg, end, page, y,
            seq.numel(), 0.0, float("inf"))
    keep = [seq, beg, end, cut, slots_t, init_t]
    stream = lambda: cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    if span_bp is None:
        a = args_of(meta, vals)
        def launch():
            # On torch's current stream, so a torch CUDA graph capture records it.
            with stream():
                fn((P // bp, H, 1), (meta["threads"], 1, 1), a, shared_mem=meta["shared_bytes"])
        return launch, keep
    span_chunk, span_slot, span_flags = (
        torch.from_numpy(a).to(dev) for a in spans_of(cu, sl, ini, q, max(1, span_tokens // q)))
    n = span_slot.numel()
    states = torch.empty(n, H, P, N, device=dev); decay = torch.empty(n * H, device=dev)
    tail = torch.empty(n, H, P, N, device=dev)
    keep += [span_chunk, span_slot, span_flags, states, decay, tail]
    fs, ms = load(name + ".state"); fp, mp = load(name + ".pass")
    a1 = args_of(ms, (xbc, dtv, a_log, dt_bias, cut, seq, span_chunk, beg, end, states, decay,
                      0.0, float("inf")))
    a2 = args_of(mp, (span_slot, span_flags, decay, states, tail, page, n, page))
    a3 = args_of(meta, vals + (span_chunk, states, tail))
    grid = (P // bp, H, n)
    if block_m is not None:
        a3 = args_of(meta, (xbc, dtv, a_log, dt_bias, d, cut, slots_t, seq, beg, end, states,
                            tail, y, 0.0, float("inf")))
        grid = ((q // block_m) * (P // bp), n, H)
    block = 1024
    def launch():
        with stream():
            fs((P // span_bp, H, n), (ms["threads"], 1, 1), a1, shared_mem=ms["shared_bytes"])
            fp((P * N // block, H, 1), (mp["threads"], 1, 1), a2, shared_mem=mp["shared_bytes"])
            fn(grid, (meta["threads"], 1, 1), a3, shared_mem=meta["shared_bytes"])
    return launch, keep

def band(name, got, want, atol, rtol):
    got, want = got.double(), want.double()
    bad = ~((got - want).abs() <= atol + rtol * want.abs())
    err = float(((got - want).abs() / (atol + rtol * want.abs())).max())
    ok = int(bad.sum()) == 0
    tols = f"atol={atol} rtol={rtol}" if isinstance(atol, float) else "the bands by length"
    print(f"{'PASS' if ok else 'FAIL'} {name}: {got.numel()} elements, {int(bad.sum())} outside "
          f"{tols}, max |err|/band {err:.3g}", flush=True)
    return ok

# "NAME CHUNK BLOCK_P [STATE_BLOCK_P [SPAN_TOKENS [BLOCK_M]]]": with a fourth
# field, the three span launches; with a sixth, the chunk-parallel schedule.
variants = [(v[0], int(v[1]), int(v[2]), int(v[3]) if len(v) > 3 else None,
             int(v[4]) if len(v) > 4 else SPAN_TOKENS)
            for v in (l.split() for l in (DIR / "variants.txt").read_text().splitlines())
            if v]
BLOCK_M = {v[0]: int(v[5]) for v in (l.split() for l in
                                      (DIR / "variants.txt").read_text().splitlines())
           if len(v) > 5}
T = 8192
xbc, zx, a_log, dt_bias, d = make_inputs(T)
dtv = zx[:, ZW - H:]
import os
if os.environ.get("SSD_PROFILE"):
    # One launch of one variant for a profiler (ncu), nothing else.
    name, q, bp, sbp, span = next(v for v in variants if v[0] == os.environ["SSD_PROFILE"])
    page = torch.rand(3, H, P, N, device=dev)
    y = torch.empty((T, I), dtype=torch.bfloat16, device=dev)
    launch, keep = run(name, q, bp, xbc, dtv, a_log, dt_bias, d, [0, T], [1], [1], page, y,
                       sbp, span, block_m=BLOCK_M.get(name))
    launch(); torch.cuda.synchronize()
    sys.exit(0)
print(f"geometry: {H} heads, head_dim {P}, state {N}, {G} groups")
# --- correctness: one fresh sequence of 8192, continued from a random page slot
page0 = torch.rand(3, H, P, N, device=dev) * 2 - 1
want_y, want_s = ref_scan(xbc, dtv, a_log, dt_bias, d, page0[1])
slots = torch.tensor([1], dtype=torch.int32, device=dev)
init = torch.tensor([1], dtype=torch.int32, device=dev)
def excess(got, want, atol, rtol):
    """(elements outside the band, worst error / band)."""
    got, want = got.double(), want.double()
    r = (got - want).abs() / (atol + rtol * want.abs())
    return int((r > 1).sum()), float(r.max())

yard = {}   # R5p-m: chunk -> the bf16-operand torch algorithm's (outside, worst)
for name, q, bp, sbp, span in variants:
    page = page0.clone(); y = torch.full((T, I), float("nan"), dtype=torch.bfloat16, device=dev)
    launch, keep = run(name, q, bp, xbc, dtv, a_log, dt_bias, d, [0, T], slots, init, page, y,
                       sbp, span, block_m=BLOCK_M.get(name))
    launch(); torch.cuda.synchronize()
    band(f"{name} y, one sequence of {T} (continued)", y, want_y, 1e-2, 1e-2)
    band(f"{name} final state", page[1], want_s, 8e-3, 5e-3)
    if q not in yard:
        by, bs = bf16_ssd(xbc, dtv, a_log, dt_bias, d, q, page0[1])
        yard[q] = excess(by.bfloat16(), want_y, 1e-2, 1e-2)
        print(f"     R5p-m yardstick (torch, bf16 operands, chunk {q}): y {yard[q][0]} outside, "
              f"worst {yard[q][1]:.3g} of the band", flush=True)
    out, worst = excess(y, want_y, 1e-2, 1e-2)
    ok = out <= yard[q][0] and worst <= 1.25 * yard[q][1]
    print(f"{'PASS' if ok else 'FAIL'} {name} R5p-m: {out} outside (yardstick {yard[q][0]}), worst "
          f"{worst:.3g} (yardstick x 1.25 = {1.25 * yard[q][1]:.3g})", flush=True)
    print(f"     untouched slots identical: {bool(torch.equal(page[0], page0[0]) and torch.equal(page[2], page0[2]))}")
# --- varlen, every variant: fresh 1000, continued 37 (< chunk), padding 500,
# continued 3000, fresh 1
cu = [0, 1000, 1037, 1537, 4537, 4538]
sl = [0, 2, -1, 3, 4]; ini = [0, 1, 1, 1, 0]
Tv = cu[-1]
page0v = torch.rand(6, H, P, N, device=dev) * 2 - 1
want_v = {}
for s in range(len(sl)):
    if sl[s] >= 0:
        s0 = page0v[sl[s]] if ini[s] else torch.zeros(H, P, N, device=dev)
        want_v[s] = ref_scan(xbc[cu[s]:cu[s + 1]], dtv[cu[s]:cu[s + 1]], a_log, dt_bias, d, s0)
for name, q, bp, sbp, span in variants:
    page = page0v.clone(); y = torch.full((Tv, I), float("nan"), dtype=torch.bfloat16, device=dev)
    launch, keep = run(name, q, bp, xbc[:Tv], dtv[:Tv], a_log, dt_bias, d, cu, sl, ini, page, y,
                       sbp, span, block_m=BLOCK_M.get(name))
    launch(); torch.cuda.synchronize()
    for s in range(len(sl)):
        b, e = cu[s], cu[s + 1]
        if sl[s] < 0:
            print(f"{'PASS' if bool((y[b:e] == 0).all()) else 'FAIL'} {name} varlen seq {s}: "
                  "padding rows all zero")
            continue
        wy, ws = want_v[s]
        tol = 1e-2 if e - b > 256 else 5e-2
        band(f"{name} varlen seq {s} (len {e-b}, {'continued' if ini[s] else 'fresh'}) y",
             y[b:e], wy, tol, tol)
        band(f"{name} varlen seq {s} state", page[sl[s]], ws, 8e-3, 5e-3)
    print(f"     slots 1, 5 untouched: "
          f"{bool(torch.equal(page[1], page0v[1]) and torch.equal(page[5], page0v[5]))}")

# --- timing: 10 launches per CUDA graph replay, 25 replays (events), per launch
bytes_moved = T * (Cd * 2 + H * 2 + I * 2)   # read xBC, dt; write y (state pages are 2 MiB)
print(f"timing at T={T}, one sequence; bytes {bytes_moved/1e6:.1f} MB (x, B, C, dt read; y written)")
table = {}   # (variant, case) -> median us
for name, q, bp, sbp, span in variants:
    page = page0.clone(); y = torch.empty((T, I), dtype=torch.bfloat16, device=dev)
    launch, keep = run(name, q, bp, xbc, dtv, a_log, dt_bias, d, [0, T], slots, init, page, y,
                       sbp, span, block_m=BLOCK_M.get(name))
    med, lo, hi = time_graph(launch)
    table[name, f"T={T}"] = med
    print(f"ssd_prefill {name}: median {med:.1f} us (min {lo:.1f}, max {hi:.1f}), n=25x10, "
          f"{bytes_moved/med/1e6:.2f} TB/s effective", flush=True)
ty, ts = torch_ssd(xbc, dtv, a_log, dt_bias, d, 128)
fy, fs = ref_scan(xbc, dtv, a_log, dt_bias, d, torch.zeros(H, P, N, device=dev))
band("plain-torch chunked SSD (fresh, the comparison) vs f64", ty, fy, 1e-2, 1e-2)
med, lo, hi = time_graph(lambda: torch_ssd(xbc, dtv, a_log, dt_bias, d, 128), per=2, reps=10)
print(f"plain-torch chunked SSD (f32, Q=128): median {med:.1f} us (min {lo:.1f}, max {hi:.1f}), n=10x2")
del fy, fs, ty, ts

# --- issue 31's shapes, for each variant of the span schedule: T = 2048 and
# 32768, 64 x 512 tokens, and 6000 tokens alone and with 40 sequences of 50,
# each variant first checked against the case's f64 R5 (y and every final
# state); plain torch (the chunked SSD per sequence) in the same run.
def batch_case(lengths):
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return cu

cases = [("T=2048", [2048]), ("T=32768", [32768]), ("64 x 512", [512] * 64),
         ("6000 alone", [6000]), ("6000 + 40 x 50", [6000] + [50] * 40)]
big = make_inputs(32768)
zero = torch.zeros(H, P, N, device=dev)
for label, lengths in cases:
    cu = batch_case(lengths); Tc = cu[-1]; S = len(lengths)
    xb, dv = big[0][:Tc], big[1][:Tc, ZW - H:]
    want = [ref_scan(xb[b:e], dv[b:e], big[2], big[3], big[4], zero)
            for b, e in zip(cu[:-1], cu[1:])]
    wy = torch.cat([w[0] for w in want]); ws = torch.stack([w[1] for w in want])
    # R5p's bf16 bands: 1e-2 for sequences longer than 256 tokens, else 5e-2
    tol = torch.cat([torch.full((e - b, 1), 1e-2 if e - b > 256 else 5e-2, device=dev,
                                dtype=torch.float64) for b, e in zip(cu[:-1], cu[1:])])
    for name, q, bp, sbp, span in variants:
        if sbp is None:
            continue
        pg = torch.full((S, H, P, N), float("nan"), device=dev)
        y = torch.full((Tc, I), float("nan"), dtype=torch.bfloat16, device=dev)
        launch, keep = run(name, q, bp, xb, dv, big[2], big[3], big[4], cu, list(range(S)),
                           [0] * S, pg, y, sbp, span, block_m=BLOCK_M.get(name))
        launch(); torch.cuda.synchronize()
        band(f"{name} y, {label} vs f64", y, wy, tol, tol)
        band(f"{name} final states, {label}", pg, ws, 8e-3, 5e-3)
        med, lo, hi = time_graph(launch)
        table[name, label] = med
        print(f"ssd spans {name} {label}: median {med:.1f} us (min {lo:.1f}, max {hi:.1f}), "
              f"n=25x10", flush=True)
    del want, wy, ws
    def torch_all():
        for b, e in zip(cu[:-1], cu[1:]):
            qt = max(k for k in range(1, 129) if (e - b) % k == 0)  # chunks tile the sequence
            torch_ssd(xb[b:e], dv[b:e], big[2], big[3], big[4], qt)
    med, lo, hi = time_graph(torch_all, per=1, reps=5)
    print(f"plain-torch chunked SSD per sequence, {label}: median {med:.1f} us (min {lo:.1f}, "
          f"max {hi:.1f}), n=5", flush=True)

# --- the table: median us per variant and case (n = 25 graphs of 10 launches)
labels = [f"T={T}"] + [c[0] for c in cases]
print("\nvariant".ljust(18) + "".join(l.rjust(16) for l in labels))
for name, *_ in variants:
    print(name.ljust(17) + "".join((f"{table[name, l]:.1f}" if (name, l) in table else "-")
                                   .rjust(16) for l in labels))
