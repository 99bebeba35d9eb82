"""tilejit.ops against plain-torch f64 references (ops_reference.py) at the bands
of docs/numerics.md, over varlen batches, padding slots, initial states,
stride-0 broadcasts and bf16/f32 outputs. With CPU torch tensors on the
interpreter (CI); on the GPU when torch has CUDA and tilejit opens the device.
Every band is paired with the counterfactual it separates, shown to land
outside it; every output tilejit allocates or is handed is poisoned first."""

import math
import re

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402

import ops_reference as ref  # noqa: E402
from ops_reference import F64, bf16  # noqa: E402

BF16_ULP = 2.0 ** -7


def _device():
    if torch.cuda.is_available():
        try:
            tj.runtime()
            return torch.device("cuda", 0)
        except tj.DeviceError:
            pass
    return torch.device("cpu")


DEV = _device()


def outside(got, want, atol, rtol):
    """How many elements lie outside |got - want| <= atol + rtol |want|."""
    got, want = got.to(F64).cpu(), want.to(F64).cpu()
    return int(((got - want).abs() > atol + rtol * want.abs()).sum()) + \
        int(torch.isnan(got).sum())


def assert_band(got, want, atol, rtol, count):
    """The band holds on every element, and exactly `count` were compared."""
    assert got.numel() == want.numel() == count, (got.numel(), want.numel(), count)
    bad = outside(got, want, atol, rtol)
    err = (got.to(F64).cpu() - want.to(F64).cpu()).abs()
    assert bad == 0, f"{bad} of {count} out of band ({atol}, {rtol}); worst {float(err.max()):.3g}"


@pytest.fixture
def poisoned(monkeypatch):
    """Outputs the ops allocate start as NaN (bf16/f32) or the e4m3 NaN code."""
    real = torch.empty

    def empty(*args, **kwargs):
        t = real(*args, **kwargs)
        if t.element_size() == 1 and t.dtype != torch.bool:
            t.view(torch.uint8).fill_(0x7F)
        elif t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", empty)


def uniform(gen, *shape, lo=-1.0, hi=1.0):
    return (torch.rand(*shape, generator=gen, dtype=F64) * (hi - lo) + lo)


def on_device(*tensors):
    return [t.to(DEV) for t in tensors]


# ---------------------------------------------------------------------------
# selective_state_update (R5d, R8)

H, P, N, G = 4, 16, 32, 2                 # a reduced geometry (heads per group: 2)
CHANNELS = H * P + 2 * G * N


def ssm_inputs(gen, rows, slots):
    xbc = bf16(uniform(gen, rows, CHANNELS, lo=-2, hi=2)).bfloat16()
    dt = bf16(uniform(gen, rows, H, lo=-3, hi=1)).bfloat16()
    A = -torch.exp(uniform(gen, H, lo=-1, hi=1)).float()
    dt_bias = uniform(gen, H, lo=-1, hi=0.5).float()
    D = uniform(gen, H).float()
    state = uniform(gen, slots, H, P, N).float()
    return on_device(xbc, dt, A, dt_bias, D, state)


def split_xbc(xbc):
    rows = xbc.shape[0]
    x = xbc[:, :H * P].view(rows, H, P)
    B = xbc[:, H * P:H * P + G * N].view(rows, G, N)
    C = xbc[:, H * P + G * N:].view(rows, G, N)
    return x, B, C


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
        state_batch_indices=src, dst_state_batch_indices=dst, out=out)
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
        (dict(A=uniform(gen, H, P, N).float().to(DEV)), "varies over"),
        (dict(dt=dt[:, :, None].expand(rows, H, P).contiguous()), "varies over headdim"),
        (dict(z=x), "z (the gate"),
        (dict(state=state.half()), "state must be float32"),
        (dict(x=x.float()), "x must be bfloat16"),
        (dict(state_batch_indices=torch.tensor([1, 1], dtype=torch.int32, device=DEV)),
         "repeats"),
        (dict(state_batch_indices=torch.tensor([0, 4], dtype=torch.int32, device=DEV)),
         "outside the 4 state slots"),
        (dict(state_batch_indices=torch.tensor([0, 1], dtype=torch.int32, device=DEV),
              dst_state_batch_indices=torch.tensor([1, 2], dtype=torch.int32, device=DEV)),
         "would race"),
        (dict(pad_slot_id=0), "pad_slot_id"),
    ]
    for kwargs, text in cases:
        with pytest.raises(tj.ArgumentError, match=re.escape(text)):
            call(**kwargs)
    assert torch.equal(state, before), "a refused call changes nothing"


# ---------------------------------------------------------------------------
# mamba_chunk_scan_combined_varlen and mamba_chunk_scan_combined (R5p)

SH, SP, SN, SG = 4, 32, 32, 2             # ssd_prefill's reduced geometry (SsdPrefillTest)
SCH = SH * SP + 2 * SG * SN


def ssd_inputs(gen, tokens, sequences):
    xbc = bf16(uniform(gen, tokens, SCH)).bfloat16()
    wide = bf16(uniform(gen, tokens, SH + 7, lo=-3, hi=1)).bfloat16()  # dt: columns 3..3+H
    # Slow decays, so an initial state still shows in the final state after 45 tokens.
    A = -torch.exp(uniform(gen, SH, lo=-3, hi=-1)).float()
    dt_bias = uniform(gen, SH, lo=-2, hi=-0.5).float()
    D = uniform(gen, SH).float()
    init = uniform(gen, sequences, SH, SP, SN).float()
    xbc, wide, A, dt_bias, D, init = on_device(xbc, wide, A, dt_bias, D, init)
    x = xbc[:, :SH * SP].view(tokens, SH, SP)
    B = xbc[:, SH * SP:SH * SP + SG * SN].view(tokens, SG, SN)
    C = xbc[:, SH * SP + SG * SN:].view(tokens, SG, SN)
    return x, wide[:, 3:3 + SH], A, dt_bias, D, B, C, init


def vllm_chunks(lengths, chunk_size, first):
    """cu_chunk_seqlens, seq_idx and last_chunk_indices as vLLM builds them:
    chunks never cross a sequence; a sequence's first chunk has first[s] tokens
    (prefix-aligned), the rest chunk_size."""
    cu, seq, last, start = [0], [], [], 0
    for s, length in enumerate(lengths):
        t = 0
        while t < length:
            t = min(length, t + (first[s] if t == 0 else chunk_size))
            cu.append(start + t)
            seq.append(s)
        last.append(len(seq) - 1)
        start += length
    i32 = lambda v: torch.tensor(v, dtype=torch.int32, device=DEV)  # noqa: E731
    return i32(cu), i32(seq), i32(last)


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


def test_mamba_chunk_scan_combined_varlen_state_dtype_and_refusals():
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
    for kwargs, text in [(dict(z=x), "z \\(the gate"),
                         (dict(return_intermediate_states=True), "return_intermediate_states"),
                         (dict(D=uniform(gen, SH, SP).float().to(DEV)), "varies over")]:
        with pytest.raises(tj.ArgumentError, match=text):
            ops.mamba_chunk_scan_combined_varlen(*args, **kwargs)
    with pytest.raises(tj.ArgumentError, match="dt must be bfloat16"):
        ops.mamba_chunk_scan_combined_varlen(x, dt.float(), *args[2:])


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
                               activation="silu")
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
                                                                   device=DEV))
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
    with pytest.raises(tj.ArgumentError, match="activation=None"):
        ops.causal_conv1d_update(x, page, weight, bias)
    with pytest.raises(tj.ArgumentError, match="width 3"):
        ops.causal_conv1d_update(x, page, weight[:, :3].contiguous(), bias, activation="silu")
    with pytest.raises(tj.ArgumentError, match="repeats"):
        ops.causal_conv1d_update(x, page, weight, bias, activation="silu",
                                 conv_state_indices=torch.tensor([1, 1, 2, 3], device=DEV))
    with pytest.raises(tj.ArgumentError, match="num_accepted_tokens"):
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
    for kwargs, text in [(dict(), "norm_before_gate=True"),
                         (dict(norm_before_gate=False, bias=w), "bias is not supported"),
                         (dict(norm_before_gate=False, group_size=48), "does not divide"),
                         (dict(norm_before_gate=False, upcast=False), "upcast=False")]:
        with pytest.raises(tj.ArgumentError, match=text):
            ops.rms_norm_gated(y, w, kwargs.pop("bias", None), **kwargs)


# ---------------------------------------------------------------------------
# The static FP8 quant and the W8A8 linear (R1)

def test_scaled_fp8_quant(poisoned):
    gen = torch.Generator().manual_seed(81)
    x = bf16(uniform(gen, 37, 208, lo=-7, hi=7)).bfloat16().to(DEV)   # 208: not a whole block
    scale = 0.0125
    for s in (scale, torch.tensor([scale], device=DEV)):
        q, s_out = ops.scaled_fp8_quant(x, s)
        assert q.shape == x.shape and q.element_size() == 1
        assert float(s_out) == float(torch.tensor(scale, dtype=torch.float32))
        got, want = ref.e4m3_values(q), ref.quant_e4m3(x, scale)
        # R1: a quotient on a rounding boundary may move by one code (reciprocal vs division).
        step = want.abs() * 2.0 ** -3 + 2.0 ** -9
        assert outside(got, want, 0, 0) < got.numel() // 100
        assert int(((got - want).abs() > step).sum()) == 0 and bool(torch.isfinite(got).all())
        dropped = ref.quant_e4m3(x, 1.0)  # the counterfactual: the scale dropped
        assert int((dropped == got).sum()) < got.numel() // 10
    with pytest.raises(tj.ArgumentError, match="dynamic quantization"):
        ops.scaled_fp8_quant(x)


def e4m3_codes(gen, *shape, lo=-3.0, hi=3.0):
    """Random e4m3 codes (uint8) and their values."""
    values = torch.from_numpy(ref.round_e4m3(uniform(gen, *shape, lo=lo, hi=hi).numpy()))
    codes = torch.from_numpy(_encode(values.numpy()))
    return codes, values


def _encode(values):
    import numpy as np
    from mamba2_reference import _E4M3
    mag = np.abs(values)
    codes = np.searchsorted(_E4M3, mag).astype(np.uint8)
    return np.where(values < 0, codes | 0x80, codes).astype(np.uint8)


def as_e4m3(codes):
    codes = codes.to(DEV)
    return codes.view(ops._launch.E4M3) if ops._launch.E4M3 is not None else codes


def r1h(rows):
    """Whether out_proj's tiles for `rows` take Hopper's reduced-precision e4m3
    wgmma sums (R1h): the 64-row tiles on sm_90a."""
    return DEV.type == "cuda" and rows >= 64 and tj.runtime().arch == "sm_90a"


@pytest.mark.parametrize("rows", [3, 20, 70])   # GEMV, 16-row and 64-row tensor-core tiles
def test_scaled_mm(poisoned, rows):
    gen = torch.Generator().manual_seed(82 + rows)
    k, n, s_a, s_b = 256, 96, 0.05, 0.01
    a_codes, a = e4m3_codes(gen, rows, k)
    w_codes, w = e4m3_codes(gen, n, k)
    scale_a, scale_b = (torch.tensor([v], device=DEV) for v in (s_a, s_b))
    want, magnitude = ref.w8a8(a, w, s_a, s_b)
    reduced = 2.0 ** -8 * magnitude if r1h(rows) else 0
    y = ops.scaled_mm(as_e4m3(a_codes), as_e4m3(w_codes).t(), scale_a, scale_b)
    assert y.dtype == torch.bfloat16 and y.shape == (rows, n)
    # R1: one bf16 ulp of the oracle (rarely reached); R1h adds 2^-8 s sum|a w| on wgmma.
    err = (y.to(F64).cpu() - bf16(want)).abs()
    assert int((err > BF16_ULP * want.abs() + reduced).sum()) == 0
    assert int((err > 0).sum()) <= (y.numel() // 100 if not r1h(rows) else y.numel())
    y32 = ops.scaled_mm(as_e4m3(a_codes), as_e4m3(w_codes).t(), scale_a, scale_b,
                        out_dtype=torch.float32)
    f32_band = 2.0 ** -16 * magnitude + reduced       # f32 sums of 256 products, any order
    assert int(((y32.to(F64).cpu() - want).abs() > f32_band).sum()) == 0
    # The counterfactuals: a dropped K step, a weight column scaled by 1 + 1/8.
    step = ref.w8a8(a[:, 16:], w[:, 16:], s_a, s_b)[0]
    assert int(((y32.to(F64).cpu() - step).abs() > f32_band).sum()) > y.numel() // 4
    column = (y32.to(F64).cpu()[:, 0] - 1.125 * want[:, 0]).abs() > f32_band[:, 0]
    assert int(column.sum()) > rows // 4


def test_w8a8_linear(poisoned):
    gen = torch.Generator().manual_seed(85)
    rows, k, n, s_x, s_w = 5, 256, 96, 0.05, 0.01
    x = bf16(uniform(gen, rows, k, lo=-6, hi=6)).bfloat16().to(DEV)
    w_codes, w = e4m3_codes(gen, n, k)
    y = ops.w8a8_linear(x, as_e4m3(w_codes), torch.tensor([s_w], device=DEV), s_x)
    # The oracle is fed the activation codes as the backend computed them (R1), and
    # those codes are held to the f64 quant separately (test_scaled_fp8_quant).
    a_q, _ = ops.scaled_fp8_quant(x, s_x)
    a = ref.e4m3_values(a_q)
    assert outside(a, ref.quant_e4m3(x, s_x), 0, 0) < a.numel() // 100
    want, _ = ref.w8a8(a, w, s_x, s_w)
    err = (y.to(F64).cpu() - bf16(want)).abs()
    assert int((err > BF16_ULP * want.abs()).sum()) == 0
    # The counterfactuals: input_scale dropped from the output scale; a W8A16 oracle.
    assert outside(y, want / s_x, 0, BF16_ULP) > y.numel() // 2
    w8a16 = (s_w * (x.to(F64).cpu() @ w.t()))
    assert outside(y, w8a16, 0, BF16_ULP) > y.numel() // 10


# ---------------------------------------------------------------------------
# Interop: DLPack in and out, the CUDA array interface's stream

class DLPackOnly:
    """Exposes an array through the DLPack protocol alone."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__() if stream is None else self.array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_ops_take_dlpack_producers_and_return_dlpack_exporters():
    import numpy as np
    gen = torch.Generator().manual_seed(91)
    rows = 3
    xbc, dt, A, dt_bias, D, state = ssm_inputs(gen, rows, rows)
    x, B, C = (t.contiguous() for t in split_xbc(xbc))
    twin = state.clone()
    out = torch.empty(rows, H, P, device=DEV)
    ops.selective_state_update(DLPackOnly(state), DLPackOnly(x), DLPackOnly(dt), DLPackOnly(A),
                               DLPackOnly(B), DLPackOnly(C), D=DLPackOnly(D), dt_bias=dt_bias,
                               dt_softplus=True, out=DLPackOnly(out))
    want = ops.selective_state_update(twin, x, dt, A, B, C, D=D, dt_bias=dt_bias,
                                      dt_softplus=True, out=torch.empty_like(out))
    assert torch.equal(out, want) and torch.equal(state, twin), "DLPack views are used in place"
    if DEV.type == "cpu":  # DLPack out: numpy reads the returned tensor without a copy
        assert np.array_equal(np.from_dlpack(want), want.numpy())


def test_kernels_take_dlpack_producers_on_the_interpreter(rng):
    import numpy as np
    from conftest import bf16_bits
    width, rows = 256, 2
    y = bf16_bits(np.round(rng.standard_normal((rows, width)) * 64) / 64)
    z = bf16_bits(np.round(rng.standard_normal((rows, width)) * 64) / 64)
    w = bf16_bits(np.ones(width))
    out, twin = np.zeros((rows, width), np.uint16), np.zeros((rows, width), np.uint16)
    kernel = tj.kernels.gated_rmsnorm.build(width=width, group_size=64)
    kernel(DLPackOnly(y), DLPackOnly(z), DLPackOnly(w), DLPackOnly(out), rows, 1e-5,
           grid=(rows, 4))
    kernel(y, z, w, twin, rows, 1e-5, grid=(rows, 4))
    assert np.array_equal(out, twin) and out.any(), "written in place, through DLPack"
    with pytest.raises(tj.ArgumentError, match="type code"):
        kernel(DLPackOnly(y.astype(np.float32)), z, w, out, rows, 1e-5, grid=(rows, 4))
    with pytest.raises(tj.ArgumentError, match="not C-contiguous"):
        kernel(DLPackOnly(np.asfortranarray(y)), z, w, out, rows, 1e-5, grid=(rows, 4))


class FakeInterface:
    """A __cuda_array_interface__ (v3) object at a made-up address."""

    def __init__(self, shape, typestr, stream):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, data=(1 << 20, False),
                                             version=3, strides=None, stream=stream)


def test_cuda_array_interface_streams_order_the_launch():
    from tilejit import _arrays
    kernel = tj.kernels.conv_update.build(channels=256)
    args = lambda s1, s2: [FakeInterface((2, 256), "<u2", s1),  # noqa: E731
                           FakeInterface((4, 256, 3), "<u2", s2),
                           FakeInterface((2,), "<i4", None), FakeInterface((256, 4), "<u2", None),
                           FakeInterface((256,), "<u2", None), FakeInterface((2, 256), "<u2", s1)]
    _, chosen, waits = _arrays.device_args(kernel, args(7, 9), 0, None, [])
    assert (chosen, waits) == (7, [9]), "the first interface stream, after the other"
    _, chosen, waits = _arrays.device_args(kernel, args(7, 9), 0, 5, [])
    assert (chosen, waits) == (5, [7, 9]), "an explicit stream waits for both producers"
    _, chosen, waits = _arrays.device_args(kernel, args(None, None), 0, None, [])
    assert (chosen, waits) == (0, [])
    with pytest.raises(tj.ArgumentError, match="stream 0"):
        _arrays.device_args(kernel, args(0, None), 0, None, [])


@pytest.mark.skipif(DEV.type != "cuda", reason="needs a CUDA device tilejit can open")
def test_cuda_array_interface_stream_on_the_gpu():
    """A producer's pending work on its own stream is ordered before the launch."""
    channels, rows = 256, 2
    side = torch.cuda.Stream()
    x = torch.zeros(rows, channels, dtype=torch.bfloat16, device="cuda")
    src = torch.randn(rows, channels, device="cuda").bfloat16()
    page = torch.zeros(rows, channels, 3, dtype=torch.bfloat16, device="cuda")
    weight = torch.ones(channels, 4, dtype=torch.bfloat16, device="cuda")
    bias = torch.zeros(channels, dtype=torch.bfloat16, device="cuda")
    slots = torch.arange(rows, dtype=torch.int32, device="cuda")
    out = torch.zeros_like(x)
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        x.copy_(src)

    class OnSide:  # torch's own interface has no bf16 typestr
        def __init__(self, t):
            typestr = {torch.bfloat16: "<u2", torch.int32: "<i4"}[t.dtype]
            self.__cuda_array_interface__ = dict(
                shape=tuple(t.shape), typestr=typestr, data=(t.data_ptr(), False), version=3,
                strides=None, stream=side.cuda_stream)

    tj.kernels.conv_update.build(channels=channels)(
        OnSide(x), OnSide(page), OnSide(slots), OnSide(weight), OnSide(bias), OnSide(out),
        grid=(rows, 1))
    torch.cuda.synchronize()
    assert torch.equal(page[:, :, 2], src), "the launch read x after the side stream wrote it"


def test_version():
    assert isinstance(tj.__version__, str) and tj.__version__.count(".") == 2


@pytest.mark.skipif(DEV.type != "cuda", reason="needs a CUDA device tilejit can open")
def test_ops_wait_for_the_interface_stream_on_the_gpu():
    """An op's __cuda_array_interface__ input written on its producer's stream
    is read after that write: the current stream waits for the producer."""
    gen = torch.Generator().manual_seed(92)
    a_codes, a = e4m3_codes(gen, 3, 256)
    w_codes, w = e4m3_codes(gen, 96, 256)
    side = torch.cuda.Stream()
    a_dev = torch.zeros(3, 256, dtype=torch.uint8, device="cuda")
    b_dev = w_codes.to("cuda").t()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        a_dev.copy_(a_codes.to("cuda", non_blocking=True))

    class Interface:
        def __init__(self, t, stream):
            self.__cuda_array_interface__ = dict(
                shape=tuple(t.shape), typestr="|u1", data=(t.data_ptr(), False), version=3,
                strides=tuple(s * t.element_size() for s in t.stride()), stream=stream)

    y = ops.scaled_mm(Interface(a_dev, side.cuda_stream), Interface(b_dev, None), 0.05, 0.01,
                      out_dtype=torch.float32)
    torch.cuda.synchronize()
    want, magnitude = ref.w8a8(a, w, 0.05, 0.01)
    assert int(((y.to(F64).cpu() - want).abs() > 2.0 ** -16 * magnitude).sum()) == 0
