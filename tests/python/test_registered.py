"""The registered Mamba2 kernels as functions on the interpreter, against numpy
f64 references of docs/numerics.md (R6, R3d)."""

import numpy as np
import pytest

import tilejit as tj
from conftest import assert_close, bf16_bits, from_bf16_bits, round_bf16, silu


def test_the_registry_is_listed_whole():
    names = [k.name for k in tj.kernels]
    assert names == sorted(info.name for info in tj.registered_kernels())
    assert {"gated_rmsnorm", "conv_update"} <= set(names)
    info = {k.name: k for k in tj.registered_kernels()}["gated_rmsnorm"]
    assert tj.kernels.gated_rmsnorm.constants == {c.name: c.default for c in info.constants}
    assert {"width", "group_size"} <= set(tj.kernels.gated_rmsnorm.constants)
    assert "gated_rmsnorm" in dir(tj.kernels)


def gated_rmsnorm_reference(y, z, w, group, eps):
    """R6 in f64 with its two rounding points: bf16(w * bf16(v * r))."""
    v = y * silu(z)
    rows, width = v.shape
    grouped = v.reshape(rows, width // group, group)
    r = 1 / np.sqrt((grouped ** 2).mean(-1, keepdims=True) + eps)
    return round_bf16(w * round_bf16((grouped * r).reshape(rows, width)))


@pytest.mark.parametrize("width,group", [(1024, 256), (4096, 512)])
def test_gated_rmsnorm(rng, width, group):
    rows, eps = 3, 1e-5
    y = round_bf16(rng.standard_normal((rows, width)))
    z = round_bf16(rng.standard_normal((rows, width)))
    w = round_bf16(1 + 0.1 * rng.standard_normal(width))
    # Groups of very different scales, so a whole-row norm cannot pass.
    y *= np.repeat(2.0 ** np.arange(width // group), group)[None, :]
    out = np.full((rows, width), 0x7FC0, np.uint16)
    tj.kernels.gated_rmsnorm(bf16_bits(y), bf16_bits(z), bf16_bits(w), out, rows, eps,
                             grid=(rows, width // group), width=width, group_size=group)
    got = from_bf16_bits(out)
    want = gated_rmsnorm_reference(y, z, w, group, eps)
    # R6's bf16 band (5e-2 / 1e-2): an f32 path differs by at most 1 bf16 ulp.
    assert_close(got, want, 5e-2, 1e-2, rows * width)
    whole_row = gated_rmsnorm_reference(y, z, w, width, eps)
    assert np.abs(whole_row - want).max() > 1e-1, "the counterfactual must leave the band"


def test_conv_update_shifts_state_and_skips_padding_rows(rng):
    batch, channels, slots = 3, 512, 4
    x = round_bf16(rng.standard_normal((batch, channels)))
    state = round_bf16(rng.standard_normal((slots, channels, 3)))
    weight = round_bf16(0.5 * rng.standard_normal((channels, 4)))
    bias = round_bf16(0.1 * rng.standard_normal(channels))
    slot_of = np.array([2, -1, 0], np.int32)  # row 1 is padding
    state_bits = bf16_bits(state)
    out = np.full((batch, channels), 0x7FC0, np.uint16)
    tj.kernels.conv_update(bf16_bits(x), state_bits, slot_of, bf16_bits(weight),
                           bf16_bits(bias), out, grid=(batch, channels // 256),
                           channels=channels)
    got_out, got_state = from_bf16_bits(out), from_bf16_bits(state_bits)
    want_state = state.copy()
    for row, slot in enumerate(slot_of):
        if slot < 0:
            continue
        pre = bias + (weight[:, :3] * state[slot]).sum(1) + weight[:, 3] * x[row]
        # R3d's output is bf16(silu(f32 pre)): one bf16 rounding, <= 1 ulp apart.
        assert_close(got_out[row], round_bf16(silu(pre)), 1e-2, 1e-2, channels)
        want_state[slot] = np.stack([state[slot, :, 1], state[slot, :, 2], x[row]], -1)
    assert (got_out[1] == 0).all(), "a padding row's output is zero"
    # The shift moves bf16 values unchanged: exact, and other slots byte-identical.
    assert (got_state == want_state).all()


def ssm_update_reference(xbc, dt, a_log, dt_bias, d, state, heads, head_dim, n, groups,
                         dt_min, dt_max):
    """R5d for one row in f64: the new [H, P, N] state and y [H*P] (before bf16)."""
    inner = heads * head_dim
    x = xbc[:inner].reshape(heads, head_dim)
    b = xbc[inner:inner + groups * n].reshape(groups, n)
    c = xbc[inner + groups * n:].reshape(groups, n)
    v = dt + dt_bias
    dtp = np.clip(np.where(v > 20, v, np.log1p(np.exp(v))), dt_min, dt_max)
    g = np.arange(heads) // (heads // groups)
    decay = np.exp(-np.exp(a_log) * dtp)
    new = decay[:, None, None] * state + (dtp[:, None] * x)[:, :, None] * b[g][:, None, :]
    y = (new * c[g][:, None, :]).sum(-1) + d[:, None] * x
    return new, y.reshape(inner)


def test_ssm_update_updates_the_slot_in_place(rng):
    heads, head_dim, n, groups, block_p, rows, slots = 4, 8, 16, 2, 4, 3, 5
    geometry = dict(heads=heads, head_dim=head_dim, state=n, groups=groups, block_p=block_p)
    inner, channels = heads * head_dim, heads * head_dim + 2 * groups * n
    xbc = round_bf16(rng.standard_normal((rows, channels)))
    dt = round_bf16(rng.standard_normal((rows, heads)))
    a_log, dt_bias, d = (rng.standard_normal(heads).astype(np.float32) for _ in range(3))
    page = rng.standard_normal((slots, heads, head_dim, n)).astype(np.float32)
    slot_of = np.array([4, -1, 1], np.int32)
    got_page = page.copy()
    y = np.full((rows, inner), 0x7FC0, np.uint16)
    tj.kernels.ssm_update(bf16_bits(xbc), bf16_bits(dt), a_log, dt_bias, d, slot_of, got_page,
                          y, 0.0, float("inf"), grid=(head_dim // block_p, heads, rows),
                          **geometry)
    for row, slot in enumerate(slot_of):
        if slot < 0:
            assert (y[row] == 0).all(), "a padding row's y is zero"
            continue
        new, want_y = ssm_update_reference(xbc[row], dt[row], a_log, dt_bias, d, page[slot],
                                           heads, head_dim, n, groups, 0.0, np.inf)
        # R5d's f32 band for the state; y is one bf16 rounding of an f32 value.
        assert_close(got_page[slot], new, 1e-3, 3e-4, heads * head_dim * n)
        assert_close(from_bf16_bits(y[row]), round_bf16(want_y), 1e-2, 1e-2, inner)
        # Counterfactual: a dropped carry (a zero old state) leaves the band.
        dropped, _ = ssm_update_reference(xbc[row], dt[row], a_log, dt_bias, d,
                                          0 * page[slot], heads, head_dim, n, groups, 0.0,
                                          np.inf)
        assert np.abs(dropped - new).max() > 1e-1
    untouched = [s for s in range(slots) if s not in slot_of]
    assert (got_page[untouched] == page[untouched]).all(), "other slots stay byte-identical"
