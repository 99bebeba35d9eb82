"""tilejit.ops.causal_conv1d_update as vLLM calls it: the parameter grid of
vLLM's Mamba test test_causal_conv1d.py (dtypes, widths, activation,
bias, tokens per row, null-block padding, channel-last pages) at reduced
sizes, and the forms of vLLM's current kernel (speculative decoding, varlen
rows, prefix caching's 2-D slot tables), against the f64 references of
conv_reference.py. Outputs poisoned; pages bit-exact (the kernel only moves
inputs); every slot no row names byte-identical; each band paired with a
counterfactual it separates."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402

import conv_reference as ref  # noqa: E402
from conv_reference import F64  # noqa: E402
from ops_support import DEV, assert_band, outside, poisoned, uniform  # noqa: E402,F401

DIM = 272  # a block of 256 channels and a partial one (vLLM's 2048 + 16)
NULL = 0   # vLLM's NULL_BLOCK_ID


def values(gen, *shape, dtype, lo=-2.0, hi=2.0):
    """Random values exactly representable in `dtype`, on the device."""
    return uniform(gen, *shape, lo=lo, hi=hi).to(dtype).to(DEV)


def page_of(gen, slots, taps, dtype, channel_last=True):
    """A conv page (slots, DIM, taps): vLLM's channel-last layout (a
    (slots, taps, DIM) buffer transposed) or tilejit's."""
    if channel_last:
        return values(gen, slots, taps, DIM, dtype=dtype).transpose(1, 2)
    return values(gen, slots, DIM, taps, dtype=dtype)


def params(gen, width, dtype, has_bias):
    weight = values(gen, DIM, width, dtype=dtype, lo=-0.5, hi=0.5)
    bias = values(gen, DIM, dtype=dtype, lo=-0.5, hi=0.5) if has_bias else None
    return weight, bias


def cpu(t):
    return None if t is None else t.cpu()


def check_rows(out, x_rows, page, before, slot_rows, weight, bias, activation, *,
               accepted=None, tokens=None):
    """Every live row's outputs in band and its page bit-exact; padding rows
    zero; pages no row names byte-identical. Returns the count of outputs
    compared and how many a dropped state (the window read as zeros) moves out
    of band."""
    out_dtype = out[0].dtype
    atol, rtol = ref.band(page.dtype, out_dtype)
    compared, separated = 0, 0
    for i, (xs, slot) in enumerate(zip(x_rows, slot_rows)):
        got = out[i]
        if slot == NULL:
            assert bool((got == 0).all()), f"padding row {i} is zero"
            continue
        old = before[slot].t().to(F64).cpu()
        y, new = ref.update_row(xs.cpu(), old, weight.cpu(), cpu(bias), activation,
                                page.dtype, None if accepted is None else accepted[i], tokens)
        want = ref.as_output(y, page.dtype, out_dtype)
        assert_band(got.cpu(), want, atol, rtol, want.numel())
        assert torch.equal(page[slot].t().to(F64).cpu(), new), f"row {i}: page not rolled"
        compared += want.numel()
        dropped, _ = ref.update_row(xs.cpu(), torch.zeros_like(old), weight.cpu(),
                                    cpu(bias), activation, page.dtype,
                                    None if accepted is None else accepted[i], tokens)
        separated += outside(got.cpu(), ref.as_output(dropped, page.dtype, out_dtype),
                             atol, rtol)
    named = set(slot_rows)
    for s in range(page.shape[0]):
        if s not in named or s == NULL:
            assert torch.equal(page[s], before[s]), f"slot {s} no row names changed"
    return compared, separated


def test_update_single_token_grid(poisoned):
    """vLLM's test_causal_conv1d_update: bf16, width 4, one token a row,
    silu and None, with and without a bias; slots start at 1 (0 is the null
    block)."""
    gen = torch.Generator().manual_seed(320)
    batch = 2
    for activation in (None, "silu"):
        for has_bias in (False, True):
            x = values(gen, batch, DIM, 1, dtype=torch.bfloat16)
            page = page_of(gen, batch + 1, 3, torch.bfloat16, channel_last=False)
            weight, bias = params(gen, 4, torch.bfloat16, has_bias)
            before = page.clone()
            indices = torch.arange(1, batch + 1, dtype=torch.int32, device=DEV)
            out = ops.causal_conv1d_update(x, page, weight, bias, activation=activation,
                                           conv_state_indices=indices)
            assert out.shape == x.shape and out.dtype == torch.bfloat16
            compared, separated = check_rows(out.transpose(1, 2), x.transpose(1, 2), page,
                                             before, [1, 2], weight, bias, activation)
            assert compared == batch * DIM and separated > compared // 4


@pytest.mark.parametrize("itype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("width", [3, 4])
@pytest.mark.parametrize("seqlen", [1, 3])
def test_update_batch_gather_grid(poisoned, itype, width, seqlen):
    """vLLM's test_causal_conv1d_update_with_batch_gather: f32 and bf16,
    widths 3 and 4, 1 and 3 tokens a row, silu and None, with and without a
    bias, with and without null-block padding rows; x (batch, dim, seqlen)
    channels contiguous and channel-last pages, as that test builds them."""
    gen = torch.Generator().manual_seed(321 + width + 10 * seqlen)
    batch, entries = 3, 30
    for k, (activation, has_bias) in enumerate([(None, False), (None, True),
                                                ("silu", False), ("silu", True)]):
        padding = 5 if k % 2 == 0 else 0
        x = values(gen, batch + padding, seqlen, DIM, dtype=itype).transpose(1, 2)
        page = page_of(gen, entries, width - 1, itype)
        weight, bias = params(gen, width, itype, has_bias)
        before = page.clone()
        live = (torch.randperm(entries - 1, generator=gen)[:batch] + 1).tolist()
        slot_rows = live + [NULL] * padding
        indices = torch.tensor(slot_rows, dtype=torch.int32, device=DEV)
        out = ops.causal_conv1d_update(x, page, weight, bias, activation=activation,
                                       conv_state_indices=indices)
        assert out.shape == x.shape and out.dtype == itype
        compared, separated = check_rows(out.transpose(1, 2), x.transpose(1, 2), page, before,
                                         slot_rows, weight, bias, activation)
        assert compared == batch * seqlen * DIM and separated > compared // 4


@pytest.mark.parametrize("x_dtype,state_dtype,w_dtype", [
    (torch.float16, torch.float16, torch.float16),
    (torch.float32, torch.bfloat16, torch.float32),
    (torch.bfloat16, torch.float32, torch.bfloat16),
    (torch.float16, torch.bfloat16, torch.float32),
])
def test_update_element_types(poisoned, x_dtype, state_dtype, w_dtype):
    """Each operand in its own dtype, nothing converted on the host: x is
    rounded to the page's dtype (vLLM's x.to(conv_state.dtype)) and the
    output rounded to the page's dtype, then x's. x carries bits a 16-bit
    page drops, so the bit-exact page check separates nearest-even from
    truncation."""
    gen = torch.Generator().manual_seed(322)
    x = values(gen, 4, DIM, dtype=x_dtype) * (1 + 2.0 ** -12)  # bits a bf16 page drops
    page = page_of(gen, 5, 3, state_dtype)
    weight, bias = params(gen, 4, w_dtype, True)
    before = page.clone()
    slot_rows = [3, NULL, 1, 4]
    out = ops.causal_conv1d_update(x, page, weight, bias, activation="silu",
                                   conv_state_indices=torch.tensor(slot_rows, device=DEV))
    assert out.dtype == x_dtype
    compared, _ = check_rows(out[:, None], x[:, None], page, before, slot_rows, weight, bias,
                             "silu")
    assert compared == 3 * DIM


def test_update_speculative_decoding(poisoned):
    """vLLM's current kernel with num_accepted_tokens: 3 draft tokens a row,
    the window starting at tap accepted - 1 of a page of width - 2 + 3 taps,
    the page rolled by one. The counterfactual (accepted taken as 1)
    separates the rows that accepted more."""
    gen = torch.Generator().manual_seed(323)
    width, seqlen, rows = 4, 3, 4
    taps = width - 2 + seqlen
    x = values(gen, rows, seqlen, DIM, dtype=torch.bfloat16).transpose(1, 2)
    page = page_of(gen, 6, taps, torch.bfloat16)
    weight, bias = params(gen, width, torch.bfloat16, True)
    before = page.clone()
    slot_rows, accepted = [2, 5, NULL, 1], [1, 3, 2, 2]
    out = ops.causal_conv1d_update(
        x, page, weight, bias, activation="silu",
        conv_state_indices=torch.tensor(slot_rows, dtype=torch.int32, device=DEV),
        num_accepted_tokens=torch.tensor(accepted, dtype=torch.int32, device=DEV))
    compared, _ = check_rows(out.transpose(1, 2), x.transpose(1, 2), page, before, slot_rows,
                             weight, bias, "silu", accepted=accepted)
    assert compared == 3 * seqlen * DIM
    y, _ = ref.update_row(x[1].t().cpu(), before[5].t().to(F64).cpu(), weight.cpu(),
                          bias.cpu(), "silu", torch.bfloat16, accepted=1)
    assert outside(out[1].t().cpu(), ref.as_output(y, torch.bfloat16, torch.bfloat16),
                   *ref.band(torch.bfloat16, torch.bfloat16)) > DIM // 4
    with pytest.raises(tj.ArgumentError, match="conv_state keeps 3 taps: this call needs 5"):
        ops.causal_conv1d_update(x, page[:, :, :3], weight, bias, activation="silu",
                                 conv_state_indices=torch.tensor(slot_rows, device=DEV),
                                 num_accepted_tokens=torch.tensor(accepted, dtype=torch.int32,
                                                                  device=DEV))


def test_update_varlen_speculative(poisoned):
    """query_start_loc rows of 1 to 3 draft tokens (max_query_len 3) with
    num_accepted_tokens, x (num_tokens, dim) and a 2-D slot table (column 0
    read): vLLM's varlen rows keep taps by the tokens they have."""
    gen = torch.Generator().manual_seed(324)
    width, maxq = 4, 3
    accepted = [2, 1, 1, 3]
    slot_rows = [4, 2, NULL, 6]
    cu = [0, 3, 4, 6, 9]  # rows of 3, 1, 2 and 3 tokens
    x = values(gen, cu[-1], DIM, dtype=torch.float32)
    page = page_of(gen, 8, width - 2 + maxq, torch.float32)
    weight, bias = params(gen, width, torch.float32, False)
    before = page.clone()
    table = torch.tensor([[s, 7] for s in slot_rows], dtype=torch.int64, device=DEV)
    out = ops.causal_conv1d_update(
        x, page, weight, bias, activation=None, conv_state_indices=table,
        num_accepted_tokens=torch.tensor(accepted, dtype=torch.int32, device=DEV),
        query_start_loc=torch.tensor(cu, dtype=torch.int32, device=DEV), max_query_len=maxq)
    assert out.shape == x.shape
    rows = [x[b:e] for b, e in zip(cu, cu[1:])]
    compared, separated = check_rows([out[b:e] for b, e in zip(cu, cu[1:])], rows, page,
                                     before, slot_rows, weight, bias, None, accepted=accepted,
                                     tokens=maxq)
    assert compared == (3 + 1 + 3) * DIM and separated > compared // 4
    with pytest.raises(tj.ArgumentError, match="max_query_len=-1"):
        ops.causal_conv1d_update(x, page, weight, conv_state_indices=table,
                                 query_start_loc=torch.tensor(cu, dtype=torch.int32,
                                                              device=DEV))


def test_update_prefix_caching(poisoned):
    """Prefix caching: the page read at conv_state_indices[i,
    initial_state_idx[i]] and written at [i, block_idx_last_scheduled_token[i]];
    the block read stays as it was when it is not the one written."""
    gen = torch.Generator().manual_seed(325)
    x = values(gen, 3, DIM, dtype=torch.bfloat16)
    page = page_of(gen, 10, 3, torch.bfloat16)
    weight, bias = params(gen, 4, torch.bfloat16, True)
    before = page.clone()
    table = torch.tensor([[3, 4, 5], [NULL, NULL, NULL], [7, 8, 9]], dtype=torch.int32,
                         device=DEV)
    first, last = [0, 0, 2], [1, 0, 2]
    out = ops.causal_conv1d_update(
        x, page, weight, bias, activation="silu", conv_state_indices=table,
        initial_state_idx=torch.tensor(first, dtype=torch.int32, device=DEV),
        block_idx_last_scheduled_token=torch.tensor(last, dtype=torch.int32, device=DEV))
    atol, rtol = ref.band(torch.bfloat16, torch.bfloat16)
    for i, (read, write) in enumerate([(3, 4), (None, None), (9, 9)]):
        if read is None:
            assert bool((out[i] == 0).all())
            continue
        y, new = ref.update_row(x[i:i + 1].cpu(), before[read].t().to(F64).cpu(),
                                weight.cpu(), bias.cpu(), "silu", torch.bfloat16)
        assert_band(out[i:i + 1].cpu(), ref.as_output(y, torch.bfloat16, torch.bfloat16),
                    atol, rtol, DIM)
        assert torch.equal(page[write].t().to(F64).cpu(), new)
    for s in range(10):
        if s not in (4, 9):
            assert torch.equal(page[s], before[s]), f"slot {s}"


def test_update_null_block_conventions():
    """null_block_id=None keeps slot 0 a real slot (tilejit's convention:
    negative indices are padding); the default table (no
    conv_state_indices) has no null block; check_slots=True refuses two rows
    on one slot and lets null-block rows share it."""
    gen = torch.Generator().manual_seed(326)
    x = values(gen, 3, DIM, dtype=torch.bfloat16)
    page = page_of(gen, 4, 3, torch.bfloat16)
    weight, bias = params(gen, 4, torch.bfloat16, True)
    before = page.clone()
    out = ops.causal_conv1d_update(x, page, weight, bias, activation="silu",
                                   conv_state_indices=torch.tensor([0, -1, 2], device=DEV),
                                   null_block_id=None)
    assert not bool((out[0] == 0).all()) and bool((out[1] == 0).all())
    assert not torch.equal(page[0], before[0]) and torch.equal(page[1], before[1])
    default = ops.causal_conv1d_update(x, page.clone(), weight, bias, activation="silu")
    assert not bool((default[0] == 0).all()), "row 0 on slot 0 when no table is given"
    ops.causal_conv1d_update(x, page, weight, bias, conv_state_indices=torch.tensor(
        [NULL, NULL, 2], device=DEV), check_slots=True)
    with pytest.raises(tj.ArgumentError, match="repeats"):
        ops.causal_conv1d_update(x, page, weight, bias, conv_state_indices=torch.tensor(
            [1, 1, 2], device=DEV), check_slots=True)
    with pytest.raises(tj.ArgumentError, match="cache_seqlens"):
        ops.causal_conv1d_update(x, page, weight, cache_seqlens=torch.zeros(3))
    with pytest.raises(tj.ArgumentError, match="activation='gelu'"):
        ops.causal_conv1d_update(x, page, weight, activation="gelu")


def test_general_form_takes_strides_as_arguments():
    """conv_update's general form reads x and the page through stride
    arguments: the plans' stride constants are refused with it, naming the
    rule; the plans' form keeps them, with or without the null block."""
    rule = ("outside the plans' form (bf16, width 4, one token, SiLU, a bias), x_stride, "
            "x_col and state_layout stay 0 (strides are parameters)")
    for form in (dict(general=1), dict(x_type=2), dict(width=3), dict(silu=0)):
        with pytest.raises(tj.ArgumentError) as info:
            tj.kernels.conv_update.build(channels=256, x_stride=512, **form)
        assert "x_stride = 512, x_col = 0, state_layout = 0 breaks the rule " + rule in \
            str(info.value)
    tj.kernels.conv_update.build(channels=256, x_stride=512, state_layout=1, null_block=1)
