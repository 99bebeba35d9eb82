"""tilejit.ops' e4m3 GEMM with its last wave's tiles split over K (out_proj's
tail_splits, then split_k_sum over the tail's rows; TILEJIT_FP8_TAIL_SPLITS
forces it on any arch, TILEJIT_FP8_TAIL_PROGRAMS sets the walking programs so
that small shapes have a tail): scaled_mm against the f64 R1 oracle
(ops_reference.py) on the whole rows and the split ones, the same bits on every
call, and the counterfactuals the band separates. Outputs and the partials
scratch start poisoned (NaN), so a tile or a partial left unwritten shows."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit.ops as ops  # noqa: E402

import ops_reference as ref  # noqa: E402
from ops_support import DEV, poisoned  # noqa: E402,F401
from test_ops_fp8_splitk import S_A, S_B, checked_scaled_mm, replan  # noqa: E402


@pytest.fixture
def tail(monkeypatch):
    """Forces tail_splits and the programs count for the test, planning afresh."""
    yield lambda splits, programs: replan(monkeypatch, TAIL_SPLITS=splits,
                                          TAIL_PROGRAMS=programs)
    ops._fp8._projections.clear()
    ops._plan.clear()


def tail_of(rows, n, splits, programs):
    """The rows the planned tiles split (tail_rows at the planned tile sizes)."""
    constants = ops._fp8._projection(DEV, rows, dict(inner=320, hidden=n, fp8=1, out_f32=0,
                                                     scale_ptr=1))
    columns = -(-n // constants["block_n"])
    return ops._fp8.tail_rows(rows, constants["block_m"], columns, splits, programs)


# K = 320: three K steps of 128 (the e4m3 tiles), so the splits' spans differ
# from the whole tiles' trip count and 2 splits leave the last one partly past K.
# (300, 3, 3): whole rows and a tail of two row tiles, the last ragged; (200, 2, 6):
# only the ragged last row tile split; (70, 3, 3): every tile split; (136, 3, 3):
# no split helps (the unsplit launch).
@pytest.mark.parametrize("rows, s, programs", [(300, 3, 3), (200, 2, 6), (70, 3, 3),
                                               (136, 3, 3)])
def test_scaled_mm_tail_split(poisoned, tail, rows, s, programs):
    tail(s, programs)
    split_rows = tail_of(rows, 160, s, programs)
    a, w, want, y32, f32_band = checked_scaled_mm(rows, 320, 160, 500 + rows + s)
    # The counterfactuals, on the split rows and on the whole ones: the first K block
    # dropped (a lost partial there; the whole tiles' sum is one), a weight column
    # scaled by 1 + 1/8.
    lost = ref.w8a8(a[:, 128:], w[:, 128:], S_A, S_B)[0]
    for part in (slice(rows - split_rows, rows), slice(0, rows - split_rows)):
        got, cells = y32[part], want[part].numel()
        if cells == 0:
            continue
        assert int(((got - lost[part]).abs() > f32_band[part]).sum()) > cells // 4
        column = (got[:, 0] - 1.125 * want[part, 0]).abs() > f32_band[part, 0]
        assert int(column.sum()) > want[part].shape[0] // 4


def test_tail_rows_fill_the_last_wave():
    """The split rows: out_proj's prefill shape (704 tiles of 128 x 256 on 132
    programs, 44 in the last wave) splits its last 4 row tiles; in_proj's and
    the 4096^3 GEMM's last waves are nearly full, so they split none."""
    assert ops._fp8.tail_rows(8192, 128, 11, 3, 132) == 512
    assert ops._fp8.tail_rows(8192, 128, 41, 3, 132) == 0
    assert ops._fp8.tail_rows(4096, 128, 16, 3, 132) == 0
    assert ops._fp8.tail_rows(70, 64, 2, 3, 3) == 70
