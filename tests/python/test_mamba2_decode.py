"""tilejit.mamba2.DecodeStep on the interpreter at a reduced NemotronH geometry:
carried steps with padding rows against the numpy f64 reference of
mamba2_reference.py, in the bands of docs/models.md (bf16 output 5e-2/1e-2, f32
state 1e-2/1e-2), with the dropped-carry counterfactual outside them."""

import numpy as np
import pytest

import tilejit as tj
from conftest import assert_close, bf16_bits, from_bf16_bits, round_bf16
from mamba2_reference import decode_step

OUT_BAND, STATE_BAND = (5e-2, 1e-2), (1e-2, 1e-2)


def small_config():
    """tests/e2e/DecodeStepTest.cpp's smallConfig(): layer 0 FP8, layer 1 bf16
    (an attention layer follows it); in_proj's K of 200 and its 392 outputs
    divide the decode tiles unevenly."""
    return tj.mamba2.Config(hidden_size=200, num_heads=8, head_dim=16, num_groups=2,
                            state_size=32, layer_pattern="MM*")


def random_pages(step, rng):
    """Random pages for every layer, set into `step`; returns the host copies."""
    pages = []
    for layer in range(len(step.layers)):
        conv, ssm = step.pages(layer)
        conv = bf16_bits(round_bf16(rng.standard_normal(conv.shape)))
        ssm = rng.standard_normal(ssm.shape).astype(np.float32)
        step.set_pages(layer, conv, ssm)
        pages.append((conv.copy(), ssm.copy()))
    return pages


def bad_count(got, want, atol, rtol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return int((np.abs(got - want) > atol + rtol * np.abs(want)).sum())


def run_steps(step, ref_pages, batches, rng):
    """Runs `batches` (slot lists) through `step` and the reference in
    lockstep; returns the last outputs (got, want)."""
    cfg, weights = step.config, [step.weights(i) for i in range(len(step.layers))]
    for slots in batches:
        hidden = round_bf16(rng.standard_normal((step.rows, cfg.hidden_size)))
        got = step.step(bf16_bits(hidden), np.array(slots, np.int32))
        want = decode_step(cfg, weights, hidden, slots, ref_pages)
    return from_bf16_bits(got), want


def check_pages(step, ref_pages, initial, used):
    """Pages of used slots in band, every other slot byte-identical."""
    cfg = step.config
    cd = cfg.num_heads * cfg.head_dim + 2 * cfg.num_groups * cfg.state_size
    for layer, ((conv_w, ssm_w), (conv_0, ssm_0)) in enumerate(zip(ref_pages, initial)):
        conv, ssm = step.pages(layer)
        assert_close(from_bf16_bits(conv[used]), from_bf16_bits(conv_w[used]), *OUT_BAND,
                     count=len(used) * cd * (cfg.conv_kernel - 1))
        assert_close(ssm[used], ssm_w[used], *STATE_BAND,
                     count=len(used) * cfg.num_heads * cfg.head_dim * cfg.state_size)
        others = [s for s in range(step.num_slots) if s not in used]
        assert np.array_equal(conv[others], conv_0[others])
        assert np.array_equal(ssm[others], ssm_0[others])


@pytest.mark.parametrize("rows,batches", [
    (1, [[2]]),
    (3, [[4, -1, 1], [1, -1, 4], [4, 2, -1]]),
])
def test_decode_steps_against_f64(rows, batches, rng):
    step = tj.mamba2.DecodeStep(config=small_config(), layers=2, rows=rows, slots=rows + 4)
    assert [info.fp8 for info in step.layers] == [True, False]
    ref_pages = random_pages(step, rng)
    initial = [(c.copy(), s.copy()) for c, s in ref_pages]
    got, want = run_steps(step, ref_pages, batches, rng)
    assert_close(got, want, *OUT_BAND, count=rows * step.hidden_size)
    padding = [r for r, s in enumerate(batches[-1]) if s < 0]
    assert np.all(got[padding] == 0)
    used = sorted({s for b in batches for s in b if s >= 0})
    check_pages(step, ref_pages, initial, used)


def test_dropped_carry_is_outside_the_band(rng):
    """The counterfactual of the bands: a reference that drops the carried
    pages (starts from zeros) disagrees with the step far beyond them."""
    step = tj.mamba2.DecodeStep(config=small_config(), layers=2, rows=3, slots=6)
    cfg = step.config
    ref_pages = random_pages(step, rng)
    dropped = [(np.zeros_like(c), np.zeros_like(s)) for c, s in ref_pages]
    weights = [step.weights(i) for i in range(2)]
    slots = [3, 0, -1]
    hidden = round_bf16(rng.standard_normal((3, cfg.hidden_size)))
    got = from_bf16_bits(step.step(bf16_bits(hidden), np.array(slots, np.int32)))
    want = decode_step(cfg, weights, hidden, slots, ref_pages)
    wrong = decode_step(cfg, weights, hidden, slots, dropped)
    assert bad_count(got, want, *OUT_BAND) == 0
    assert bad_count(got, wrong, *OUT_BAND) > got.size // 4
    _, ssm = step.pages(0)
    assert bad_count(ssm[[3, 0]], ref_pages[0][1][[3, 0]], *STATE_BAND) == 0
    assert bad_count(ssm[[3, 0]], dropped[0][1][[3, 0]], *STATE_BAND) > ssm[[3, 0]].size // 2


def test_bad_slots_and_shapes_raise_and_change_nothing(rng):
    step = tj.mamba2.DecodeStep(config=small_config(), layers=1, rows=3, slots=4)
    pages = random_pages(step, rng)
    hidden = bf16_bits(round_bf16(rng.standard_normal((3, 200))))
    out = np.full((3, 200), 0x7FC0, np.uint16)
    with pytest.raises(tj.ArgumentError, match="slot 1 appears twice"):
        step.step(hidden, np.array([1, -1, 1], np.int32))
    with pytest.raises(tj.ArgumentError, match="slot 4, but the pages hold 4 slots"):
        step.step(hidden, np.array([0, 4, 2], np.int32))
    with pytest.raises(tj.ArgumentError, match="slots must be 3 integers"):
        step.step(hidden, np.array([0, 1], np.int32))
    # Each tensor the plan disagrees with, named with the numbers (the checks
    # of models::checkPlanTensor; nothing converted or copied).
    ok = np.array([0, 1, 2], np.int32)
    bad_tensors = [
        (hidden[:2], None,
         r"tensor 'hidden' \(plan buffer 'act0'\) must have shape \[3, 200\], got \[2, 200\]"),
        (hidden.astype(np.float32), None, r"'hidden' .* must be bf16, got f32"),
        (hidden.view(np.int16), None, r"'hidden' .* must be bf16, got int16"),
        (np.asfortranarray(hidden), None,
         r"'hidden' .* must be contiguous \(row-major\): strides \[1, 3\] \(elements\) "
         r"for shape \[3, 200\], expected \[200, 1\]"),
        (hidden, np.zeros((3, 201), np.uint16)[:, :200],
         r"tensor 'out' \(plan buffer 'act1'\) must be contiguous .* strides \[201, 1\]"),
        (hidden, np.zeros((200, 3), np.uint16),
         r"'out' .* must have shape \[3, 200\], got \[200, 3\]"),
    ]
    for h, o, message in bad_tensors:
        with pytest.raises(tj.ArgumentError, match=message):
            step.step(h, ok, out if o is None else o)
    assert np.all(out == 0x7FC0)
    class DeviceOnly:  # a device array from another framework
        __cuda_array_interface__ = {"shape": (3, 200), "typestr": "<u2", "data": (16, False),
                                    "version": 3}
    with pytest.raises(tj.ArgumentError, match="neither a torch tensor nor a numpy array"):
        step.step(DeviceOnly(), ok, out)
    frozen = np.zeros((3, 200), np.uint16)
    frozen.flags.writeable = False
    with pytest.raises(tj.ArgumentError, match="read-only"):
        step.step(hidden, ok, frozen)
    conv, ssm = step.pages(0)
    assert np.array_equal(conv, pages[0][0]) and np.array_equal(ssm, pages[0][1])
    with pytest.raises(tj.ArgumentError, match=r"layers = 3: the model has 2 Mamba layer\(s\)"):
        tj.mamba2.DecodeStep(config=small_config(), layers=3)
    with pytest.raises(tj.ArgumentError,
                       match=r"tensor 'l0.conv_page' must have shape \[4, 256, 3\], "
                             r"got \[4\]"):
        step.set_pages(0, np.zeros(4, np.uint16), ssm)
    with pytest.raises(tj.ArgumentError, match=r"'l0.ssm_page' must be f32, got float64"):
        step.set_pages(0, np.zeros_like(conv), ssm.astype(np.float64))  # neither written
    conv_after, ssm_after = step.pages(0)
    assert np.array_equal(conv_after, pages[0][0]) and np.array_equal(ssm_after, pages[0][1])
