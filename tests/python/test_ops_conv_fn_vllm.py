"""tilejit.ops.causal_conv1d_fn as vLLM calls it: the parameter grid of
vLLM's test_causal_conv1d_varlen (batch, null-block padding, dim, seqlen) at
reduced sizes, x read in place as a column range of a wider token-major
buffer, plus what that grid leaves out (activation None, no bias, f16, f32
and mixed dtypes), against the f64 references of conv_reference.py. Outputs
poisoned; final pages bit-exact; slots no sequence names byte-identical; the
band paired with a dropped-initial-state counterfactual."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402

import conv_reference as ref  # noqa: E402
from conv_reference import F64  # noqa: E402
from ops_support import DEV, assert_band, outside, poisoned, uniform  # noqa: E402,F401

NULL = 0  # vLLM's NULL_BLOCK_ID
LEFT, RIGHT = 64, 8  # columns around x in its token-major buffer (vLLM: 4096 and 64)


def values(gen, *shape, dtype, lo=-2.0, hi=2.0):
    return uniform(gen, *shape, lo=lo, hi=hi).to(dtype).to(DEV)


def split_lengths(gen, seqlen, sequences):
    """vLLM's split of seqlen tokens at sequences - 1 random ends (fewer when
    the tokens run out), every length >= 1."""
    ends = torch.randperm(seqlen - 1, generator=gen)[:sequences - 1].sort().values
    bounds = [-1] + ends.tolist() + [seqlen - 1]
    return [b - a for a, b in zip(bounds, bounds[1:])]


def run_case(gen, *, dim, lengths, slot_of, continues, x_dtype, state_dtype, w_dtype,
             has_bias, activation, entries):
    """One call and its checks; returns (outputs compared, outputs a dropped
    initial state moves out of band)."""
    tokens = sum(lengths)
    wide = values(gen, tokens, LEFT + dim + RIGHT, dtype=x_dtype)
    x = wide[:, LEFT:LEFT + dim].t()  # (dim, T), channel-last, read in place
    weight = values(gen, dim, 4, dtype=w_dtype, lo=-0.5, hi=0.5)
    bias = values(gen, dim, dtype=w_dtype, lo=-0.5, hi=0.5) if has_bias else None
    page = values(gen, entries, 3, dim, dtype=state_dtype).transpose(1, 2)
    before = page.clone()
    cu = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(), dtype=torch.int32)
    out = ops.causal_conv1d_fn(x, weight, bias, page, cu.to(DEV),
                               cache_indices=torch.tensor(slot_of, dtype=torch.int32,
                                                          device=DEV),
                               has_initial_state=torch.tensor(continues, device=DEV),
                               activation=activation)
    assert out.shape == x.shape and out.dtype == x_dtype
    atol, rtol = ref.band(state_dtype, x_dtype)
    compared, separated = 0, 0
    w, b = weight.cpu(), None if bias is None else bias.cpu()
    for s, (start, end) in enumerate(zip(cu.tolist(), cu.tolist()[1:])):
        got = out[:, start:end].t().cpu()
        if slot_of[s] == NULL:
            assert bool((got == 0).all()), f"padding sequence {s} is zero"
            continue
        old = before[slot_of[s]].t().to(F64).cpu()
        xs = x[:, start:end].t().cpu()
        y, taps = ref.prefill_sequence(xs, w, b, activation, state_dtype,
                                       old if continues[s] else None)
        assert_band(got, ref.as_output(y, state_dtype, x_dtype), atol, rtol, (end - start) * dim)
        assert torch.equal(page[slot_of[s]].t().to(F64).cpu(), taps), f"sequence {s}'s page"
        compared += (end - start) * dim
        if continues[s]:
            fresh, _ = ref.prefill_sequence(xs, w, b, activation, state_dtype)
            separated += outside(got, ref.as_output(fresh, state_dtype, x_dtype), atol, rtol)
    named = set(slot_of[:len(lengths)])
    for e in range(entries):
        if e not in named or e == NULL:
            assert torch.equal(page[e], before[e]), f"slot {e} no sequence names changed"
    return compared, separated


@pytest.mark.parametrize("batch", [4, 10])
@pytest.mark.parametrize("with_padding", [True, False])
@pytest.mark.parametrize("seqlen", [8, 249])
def test_fn_varlen_grid(poisoned, batch, with_padding, seqlen):
    """vLLM's test_causal_conv1d_varlen: bf16, width 4, SiLU, a bias; dims 64
    and 272 (vLLM's 64 and 4096); batch 4 and 10, three null-block sequences
    at the end with padding; slots from 1; random has_initial_state; a slot
    table longer than the sequences when the tokens run out (read as vLLM
    does: the first S entries)."""
    gen = torch.Generator().manual_seed(330 + batch + seqlen + with_padding)
    padding = 3 if with_padding else 0
    for dim in (64, 272):
        lengths = split_lengths(gen, seqlen, batch + padding)
        entries = batch * 10
        live = (torch.randperm(entries - 1, generator=gen)[:batch] + 1).tolist()
        slot_of = live + [NULL] * padding
        continues = torch.randint(0, 2, (len(lengths),), generator=gen).bool().tolist()
        continues[0] = True  # the counterfactual needs a continuing sequence
        compared, separated = run_case(
            gen, dim=dim, lengths=lengths, slot_of=slot_of, continues=continues,
            x_dtype=torch.bfloat16, state_dtype=torch.bfloat16, w_dtype=torch.bfloat16,
            has_bias=True, activation="silu", entries=entries)
        real = [n for n, s in zip(lengths, slot_of) if s != NULL]
        assert compared == sum(real) * dim and separated > 0


@pytest.mark.parametrize("x_dtype,state_dtype,w_dtype,has_bias,activation", [
    (torch.bfloat16, torch.bfloat16, torch.bfloat16, False, None),
    (torch.float32, torch.float32, torch.float32, True, "silu"),
    (torch.float16, torch.float16, torch.float16, True, None),
    (torch.float32, torch.bfloat16, torch.float32, False, "swish"),
    (torch.bfloat16, torch.float32, torch.float16, True, True),
])
def test_fn_forms(poisoned, x_dtype, state_dtype, w_dtype, has_bias, activation):
    """What vLLM's prefill grid leaves out: activation None (and the
    'swish' / True spellings), no bias, f16, f32 and mixed dtypes, short
    sequences (L < 3 keeps old taps), each operand in its own dtype."""
    gen = torch.Generator().manual_seed(335)
    lengths, slot_of = [2, 70, 1, 9, 3], [4, 1, NULL, 2, 6]
    continues = [True, True, True, False, True]
    compared, separated = run_case(
        gen, dim=80, lengths=lengths, slot_of=slot_of, continues=continues, x_dtype=x_dtype,
        state_dtype=state_dtype, w_dtype=w_dtype, has_bias=has_bias, activation=activation,
        entries=8)
    assert compared == (2 + 70 + 9 + 3) * 80 and separated > 0


def test_fn_refusals():
    """Prefix caching and widths other than 4 are refused by name; a slot
    table shorter than the sequences too."""
    gen = torch.Generator().manual_seed(336)
    x = values(gen, 8, 64, dtype=torch.bfloat16).t()
    page = values(gen, 4, 64, 3, dtype=torch.bfloat16)
    weight = values(gen, 64, 4, dtype=torch.bfloat16)
    cu = torch.tensor([0, 3, 8], dtype=torch.int32, device=DEV)
    for name in ("block_idx_first_scheduled_token", "block_idx_last_scheduled_token",
                 "initial_state_idx", "num_computed_tokens"):
        with pytest.raises(tj.ArgumentError, match=f"{name} is not supported"):
            ops.causal_conv1d_fn(x, weight, None, page, cu, **{name: cu})
    with pytest.raises(tj.ArgumentError, match="causal_conv1d_fn is built for width 4"):
        ops.causal_conv1d_fn(x, weight[:, :3].contiguous(), None, page, cu)
    with pytest.raises(tj.ArgumentError, match="cache_indices has 1 entries for 2 sequences"):
        ops.causal_conv1d_fn(x, weight, None, page, cu,
                             cache_indices=torch.tensor([1], dtype=torch.int32, device=DEV))
