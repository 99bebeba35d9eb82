"""On a GPU (torch with CUDA): the decode projections, in_proj_conv (R1/R1b ->
R2 split -> R3d conv update, fused) and out_proj (R1 with e4m3 activations, or
R1b), with torch tensors in and out against plain-torch f64 references, on the
GEMV path (3 rows), the tensor-core path (20 rows: a full 16-row tile and a
masked one) and the direct tensor-core path (operands straight into fragments,
split K; 3 and 70 rows), FP8 and bf16. Each band is paired with the counterfactual it
separates. Skipped, with the reason, where there is no GPU."""

import pytest

torch = pytest.importorskip("torch", reason="the GPU tests need torch")
if not torch.cuda.is_available():
    pytest.skip("the GPU tests need a CUDA device", allow_module_level=True)

import tilejit as tj  # noqa: E402
from test_gpu import assert_band  # noqa: E402

HIDDEN, INNER, HEADS, GN = 2688, 4096, 64, 1024     # docs/numerics.md#geometry
CHANNELS = INNER + 2 * GN
OUT_COLS = INNER + CHANNELS + HEADS
# The plan's choices (models/nemotron_h/LayerBuilder.cpp): GEMV below 16 rows,
# 16-row tensor-core tiles from there.
GEMV_IN, TILES = {True: {"block_n": 16}, False: {"block_n": 8}}, \
    {"block_m": 16, "block_n": 32, "block_k": 64}
GEMV_OUT = {True: {"block_n": 4}, False: {"block_n": 4, "block_k": 256}}
TILES_OUT = {"block_m": 16, "block_n": 64, "block_k": 64}
# Tensor cores for any batch with the operands loaded straight into fragments
# (LayerBuilder.cpp's directTiles: K split over 4 warp groups).
DIRECT = {"direct": 1, "block_n": 16, "block_k": 256, "split_k": 4, "warps": 4,
          "loads_in_flight": 4}


def direct(rows):
    return dict(DIRECT, block_m=16 if rows <= 16 else 64)
BF16_ULP = 2.0 ** -7  # a relative bound on one bf16 rounding step


def rnd(gen, *shape):
    return torch.randn(*shape, device="cuda", generator=gen, dtype=torch.float64)


def e4m3_weight(gen, rows, cols):
    """Random finite e4m3 codes of magnitude below 2 (exponent field < 8)."""
    mag = torch.randint(0, 0x40, (rows, cols), device="cuda", generator=gen, dtype=torch.int32)
    sign = torch.randint(0, 2, (rows, cols), device="cuda", generator=gen, dtype=torch.int32)
    return (mag | (sign << 7)).to(torch.uint8).view(torch.float8_e4m3fn)


def quantize(x, input_scale):
    """R1's a_q = e4m3(f32(x) / s_x), saturating, in plain torch."""
    s = torch.tensor(input_scale, dtype=torch.float32)
    return (x.float() / s).clamp(-448, 448).to(torch.float8_e4m3fn)


def slot_list(rows, slots, gen):
    """Distinct slots in random order with every third row (from 1) padding."""
    order = torch.randperm(slots, generator=gen).tolist()
    return [-1 if r % 3 == 1 else order[r] for r in range(rows)]


@pytest.mark.parametrize("fp8,rows,path", [(True, 3, "plan"), (False, 3, "plan"),
                                           (True, 20, "plan"), (True, 3, "direct"),
                                           (False, 3, "direct"), (True, 70, "direct")])
def test_in_proj_conv_on_torch_tensors(fp8, rows, path):
    gen = torch.Generator(device="cuda").manual_seed(10 + rows + fp8)
    cgen = torch.Generator().manual_seed(rows)
    slots = max(24, rows + 2)  # distinct slots for every row
    x = rnd(gen, rows, HIDDEN).bfloat16()
    if fp8:
        s_x, s_w = 4.0 / 448, 0.04
        weight = e4m3_weight(gen, OUT_COLS, HIDDEN)
        scales = (s_x, float(torch.tensor(s_x, dtype=torch.float32) * s_w))
        acc = quantize(x, s_x).double() @ weight.double().T
        full = (scales[1] * acc).bfloat16()
        # W8A16, the oracle R1 forbids: no activation quantization.
        w8a16 = (s_w * (x.double() @ weight.double().T)).bfloat16()
    else:
        weight = (rnd(gen, OUT_COLS, HIDDEN) / HIDDEN ** 0.5).bfloat16()
        scales = ()
        full = (x.double() @ weight.double().T).bfloat16()
        # A dropped K tail (the last 128 of 2688 columns).
        w8a16 = (x.double()[:, :-128] @ weight.double()[:, :-128].T).bfloat16()
    state = rnd(gen, slots, CHANNELS, 3).bfloat16()
    conv_w, conv_b = (0.5 * rnd(gen, CHANNELS, 4)).bfloat16(), (0.1 * rnd(gen, CHANNELS)).bfloat16()
    slot_of = slot_list(rows, slots, cgen)
    slot_t = torch.tensor(slot_of, dtype=torch.int32, device="cuda")
    before = state.clone()
    nan = lambda n: torch.full((rows, n), float("nan"), dtype=torch.bfloat16, device="cuda")  # noqa: E731
    z, xbc, dt = nan(INNER), nan(CHANNELS), nan(HEADS)
    choice = direct(rows) if path == "direct" else TILES if rows >= 16 else GEMV_IN[fp8]
    geometry = dict(hidden=HIDDEN, inner=INNER, channels=CHANNELS, heads=HEADS, fp8=int(fp8),
                    **choice)
    block_n, block_m = geometry["block_n"], geometry.get("block_m", 1)
    tj.kernels.in_proj_conv(x, weight, slot_t, state, conv_w, conv_b, z, xbc, dt, rows, *scales,
                            grid=(-(-OUT_COLS // block_n), -(-rows // block_m)), **geometry)
    torch.cuda.synchronize()
    live = [r for r, s in enumerate(slot_of) if s >= 0]
    pad = [r for r, s in enumerate(slot_of) if s < 0]
    band = (1e-2, 1e-2) if fp8 else (1e-6, BF16_ULP)  # R1: one e4m3 code; R1b: one ulp
    assert_band(z[live], full[live, :INNER], *band)
    assert_band(dt[live], full[live, INNER + CHANNELS:], *band)
    raw = full[:, INNER:INNER + CHANNELS]
    # The counterfactual is outside the same band on many elements (W8A16: the
    # activation quantization error, about 0.03 on outputs of about 1.7).
    err = (w8a16[live].double() - full[live].double()).abs()
    assert int((err > band[0] + band[1] * full[live].double().abs()).sum()) > err.numel() // 20
    want_state = before.clone()
    for r in live:
        s = slot_of[r]
        taps = before[s].double()
        # The conv sees the kernel's own bf16 xBC (the new tap it stored, held
        # to the projection band below), so only R3d's rounding is left: the
        # band of conv_update.
        pre = conv_b.double() + (conv_w[:, :3].double() * taps).sum(1) + \
            conv_w[:, 3].double() * state[s, :, 2].double()
        assert_band(xbc[r], torch.nn.functional.silu(pre).bfloat16(), 1e-2, 1e-2)
        want_state[s] = torch.stack([before[s, :, 1], before[s, :, 2], raw[r]], -1)
    assert torch.equal(state[:, :, :2], want_state[:, :, :2])  # shifted taps are copies
    assert_band(state[:, :, 2], want_state[:, :, 2], *band)
    for out in (z, xbc, dt):
        assert (out[pad] == 0).all()
    untouched = [s for s in range(slots) if s not in slot_of]
    assert torch.equal(state[untouched], before[untouched])


@pytest.mark.parametrize("fp8,rows,path", [(True, 3, "plan"), (False, 3, "plan"),
                                           (True, 20, "plan"), (True, 3, "direct"),
                                           (False, 3, "direct"), (True, 70, "direct")])
def test_out_proj_on_torch_tensors(fp8, rows, path):
    gen = torch.Generator(device="cuda").manual_seed(20 + rows + fp8)
    if fp8:
        a = e4m3_weight(gen, rows, INNER)
        weight = e4m3_weight(gen, HIDDEN, INNER)
        scale = 1e-3
        args, extra = (a, weight), (scale,)
        exact = scale * (a.double() @ weight.double().T)
        dropped = scale * (a.double()[:, :-512] @ weight.double()[:, :-512].T)
    else:
        a = rnd(gen, rows, INNER).bfloat16()
        weight = (rnd(gen, HIDDEN, INNER) / INNER ** 0.5).bfloat16()
        args, extra = (a, weight), ()
        exact = a.double() @ weight.double().T
        dropped = a.double()[:, :-512] @ weight.double()[:, :-512].T
    out = torch.full((rows, HIDDEN), float("nan"), dtype=torch.bfloat16, device="cuda")
    choice = direct(rows) if path == "direct" else TILES_OUT if rows >= 16 else GEMV_OUT[fp8]
    geometry = dict(inner=INNER, hidden=HIDDEN, fp8=int(fp8), **choice)
    block_n, block_m = geometry["block_n"], geometry.get("block_m", 1)
    tj.kernels.out_proj(*args, out, rows, *extra,
                        grid=(-(-HIDDEN // block_n), -(-rows // block_m)), **geometry)
    torch.cuda.synchronize()
    want = exact.bfloat16()
    # f32 accumulation of exact products, one bf16 rounding: one ulp.
    assert_band(out, want, 1e-6, BF16_ULP)
    # The counterfactual, a dropped last K step of 512, is far outside.
    err = (dropped.bfloat16().double() - want.double()).abs()
    assert int((err > 1e-6 + BF16_ULP * want.double().abs()).sum()) > err.numel() // 2
