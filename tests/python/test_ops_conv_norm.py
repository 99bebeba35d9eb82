"""tilejit.ops: causal_conv1d_fn / causal_conv1d_update (R3, R3d) and rms_norm_gated (R6), against plain-torch f64 references (ops_reference.py) at
the bands of docs/numerics.md. With CPU torch tensors on the interpreter (CI); on
the GPU when torch has CUDA and tilejit opens the device. Every band is paired
with the counterfactual it separates, shown to land outside it; every output
tilejit allocates or is handed is poisoned first."""

import math
import re

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402

import ops_reference as ref  # noqa: E402
from ops_reference import F64, bf16  # noqa: E402
from ops_support import (BF16_ULP, CHANNELS, DEV, G, H, N, P,  # noqa: E402,F401
                         assert_band, on_device, outside, poisoned, split_xbc,
                         ssm_inputs, uniform)

# ---------------------------------------------------------------------------
# causal_conv1d_fn and causal_conv1d_update (R3, R3d, R8, R9)

DIM = 160                                  # conv channels: not a multiple of the block


def conv_page(gen, slots, layout):
    """Random pages (slots, DIM, 3) in tilejit's layout or vLLM's channel-last one."""
    taps = bf16(uniform(gen, slots, DIM, 3, lo=-2, hi=2)).bfloat16().to(DEV)
    return taps if layout == "tilejit" else taps.transpose(1, 2).contiguous().transpose(1, 2)


def conv_weights(gen):
    weight = bf16(uniform(gen, DIM, 4, lo=-0.5, hi=0.5)).bfloat16()
    bias = bf16(uniform(gen, DIM, lo=-0.1, hi=0.1)).bfloat16()
    return on_device(weight, bias)


@pytest.mark.parametrize("layout", ["tilejit", "channel_last"])
def test_causal_conv1d_fn_varlen(poisoned, layout):
    gen = torch.Generator().manual_seed(61)
    lengths = [2, 70, 3, 1, 9]
    slots_of = [4, 0, -1, 2, 6]             # sequence 2 is padding
    continues = [False, True, True, True, False]
    tokens, slots = sum(lengths), 8
    wide = bf16(uniform(gen, tokens, DIM + 24, lo=-2, hi=2)).bfloat16().to(DEV)
    x = wide[:, 8:8 + DIM].t()              # (dim, T), channel-last, read in place
    weight, bias = conv_weights(gen)
    page = conv_page(gen, slots, layout)
    before = page.clone()
    cu = torch.tensor([0, 2, 72, 75, 76, 85], dtype=torch.int32, device=DEV)
    out = ops.causal_conv1d_fn(x, weight, bias, page, cu,
                               cache_indices=torch.tensor(slots_of, dtype=torch.int32,
                                                          device=DEV),
                               has_initial_state=torch.tensor(continues, device=DEV),
                               activation="silu", null_block_id=None)  # slot 0 is real
    assert out.shape == (DIM, tokens)
    with pytest.raises(tj.ArgumentError, match="x starts 10 bytes past a 16-byte boundary"):
        ops.causal_conv1d_fn(wide[:, 5:5 + DIM].t(), weight, bias, page, cu)  # vectors misalign
    tok = x.t()
    checked, dropped = 0, 0
    for s, (b, e) in enumerate(zip(cu.tolist(), cu.tolist()[1:])):
        if slots_of[s] < 0:
            assert bool((out[:, b:e] == 0).all()), "a padding sequence's output is zero"
            continue
        init = before[slots_of[s]] if continues[s] else None
        want, state = ref.conv_sequence(tok[b:e], weight, bias, init)
        # f32 against f64 before one bf16 rounding: one bf16 ulp plus the sum's rounding.
        assert_band(out[:, b:e].t(), bf16(want), 1e-5, BF16_ULP, (e - b) * DIM)
        assert torch.equal(page[slots_of[s]].to(F64), state), "raw inputs, oldest first"
        checked += (e - b) * DIM
        if continues[s]:  # the counterfactual: started from zeros
            fresh, _ = ref.conv_sequence(tok[b:e], weight, bias)
            dropped += outside(out[:, b:e].t(), bf16(fresh), 1e-5, BF16_ULP) > 0
    assert checked == (tokens - 3) * DIM and dropped == 2
    for s in range(slots):  # slots no live sequence names are byte-identical
        if s not in (4, 0, 2, 6):
            assert torch.equal(page[s], before[s])


@pytest.mark.parametrize("layout,with_bias", [("tilejit", True), ("channel_last", False)])
def test_causal_conv1d_update_in_place(poisoned, layout, with_bias):
    gen = torch.Generator().manual_seed(62)
    rows, slots = 4, 6
    wide = bf16(uniform(gen, rows, DIM + 40, lo=-2, hi=2)).bfloat16().to(DEV)
    x = wide[:, 8:8 + DIM]                  # rows of a wider buffer, read in place
    weight, bias = conv_weights(gen)
    bias = bias if with_bias else None
    page = conv_page(gen, slots, layout)
    before = page.clone()
    slot_of = [2, -1, 5, 0]
    out = ops.causal_conv1d_update(x, page, weight, bias, activation="silu",
                                   conv_state_indices=torch.tensor(slot_of, dtype=torch.int32,
                                                                   device=DEV),
                                   null_block_id=None)  # slot 0 is real, -1 padding
    assert out.shape == (rows, DIM)
    zero_bias = torch.zeros(DIM, dtype=torch.bfloat16, device=DEV)
    for i, s in enumerate(slot_of):
        if s < 0:
            assert bool((out[i] == 0).all())
            continue
        want, state = ref.conv_sequence(x[i:i + 1], weight, bias if with_bias else zero_bias,
                                        before[s])
        assert_band(out[i], bf16(want[0]), 1e-5, BF16_ULP, DIM)
        assert torch.equal(page[s].to(F64), state), "R3d: [state[1], state[2], x]"
        unshifted, _ = ref.conv_sequence(x[i:i + 1], weight, bias if with_bias else zero_bias)
        assert outside(out[i], bf16(unshifted[0]), 1e-5, BF16_ULP) > DIM // 4
    for s in (1, 3, 4):
        assert torch.equal(page[s], before[s])
    # activation=None, other widths and num_accepted_tokens: test_ops_conv_update_vllm.py.
    with pytest.raises(tj.ArgumentError, match="repeats"):  # the host-side debug check (R8)
        ops.causal_conv1d_update(x, page, weight, bias, activation="silu",
                                 conv_state_indices=torch.tensor([1, 1, 2, 3], device=DEV),
                                 check_slots=True)
    with pytest.raises(tj.ArgumentError, match="num_accepted_tokens must be int32"):
        ops.causal_conv1d_update(x, page, weight, bias, activation="silu",
                                 num_accepted_tokens=torch.ones(rows, device=DEV))


# ---------------------------------------------------------------------------
# rms_norm_gated (R6)

@pytest.mark.parametrize("group,gated", [(256, True), (None, True), (256, False)])
def test_rms_norm_gated(poisoned, group, gated):
    gen = torch.Generator().manual_seed(71)
    width, eps = 1024, 1e-5
    y = bf16(uniform(gen, 2, 3, width, lo=-2, hi=2))
    # Groups of very different scales, so a whole-row norm cannot pass for a per-group one.
    y = (y * torch.repeat_interleave(2.0 ** torch.arange(4.0, dtype=F64), 256)).bfloat16()
    zwide = bf16(uniform(gen, 6, width + 16, lo=-3, hi=3)).bfloat16()
    weight = bf16(uniform(gen, width, lo=0.5, hi=1.5)).bfloat16()
    y, zwide, weight = on_device(y, zwide, weight)
    z = zwide[:, 16:].view(2, 3, width) if gated else None   # z rows of a wider buffer
    out = ops.rms_norm_gated(y, weight, None, z=z, eps=eps, group_size=group,
                             norm_before_gate=False)
    assert out.shape == y.shape and out.dtype == torch.bfloat16
    g = width if group is None else group
    flat = lambda t: None if t is None else t.reshape(6, width)  # noqa: E731
    want = ref.gated_rms_norm(flat(y), flat(z), weight, eps, g)
    assert_band(flat(out), want, 5e-2, 1e-2, 6 * width)          # R6's bf16 band
    other = ref.gated_rms_norm(flat(y), flat(z), weight, eps, 256 if group is None else width)
    assert outside(flat(out), other, 5e-2, 1e-2) > 6 * width // 10  # per-group vs whole-row
    # Which rounding the kernel implements: R6's two points, not the single one.
    single = ref.gated_rms_norm(flat(y), flat(z), weight, eps, g, rounding=1)
    exact = int((flat(out).to(F64).cpu() == want.cpu()).sum())
    exact_single = int((flat(out).to(F64).cpu() == single.cpu()).sum())
    assert exact >= 6 * width * 0.99 and exact - exact_single > 6 * width // 100


def test_rms_norm_gated_refusals():
    y = torch.ones(2, 64, dtype=torch.bfloat16, device=DEV)
    w = torch.ones(64, dtype=torch.bfloat16, device=DEV)
    # The forms it takes (norm_before_gate=True, a bias): test_ops_norm_forms.py.
    for kwargs, text in [(dict(norm_before_gate=False, group_size=48), "does not divide"),
                         (dict(norm_before_gate=False, upcast=False), "upcast=False")]:
        with pytest.raises(tj.ArgumentError, match=text):
            ops.rms_norm_gated(y, w, None, **kwargs)
