"""tilejit.ops on what a careless or hostile caller hands it (issue #33): head
dims the kernels' blocks do not divide, outputs overlapping what they are
computed from, varlen metadata that breaks R9, 64-bit indices past 32 bits,
NaN entering mid-sequence, rows of stride 0, a chunk_size far past the tokens.
Each gives the correct result (against the f64 references) or a clear error:
on the interpreter (CI) raised by the call itself; on the GPU, where the
kernels check device data on the device, recorded there and raised by
ops.check_errors() (or by the call in 'sync' mode, also tested)."""

import math
import time

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402

import ops_reference as ref  # noqa: E402
from ops_reference import F64, bf16  # noqa: E402
from ops_support import (DEV, SG, SH, SN, SP, assert_band, on_device, poisoned,  # noqa: E402,F401
                         split_xbc, ssd_inputs, ssm_inputs, uniform, vllm_chunks)

NAN = float("nan")


def refusal(call):
    """The ArgumentError a call is refused with: raised by the call (host
    checks; every check on the CPU) or by check_errors() after it (device
    checks on the GPU). None when the call passes every check."""
    try:
        call()
        ops.check_errors()
    except tj.ArgumentError as error:
        return str(error)
    return None


def i64(*values):
    return torch.tensor(values, dtype=torch.int64, device=DEV)


def i32(*values):
    return torch.tensor(values, dtype=torch.int32, device=DEV)


# ---------------------------------------------------------------------------
# Head dims the kernels' blocks do not divide: every element written, in band.

@pytest.mark.parametrize("head_dim", [24, 12, 8])
def test_selective_state_update_head_dim_not_a_block_multiple(poisoned, head_dim):
    gen = torch.Generator().manual_seed(60 + head_dim)
    heads, groups, dstate, rows = 2, 1, 16, 3
    width = heads * head_dim + 2 * groups * dstate
    xbc = bf16(uniform(gen, rows, width, lo=-2, hi=2)).bfloat16()
    dt = bf16(uniform(gen, rows, heads, lo=-3, hi=1)).bfloat16()
    A = -torch.exp(uniform(gen, heads)).float()
    dt_bias, D = uniform(gen, heads).float(), uniform(gen, heads).float()
    state = uniform(gen, rows, heads, head_dim, dstate).float()
    xbc, dt, A, dt_bias, D, state = on_device(xbc, dt, A, dt_bias, D, state)
    x = xbc[:, :heads * head_dim].view(rows, heads, head_dim)
    B = xbc[:, heads * head_dim:heads * head_dim + groups * dstate].view(rows, groups, dstate)
    C = xbc[:, heads * head_dim + groups * dstate:].view(rows, groups, dstate)
    before = state.clone()
    out = torch.full((rows, heads, head_dim), NAN, device=DEV)
    ops.selective_state_update(state, x.contiguous(), dt, A, B.contiguous(), C.contiguous(),
                               D=D, dt_bias=dt_bias, dt_softplus=True, out=out)
    for i in range(rows):  # the tail of every head (rows block_p does not reach) included
        want, S = ref.ssm_scan(x[i:i + 1], dt[i:i + 1], A, B[i:i + 1], C[i:i + 1], D,
                               dt_bias, True, state=before[i], dt_min=-math.inf)
        assert_band(out[i], want[0], 1e-3, 3e-4, heads * head_dim)
        assert_band(state[i], S, 1e-3, 3e-4, heads * head_dim * dstate)


@pytest.mark.parametrize("head_dim", [24, 8])
def test_chunk_scan_head_dim_not_a_block_multiple(head_dim):
    gen = torch.Generator().manual_seed(70 + head_dim)
    heads, groups, dstate, tokens = 2, 1, 32, 40
    x = bf16(uniform(gen, tokens, heads, head_dim)).bfloat16()
    B = bf16(uniform(gen, tokens, groups, dstate)).bfloat16()
    C = bf16(uniform(gen, tokens, groups, dstate)).bfloat16()
    dt = bf16(uniform(gen, tokens, heads, lo=-3, hi=1)).bfloat16()
    A = -torch.exp(uniform(gen, heads, lo=-3, hi=-1)).float()
    dt_bias = uniform(gen, heads, lo=-2, hi=-0.5).float()
    x, B, C, dt, A, dt_bias = on_device(x, B, C, dt, A, dt_bias)
    cu = i32(0, tokens)
    chunks, seq_idx, last = vllm_chunks([tokens], 16, first=[16])
    out = torch.full((tokens, heads, head_dim), NAN, device=DEV)
    states = ops.mamba_chunk_scan_combined_varlen(x, dt, A, B, C, 16, cu, chunks, last,
                                                  seq_idx, out, dt_bias=dt_bias,
                                                  dt_softplus=True, state_dtype=torch.float32)
    want, S = ref.ssm_scan(x, dt, A, B, C, torch.zeros(heads, device=DEV), dt_bias, True)
    assert_band(out, want, 8e-3, 5e-3, tokens * heads * head_dim)
    assert_band(states[0], S, 8e-3, 5e-3, heads * head_dim * dstate)


# ---------------------------------------------------------------------------
# Outputs that overlap what they are computed from, and rows of stride 0.

def test_outputs_overlapping_their_inputs_or_state_are_refused():
    gen = torch.Generator().manual_seed(80)
    xbc, dt, A, dt_bias, D, state = ssm_inputs(gen, 2, 4)
    x, B, C = split_xbc(xbc)
    before = state.clone()
    # out viewed over slot 1's state: writing row 0's y would corrupt it.
    over_state = state[1].view(-1)[:2 * x[0].numel()].view(2, *x.shape[1:])
    text = refusal(lambda: ops.selective_state_update(state, x, dt, A, B, C, dt_bias=dt_bias,
                                                      out=over_state))
    assert text and "out overlaps state in memory" in text, text
    assert torch.equal(state, before)

    sx, sdt, sA, sbias, _, sB, sC, _ = ssd_inputs(gen, 20, 1)
    chunks, seq_idx, last = vllm_chunks([20], 16, first=[16])
    # A contiguous out over the memory x, B and C are read from.
    out_over_x = torch.as_strided(sx, (20, SH, SP), (SH * SP, SP, 1))
    text = refusal(lambda: ops.mamba_chunk_scan_combined_varlen(
        sx, sdt, sA, sB, sC, 16, i32(0, 20), chunks, last, seq_idx, out_over_x))
    assert text and "out overlaps x in memory" in text, text


def test_rows_of_stride_zero_are_refused():
    gen = torch.Generator().manual_seed(81)
    xbc, dt, A, dt_bias, D, state = ssm_inputs(gen, 3, 4)
    x, B, C = split_xbc(xbc)
    # dt broadcast over rows (stride 0): the kernel reads 0 as "rows H apart".
    text = refusal(lambda: ops.selective_state_update(state, x, dt[:1].expand(3, -1), A, B, C))
    assert text and "dt has stride 0 over its 3 rows" in text, text
    dim = 64
    page = torch.zeros(3, dim, 3, dtype=torch.bfloat16, device=DEV)
    w = torch.ones(dim, 4, dtype=torch.bfloat16, device=DEV)
    xt = torch.ones(1, dim, dtype=torch.bfloat16, device=DEV).expand(3, -1)
    text = refusal(lambda: ops.causal_conv1d_update(xt, page, w, activation="silu"))
    assert text and "x has stride 0 over its 3 rows" in text, text
    y = torch.ones(3, dim, dtype=torch.bfloat16, device=DEV)
    z = torch.ones(1, dim, dtype=torch.bfloat16, device=DEV).expand(3, -1)
    text = refusal(lambda: ops.rms_norm_gated(y, w[:, 0].contiguous(), None, z=z,
                                              norm_before_gate=False))
    assert text and "z has stride 0 over its 3 rows" in text, text
    # The counterfactual: the same values materialized are taken.
    assert refusal(lambda: ops.selective_state_update(
        state, x, dt[:1].expand(3, -1).contiguous(), A, B, C)) is None


# ---------------------------------------------------------------------------
# Varlen metadata that breaks R9 or the caller's own chunking.

def _varlen_case():
    """Two sequences (9 and 30 tokens) in vLLM's chunks of 16 (the second
    sequence's first chunk prefix-aligned to 14): chunks [0, 9), [9, 23), [23, 39)."""
    gen = torch.Generator().manual_seed(82)
    x, dt, A, dt_bias, D, B, C, _ = ssd_inputs(gen, 39, 2)
    chunks, seq_idx, last = vllm_chunks([9, 30], 16, first=[9, 14])
    return dict(x=x, dt=dt, A=A, B=B, C=C, chunk_size=16, cu_seqlens=i32(0, 9, 39),
                cu_chunk_seqlens=chunks, last_chunk_indices=last, seq_idx=seq_idx,
                dt_bias=dt_bias, dt_softplus=True)


BAD_METADATA = [
    (dict(cu_seqlens=(0, 30, 9)), "cu_seqlens[1] >= cu_seqlens[2]"),
    (dict(cu_seqlens=(0, 9, 38)), "cu_seqlens does not end at the token count"),
    (dict(cu_seqlens=(-1, 9, 39)), "cu_seqlens[0] is not 0"),
    (dict(cu_seqlens=(0, 9, 9)), "cu_seqlens[1] >= cu_seqlens[2]"),  # an empty sequence
    (dict(cu_chunk_seqlens=(0, 23, 9, 39)), "cu_chunk_seqlens[1] >= cu_chunk_seqlens[2]"),
    (dict(cu_chunk_seqlens=(0, 9, 23, 38)), "cu_chunk_seqlens does not end at the token"),
    (dict(chunk_size=8), "chunk 0 is longer than chunk_size"),
    (dict(seq_idx=(-1, 1, 1)), "seq_idx[0] is not a sequence"),
    (dict(seq_idx=(0, 1, 2)), "seq_idx[2] is not a sequence"),
    (dict(seq_idx=(1, 0, 1)), "seq_idx[1] < seq_idx[0]"),
    (dict(cu_chunk_seqlens=(0, 12, 23, 39)), "chunk 0 does not lie inside its sequence"),
    (dict(last_chunk_indices=(0, 1)), "last_chunk_indices[1] is not the last chunk of "
                                      "sequence 1"),
    (dict(last_chunk_indices=(0, 3)), "last_chunk_indices[1] is not a chunk"),
]


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("bad,text", BAD_METADATA)
def test_chunk_scan_refuses_bad_metadata_and_writes_nan(bad, text, index_dtype):
    case = _varlen_case()
    for key, value in list(case.items()):
        if isinstance(value, torch.Tensor) and value.dtype == torch.int32:
            case[key] = value.to(index_dtype)
    for key, value in bad.items():
        case[key] = torch.tensor(value, dtype=index_dtype, device=DEV) \
            if isinstance(value, tuple) else value
    out = torch.zeros(39, SH, SP, dtype=torch.bfloat16, device=DEV)
    states = []
    got = refusal(lambda: states.append(ops.mamba_chunk_scan_combined_varlen(out=out, **case)))
    assert got and text in got and "mamba_chunk_scan_combined_varlen" in got, got
    assert bool(torch.isnan(out).all()), "a refused batch's y is NaN, never a silent result"
    if states:  # on the GPU the call returned; its states are NaN too
        assert bool(torch.isnan(states[0]).all())
    assert refusal(lambda: None) is None, "check_errors() cleared the error"


def test_chunk_scan_good_metadata_passes_the_checks():
    case = _varlen_case()  # the counterfactual of every case above
    out = torch.full((39, SH, SP), NAN, dtype=torch.bfloat16, device=DEV)
    assert refusal(lambda: ops.mamba_chunk_scan_combined_varlen(out=out, **case)) is None
    assert not bool(torch.isnan(out).any())


def test_a_chunk_size_far_past_the_tokens_runs_at_once():
    # 2^26 on 40 tokens ran for half an hour (the caller's chunks were cut into
    # 2^21 pieces each); the kernel now chunks the sequences itself.
    gen = torch.Generator().manual_seed(83)
    x, dt, A, dt_bias, D, B, C, _ = ssd_inputs(gen, 40, 2)
    chunks, seq_idx, last = vllm_chunks([15, 25], 1 << 26, first=[15, 25])
    out = torch.full((40, SH, SP), NAN, dtype=torch.bfloat16, device=DEV)
    start = time.monotonic()
    states = ops.mamba_chunk_scan_combined_varlen(x, dt, A, B, C, 1 << 26, i32(0, 15, 40),
                                                  chunks, last, seq_idx, out, dt_bias=dt_bias,
                                                  dt_softplus=True, state_dtype=torch.float32)
    assert time.monotonic() - start < 30
    for s, (b, e) in enumerate([(0, 15), (15, 40)]):
        want, S = ref.ssm_scan(x[b:e], dt[b:e], A, B[b:e], C[b:e],
                               torch.zeros(SH, device=DEV), dt_bias, True)
        assert_band(out[b:e], want, 5e-2, 5e-2, (e - b) * SH * SP)
        assert_band(states[s], S, 8e-3, 5e-3, SH * SP * SN)


def test_conv_prefill_refuses_bad_query_start_loc():
    gen = torch.Generator().manual_seed(84)
    dim, tokens = 64, 20
    x = bf16(uniform(gen, tokens, dim)).bfloat16().to(DEV)
    w = bf16(uniform(gen, dim, 4)).bfloat16().to(DEV)
    page = bf16(uniform(gen, 2, dim, 3)).bfloat16().to(DEV)
    before = page.clone()
    for qsl, text in [((0, 12, 7), "query_start_loc[1] >= query_start_loc[2]"),
                      ((0, 12, 21), "query_start_loc does not end at the token count"),
                      ((3, 12, 20), "query_start_loc[0] is not 0")]:
        for dtype in (torch.int32, torch.int64):
            out = []
            got = refusal(lambda: out.append(ops.causal_conv1d_fn(
                x.t(), w, None, page, torch.tensor(qsl, dtype=dtype, device=DEV),
                activation="silu")))
            assert got and text in got, got
            assert torch.equal(page, before), "a refused batch touches no conv page"
            if out:
                assert bool(torch.isnan(out[0]).all())


# ---------------------------------------------------------------------------
# 64-bit indices: read whole, never truncated to 32 bits on the way in.

def test_int64_slots_past_32_bits_are_refused_not_wrapped():
    gen = torch.Generator().manual_seed(85)
    xbc, dt, A, dt_bias, D, state = ssm_inputs(gen, 2, 4)
    x, B, C = split_xbc(xbc)
    before = state.clone()
    out = torch.zeros(2, *x.shape[1:], device=DEV)
    # 2^32 + 1 used to update slot 1.
    got = refusal(lambda: ops.selective_state_update(
        state, x, dt, A, B, C, dt_bias=dt_bias, state_batch_indices=i64((1 << 32) + 1, 0),
        out=out))
    assert got and "state_batch_indices[0] is at or past the state's slot count" in got, got
    assert torch.equal(state[1:], before[1:]), "slot 1 (2^32 + 1 truncated) is untouched"
    assert bool(torch.isnan(out[0]).all()) and not bool(torch.isnan(out[1]).any())
    got = refusal(lambda: ops.selective_state_update(
        state.clone(), x, dt, A, B, C, state_batch_indices=i64(0, 1),
        dst_state_batch_indices=i64(2, (1 << 32) + 3)))
    assert got and "dst_state_batch_indices[1] is at or past" in got, got
    # A negative index of any width is padding (R8): its row is zero.
    pad = ops.selective_state_update(state.clone(), x, dt, A, B, C,
                                     state_batch_indices=i64(-(1 << 40), 0))
    assert bool((pad[0] == 0).all())

    dim = 64
    page = bf16(uniform(gen, 4, dim, 3)).bfloat16().to(DEV)
    page_before = page.clone()
    w = bf16(uniform(gen, dim, 4)).bfloat16().to(DEV)
    xt = bf16(uniform(gen, 2, dim)).bfloat16().to(DEV)
    got = refusal(lambda: ops.causal_conv1d_update(xt, page, w, activation="silu",
                                                   conv_state_indices=i64(0, (1 << 32) + 1)))
    assert got and "conv_state_indices[1] is at or past the state's slot count" in got, got
    assert torch.equal(page[1:], page_before[1:])

    xs = bf16(uniform(gen, 20, dim)).bfloat16().to(DEV)
    got = refusal(lambda: ops.causal_conv1d_fn(xs.t(), w, None, page, i64(0, 8, 20),
                                               cache_indices=i64(1, (1 << 32) + 2),
                                               activation="silu"))
    assert got and "cache_indices[1] is at or past the state's slot count" in got, got
    got = refusal(lambda: ops.causal_conv1d_fn(xs.t(), w, None, page,
                                               i64(0, (1 << 32) + 8, 20), activation="silu"))
    assert got and "query_start_loc[1] >= query_start_loc[2]" in got, got


def test_int64_cu_seqlens_past_32_bits_are_refused():
    case = _varlen_case()
    case["cu_seqlens"] = i64(0, (1 << 32) + 9, 39)
    out = torch.zeros(39, SH, SP, dtype=torch.bfloat16, device=DEV)
    got = refusal(lambda: ops.mamba_chunk_scan_combined_varlen(out=out, **case))
    assert got and "cu_seqlens[1] >= cu_seqlens[2]" in got, got


# ---------------------------------------------------------------------------
# NaN never flows backwards in time (docs/numerics.md, "R5p Chunked SSD, prefill").

@pytest.mark.parametrize("where", ["dt", "x", "B", "C"])
def test_nan_at_one_token_changes_nothing_before_it(where):
    gen = torch.Generator().manual_seed(86)
    tokens, t = 70, 40  # t inside the second of the kernel's 32-token chunks
    x, dt, A, dt_bias, D, B, C, _ = ssd_inputs(gen, tokens, 1)
    chunks, seq_idx, last = vllm_chunks([tokens], 64, first=[64])

    def run(x, dt, B, C):
        out = torch.empty(tokens, SH, SP, dtype=torch.float32, device=DEV)
        states = ops.mamba_chunk_scan_combined_varlen(
            x, dt, A, B, C, 64, i32(0, tokens), chunks, last, seq_idx, out, D=D,
            dt_bias=dt_bias, dt_softplus=True, state_dtype=torch.float32)
        return out, states

    clean, clean_states = run(x, dt, B, C)
    inputs = dict(x=x.clone(), dt=dt.clone(), B=B.clone(), C=C.clone())
    inputs[where][t].view(-1)[0] = NAN
    got, states = run(**inputs)
    assert torch.equal(got[:t], clean[:t]), "a NaN at token t changed an earlier output"
    assert not bool(torch.isfinite(got[t]).all()), "the NaN reaches its own token's output"
    if where != "C":  # C only reads the state; the others enter it
        assert not bool(torch.isfinite(states).all())
    assert bool(torch.isfinite(clean_states).all())
    # The sequential f64 oracle agrees before t (the same inputs, R5).
    want, _ = ref.ssm_scan(inputs["x"][:t], inputs["dt"][:t], A, inputs["B"][:t],
                           inputs["C"][:t], D, dt_bias, True)
    assert_band(got[:t], want, 8e-3, 5e-3, t * SH * SP)


def test_nan_in_conv_prefill_changes_nothing_before_it():
    gen = torch.Generator().manual_seed(87)
    dim, tokens, t = 64, 150, 100  # past the first of the kernel's 64-token chunks
    x = bf16(uniform(gen, tokens, dim)).bfloat16().to(DEV)
    w = bf16(uniform(gen, dim, 4)).bfloat16().to(DEV)
    page = torch.zeros(1, dim, 3, dtype=torch.bfloat16, device=DEV)
    clean = ops.causal_conv1d_fn(x.t(), w, None, page.clone(), i32(0, tokens),
                                 activation="silu").t()
    poisoned_x = x.clone()
    poisoned_x[t, 5] = NAN
    got = ops.causal_conv1d_fn(poisoned_x.t(), w, None, page.clone(), i32(0, tokens),
                               activation="silu").t()
    assert torch.equal(got[:t], clean[:t])
    assert bool(torch.isnan(got[t, 5]))


# ---------------------------------------------------------------------------
# On the GPU: the error is recorded on the device ('async') or raised by the
# call ('sync'); nothing of it leaks into the next call.

@pytest.mark.skipif(DEV.type != "cuda", reason="the device-side recording is the GPU's")
def test_gpu_checks_async_and_sync():
    gen = torch.Generator().manual_seed(88)
    xbc, dt, A, dt_bias, D, state = ssm_inputs(gen, 2, 4)
    x, B, C = split_xbc(xbc)
    bad = dict(state_batch_indices=i32(0, 7))
    ops.selective_state_update(state, x, dt, A, B, C, **bad)  # async: returns
    with pytest.raises(tj.ArgumentError, match=r"state_batch_indices\[1\] is at or past"):
        ops.check_errors()
    ops.check_errors()  # cleared
    ops.set_checks("sync")
    try:
        with pytest.raises(tj.ArgumentError, match=r"state_batch_indices\[1\] is at or past"):
            ops.selective_state_update(state, x, dt, A, B, C, **bad)
    finally:
        ops.set_checks("async")
    with pytest.raises(tj.ArgumentError, match="expected 'async' or 'sync'"):
        ops.set_checks("never")
