"""The device checks of the metadata the ops' vLLM forms trust (issue 32, R8/R9):
selective_state_update's cu_seqlens and num_accepted_tokens, causal_conv1d_update's
query_start_loc, num_accepted_tokens and prefix-caching columns. A bad value is
raised by the call on the interpreter (by check_errors() on the GPU), the failed
sequence's outputs are NaN, its state untouched, the good sequences computed, and
nothing past an operand is read or written: every operand lies inside a larger
buffer whose guard elements must come back untouched (on the interpreter an access
past a view's extent would fail the call instead of naming the metadata)."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit.ops as ops  # noqa: E402

from ops_support import DEV, uniform  # noqa: E402
from test_ops_bad_input import refusal  # noqa: E402

GUARD = 3  # guard rows either side of every operand
SENTINEL = 7.0


def guarded(gen, *shape):
    """An f32 tensor of `shape` inside a buffer with GUARD sentinel rows either
    side; returns (view, buffer)."""
    buf = torch.full((shape[0] + 2 * GUARD,) + shape[1:], SENTINEL)
    buf[GUARD:-GUARD] = uniform(gen, *shape, lo=-1.0, hi=1.0)
    buf = buf.to(DEV)
    return buf[GUARD:-GUARD], buf


def guards_intact(*buffers):
    return all(bool((b[:GUARD] == SENTINEL).all()) and bool((b[-GUARD:] == SENTINEL).all())
               for b in buffers)


def ints(values):
    return torch.tensor(values, dtype=torch.int32, device=DEV)


# ---------------------------------------------------------------------------
# selective_state_update: varlen (cu_seqlens) and speculative decoding.

HEADS, HEAD_DIM, DSTATE, SLOTS = 2, 16, 16, 6


def ssu_call(gen, rows, cu, *, src, dst=None, accepted=None):
    """One call on `rows` rows of guarded operands; returns (message, out,
    state, state before, buffers)."""
    x, xb = guarded(gen, rows, HEADS, HEAD_DIM)
    dt, dtb = guarded(gen, rows, HEADS)
    B, Bb = guarded(gen, rows, 1, DSTATE)
    C, Cb = guarded(gen, rows, 1, DSTATE)
    out, outb = guarded(gen, rows, HEADS, HEAD_DIM)
    state, stateb = guarded(gen, SLOTS, HEADS, HEAD_DIM, DSTATE)
    A = -torch.rand(HEADS, generator=gen).to(DEV)
    before = state.clone()
    got = refusal(lambda: ops.selective_state_update(
        state, x, dt, A, B, C, dt_softplus=True, out=out, state_batch_indices=ints(src),
        dst_state_batch_indices=None if dst is None else ints(dst),
        num_accepted_tokens=None if accepted is None else ints(accepted),
        cu_seqlens=None if cu is None else ints(cu)))
    return got, out, state, before, (xb, dtb, Bb, Cb, outb, stateb)


@pytest.mark.parametrize("cu, bad, text", [
    ([0, 2, 5], 1, "cu_seqlens[1] .. cu_seqlens[2] is not a range of x's rows"),
    ([0, 3, 2], 1, "cu_seqlens[1] .. cu_seqlens[2] is not a range of x's rows"),
    ([-2, 1, 3], 0, "cu_seqlens[0] .. cu_seqlens[1] is not a range of x's rows"),
])
def test_ssu_cu_seqlens_outside_the_rows(cu, bad, text):
    gen = torch.Generator().manual_seed(3201)
    src = [1, 2]
    got, out, state, before, buffers = ssu_call(gen, 3, cu, src=src)
    assert got and text in got and "selective_state_update" in got, got
    assert guards_intact(*buffers), "nothing past an operand is read into or written"
    assert torch.equal(state[src[bad]], before[src[bad]]), "the failed sequence's slot"
    good = 1 - bad
    assert not torch.equal(state[src[good]], before[src[good]]), "the good sequence ran"
    lo = min(max(cu[bad], 0), 3)
    hi = min(max(cu[bad + 1], lo), 3)
    assert bool(torch.isnan(out[lo:hi]).all()), "the failed sequence's rows are NaN"
    rest = [r for r in range(3) if not lo <= r < hi]
    assert not bool(torch.isnan(out[rest]).any())
    for s in range(SLOTS):
        if s not in src:
            assert torch.equal(state[s], before[s])


@pytest.mark.skipif(DEV.type != "cuda", reason="streams exist on the GPU only")
def test_check_errors_waits_for_an_op_on_another_stream():
    # The failing call runs on a side stream held back by a sleep kernel:
    # check_errors() on the default stream must still see its word (a read
    # that waits only for the current stream finds 0 and raises nothing).
    gen = torch.Generator().manual_seed(3202)
    ops.check_errors()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    x, dt, B, C, out = (guarded(gen, *shape)[0] for shape in (
        (3, HEADS, HEAD_DIM), (3, HEADS), (3, 1, DSTATE), (3, 1, DSTATE),
        (3, HEADS, HEAD_DIM)))
    state = guarded(gen, SLOTS, HEADS, HEAD_DIM, DSTATE)[0]
    A = -torch.rand(HEADS, generator=gen).to(DEV)
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # about 0.1 s at 2 GHz
        ops.selective_state_update(state, x, dt, A, B, C, dt_softplus=True, out=out,
                                   state_batch_indices=ints([1, 2]),
                                   cu_seqlens=ints([0, 2, 5]))
    got = refusal(lambda: None)  # check_errors() on the default stream
    assert got and "cu_seqlens[1] .. cu_seqlens[2]" in got, got


def test_ssu_spec_sequence_longer_than_the_table():
    gen = torch.Generator().manual_seed(3202)
    # Sequence 0 has 3 draft tokens, the tables 2 columns: its third dst
    # column would be read past the table.
    src, dst = [[1, 2], [3, 4]], [[1, 2], [3, 4]]
    got, out, state, before, buffers = ssu_call(gen, 4, [0, 3, 4], src=src, dst=dst,
                                                accepted=[1, 1])
    assert got and "sequence 0 (cu_seqlens[0] .. cu_seqlens[1]) has more tokens" in got, got
    assert guards_intact(*buffers)
    assert all(torch.equal(state[s], before[s]) for s in (0, 1, 2, 5))
    assert not torch.equal(state[3], before[3]), "sequence 1 ran"
    assert bool(torch.isnan(out[:3]).all()) and not bool(torch.isnan(out[3]).any())


@pytest.mark.parametrize("varlen", [False, True])
@pytest.mark.parametrize("accepted, bad", [([1, 3], 1), ([-1, 2], 0)])
def test_ssu_num_accepted_tokens_outside_the_table(varlen, accepted, bad):
    gen = torch.Generator().manual_seed(3203 + varlen)
    src, dst = [[1, 2], [3, 4]], [[1, 2], [3, 4]]
    cu = [0, 1, 2] if varlen else None
    got, out, state, before, buffers = ssu_call(gen, 2, cu, src=src, dst=dst,
                                                accepted=accepted)
    assert got and f"num_accepted_tokens[{bad}] is outside" in got, got
    assert guards_intact(*buffers)
    assert all(torch.equal(state[s], before[s]) for s in src[bad] + [0, 5])
    assert bool(torch.isnan(out[bad]).all()) and not bool(torch.isnan(out[1 - bad]).any())


def test_ssu_good_metadata_records_nothing():
    gen = torch.Generator().manual_seed(3204)
    got, out, *_ = ssu_call(gen, 4, [0, 2, 4], src=[[1, 2], [3, 4]], dst=[[1, 2], [3, 4]],
                            accepted=[2, 0])
    assert got is None, got
    assert not bool(torch.isnan(out).any())


# ---------------------------------------------------------------------------
# causal_conv1d_update: query_start_loc, num_accepted_tokens, prefix caching.

DIM, WIDTH = 16, 4


def conv_call(gen, x_rows, page_taps, indices, **kw):
    """One call on guarded x, out and page; returns (message, out, page, page
    before, buffers)."""
    if len(x_rows) == 3:  # (batch, dim, tokens) with channels contiguous, as vLLM's
        (x, xb), (out, outb) = (guarded(gen, x_rows[0], x_rows[2], x_rows[1])
                                for _ in range(2))
        x, out = x.transpose(1, 2), out.transpose(1, 2)
    else:
        (x, xb), (out, outb) = (guarded(gen, *x_rows) for _ in range(2))
    page, pageb = guarded(gen, SLOTS, DIM, page_taps)
    weight = uniform(gen, DIM, WIDTH, lo=-0.5, hi=0.5).float().to(DEV)
    before = page.clone()
    got = refusal(lambda: ops.causal_conv1d_update(
        x, page, weight, activation="silu", conv_state_indices=ints(indices), out=out, **kw))
    return got, out, page, before, (xb, outb, pageb)


@pytest.mark.parametrize("qsl, maxq, bad, text", [
    ([0, 2, 7], 3, 1, "query_start_loc[1] .. query_start_loc[2] is not a range of x's rows"),
    ([0, 4, 5], 2, 0, "sequence 0 (query_start_loc[0] .. query_start_loc[1]) has more tokens"),
    ([3, 2, 5], 3, 0, "query_start_loc[0] .. query_start_loc[1] is not a range"),
])
def test_conv_update_query_start_loc_outside_the_tokens(qsl, maxq, bad, text):
    gen = torch.Generator().manual_seed(3205)
    slots = [1, 2]
    got, out, page, before, buffers = conv_call(
        gen, (5, DIM), WIDTH - 1, slots, query_start_loc=ints(qsl), max_query_len=maxq)
    assert got and text in got and "causal_conv1d_update" in got, got
    assert guards_intact(*buffers)
    assert torch.equal(page[slots[bad]], before[slots[bad]])
    assert not torch.equal(page[slots[1 - bad]], before[slots[1 - bad]]), "the good row ran"
    lo = min(max(qsl[bad], 0), 5)
    hi = min(max(qsl[bad + 1], lo), 5, lo + maxq)
    assert bool(torch.isnan(out[lo:hi]).all())


@pytest.mark.parametrize("accepted, bad", [([1, 3], 1), ([0, 2], 0)])
def test_conv_update_num_accepted_tokens_outside_the_window(accepted, bad):
    gen = torch.Generator().manual_seed(3206)
    slots, tokens = [1, 2], 2
    got, out, page, before, buffers = conv_call(
        gen, (2, DIM, tokens), WIDTH - 1 + tokens - 1, slots,
        num_accepted_tokens=ints(accepted))
    assert got and f"num_accepted_tokens[{bad}] is outside" in got, got
    assert guards_intact(*buffers)
    assert torch.equal(page[slots[bad]], before[slots[bad]])
    assert bool(torch.isnan(out[bad]).all()) and not bool(torch.isnan(out[1 - bad]).any())


@pytest.mark.parametrize("first, last, bad", [([0, 3], [1, 2], 1), ([0, 1], [-1, 2], 0)])
def test_conv_update_prefix_caching_columns_outside_the_table(first, last, bad):
    gen = torch.Generator().manual_seed(3207)
    table = [[1, 2, 3], [4, 5, 1]]
    got, out, page, before, buffers = conv_call(
        gen, (2, DIM), WIDTH - 1, table, initial_state_idx=ints(first),
        block_idx_last_scheduled_token=ints(last))
    assert got and (f"initial_state_idx[{bad}] or block_idx_last_scheduled_token[{bad}] is "
                    "not a column") in got, got
    assert guards_intact(*buffers)
    good = 1 - bad
    written = table[good][last[good]]
    assert not torch.equal(page[written], before[written]), "the good row ran"
    assert all(torch.equal(page[s], before[s]) for s in table[bad] if s != written)
    assert bool(torch.isnan(out[bad]).all()) and not bool(torch.isnan(out[1 - bad]).any())
