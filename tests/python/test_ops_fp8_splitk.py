"""tilejit.ops' e4m3 GEMM with K split over programs (out_proj's k_splits, then
split_k_sum; TILEJIT_FP8_K_SPLITS forces it on any arch): scaled_mm and the
W8A8 linear against the f64 R1 oracle (ops_reference.py), the same bits on
every call, and the counterfactuals the band separates. Outputs and the
partials scratch start poisoned (NaN), so a partial left unwritten shows."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402,F401
import tilejit.ops as ops  # noqa: E402

import ops_reference as ref  # noqa: E402
from ops_reference import F64, bf16  # noqa: E402
from ops_support import BF16_ULP, DEV, outside, poisoned, uniform  # noqa: E402,F401
from test_ops_fp8 import as_e4m3, e4m3_codes  # noqa: E402


def replan(monkeypatch, **settings):
    """Sets tilejit.ops._fp8's module settings (K_SPLITS, ...) for the test,
    planning afresh."""
    for name, value in settings.items():
        monkeypatch.setattr(ops._fp8, name, value)
    ops._fp8._projections.clear()
    ops._plan.clear()


@pytest.fixture
def splits(monkeypatch):
    """Sets the forced split count for the test, planning afresh."""
    yield lambda s: replan(monkeypatch, K_SPLITS=s)
    ops._fp8._projections.clear()
    ops._plan.clear()


def reduced_band(rows, magnitude):
    """R1h: Hopper's e4m3 wgmma sums where the split GEMM runs on sm_90a."""
    if DEV.type != "cuda" or tj.runtime().arch != "sm_90a":
        return 0
    return 2.0 ** -8 * magnitude


S_A, S_B = 0.05, 0.01


def checked_scaled_mm(rows, k, n, seed):
    """scaled_mm of random e4m3 codes as configured (split or not), held to the f64
    R1 oracle: bf16 within one ulp, f32 within 2^-16 s sum|a w| (+ R1h's band on
    sm_90a's wgmma tiles), the same f32 bits on two more calls (the partials summed
    in split order; those calls replay the recorded plan). Returns a and w (values),
    the oracle, the f32 output and its band."""
    gen = torch.Generator().manual_seed(seed)
    a_codes, a = e4m3_codes(gen, rows, k)
    w_codes, w = e4m3_codes(gen, n, k)
    scale_a, scale_b = (torch.tensor([v], device=DEV) for v in (S_A, S_B))
    want, magnitude = ref.w8a8(a, w, S_A, S_B)
    reduced = reduced_band(rows, magnitude)
    call = lambda dtype: ops.scaled_mm(as_e4m3(a_codes), as_e4m3(w_codes).t(), scale_a,
                                       scale_b, out_dtype=dtype)
    y = call(torch.bfloat16)
    assert y.dtype == torch.bfloat16 and y.shape == (rows, n)
    err = (y.to(F64).cpu() - bf16(want)).abs()
    assert int((err > BF16_ULP * want.abs() + reduced).sum()) == 0
    y32 = call(torch.float32)
    f32_band = 2.0 ** -16 * magnitude + reduced
    assert int(((y32.to(F64).cpu() - want).abs() > f32_band).sum()) == 0
    for _ in range(2):
        assert torch.equal(call(torch.float32), y32)
    return a, w, want, y32.to(F64).cpu(), f32_band


# K = 320: three K steps of 128 (the e4m3 tiles), so 2 splits leave the last one
# partly past K; 4, 20 and 70 rows (none a whole tile of rows).
@pytest.mark.parametrize("rows, s", [(4, 2), (20, 3), (70, 2)])
def test_scaled_mm_split_k(poisoned, splits, rows, s):
    splits(s)
    a, w, want, y32, f32_band = checked_scaled_mm(rows, 320, 96, 300 + rows + s)
    # The counterfactuals: one split's K range dropped (a partial lost), a weight column
    # scaled by 1 + 1/8.
    lost = ref.w8a8(a[:, 128:], w[:, 128:], S_A, S_B)[0]
    assert int(((y32 - lost).abs() > f32_band).sum()) > y32.numel() // 4
    column = (y32[:, 0] - 1.125 * want[:, 0]).abs() > f32_band[:, 0]
    assert int(column.sum()) > rows // 4


def test_w8a8_linear_split_k(poisoned, splits):
    splits(2)
    gen = torch.Generator().manual_seed(386)
    rows, k, n, s_x, s_w = 17, 320, 96, 0.05, 0.01
    x = bf16(uniform(gen, rows, k, lo=-6, hi=6)).bfloat16().to(DEV)
    w_codes, w = e4m3_codes(gen, n, k)
    y = ops.w8a8_linear(x, as_e4m3(w_codes), torch.tensor([s_w], device=DEV), s_x)
    a_q, _ = ops.scaled_fp8_quant(x, s_x)
    a = ref.e4m3_values(a_q)
    want, magnitude = ref.w8a8(a, w, s_x, s_w)
    err = (y.to(F64).cpu() - bf16(want)).abs()
    assert int((err > BF16_ULP * want.abs() + reduced_band(rows, magnitude)).sum()) == 0
    # The counterfactual: input_scale dropped from the output scale.
    assert outside(y, want / s_x, 0, BF16_ULP) > y.numel() // 2


def test_planned_splits_only_where_tiles_are_few(splits):
    """The planner's own choice (no forced count): none on the interpreter; on
    sm_90a the split GEMM where the tiles are few, never for a prefill's M."""
    splits(0)
    geometry = dict(inner=4096, hidden=2688, fp8=1, out_f32=0, scale_ptr=1)
    plan = lambda rows: ops._fp8._projection(DEV, rows, geometry)
    if DEV.type != "cuda" or tj.runtime().arch != "sm_90a":
        assert plan(64)["k_splits"] == 1
        return
    assert plan(64)["k_splits"] > 1 and plan(256)["k_splits"] > 1
    assert plan(8192)["k_splits"] == 1
