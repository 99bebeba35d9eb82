"""tilejit.ops: selective_state_update (R5d) and mamba_chunk_scan_combined (R5p), against plain-torch f64 references (ops_reference.py) at
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
from ops_support import (BF16_ULP, CHANNELS, DEV, G, H, N, P, SG, SH, SN,  # noqa: E402,F401
                         SP, assert_band, on_device, outside, poisoned, split_xbc,
                         ssd_inputs, ssm_inputs, uniform, vllm_chunks)

# ---------------------------------------------------------------------------
# selective_state_update (R5d, R8)

@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16])
def test_selective_state_update_stride0_broadcasts_slots_and_padding(poisoned, out_dtype):
    gen = torch.Generator().manual_seed(41)
    rows, slots = 5, 8
    xbc, dt, A, dt_bias, D, state = ssm_inputs(gen, rows, slots)
    x, B, C = split_xbc(xbc)              # column ranges of one xBC row, as vLLM passes
    # Row 0 moves its state 3 -> 5, row 1 is padding, row 2 updates slot 0 in place.
    src = torch.tensor([3, -1, 0, 6, 1], dtype=torch.int32, device=DEV)
    dst = torch.tensor([5, -1, 0, 2, 7], dtype=torch.int32, device=DEV)
    before = state.clone()
    out = torch.full((rows, H, P), float("nan"), dtype=out_dtype, device=DEV)
    got = ops.selective_state_update(
        state, x, dt[:, :, None].expand(rows, H, P), A[:, None, None].expand(H, P, N), B, C,
        D=D[:, None].expand(H, P), dt_bias=dt_bias[:, None].expand(H, P), dt_softplus=True,
        state_batch_indices=src, dst_state_batch_indices=dst, out=out,
        null_block_id=None)  # slot 0 is real, -1 padding (mamba_ssm's convention)
    assert got is out
    # R5d's f32 band; a bf16 output adds one rounding (half an ulp, 2^-8 relative).
    rtol = 3e-4 if out_dtype == torch.float32 else 3e-4 + 2.0 ** -8
    live, checked, dropped_out = [0, 2, 3, 4], 0, 0
    for i in live:
        want, S = ref.ssm_scan(x[i:i + 1], dt[i:i + 1], A, B[i:i + 1], C[i:i + 1], D, dt_bias,
                               True, state=before[int(src[i])], dt_min=-math.inf)
        assert_band(out[i], want[0], 1e-3, rtol, H * P)
        assert_band(state[int(dst[i])], S, 1e-3, 3e-4, H * P * N)
        checked += 1
        # The counterfactual: the carried state dropped.
        zero, _ = ref.ssm_scan(x[i:i + 1], dt[i:i + 1], A, B[i:i + 1], C[i:i + 1], D, dt_bias,
                               True, dt_min=-math.inf)
        dropped_out += outside(out[i], zero[0], 1e-3, rtol)
    assert checked == 4 and dropped_out > len(live) * H * P // 4
    assert bool((out[1] == 0).all()), "a padding row's output is zero (R8)"
    for s in range(slots):  # read-only sources (3, 6, 1) and unnamed slots stay as they were
        if s not in (5, 0, 2, 7):
            assert torch.equal(state[s], before[s]), f"slot {s} changed"


def test_selective_state_update_plain_forms_and_separate_tensors(poisoned):
    gen = torch.Generator().manual_seed(42)
    rows = 3
    xbc, dt, A, dt_bias, D, state = ssm_inputs(gen, rows, rows)
    x, B, C = (t.contiguous() for t in split_xbc(xbc))   # three separate tensors
    before = state.clone()
    got = ops.selective_state_update(state, x, dt, A, B, C, D=D, dt_bias=dt_bias,
                                     dt_softplus=False)
    assert got.dtype == torch.bfloat16 and got.shape == (rows, H, P)
    for i in range(rows):  # no indices: row i on slot i; no softplus, no clamp (mamba_ssm)
        want, S = ref.ssm_scan(x[i:i + 1], dt[i:i + 1], A, B[i:i + 1], C[i:i + 1], D, dt_bias,
                               False, state=before[i], dt_min=-math.inf)
        assert_band(got[i], want[0], 1e-3, 3e-4 + 2.0 ** -8, H * P)
        assert_band(state[i], S, 1e-3, 3e-4, H * P * N)


def test_selective_state_update_refusals():
    gen = torch.Generator().manual_seed(43)
    rows = 2
    xbc, dt, A, dt_bias, D, state = ssm_inputs(gen, rows, 4)
    x, B, C = split_xbc(xbc)
    before = state.clone()
    call = lambda **kw: ops.selective_state_update(  # noqa: E731
        **{**dict(state=state, x=x, dt=dt, A=A, B=B, C=C, dt_softplus=True), **kw})
    cases = [
        # Per-p A, dt, the gate z, 16-bit states and f32 x are taken now
        # (test_ops_ssu_*.py); what stays refused:
        (dict(A=uniform(gen, H, P, 1).float().to(DEV).expand(H, P, N)),
         "varies over some of its last dimensions only"),
        (dict(state=state.double()), "state must be"),
        (dict(x=x.double()), "x must be"),
        (dict(enable_stochastic_rounding=True), "enable_stochastic_rounding"),
        (dict(state_batch_indices=torch.tensor([0, 1], dtype=torch.int32, device=DEV),
              num_accepted_tokens=torch.tensor([1, 1], dtype=torch.int32, device=DEV)),
         "needs 2-D"),
        # The duplicate checks read the slots on the host: a debug option (R8).
        (dict(state_batch_indices=torch.tensor([1, 1], dtype=torch.int32, device=DEV),
              check_slots=True), "repeats"),
        (dict(state_batch_indices=torch.tensor([0, 1], dtype=torch.int32, device=DEV),
              dst_state_batch_indices=torch.tensor([1, 2], dtype=torch.int32, device=DEV),
              check_slots=True), "would race"),
    ]
    for kwargs, text in cases:
        with pytest.raises(tj.ArgumentError, match=re.escape(text)):
            call(**kwargs)
    assert torch.equal(state, before), "a refused call changes nothing"


# ---------------------------------------------------------------------------
# mamba_chunk_scan_combined_varlen and mamba_chunk_scan_combined (R5p)

@pytest.mark.parametrize("out_dtype,softplus", [(torch.float32, True), (torch.bfloat16, False)])
def test_mamba_chunk_scan_combined_varlen(out_dtype, softplus):
    gen = torch.Generator().manual_seed(51)
    lengths = [5, 45, 1, 20]
    # Chunks of 64, cut into the kernel's 32: the short ones leave spare pieces
    # inside sequences 1 and 3, which must carry the state through.
    tokens, chunk_size = sum(lengths), 64
    x, dt, A, dt_bias, D, B, C, init = ssd_inputs(gen, tokens, len(lengths))
    init[2] = 0  # a fresh sequence: vLLM passes zeros for it
    cu = torch.tensor([0, 5, 50, 51, 71], dtype=torch.int32, device=DEV)
    cu_chunks, seq_idx, last_chunks = vllm_chunks(lengths, chunk_size, first=[5, 7, 1, 16])
    limit = (0.0, float("inf")) if softplus else (0.0, 0.6)
    out = torch.full((tokens, SH, SP), float("nan"), dtype=out_dtype, device=DEV)
    states = ops.mamba_chunk_scan_combined_varlen(
        x, dt, A, B, C, chunk_size, cu, cu_chunks, last_chunks, seq_idx, out,
        D=D[:, None].expand(SH, SP), dt_bias=dt_bias, initial_states=init,
        dt_softplus=softplus, dt_limit=limit, state_dtype=torch.float32)
    assert states.dtype == torch.float32 and states.shape == (len(lengths), SH, SP, SN)
    # R5p's bands: y f32 8e-3/5e-3, bf16 5e-2/5e-2 (<= 256 tokens); the f32 state 8e-3/5e-3.
    band = (8e-3, 5e-3) if out_dtype == torch.float32 else (5e-2, 5e-2)
    checked, dropped = 0, 0
    for s, (b, e) in enumerate(zip(cu.tolist(), cu.tolist()[1:])):
        want, S = ref.ssm_scan(x[b:e], dt[b:e], A, B[b:e], C[b:e], D, dt_bias, softplus,
                               state=init[s], dt_min=limit[0], dt_max=limit[1])
        assert_band(out[b:e], want, *band, (e - b) * SH * SP)
        assert_band(states[s], S, 8e-3, 5e-3, SH * SP * SN)
        checked += (e - b) * SH * SP
        if s != 2:  # the counterfactual: the initial state dropped
            _, S0 = ref.ssm_scan(x[b:e], dt[b:e], A, B[b:e], C[b:e], D, dt_bias, softplus,
                                 dt_min=limit[0], dt_max=limit[1])
            dropped += outside(states[s], S0, 8e-3, 5e-3) > S.numel() // 4
    assert checked == tokens * SH * SP and dropped == 3


def test_mamba_chunk_scan_combined_varlen_state_dtype():
    gen = torch.Generator().manual_seed(52)
    lengths = [9, 30]
    x, dt, A, dt_bias, D, B, C, init = ssd_inputs(gen, 39, 2)
    cu = torch.tensor([0, 9, 39], dtype=torch.int32, device=DEV)
    cu_chunks, seq_idx, last_chunks = vllm_chunks(lengths, 64, first=[9, 30])
    out = torch.empty(39, SH, SP, dtype=torch.bfloat16, device=DEV)
    args = (x, dt, A, B, C, 64, cu, cu_chunks, last_chunks, seq_idx, out)
    states = ops.mamba_chunk_scan_combined_varlen(*args, dt_bias=dt_bias, initial_states=None,
                                                  dt_softplus=True)
    assert states.dtype == torch.bfloat16  # state_dtype None: C's dtype, rounded from f32
    for s, (b, e) in enumerate([(0, 9), (9, 39)]):
        _, S = ref.ssm_scan(x[b:e], dt[b:e], A, B[b:e], C[b:e], torch.zeros(SH, device=DEV),
                            dt_bias, True)
        assert_band(states[s], S, 8e-3, 5e-3 + 2.0 ** -8, SH * SP * SN)
    # z, return_intermediate_states, D per (head, p) and f32 dt, once refused
    # here, are computed now (test_ops_ssd_forms.py, test_ops_ssd_vllm.py);
    # what stays refused is in test_ops_ssd_forms.py::test_refusals.


def test_mamba_chunk_scan_combined_batch_major(poisoned):
    gen = torch.Generator().manual_seed(53)
    batch, seqlen = 2, 40
    x, dt, A, dt_bias, D, B, C, init = ssd_inputs(gen, batch * seqlen, batch)
    view = lambda t: t.reshape(batch, seqlen, *t.shape[1:])  # noqa: E731
    out, final = ops.mamba_chunk_scan_combined(
        view(x), view(dt.contiguous()), A, view(B), view(C), 256, D=D, dt_bias=dt_bias,
        initial_states=init, dt_softplus=True, return_final_states=True)
    assert out.shape == (batch, seqlen, SH, SP) and final.dtype == torch.float32
    for b in range(batch):
        t = slice(b * seqlen, (b + 1) * seqlen)
        want, S = ref.ssm_scan(x[t], dt[t], A, B[t], C[t], D, dt_bias, True, state=init[b])
        assert_band(out[b], want, 5e-2, 5e-2, seqlen * SH * SP)
        assert_band(final[b], S, 8e-3, 5e-3, SH * SP * SN)
        _, S0 = ref.ssm_scan(x[t], dt[t], A, B[t], C[t], D, dt_bias, True)
        assert outside(final[b], S0, 8e-3, 5e-3) > S.numel() // 4  # the dropped initial state


def test_mamba_chunk_scan_combined_seq_idx_varlen_states(poisoned):
    gen = torch.Generator().manual_seed(54)
    cut, seqlen = 13, 50
    x, dt, A, dt_bias, D, B, C, _ = ssd_inputs(gen, seqlen, 1)
    seq_idx = torch.tensor([[0] * cut + [1] * (seqlen - cut)], dtype=torch.int32, device=DEV)
    cu = torch.tensor([0, cut, seqlen], dtype=torch.int32, device=DEV)
    one = lambda t: t[None]  # noqa: E731
    out, final, varlen = ops.mamba_chunk_scan_combined(
        one(x), one(dt), A, one(B), one(C), 64, D=D, dt_bias=dt_bias, seq_idx=seq_idx,
        cu_seqlens=cu, dt_softplus=True, return_final_states=True, return_varlen_states=True)
    for s, (b, e) in enumerate([(0, cut), (cut, seqlen)]):  # the sequences never mix
        want, S = ref.ssm_scan(x[b:e], dt[b:e], A, B[b:e], C[b:e], D, dt_bias, True)
        assert_band(out[0, b:e], want, 5e-2, 5e-2, (e - b) * SH * SP)
        assert_band(varlen[s], S, 8e-3, 5e-3, SH * SP * SN)
    assert torch.equal(final[0], varlen[1])
    # The counterfactual: one sequence over the whole row (seq_idx ignored).
    whole, _ = ref.ssm_scan(x, dt, A, B, C, D, dt_bias, True)
    assert outside(out[0, cut:], whole[cut:], 5e-2, 5e-2) > (seqlen - cut) * SH * SP // 10
    with pytest.raises(tj.ArgumentError, match="disagrees"):
        ops.mamba_chunk_scan_combined(one(x), one(dt), A, one(B), one(C), 64, seq_idx=seq_idx,
                                      cu_seqlens=cu + 1, return_varlen_states=True)
    with pytest.raises(tj.ArgumentError, match="initial_states together with seq_idx"):
        ops.mamba_chunk_scan_combined(one(x), one(dt), A, one(B), one(C), 64, seq_idx=seq_idx,
                                      initial_states=torch.zeros(1, SH, SP, SN, device=DEV))
