"""scaled_mm's and w8a8_linear's GEMM tiles, planned as the Mamba2 plans plan
their projections (models::planProjection) for a runtime's arch: compile-only
runtimes stand in for the GPUs, so the choice is checked without one."""

import pytest

import tilejit as tj

# NemotronH's FP8 projections: in_proj widens 2688 -> 10304, out_proj narrows
# 4096 -> 2688.
IN_PROJ = dict(inner=2688, hidden=10304, fp8=1, out_f32=0, scale_ptr=1)
OUT_PROJ = dict(inner=4096, hidden=2688, fp8=1, out_f32=0, scale_ptr=1)


@pytest.fixture(scope="module")
def runtimes(tmp_path_factory):
    # A tuning database without entries (a missing file would let the shipped
    # one stand in, whose measured tiles may take another path): the plans'
    # own choices are what this file checks.
    cache = tmp_path_factory.mktemp("cache")
    empty = cache / "empty.tune.json"
    empty.write_text('{"format": "tilejit-tune-db/1", "entries": []}')
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TILEJIT_TUNE_DB", str(empty))
        return {arch: tj.Runtime("compile-only", arch=arch, cache_dir=str(cache))
                for arch in ("sm_90a", "sm_90")}


def tiles(rt, rows, geometry):
    return tj._tilejit._plan_projection(rt, rows, geometry)


def kind(constants):
    """The path a plan's tiles take, by their constants."""
    if constants["persistent"] and constants["k_splits"] > 1:
        return "split wgmma GEMM"
    if constants["persistent"]:
        return "wgmma producer GEMM"
    if constants["producer"]:
        return "TMA producer GEMM"
    if constants["block_m"] >= 64:
        return "cp.async GEMM"
    if constants["direct"]:
        return "direct"
    return "16-row tiles" if constants["block_m"] == 16 else "GEMV"


@pytest.mark.parametrize("arch, geometry, rows, want", [
    # sm_90a: decode's GEMV, direct and 16-row tiles up to 16 rows; above, the
    # prefill plan's wgmma producer GEMM with K split where its tiles are fewer
    # than two per multiprocessor (docs/decode-projections.md#split-k), unsplit
    # for a prefill's M.
    ("sm_90a", IN_PROJ, 1, "GEMV"), ("sm_90a", IN_PROJ, 8, "direct"),
    ("sm_90a", OUT_PROJ, 16, "16-row tiles"), ("sm_90a", IN_PROJ, 32, "split wgmma GEMM"),
    ("sm_90a", IN_PROJ, 64, "split wgmma GEMM"), ("sm_90a", IN_PROJ, 8192, "wgmma producer GEMM"),
    ("sm_90a", OUT_PROJ, 64, "split wgmma GEMM"), ("sm_90a", OUT_PROJ, 256, "split wgmma GEMM"),
    # sm_90 (TMA, no wgmma): the prefill plan's tiles from 64 rows.
    ("sm_90", IN_PROJ, 8, "direct"), ("sm_90", OUT_PROJ, 64, "TMA producer GEMM"),
    ("sm_90", IN_PROJ, 8192, "TMA producer GEMM"),
    # The interpreter (no arch): the tiles every arch runs.
    (None, IN_PROJ, 1, "GEMV"), (None, OUT_PROJ, 20, "16-row tiles"),
    (None, IN_PROJ, 8192, "cp.async GEMM"),
])
def test_projection_tiles_follow_the_plans(runtimes, arch, geometry, rows, want):
    constants = tiles(runtimes.get(arch), rows, geometry)
    assert kind(constants) == want, constants
    # Every constant of out_proj comes back, the geometry as given.
    assert {k: constants[k] for k in geometry} == geometry


def test_projection_refuses_a_geometry_out_proj_cannot_take(runtimes):
    with pytest.raises(tj.ArgumentError, match="out_proj"):
        tiles(runtimes["sm_90a"], 8192, dict(IN_PROJ, inner=-4))


def test_scaled_mm_plans_once_per_shape():
    torch = pytest.importorskip("torch")
    from tilejit.ops import _fp8

    a = torch.zeros(20, 64, dtype=torch.uint8)
    b = torch.zeros(96, 64, dtype=torch.uint8).t()
    one = torch.tensor([1.0])
    _fp8.scaled_mm(a, b, one, one)
    key = (a.device, 20, *dict(inner=64, hidden=96, fp8=1, out_f32=0, scale_ptr=1).items())
    planned = _fp8._projections[key]
    _fp8.scaled_mm(a, b, one, one)
    assert _fp8._projections[key] is planned and kind(planned) == "16-row tiles"
