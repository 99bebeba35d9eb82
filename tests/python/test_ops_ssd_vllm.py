"""tilejit.ops.mamba_chunk_scan_combined_varlen over the parameter grid of vLLM's
SSD op test, `test_mamba_ssm_ssd.py` (dtypes, head counts and dims, chunk
sizes, continuous batches with initial states, chunked prefill, intermediate
states), at reduced sizes, against the f64 sequential oracle (ssd_reference.py)
at R5p's bands; each band with the counterfactual it separates (a dropped
initial state or a dropped carry across chunks). Outputs start poisoned."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit.ops as ops  # noqa: E402

import ssd_reference as ref  # noqa: E402
from ops_support import DEV, assert_band, outside, poisoned  # noqa: E402,F401

F32_BAND, LOW_BAND = (8e-3, 5e-3), (5e-2, 5e-2)  # R5p: f32 y and states; 16-bit y


def run(x, dt, A, B, C, chunk_size, lengths, out_dtype=None, **kwargs):
    """One varlen call over sequences of `lengths` with vLLM's chunk metadata;
    returns (y, states)."""
    cu, bounds, last, seq_idx, _ = ref.chunk_metadata(lengths, chunk_size)
    out = torch.full(x.shape, float("nan"), dtype=out_dtype or x.dtype, device=DEV)
    states = ops.mamba_chunk_scan_combined_varlen(
        x, dt, A, B, C, chunk_size, cu.to(DEV), bounds.to(DEV), last.to(DEV),
        seq_idx.to(DEV), out, **kwargs)
    return out, states


def on(*tensors):
    return [None if t is None else t.to(DEV) for t in tensors]


@pytest.mark.parametrize("seqlen,chunk_size", [(112, 16), (128, 32)])
@pytest.mark.parametrize("d_head", [5, 8, 32, 128])
@pytest.mark.parametrize("n_heads", [4, 16, 32])
@pytest.mark.parametrize("itype", [torch.float32, torch.bfloat16])
def test_single_example(poisoned, itype, n_heads, d_head, seqlen, chunk_size):
    # vLLM's test_mamba_chunk_scan_single_example: B and C have a group per head
    # and dstate = d_head. Every y element and the whole final state are checked.
    gen = torch.Generator().manual_seed(n_heads * 1000 + d_head + seqlen)
    A, dt, x, B, C = on(*ref.inputs(gen, seqlen, n_heads, d_head, n_heads, d_head, itype))
    y, states = run(x, dt, A, B, C, chunk_size, [seqlen])
    want, S, _ = ref.scan(x, dt, A, B, C)
    band = F32_BAND if itype == torch.float32 else LOW_BAND
    assert_band(y, want, *band, seqlen * n_heads * d_head)
    assert states.dtype == itype  # state_dtype None: C's dtype
    assert_band(states[0], S, *(F32_BAND if itype == torch.float32 else LOW_BAND),
                n_heads * d_head * d_head)
    # The counterfactual: the carry into the last chunk dropped.
    start = (seqlen - 1) // chunk_size * chunk_size
    cut, _, _ = ref.scan(x[start:], dt[start:], A, B[start:], C[start:])
    rows = slice(start, start + 2)
    assert outside(y[rows], cut[:2], *band) > y[rows].numel() // 2


CONT_CASES = [
    (64, 8, 2, [(64, 32), (64, 32)]),
    (64, 8, 2, [(8, 8), (8, 8), (8, 8)]),
    (64, 8, 2, [(4, 4), (4, 4), (4, 4), (4, 4)]),
    (64, 8, 5, [(64, 32, 16, 8, 8)]),
    (64, 256, 1, [(5,), (1,), (1,), (1,)]),
    (64, 256, 2, [(5, 30), (1, 2), (1, 2), (1, 2)]),
    (768, 128, 2, [(138, 225), (138, 225)]),
]


@pytest.mark.parametrize("n_heads,d_head", [(4, 5), (8, 5), (4, 16), (8, 32)])
@pytest.mark.parametrize("case", CONT_CASES)
def test_cont_batch(poisoned, case, n_heads, d_head):
    # vLLM's test_mamba_chunk_scan_cont_batch: each example is fed in pieces
    # over several calls, its state carried through initial_states (zeroed
    # when an example is exhausted and starts over).
    full, chunk_size, examples, batches = case
    gen = torch.Generator().manual_seed(full + chunk_size + len(batches) + n_heads)
    data = [on(*ref.inputs(gen, full, n_heads, d_head, n_heads, d_head, torch.float32))[1:]
            for _ in range(examples)]  # (dt, x, B, C) of each example; A shared
    A = (-torch.exp(torch.rand(n_heads, generator=gen))).to(DEV)
    want = [ref.scan(x, dt, A, B, C)[0] for dt, x, B, C in data]
    taken, states, continued, expected = [0] * examples, None, 0, 0
    for lengths in batches:
        dt, x, B, C = (torch.cat([data[i][k][taken[i]:taken[i] + n]
                                  for i, n in enumerate(lengths)]) for k in range(4))
        y, states_out = run(x, dt, A, B, C, chunk_size, list(lengths), initial_states=states)
        at = 0
        for i, n in enumerate(lengths):
            assert_band(y[at:at + n], want[i][taken[i]:taken[i] + n], *F32_BAND,
                        n * n_heads * d_head)
            if taken[i]:  # the counterfactual: the initial state dropped
                cut, _, _ = ref.scan(x[at:at + 1], dt[at:at + 1], A, B[at:at + 1],
                                     C[at:at + 1])
                continued += outside(y[at:at + 1], cut, *F32_BAND) > n_heads * d_head // 2
                expected += 1
            at += n
            taken[i] = (taken[i] + n) % full
        states = states_out
        for i, (dt_i, x_i, B_i, C_i) in enumerate(data):
            if taken[i] == 0:  # exhausted: the example starts over
                states[i].zero_()
                continue
            k = taken[i]
            _, S, _ = ref.scan(x_i[:k], dt_i[:k], A, B_i[:k], C_i[:k])
            assert_band(states[i], S, *F32_BAND, n_heads * d_head * d_head)
    assert continued == expected


@pytest.mark.parametrize("seqlens", [(16, 20), (270, 88, 212, 203)])
@pytest.mark.parametrize("chunk_size", [8, 256])
def test_prefill_chunking(poisoned, chunk_size, seqlens):
    # vLLM's test_mamba_chunk_scan_cont_batch_prefill_chunking: each sequence
    # in two halves, the second from the first's final states; both against
    # the oracle of the whole sequences (vLLM compares the two kernel runs).
    heads, head_dim, state = 4, 16, 16
    gen = torch.Generator().manual_seed(chunk_size + len(seqlens))
    seqs = [on(*ref.inputs(gen, n, heads, head_dim, heads, state, torch.float32))
            for n in seqlens]
    A = seqs[0][0]
    halves = [n // 2 for n in seqlens]

    def part(lo, hi):
        return [torch.cat([s[k][lo(i):hi(i)] for i, s in enumerate(seqs)]) for k in (1, 2, 3, 4)]

    dt, x, B, C = part(lambda i: 0, lambda i: halves[i])
    y1, first = run(x, dt, A, B, C, chunk_size, halves)
    dt, x, B, C = part(lambda i: halves[i], lambda i: seqlens[i])
    rest = [n - h for n, h in zip(seqlens, halves)]
    y2, final = run(x, dt, A, B, C, chunk_size, rest, initial_states=first)
    at1 = at2 = dropped = 0
    for i, (n, h) in enumerate(zip(seqlens, halves)):
        _, dt_i, x_i, B_i, C_i = seqs[i]
        want, S, _ = ref.scan(x_i, dt_i, A, B_i, C_i)
        assert_band(y1[at1:at1 + h], want[:h], *F32_BAND, h * heads * head_dim)
        assert_band(y2[at2:at2 + n - h], want[h:], *F32_BAND, (n - h) * heads * head_dim)
        assert_band(final[i], S, *F32_BAND, heads * head_dim * state)
        # The counterfactual: the initial state dropped (seen at the first token,
        # before a long second half has decayed it away).
        cut, _, _ = ref.scan(x_i[h:h + 1], dt_i[h:h + 1], A, B_i[h:h + 1], C_i[h:h + 1])
        dropped += outside(y2[at2:at2 + 1], cut, *F32_BAND) > heads * head_dim // 2
        at1, at2 = at1 + h, at2 + n - h
    assert dropped == len(seqlens)


@pytest.mark.parametrize("state_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("chunk_size", [8, 16, 64])
def test_intermediate_states(poisoned, chunk_size, state_dtype):
    # return_intermediate_states (vLLM's prefix caching): the state after each
    # of the caller's chunks, in state_dtype, from initial states.
    heads, head_dim, state, lengths = 2, 16, 16, [40, 7, 90]
    gen = torch.Generator().manual_seed(chunk_size)
    A, dt, x, B, C = on(*ref.inputs(gen, sum(lengths), heads, head_dim, 1, state,
                                    torch.float32))
    init = torch.randn(len(lengths), heads, head_dim, state, generator=gen).to(DEV)
    _, _, _, _, ends = ref.chunk_metadata(lengths, chunk_size)
    y, chunks = run(x, dt, A, B, C, chunk_size, lengths, initial_states=init,
                    return_intermediate_states=True, state_dtype=state_dtype)
    assert chunks.dtype == state_dtype and chunks.shape[0] == sum(len(e) for e in ends)
    band = F32_BAND if state_dtype == torch.float32 else (8e-3, 5e-3 + 2.0 ** -8)
    at = k = dropped = 0
    for s, n in enumerate(lengths):
        t = slice(at, at + n)
        want, _, kept = ref.scan(x[t], dt[t], A, B[t], C[t], state=init[s], record=ends[s])
        assert_band(y[t], want, *F32_BAND, n * heads * head_dim)
        for j, e in enumerate(ends[s]):
            assert_band(chunks[k + j], kept[j], *band, heads * head_dim * state)
            if j:  # the counterfactual: the carry into this chunk dropped
                b = ends[s][j - 1] + 1
                _, cut, _ = ref.scan(x[t][b:e + 1], dt[t][b:e + 1], A, B[t][b:e + 1],
                                     C[t][b:e + 1])
                dropped += outside(chunks[k + j], cut, *band) > cut.numel() // 4
        k += len(ends[s])
        at += n
    assert dropped == sum(len(e) - 1 for e in ends)
