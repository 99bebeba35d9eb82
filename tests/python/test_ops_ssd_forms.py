"""tilejit.ops' SSD ops beyond vLLM's test grid: mixed element types (the issue's
A bf16 with x f32, 16-bit B/C, f16 outputs, bf16 initial states), the gate z,
D per (head, p), mamba_ssm's batch-major form, the two schedules (the single
walk, and the prefill plan's spans for long batches) and what stays refused;
against the f64 sequential oracle (ssd_reference.py), each band with the
counterfactual it separates. Outputs start poisoned."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402
import tilejit.ops._ssd_schedule as schedule  # noqa: E402
from tilejit.ops import _plan  # noqa: E402

import ssd_reference as ref  # noqa: E402
from ops_support import DEV, assert_band, outside, poisoned  # noqa: E402,F401

F32_BAND, LOW_BAND = (8e-3, 5e-3), (5e-2, 5e-2)
H, P, G, N = 4, 16, 2, 16


def varlen(x, dt, A, B, C, lengths, out_dtype, chunk_size=32, **kwargs):
    cu, bounds, last, seq_idx, _ = ref.chunk_metadata(lengths, chunk_size)
    out = torch.full(x.shape, float("nan"), dtype=out_dtype, device=DEV)
    states = ops.mamba_chunk_scan_combined_varlen(
        x, dt, A, B, C, chunk_size, cu.to(DEV), bounds.to(DEV), last.to(DEV),
        seq_idx.to(DEV), out, **kwargs)
    return out, states


@pytest.fixture
def launches(monkeypatch):
    """The registered kernels each op call launches, in order (through the
    full path: no plan of an earlier call serves it)."""
    _plan.clear()
    names = []
    real = schedule.launch

    def record(kernel, *args, **kwargs):
        names.append(kernel)
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(schedule, "launch", record)
    return names


TYPE_MIXES = [
    # x, dt, A, B/C, D, dt_bias, z, out, initial states
    (torch.float32, torch.float32, torch.bfloat16, torch.float32, torch.float32,
     torch.float32, torch.float32, torch.float32, torch.float32),
    (torch.float32, torch.bfloat16, torch.float32, torch.float16, torch.bfloat16,
     torch.float16, torch.bfloat16, torch.float16, torch.bfloat16),
    (torch.float16, torch.float16, torch.float16, torch.float16, torch.float16,
     torch.float16, torch.float16, torch.float16, torch.float16),
    (torch.bfloat16, torch.float32, torch.float32, torch.bfloat16, torch.float32,
     torch.float32, torch.float32, torch.bfloat16, torch.float32),
]


@pytest.mark.parametrize("types", TYPE_MIXES)
def test_element_types_gate_and_d_per_p(poisoned, types):
    tx, tdt, ta, tbc, td, tbias, tz, tout, tinit = types
    lengths = [23, 41]
    gen = torch.Generator().manual_seed(7)
    A, dt, x, B, C = ref.inputs(gen, sum(lengths), H, P, G, N, torch.float32)
    D = torch.randn(H, P, generator=gen)
    dt_bias = torch.rand(H, generator=gen) - 0.5
    z = torch.randn(sum(lengths), H, P, generator=gen)
    init = torch.randn(len(lengths), H, P, N, generator=gen)
    x, dt, A, B, C, D, dt_bias, z, init = (
        t.to(ty).to(DEV) for t, ty in zip([x, dt, A, B, C, D, dt_bias, z, init],
                                          [tx, tdt, ta, tbc, tbc, td, tbias, tz, tinit]))
    limit = (0.0, 0.2)
    y, states = varlen(x, dt, A, B, C, lengths, tout, D=D, z=z, dt_bias=dt_bias,
                       initial_states=init, dt_softplus=True, dt_limit=limit,
                       state_dtype=torch.float32)
    band = F32_BAND if tout == torch.float32 else LOW_BAND
    at = ungated = 0
    for s, n in enumerate(lengths):
        t = slice(at, at + n)
        args = (x[t], dt[t], A, B[t], C[t])
        opts = dict(D=D, dt_bias=dt_bias, softplus=True, state=init[s], limit=limit)
        want, S, _ = ref.scan(*args, z=z[t], **opts)
        assert_band(y[t], want, *band, n * H * P)
        assert_band(states[s], S, *F32_BAND, H * P * N)
        plain, _, _ = ref.scan(*args, **opts)  # the counterfactual: the gate dropped
        ungated += outside(y[t], plain, *band) > n * H * P // 2
        at += n
    assert ungated == len(lengths)


def test_packed_xbc_and_per_head_d(poisoned):
    # x, B and C as column ranges of one bf16 xBC row (the layers' layout) are
    # read in place; D as a stride-0 expand is one value per head.
    tokens, lengths = 30, [12, 18]
    gen = torch.Generator().manual_seed(8)
    xbc = torch.randn(tokens, H * P + 2 * G * N, generator=gen).bfloat16().to(DEV)
    x = xbc[:, :H * P].view(tokens, H, P)
    B = xbc[:, H * P:H * P + G * N].view(tokens, G, N)
    C = xbc[:, H * P + G * N:].view(tokens, G, N)
    A, dt, _, _, _ = ref.inputs(gen, tokens, H, P, G, N, torch.float32)
    A, dt = A.to(DEV), dt.to(DEV)
    D = torch.randn(H, generator=gen).to(DEV)
    y, states = varlen(x, dt, A, B, C, lengths, torch.float32, D=D[:, None].expand(H, P))
    assert states.dtype == torch.bfloat16
    for s, (b, e) in enumerate([(0, 12), (12, 30)]):
        want, S, _ = ref.scan(x[b:e], dt[b:e], A, B[b:e], C[b:e], D=D)
        assert_band(y[b:e], want, *F32_BAND, (e - b) * H * P)
        assert_band(states[s], S, 8e-3, 5e-3 + 2.0 ** -8, H * P * N)


@pytest.mark.parametrize("lengths,head_dim", [([600, 100], P), ([40, 30], P), ([600, 100], 5)])
def test_schedule_by_shape(poisoned, launches, lengths, head_dim):
    # A batch of more than one span's worth of chunks runs the prefill plan's
    # three launches; a short one (or a state ssd_state_pass cannot walk in
    # 16-byte vectors, P x N = 25) the single walk. Either way the carry across
    # the span boundary is checked against the same oracle.
    gen = torch.Generator().manual_seed(9)
    A, dt, x, B, C = (t.to(DEV) for t in ref.inputs(gen, sum(lengths), 2, head_dim, 1,
                                                    head_dim if head_dim == 5 else N,
                                                    torch.float32))
    init = torch.randn(len(lengths), 2, head_dim, B.shape[2], generator=gen).to(DEV)
    y, states = varlen(x, dt, A, B, C, lengths, torch.float32, chunk_size=64,
                       initial_states=init)
    spans = schedule.uses_spans(sum(lengths) // schedule.KERNEL_CHUNK + len(lengths),
                                head_dim, B.shape[2])
    assert spans == (sum(lengths) > 512 and head_dim != 5)
    assert launches == (["ssd_span_state", "ssd_state_pass", "ssd_prefill"]
                        if spans else ["ssd_prefill"])
    at, boundary = 0, schedule.SPAN_CHUNKS * schedule.KERNEL_CHUNK
    for s, n in enumerate(lengths):
        t = slice(at, at + n)
        want, S, _ = ref.scan(x[t], dt[t], A, B[t], C[t], state=init[s])
        assert_band(y[t], want, *F32_BAND, n * 2 * head_dim)
        assert_band(states[s], S, *F32_BAND, 2 * head_dim * B.shape[2])
        at += n
    if sum(lengths) > boundary:  # the counterfactual: the carry into the second span dropped
        cut, _, _ = ref.scan(x[boundary:boundary + 1], dt[boundary:boundary + 1], A,
                             B[boundary:boundary + 1], C[boundary:boundary + 1])
        assert outside(y[boundary:boundary + 1], cut, *F32_BAND) > head_dim


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_batch_major_types_and_gate(poisoned, launches, dtype):
    batch, seqlen = 2, 300  # 2 x 300 tokens: more than one span
    gen = torch.Generator().manual_seed(10)
    A, dt, x, B, C = (t.to(DEV) for t in ref.inputs(gen, batch * seqlen, H, P, G, N, dtype))
    z = torch.randn(batch * seqlen, H, P, generator=gen).to(dtype).to(DEV)
    init = torch.randn(batch, H, P, N, generator=gen).to(dtype).to(DEV)
    view = lambda t: t.reshape(batch, seqlen, *t.shape[1:])  # noqa: E731
    out, final = ops.mamba_chunk_scan_combined(view(x), view(dt), A, view(B), view(C), 256,
                                               z=view(z), initial_states=init,
                                               return_final_states=True)
    assert out.dtype == dtype and final.dtype == torch.float32
    assert "ssd_state_pass" in launches
    band = F32_BAND if dtype == torch.float32 else LOW_BAND
    for b in range(batch):
        t = slice(b * seqlen, (b + 1) * seqlen)
        want, S, _ = ref.scan(x[t], dt[t], A, B[t], C[t], z=z[t], state=init[b])
        assert_band(out[b], want, *band, seqlen * H * P)
        assert_band(final[b], S, *F32_BAND, H * P * N)
        cut, _, _ = ref.scan(x[t][:1], dt[t][:1], A, B[t][:1], C[t][:1], z=z[t][:1])
        assert outside(out[b, :1], cut, *band) > H * P // 2  # the initial state dropped


def test_refusals():
    gen = torch.Generator().manual_seed(11)
    A, dt, x, B, C = (t.to(DEV) for t in ref.inputs(gen, 20, H, P, G, N, torch.float32))
    cu, bounds, last, seq_idx, _ = (t.to(DEV) if isinstance(t, torch.Tensor) else t
                                    for t in ref.chunk_metadata([20], 8))
    out = torch.empty(20, H, P, device=DEV)

    def call(x=x, B=B, C=C, out=out, **kwargs):
        return ops.mamba_chunk_scan_combined_varlen(x, dt, A, B, C, 8, cu, bounds, last,
                                                    seq_idx, out, **kwargs)

    for kwargs, text in [(dict(C=C.bfloat16()), "C must be float32"),
                         (dict(out=out.int()), "out must be"),
                         (dict(state_dtype=torch.int32), "not a floating type")]:
        with pytest.raises(tj.ArgumentError, match=text):
            call(**kwargs)


@pytest.mark.parametrize("intermediate", [False, True])
def test_refused_metadata_outside_the_single_walk(intermediate):
    # The span schedule and the intermediate states take metadata the device
    # check refused as an empty batch: the call raises (on the GPU at
    # check_errors), y is NaN and the initial states are untouched.
    lengths = [600, 100]
    gen = torch.Generator().manual_seed(12)
    A, dt, x, B, C = (t.to(DEV) for t in ref.inputs(gen, sum(lengths), 2, P, 1, N,
                                                    torch.float32))
    cu, bounds, last, seq_idx, _ = ref.chunk_metadata(lengths, 64)
    cu[1] = 650  # sequence 0 then ends inside a chunk the caller gave it: refused
    init = torch.randn(2, 2, P, N, generator=gen).to(DEV)
    before = init.clone()
    out = torch.zeros(sum(lengths), 2, P, device=DEV)
    with pytest.raises(tj.ArgumentError, match="checked on the device"):
        ops.mamba_chunk_scan_combined_varlen(
            x, dt, A, B, C, 64, cu.to(DEV), bounds.to(DEV), last.to(DEV), seq_idx.to(DEV),
            out, initial_states=init, return_intermediate_states=intermediate)
        ops.check_errors()
    assert torch.isnan(out).all() and torch.equal(init, before)
