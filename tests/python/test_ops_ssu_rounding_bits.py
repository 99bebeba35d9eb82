"""R8s's random bits as the stochastic rounding of a 16-bit page spends them:
uniform, and independent between neighbouring elements (the two halves of one
hash word and the words beside them), rows, heads, slots and seeds. The top
four bits of every element's u are read back through the rounding itself:
fifteen steps from one page, step k adding k/16 of an ulp, round up exactly
when u clears the matching threshold, so the count of round-ups is the digit."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit.ops as ops  # noqa: E402

from ops_support import DEV  # noqa: E402

SLOTS, HEADS, HEAD_DIM, DSTATE = 3, 2, 16, 64
SEEDS = (5, 6)
# The page's ulp in [1, 2) and the bits a rounding drops there.
ULP = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10}
# Chi-square quantiles at p = 1e-5 (Wilson-Hilferty), for 15 and 255 degrees
# of freedom: one digit's 16 bins, and a pair of digits' 256.
CHI2_15, CHI2_255 = 51.0, 363.0


def digits(dtype, seed, start):
    """The top four bits of u for every element of `start` under `seed`."""
    ones = lambda *shape: torch.ones(*shape, device=DEV)  # noqa: E731
    x, B, C = ones(SLOTS, HEADS, HEAD_DIM), ones(SLOTS, 1, DSTATE), ones(SLOTS, 1, DSTATE)
    A = torch.zeros(HEADS, device=DEV)  # no decay: the state gains exactly dt
    ups = torch.zeros(start.shape, dtype=torch.int64)
    for k in range(1, 16):
        page = start.clone()
        dt = torch.full((SLOTS, HEADS), k / 16 * ULP[dtype], device=DEV)
        ops.selective_state_update(page, x, dt, A, B, C, enable_stochastic_rounding=True,
                                   rounding_seed=seed)
        up = (page.double() - start.double()).cpu() / ULP[dtype]
        assert torch.all((up == 0) | (up == 1)), "one of the two neighbours"
        ups += up.to(torch.int64)
    # bf16 carries u + k 2^12 into the kept half (u >= (16 - k) 2^12); f16
    # rounds up when u / 2^16 < k / 16.
    return (ups if dtype == torch.bfloat16 else 15 - ups).numpy()


def chi2(counts):
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def joint_chi2(a, b):
    """Chi-square of the 256-cell histogram of digit pairs against uniform."""
    return chi2(np.bincount((a * 16 + b).ravel(), minlength=256))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rounding_bits_are_uniform_and_independent_between_neighbours(dtype):
    gen = torch.Generator().manual_seed(7300)
    # Pages in [1, 2) whose dropped half is zero: each step's sum stays exact.
    steps = int(1 / ULP[dtype]) - 1
    start = (1 + torch.randint(0, steps, (SLOTS, HEADS, HEAD_DIM, DSTATE), generator=gen)
             * ULP[dtype]).to(dtype).to(DEV)
    d = np.stack([digits(dtype, seed, start) for seed in SEEDS])
    assert d.shape == (2, SLOTS, HEADS, HEAD_DIM, DSTATE)
    for per_seed in d:
        assert chi2(np.bincount(per_seed.ravel(), minlength=16)) < CHI2_15
    neighbours = {
        "the halves of one word": (d[..., 0::2], d[..., 1::2]),
        "the words beside it": (d[..., 1:-1:2], d[..., 2::2]),
        "rows": (d[..., :-1, :], d[..., 1:, :]),
        "heads": (d[:, :, 0], d[:, :, 1]),
        "slots": (d[:, :-1], d[:, 1:]),
        "seeds": (d[0], d[1]),
    }
    for name, (a, b) in neighbours.items():
        assert a.size >= 2048, name
        assert joint_chi2(a, b) < CHI2_255, name
    # The test can fail: digits that repeat (one word for a pair, a slot or a
    # seed the key ignored) lie far outside.
    assert joint_chi2(d[0], d[0]) > 10 * CHI2_255
