"""On a GPU (torch with CUDA): the prefill ops with torch tensors in and out
against plain-torch f64 references at NemotronH geometry: R1's static
activation quant (quantize_e4m3), the causal conv over a packed varlen batch
with conv pages (conv_prefill, R3/R8/R9) and the chunked SSD with SSM pages
(ssd_prefill, R5p). The batch mixes fresh, continued, short and padding
sequences. Each band is paired with the counterfactual it separates. Skipped,
with the reason, where there is no GPU."""

import pytest

torch = pytest.importorskip("torch", reason="the GPU tests need torch")
if not torch.cuda.is_available():
    pytest.skip("the GPU tests need a CUDA device", allow_module_level=True)

import tilejit as tj  # noqa: E402
from test_gpu import assert_band  # noqa: E402

HIDDEN, H, P, N, G = 2688, 64, 64, 128, 8          # docs/numerics.md#geometry
INNER = H * P
CHANNELS = INNER + 2 * G * N
ROW = INNER + CHANNELS + H                          # in_proj's output row: z | xBC | dt
BF16_ULP = 2.0 ** -7
# (length, slot, continue from the slot): a sequence of several chunks, a
# fresh one shorter than the conv's 3 taps, a padding one, a fresh one, a
# one-token continued one and a fresh one; 8 slots.
BATCH = [(70, 4, True), (2, 0, False), (5, -1, True), (33, 6, False), (1, 2, True),
         (20, 1, False)]
SLOTS = 8


def metadata(chunk):
    """R9 as the kernels read it: cu_seqlens, slots, continue flags and chunks
    of at most `chunk` tokens tiling each sequence from its first token."""
    cu, seq, begin, end = [0], [], [], []
    for s, (length, _, _) in enumerate(BATCH):
        for b in range(cu[-1], cu[-1] + length, chunk):
            seq.append(s)
            begin.append(b)
            end.append(min(b + chunk, cu[-1] + length))
        cu.append(cu[-1] + length)
    i32 = lambda v: torch.tensor(v, dtype=torch.int32, device="cuda")  # noqa: E731
    return (i32(cu), i32([s for _, s, _ in BATCH]), i32([int(c) for _, _, c in BATCH]),
            i32(seq), i32(begin), i32(end)), cu


def sequences(cu):
    for s, (_, slot, cont) in enumerate(BATCH):
        yield cu[s], cu[s + 1], slot, cont


def test_quantize_e4m3_on_torch_tensors():
    gen = torch.Generator(device="cuda").manual_seed(31)
    rows, scale = 37, 0.0125
    x = (torch.rand(rows, HIDDEN, device="cuda", generator=gen) * 14 - 7).bfloat16()
    out = torch.full((rows, HIDDEN), 0x7F, dtype=torch.uint8, device="cuda").view(
        torch.float8_e4m3fn)  # poison: NaN codes
    tj.kernels.quantize_e4m3(x, out, rows, scale, grid=(-(-HIDDEN // 1024), rows))
    torch.cuda.synchronize()
    # R1: e4m3(x / s_x) from the f64 quotient; dividing or multiplying by the
    # reciprocal may move a quotient on a rounding boundary by one code.
    want = (x.double() / scale).clamp(-448, 448).float().to(torch.float8_e4m3fn)
    got_v, want_v = out.float().double(), want.float().double()
    step = want_v.abs() * 2.0 ** -3 + 2.0 ** -9
    assert int(((got_v - want_v).abs() > step).sum()) == 0
    assert int((got_v != want_v).sum()) < got_v.numel() // 100
    assert got_v.numel() == rows * HIDDEN and bool(torch.isfinite(got_v).all())
    # The counterfactual: a dropped scale agrees with almost no code.
    dropped = x.float().clamp(-448, 448).to(torch.float8_e4m3fn).float().double()
    assert int((dropped == got_v).sum()) < got_v.numel() // 10


def test_conv_prefill_on_torch_tensors():
    gen = torch.Generator(device="cuda").manual_seed(32)
    meta, cu = metadata(64)  # the kernel's block_t
    T = cu[-1]
    zxbcdt = (torch.rand(T, ROW, device="cuda", generator=gen) * 4 - 2).bfloat16()
    weight = (torch.rand(CHANNELS, 4, device="cuda", generator=gen) - 0.5).bfloat16()
    bias = (torch.rand(CHANNELS, device="cuda", generator=gen) * 0.2 - 0.1).bfloat16()
    page = (torch.rand(SLOTS, CHANNELS, 3, device="cuda", generator=gen) * 4 - 2).bfloat16()
    before = page.clone()
    out = torch.full((T, CHANNELS), float("nan"), dtype=torch.bfloat16, device="cuda")
    tj.kernels.conv_prefill(zxbcdt, weight, bias, *meta, page, out, SLOTS,
                            grid=(CHANNELS // 1024, meta[3].numel()))
    torch.cuda.synchronize()
    w, b = weight.double(), bias.double()
    xbc = zxbcdt[:, INNER:INNER + CHANNELS].double()
    checked = 0
    for begin, end, slot, cont in sequences(cu):
        if slot < 0:
            assert bool((out[begin:end] == 0).all())
            continue
        init = before[slot].double().t() if cont else torch.zeros(3, CHANNELS, device="cuda",
                                                                 dtype=torch.float64)
        u = torch.cat([init, xbc[begin:end]])                      # [3 + L, C]
        pre = b + sum(w[:, j] * u[j:j + end - begin] for j in range(4))
        want = (pre / (1 + torch.exp(-pre))).bfloat16().double()   # R3: bf16(silu(pre))
        # f32 vs f64 before one bf16 rounding: one ulp (plus the sum's f32 error).
        assert_band(out[begin:end], want, 1e-5, BF16_ULP)
        checked += want.numel()
        assert torch.equal(page[slot].double(), u[-3:].t())        # raw inputs, oldest first
        if cont:  # the counterfactual: this sequence started from zeros
            z = torch.cat([torch.zeros_like(init), xbc[begin:end]])
            pre0 = b + sum(w[:, j] * z[j:j + end - begin] for j in range(4))
            wrong = (pre0 / (1 + torch.exp(-pre0)))
            assert int(((wrong - want).abs() > 1e-5 + BF16_ULP * want.abs()).sum()) > 0
    assert checked == (T - 5) * CHANNELS
    for s in range(SLOTS):  # slots no live sequence names are byte-identical
        if s not in [slot for _, slot, _ in BATCH]:
            assert torch.equal(page[s], before[s])


def test_ssd_prefill_on_torch_tensors():
    gen = torch.Generator(device="cuda").manual_seed(33)
    meta, cu = metadata(32)  # the kernel's chunk
    T = cu[-1]
    xbc = (torch.rand(T, CHANNELS, device="cuda", generator=gen) * 2 - 1).bfloat16()
    zxbcdt = (torch.rand(T, ROW, device="cuda", generator=gen) * 3 - 4).bfloat16()
    a_log = torch.rand(H, device="cuda", generator=gen) * 2.5 - 2
    dt_bias = torch.rand(H, device="cuda", generator=gen) - 1
    d = torch.rand(H, device="cuda", generator=gen) * 2 - 1
    page = torch.rand(SLOTS, H, P, N, device="cuda", generator=gen) * 2 - 1
    before = page.clone()
    y = torch.full((T, INNER), float("nan"), dtype=torch.bfloat16, device="cuda")
    tj.kernels.ssd_prefill(xbc, zxbcdt, a_log, dt_bias, d, *meta, page, y, meta[3].numel(),
                           0.0, float("inf"), grid=(P // 32, H))
    torch.cuda.synchronize()
    A = -torch.exp(a_log.double())
    checked = 0
    for begin, end, slot, cont in sequences(cu):
        if slot < 0:
            assert bool((y[begin:end] == 0).all())
            continue
        x = xbc[begin:end, :INNER].double().view(-1, H, P)
        B = xbc[begin:end, INNER:INNER + G * N].double().view(-1, G, N).repeat_interleave(8, 1)
        C = xbc[begin:end, INNER + G * N:].double().view(-1, G, N).repeat_interleave(8, 1)
        v = zxbcdt[begin:end, INNER + CHANNELS:].double() + dt_bias.double()
        dt = torch.where(v > 20, v, torch.log1p(torch.exp(v))).clamp_min(0)   # R4
        S = before[slot].double().clone() if cont else torch.zeros(H, P, N, device="cuda",
                                                                   dtype=torch.float64)
        want = torch.empty(end - begin, H, P, device="cuda", dtype=torch.float64)
        for t in range(end - begin):                                         # R5
            S = S * torch.exp(A * dt[t])[:, None, None] + \
                (dt[t][:, None] * x[t])[:, :, None] * B[t][:, None, :]
            want[t] = torch.einsum("hpn,hn->hp", S, C[t]) + d.double()[:, None] * x[t]
        assert_band(y[begin:end], want.view(end - begin, INNER), 5e-2, 5e-2)   # R5p, <= 256
        assert_band(page[slot], S, 8e-3, 5e-3)                                 # the f32 state
        checked += want.numel()
        if cont:  # the counterfactual: the state this sequence carried in, dropped
            S0 = torch.zeros_like(S)
            for t in range(end - begin):
                S0 = S0 * torch.exp(A * dt[t])[:, None, None] + \
                    (dt[t][:, None] * x[t])[:, :, None] * B[t][:, None, :]
            assert int(((S0 - S).abs() > 8e-3 + 5e-3 * S.abs()).sum()) > S.numel() // 4
    assert checked == (T - 5) * INNER
    for s in range(SLOTS):
        if s not in [slot for _, slot, _ in BATCH]:
            assert torch.equal(page[s], before[s])
