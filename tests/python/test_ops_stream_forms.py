"""The streaming kernels' forms that constants select (bench/prefill/stream_gpu.py
measures them): gated_rmsnorm's rows_per_program, warps, param_rows, quant_fma
and fast_silu, quantize_e4m3's flat form and conv_prefill's splits, launched as
the prefill plan does. Each form against the f64 reference of R6 (with its e4m3 output) or R1's
quant at their bands, paired with a counterfactual outside them; the forms of
the same arithmetic also equal the plan form bit for bit. Odd row counts leave
a partial last program; a padded group (320 of a 512 tile) masks lanes."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

from tilejit.ops._launch import launch  # noqa: E402

from mamba2_reference import e4m3_decode, round_e4m3  # noqa: E402
from ops_reference import F64, silu  # noqa: E402
from ops_support import DEV, uniform  # noqa: E402

ROWS, S_X = 5, 1.0 / 56
# Compared bit for bit with param_rows=0 (the plan's form before param_rows).
EXACT_FORMS = [dict(), dict(rows_per_program=2), dict(rows_per_program=4, warps=4),
               dict(quant_fma=1), dict(warps=1), dict(rows_per_program=2, quant_fma=1),
               dict(param_rows=0, rows_per_program=2, quant_fma=1)]


def codes(t):
    return t.view(torch.uint8).cpu()


def e4m3_values(t):
    import numpy as np
    return torch.from_numpy(np.asarray(e4m3_decode(codes(t).numpy()), np.float64))


def norm_inputs(seed, width, stride):
    gen = torch.Generator().manual_seed(seed)
    # A scale of 1, 2, 4, 8 per quarter row: a whole-row norm differs per group.
    scale = torch.repeat_interleave(2.0 ** torch.arange(4.0, dtype=F64), width // 4)
    y = (uniform(gen, ROWS, width) * scale).bfloat16()
    zx = uniform(gen, ROWS, stride, lo=-3, hi=3).bfloat16()
    w = uniform(gen, width, lo=0.5, hi=1.5).bfloat16()
    return y.to(DEV), zx.to(DEV), w.to(DEV)


def reference(y, z, w, group):
    """R6 in f64 with its bf16 rounding points, then e4m3(out / s_x)."""
    v = y.to(F64).cpu() * silu(z.to(F64).cpu())
    g = v.view(ROWS, -1, group)
    normed = (g / torch.sqrt((g * g).mean(-1, keepdim=True) + 1e-5)).view_as(v)
    out = (w.to(F64).cpu() * normed.bfloat16().to(F64)).bfloat16().to(F64)
    return torch.from_numpy(round_e4m3((out / S_X).clamp(-448, 448).numpy()))


def run_norm(y, zx, w, width, group, form):
    consts = dict(width=width, group_size=group, fp8_out=1, z_stride=zx.shape[1], dependent=1,
                  **form)
    out = torch.full((ROWS, width), 0x7F, dtype=torch.uint8, device=DEV)  # e4m3 NaN
    rows_per = form.get("rows_per_program", 1)
    launch("gated_rmsnorm", consts, DEV, (-(-ROWS // rows_per), width // group), y=y, z=zx,
           weight=w, out=out, rows=ROWS, eps=1e-5, input_scale=S_X)
    return out


def outside(got, want):
    """Outside one e4m3 step: 2^-9 + 2^-3 |want|."""
    return int(((got - want).abs() > 2.0 ** -9 + 2.0 ** -3 * want.abs()).sum()) + \
        int(torch.isnan(got).sum())


@pytest.mark.parametrize("width,group", [(1024, 512), (640, 320)])
@pytest.mark.parametrize("form", EXACT_FORMS + [dict(fast_silu=1),
                                                dict(fast_silu=1, rows_per_program=2)])
def test_norm_forms(width, group, form):
    y, zx, w = norm_inputs(7, width, width + 96)
    z = zx[:, :width]
    got = run_norm(y, zx, w, width, group, form)
    want = reference(y, z, w, group)
    assert got.numel() == want.numel() == ROWS * width
    assert outside(e4m3_values(got), want) == 0, form
    # Counterfactuals: the whole row as one group, and the weight of the next group.
    assert outside(e4m3_values(got), reference(y, z, w, width)) > ROWS * width // 4
    assert outside(e4m3_values(got), reference(y, z, w.roll(group), group)) > ROWS * width // 8
    if "fast_silu" not in form:
        plan = run_norm(y, zx, w, width, group, dict(param_rows=0))
        assert torch.equal(codes(got), codes(plan)), form


def test_quant_fma_matches_the_division_on_hard_quotients():
    """quant_fma's Markstein step against IEEE division, bit for bit, with outputs
    spread over many binades (negative zeros and saturating values among them)."""
    width, group = 1024, 512
    y, zx, w = norm_inputs(11, width, width)
    gen = torch.Generator().manual_seed(12)
    y = (y.cpu().to(F64) * 2.0 ** torch.randint(-30, 12, (ROWS, width), generator=gen)
         ).bfloat16().to(DEV)
    y[0, :16] = -0.0
    for form in (dict(quant_fma=1), dict(quant_fma=1, param_rows=0)):
        assert torch.equal(codes(run_norm(y, zx, w, width, group, form)),
                           codes(run_norm(y, zx, w, width, group, dict(param_rows=0)))), form


@pytest.mark.parametrize("block,warps", [(1024, 4), (2048, 4), (4096, 8)])
def test_quant_flat(block, warps):
    width, rows = 2688, 3  # rows * width is no multiple of the block: a ragged end
    gen = torch.Generator().manual_seed(5)
    x = (uniform(gen, rows, width) * 4).bfloat16().to(DEV)
    out = torch.full((rows, width), 0x7F, dtype=torch.uint8, device=DEV)
    launch("quantize_e4m3", dict(width=width, flat=1, block=block, warps=warps), DEV,
           (-(-rows * width // block), 1), x=x, out=out, rows=rows, input_scale=S_X)
    want = torch.from_numpy(round_e4m3((x.to(F64).cpu() / S_X).clamp(-448, 448).numpy()))
    got = e4m3_values(out)
    assert got.numel() == rows * width and outside(got, want) == 0
    assert outside(got, want * 0.5) > rows * width // 2  # a scale applied twice over
    plan = torch.full_like(out, 0x7F)
    launch("quantize_e4m3", dict(width=width), DEV, (-(-width // 1024), rows), x=x, out=plan,
           rows=rows, input_scale=S_X)
    assert torch.equal(codes(out), codes(plan))


def run_conv(zx, weight, bias, page, tokens, splits, inner, channels, heads):
    """conv_prefill as the plan launches it: one sequence continuing from slot 0,
    chunks of 8 tokens, each split over `splits` programs."""
    block_t = 8
    begins = list(range(0, tokens, block_t))
    i32 = lambda v: torch.tensor(v, dtype=torch.int32, device=DEV)  # noqa: E731
    out = torch.full((tokens, channels), float("nan"), dtype=torch.bfloat16, device=DEV)
    launch("conv_prefill", dict(inner=inner, channels=channels, heads=heads, block_t=block_t,
                                block_c=64, warps=1, rows_per_step=4, splits=splits),
           DEV, (1, len(begins), splits), zxbcdt=zx, weight=weight, bias=bias,
           cu_seqlens=i32([0, tokens]), slots=i32([0]), init=i32([1]),
           chunk_seq=i32([0] * len(begins)), chunk_begin=i32(begins),
           chunk_end=i32([min(b + block_t, tokens) for b in begins]), conv_state=page,
           out=out, num_slots=page.shape[0])
    return out


def conv_reference(xbc, weight, bias, state, restart=None):
    """R3 in f64 from `state` [C, 3]; with `restart`, every `restart` rows start
    over from a zero halo (the counterfactual of a piece without its halo)."""
    u = torch.cat([state.to(F64).t(), xbc.to(F64)])
    w = weight.to(F64)
    rows = xbc.shape[0]
    window = [u[t:t + 4].clone() for t in range(rows)]  # tokens t - 3 .. t
    for t in range(rows):
        if restart:
            window[t][:max(3 - t % restart, 0)] = 0  # the tokens before t's piece
    pre = torch.stack([bias.to(F64) + (w.t() * window[t]).sum(0) for t in range(rows)])
    return silu(pre)


@pytest.mark.parametrize("tokens", [29, 32])  # a ragged last chunk, and whole ones
def test_conv_splits(tokens):
    inner, channels, heads = 16, 64, 8
    gen = torch.Generator().manual_seed(tokens)
    zx = uniform(gen, tokens, inner + channels + heads, lo=-2, hi=2).bfloat16().to(DEV)
    weight = uniform(gen, channels, 4).bfloat16().to(DEV)
    bias = uniform(gen, channels, lo=-0.5, hi=0.5).bfloat16().to(DEV)
    state = uniform(gen, 2, channels, 3).bfloat16().to(DEV)
    outs, pages = {}, {}
    for splits in (1, 2):
        page = state.clone()
        outs[splits] = run_conv(zx, weight, bias, page, tokens, splits, inner, channels, heads)
        pages[splits] = page
    xbc = zx[:, inner:inner + channels].cpu()
    want = conv_reference(xbc, weight.cpu(), bias.cpu(), state[0].cpu())
    got = outs[2].to(F64).cpu()
    band = lambda w: 1e-5 + 2.0 ** -7 * w.abs()  # noqa: E731 - one bf16 ulp
    assert got.numel() == tokens * channels
    assert int(((got - want).abs() > band(want)).sum()) == 0
    assert torch.equal(outs[2].cpu().view(torch.int16), outs[1].cpu().view(torch.int16))
    assert torch.equal(pages[2].cpu().view(torch.int16), pages[1].cpu().view(torch.int16))
    assert torch.equal(pages[2][0].cpu().t(), xbc[-3:])  # the final state: the last 3 tokens
    # Counterfactual: each 4-row piece starting from a zero halo.
    wrong = conv_reference(xbc, weight.cpu(), bias.cpu(), state[0].cpu(), restart=4)
    assert int(((got - wrong).abs() > band(wrong)).sum()) > tokens * channels // 4
