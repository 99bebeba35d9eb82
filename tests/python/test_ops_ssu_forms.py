"""tilejit.ops.selective_state_update in vLLM's varlen and speculative-decoding
forms (vLLM's test_selective_state_update_varlen, _with_num_accepted_tokens,
_varlen_with_num_accepted grids at reduced sizes), operands read in place from
wider rows, the padding conventions, the device-side slot checks and what
stays refused, against our f64 oracle (ssu_reference.py)."""

import re

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402

from ops_support import DEV, poisoned  # noqa: E402,F401
from ssu_support import ITYPES, head_inputs, randn, verify  # noqa: E402

HEADS, HEAD_DIM, GROUPS = 2, 16, 1


def varlen_batch(gen, batch, max_seq_len):
    counts = torch.randint(1, max_seq_len + 1, (batch,), generator=gen)
    cu = torch.tensor([0] + torch.cumsum(counts, 0).tolist(), dtype=torch.int32)
    return counts, cu.to(DEV)


# vLLM test_selective_state_update_varlen: 4 sequences of 1..max_seq_len
# tokens, no slot table (sequence i on slot i), itype f32/bf16 (+ f16).
@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("has_z", [False, True])
@pytest.mark.parametrize("dstate", [16, 64])
@pytest.mark.parametrize("max_seq_len", [1, 2, 4])
def test_varlen(poisoned, itype, has_z, dstate, max_seq_len):
    gen = torch.Generator().manual_seed(4000 + dstate + 10 * max_seq_len + has_z)
    batch = 4
    counts, cu = varlen_batch(gen, batch, max_seq_len)
    tokens = int(counts.sum())
    state = randn(gen, batch, HEADS, HEAD_DIM, dstate, dtype=itype)
    inputs = head_inputs(gen, tokens, HEADS, HEAD_DIM, dstate, GROUPS, itype, False, has_z)
    before = state.clone()
    out = ops.selective_state_update(state, dt_softplus=True, cu_seqlens=cu, **inputs)
    cfs = [("dropped carry", {"page": torch.zeros_like(before)}, "y", 0.25)]
    chained = sum(int(n) > 1 for n in counts)
    if itype == torch.float32 and chained:
        # Every token from the sequence's first state (the carry within a
        # sequence dropped): the last state of each sequence of >= 2 tokens
        # then misses the earlier tokens.
        cfs.append(("tokens not chained", {"cu_seqlens": None,
                                           "src": per_token_slots(cu, tokens)}, "state",
                    0.5 * chained / batch))
    verify(out, state, before, inputs, cfs, cu_seqlens=cu)


def per_token_slots(cu, tokens):
    """Each token on its sequence's slot, one token per row."""
    slots = torch.zeros(tokens, dtype=torch.int64)
    for i in range(len(cu) - 1):
        slots[int(cu[i]):int(cu[i + 1])] = i
    return slots


def spec_tables(gen, batch, max_seq_len, counts):
    """vLLM's recipe: state_batch_indices null (0) but at the read column
    max(accepted - 1, 0) (slots 1..14), each token's own dst slot from 15."""
    accepted = torch.randint(0, max_seq_len, (batch,), generator=gen)
    accepted[0], accepted[1] = 0, max_seq_len
    src = torch.zeros(batch, max_seq_len, dtype=torch.int32)
    first = torch.randperm(14, generator=gen)[:batch] + 1
    for i in range(batch):
        src[i, max(int(accepted[i]) - 1, 0)] = int(first[i])
    dst = torch.zeros(batch, max_seq_len, dtype=torch.int32)
    nxt = 15
    for i in range(batch):
        for t in range(int(counts[i])):
            dst[i, t], nxt = nxt, nxt + 1
    return accepted.to(DEV), src.to(DEV), dst.to(DEV)


# vLLM test_selective_state_update_with_num_accepted_tokens and
# _varlen_with_num_accepted (itype f32/bf16, has_z, dstate 16/64, max_seq_len
# 2/4, cu_seqlens int32, num_accepted_tokens int64, 50 slots, null block 0);
# `varlen` False is the same step with one token per sequence.
@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("has_z", [False, True])
@pytest.mark.parametrize("dstate", [16, 64])
@pytest.mark.parametrize("max_seq_len", [2, 4])
@pytest.mark.parametrize("varlen", [True, False])
def test_spec_decoding(poisoned, itype, has_z, dstate, max_seq_len, varlen):
    gen = torch.Generator().manual_seed(5000 + dstate + 10 * max_seq_len + has_z + 2 * varlen)
    batch = 4
    counts, cu = varlen_batch(gen, batch, max_seq_len) if varlen else \
        (torch.ones(batch, dtype=torch.int64), None)
    tokens = int(counts.sum())
    state = randn(gen, 50, HEADS, HEAD_DIM, dstate, dtype=itype)
    accepted, src, dst = spec_tables(gen, batch, max_seq_len, counts)
    inputs = head_inputs(gen, tokens, HEADS, HEAD_DIM, dstate, GROUPS, itype, False, has_z)
    before = state.clone()
    out = torch.full((tokens, HEADS, HEAD_DIM), float("nan"), dtype=itype, device=DEV)
    ops.selective_state_update(state, dt_softplus=True, out=out, cu_seqlens=cu,
                               state_batch_indices=src, dst_state_batch_indices=dst,
                               num_accepted_tokens=accepted, null_block_id=0, **inputs)
    forms = dict(cu_seqlens=cu, src=src, dst=dst, accepted=accepted, pad=0)
    # Reading column 0 instead moves every sequence with >= 2 accepted tokens
    # (sequence 1 always) to the null block or another slot.
    moved = sum(int(counts[i]) for i in range(batch) if int(accepted[i]) >= 2)
    cfs = [("column 0 read, not the accepted one", {"accepted": torch.zeros_like(accepted)},
            "state", 0.5 * moved / tokens)]
    _, writes = verify(out, state, before, inputs, cfs, **forms)
    assert len(writes) == tokens, "every token's state is stored to its own slot"


@pytest.mark.parametrize("state_dtype", [torch.float16, torch.bfloat16])
def test_16bit_page_rounds_once_per_call(poisoned, state_dtype):
    """R8s nearest-even: a 3-token sequence carries f32 between its tokens and
    rounds once at the store; y uses the un-rounded state. The counterfactual:
    the state rounded after every token, which drifts by more than one ulp on
    a share of the elements."""
    gen = torch.Generator().manual_seed(6000)
    state = randn(gen, 2, HEADS, HEAD_DIM, 64, dtype=state_dtype)
    inputs = head_inputs(gen, 6, HEADS, HEAD_DIM, 64, GROUPS, torch.float32, False, False)
    cu = torch.tensor([0, 3, 6], dtype=torch.int32, device=DEV)
    before = state.clone()
    out = ops.selective_state_update(state, dt_softplus=True, cu_seqlens=cu, **inputs)
    verify(out, state, before, inputs, [], cu_seqlens=cu)
    # The f32 page twin: the same call's states differ from the 16-bit ones
    # only by the final rounding.
    twin = before.float()
    ops.selective_state_update(twin, dt_softplus=True, cu_seqlens=cu, **inputs)
    assert torch.equal(twin.to(state_dtype), state)


def test_operands_in_place_from_wider_rows(poisoned):
    """x, B, C and z as column ranges of in_proj-like rows with padding
    columns, dt inside a wider row: read in place, no copy, same result as
    contiguous copies."""
    gen = torch.Generator().manual_seed(6100)
    rows, dstate = 3, 16
    wide = randn(gen, rows, 2 * HEADS * HEAD_DIM + 2 * dstate + 40, dtype=torch.bfloat16)
    z = wide[:, 8:8 + HEADS * HEAD_DIM].view(rows, HEADS, HEAD_DIM)
    x = wide[:, 40:40 + HEADS * HEAD_DIM].view(rows, HEADS, HEAD_DIM)
    base = 40 + HEADS * HEAD_DIM
    B = wide[:, base:base + dstate].view(rows, 1, dstate)
    C = wide[:, base + dstate + 8:base + 2 * dstate + 8].view(rows, 1, dstate)
    dt = randn(gen, rows, HEADS + 6, dtype=torch.float16)[:, 3:3 + HEADS]
    inputs = head_inputs(gen, rows, HEADS, HEAD_DIM, dstate, 1, torch.float32, True, False)
    inputs.update(x=x, B=B, C=C, z=z, dt=dt)
    state = randn(gen, rows, HEADS, HEAD_DIM, dstate)
    before = state.clone()
    out = ops.selective_state_update(state, dt_softplus=True, **inputs)
    verify(out, state, before, inputs, [("dropped carry", {"page": torch.zeros_like(before)},
                                         "y", 0.25)])
    copies = {k: (v.contiguous() if v is not None else None) for k, v in inputs.items()}
    twin = before.clone()
    assert torch.equal(ops.selective_state_update(twin, dt_softplus=True, **copies), out)
    assert torch.equal(twin, state)


def test_padding_conventions_and_device_checks(poisoned):
    """pad_slot_id (mamba_ssm/tilejit: -1) and null_block_id (vLLM: a reserved
    slot never read or written); a spec dst slot past the page is caught on
    the device before its row touches any state."""
    gen = torch.Generator().manual_seed(6200)
    state = randn(gen, 6, HEADS, HEAD_DIM, 16)
    inputs = head_inputs(gen, 3, HEADS, HEAD_DIM, 16, GROUPS, torch.float32, True, False)
    before = state.clone()
    idx = torch.tensor([2, 0, -1], dtype=torch.int32, device=DEV)
    out = ops.selective_state_update(state, dt_softplus=True, state_batch_indices=idx,
                                     null_block_id=0, **inputs)
    verify(out, state, before, inputs, [], src=idx, pad=0)
    assert torch.equal(state[0], before[0]) and bool((out[1:] == 0).all())
    state.copy_(before)
    out = ops.selective_state_update(state, dt_softplus=True, state_batch_indices=idx,
                                     null_block_id=None, pad_slot_id=-1, **inputs)
    verify(out, state, before, inputs, [], src=idx, pad=-1)  # slot 0 is a slot here
    src = torch.tensor([[1, 0], [2, 0], [3, 0]], dtype=torch.int32, device=DEV)
    dst = torch.tensor([[4, 0], [5, 0], [6, 0]], dtype=torch.int32, device=DEV)  # 6: past
    state.copy_(before)
    with pytest.raises(tj.ArgumentError, match=re.escape("dst_state_batch_indices[2] is at")):
        ops.selective_state_update(state, dt_softplus=True, state_batch_indices=src,
                                   dst_state_batch_indices=dst, null_block_id=0,
                                   num_accepted_tokens=torch.ones(3, dtype=torch.int64,
                                                                  device=DEV), **inputs)
    # The row whose check failed reads and writes nothing and its y is NaN;
    # the other rows ran (slots 4, 5).
    assert torch.equal(state[:4], before[:4])


def test_refusals_name_what_stays_unsupported():
    gen = torch.Generator().manual_seed(6300)
    state = randn(gen, 4, HEADS, HEAD_DIM, 16, dtype=torch.float16)
    inputs = head_inputs(gen, 2, HEADS, HEAD_DIM, 16, GROUPS, torch.float32, True, False)
    before = state.clone()
    table = torch.tensor([[1, 2], [3, 0]], dtype=torch.int32, device=DEV)
    cases = [
        (dict(state=state.float(), enable_stochastic_rounding=True),
         "enable_stochastic_rounding needs a bfloat16 or float16 state"),
        (dict(enable_stochastic_rounding=True, rounding_seed=torch.ones(2, dtype=torch.int64)),
         "rounding_seed has shape"),
        (dict(num_accepted_tokens=torch.ones(2, dtype=torch.int32, device=DEV)),
         "need state_batch_indices"),
        (dict(state_batch_indices=table, dst_state_batch_indices=table.long()),
         "one index type per call"),
        (dict(null_block_id=0.5), "must be an int"),
        (dict(state_batch_indices=table, dst_state_batch_indices=table.flip(0), check_slots=True,
              num_accepted_tokens=torch.full((2,), 2, dtype=torch.int32, device=DEV)),
         "would race"),
    ]
    for kwargs, text in cases:
        with pytest.raises(tj.ArgumentError, match=re.escape(text)):
            ops.selective_state_update(**{"state": state, "dt_softplus": True, **inputs,
                                          **kwargs})
    assert torch.equal(state, before), "a refused call changes nothing"
    # is_blackwell only picks vLLM's launch config: accepted.
    ops.selective_state_update(state, dt_softplus=True, is_blackwell=True, **inputs)
