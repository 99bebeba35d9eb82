"""R8s's stochastic rounding of 16-bit SSM pages in selective_state_update
(vLLM's enable_stochastic_rounding, cache_philox_rounds): one step within one
page ulp of the f64 oracle; unbiased over 64 steps on a constant input where
nearest-even drifts (the separation asserted); replays with one seed equal,
other seeds differ. vLLM runs its test only on sm_100 (cvt.rs); ours runs
everywhere, the interpreter included."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit.ops as ops  # noqa: E402

import ssu_reference as R  # noqa: E402
from ops_support import DEV, assert_band  # noqa: E402
from ssu_support import head_inputs, randn  # noqa: E402

STEPS = 64
# A per-step increment below half a page ulp at |state| in [1, 1.5): bf16's
# ulp there is 2^-7, f16's 2^-10.
DT = {torch.bfloat16: 0.01, torch.float16: 0.00125}


def constant_input(gen, dtype, heads=4, head_dim=64, dstate=64):
    """A state in [1, 1.5) that each step raises by dt x B (A = 0: no decay)."""
    uniform = lambda *shape: torch.rand(*shape, generator=gen)  # noqa: E731
    page = (1 + 0.5 * uniform(1, heads, head_dim, dstate)).to(dtype)
    x = 0.2 + 0.15 * uniform(1, heads, head_dim)
    B = 0.5 + 0.5 * uniform(1, 1, dstate)
    C = uniform(1, 1, dstate)
    dt = torch.full((1, heads), DT[dtype])
    return [t.to(DEV) for t in (page, x, dt, torch.zeros(heads), B, C)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_stochastic_rounding_is_unbiased_where_nearest_even_drifts(dtype):
    gen = torch.Generator().manual_seed(7000)
    start, x, dt, A, B, C = constant_input(gen, dtype)
    true = start.double().cpu() + STEPS * (dt.double().cpu()[0, 0] * x.double().cpu()[..., None]
                                           * B.double().cpu()[:, :, None, :])
    ulp = R.ulp(true, dtype)
    mean_error = {}
    for stochastic in (False, True):
        page = start.clone()
        for step in range(STEPS):  # the step is the seed: a replay rounds the same way
            ops.selective_state_update(page, x, dt, A, B, C,
                                       enable_stochastic_rounding=stochastic,
                                       rounding_seed=step)
        error = (page.double().cpu() - true) / ulp
        assert error.numel() == 4 * 64 * 64
        mean_error[stochastic] = float(error.mean())
    # Each stochastic step adds a zero-mean error of variance <= 1/4 ulp^2: the
    # mean over 16384 elements after 64 steps has a deviation <= 1/32 ulp.
    assert abs(mean_error[True]) < 1 / 8, mean_error
    assert abs(mean_error[False]) > 4, f"nearest-even should stall: {mean_error}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mixes", [0, 4])
def test_one_stochastic_step_within_an_ulp_and_replayable(dtype, mixes):
    gen = torch.Generator().manual_seed(7100 + mixes)
    heads, head_dim, dstate, rows = 2, 16, 64, 3
    inputs = head_inputs(gen, rows, heads, head_dim, dstate, 1, torch.bfloat16, False, True)
    start = randn(gen, rows, heads, head_dim, dstate, dtype=dtype)
    pages, outs = [], []
    for seed in (11, 11, 12):
        page = start.clone()
        outs.append(ops.selective_state_update(page, dt_softplus=True, rounding_seed=seed,
                                               enable_stochastic_rounding=True,
                                               cache_philox_rounds=mixes, **inputs))
        pages.append(page)
    y, writes = R.run(start, softplus=True, **inputs)
    assert_band(outs[0], y, 1e-3, R.out_rtol(torch.bfloat16), y.numel())
    assert sum(R.state_outside(pages[0][s], S, dtype) for s, S in writes.items()) == 0
    assert len(writes) == rows
    assert torch.equal(pages[0], pages[1]), "one seed, one rounding"
    assert not torch.equal(pages[0], pages[2]), "another seed rounds otherwise"
    assert torch.equal(outs[0], outs[2]), "y comes from the un-rounded state"
    # The band can fail: the page left as it was lies outside it on most
    # elements; and the stochastic page is not nearest-even's.
    stale = sum(R.state_outside(start[s], S, dtype) for s, S in writes.items())
    assert stale > start.numel() // 2
    nearest = start.clone()
    ops.selective_state_update(nearest, dt_softplus=True, **inputs)
    assert int((nearest != pages[0]).sum()) > nearest.numel() // 8


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_stochastic_rounding_keeps_zeros_tiny_values_and_nan(dtype):
    """No ulp to draw from: zero stays zero, |v| < 2^-100 rounds to nearest,
    NaN and infinities pass through the rounding as they are."""
    heads, head_dim, dstate = 1, 16, 16
    page = torch.zeros(1, heads, head_dim, dstate, dtype=dtype, device=DEV)
    page[0, 0, 0, :4] = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    if dtype == torch.bfloat16:
        page[0, 0, 1, 0] = 2.0 ** -110
    before = page.clone()
    x = torch.zeros(1, heads, head_dim, device=DEV)
    B = C = torch.ones(1, 1, dstate, device=DEV)
    dt, A = torch.full((1, heads), 0.5, device=DEV), torch.zeros(heads, device=DEV)
    ops.selective_state_update(page, x, dt, A, B, C, enable_stochastic_rounding=True,
                               rounding_seed=3)
    # A = 0, x = 0: the state is carried unchanged, so every element is exact.
    assert torch.equal(page.isnan(), before.isnan())
    keep = ~before.isnan()
    assert torch.equal(page[keep], before[keep])
