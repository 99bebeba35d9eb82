"""tilejit.ops' SSD ops under the chunk-parallel schedule (TILEJIT_SSD_SCHEDULE=chunked:
ssd_span_state over one-chunk spans, ssd_state_pass writing the final states,
ssd_chunk_scan) against the f64 sequential oracle (ssd_reference.py) at R5p's bands:
dtypes, several chunks with a short last one, varlen batches with initial states, the
gate, D per (head, p), the batch-major form, and a state the pass cannot take in
vectors (the span schedule then). Each case also shows the schedule took effect: its
outputs differ from the span schedule's in some bit. Outputs start poisoned."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit.ops as ops  # noqa: E402
from tilejit.ops import _plan  # noqa: E402

import ssd_reference as ref  # noqa: E402
from ops_support import DEV, assert_band, outside, poisoned  # noqa: E402,F401

F32_BAND, LOW_BAND = (8e-3, 5e-3), (5e-2, 5e-2)  # R5p: f32 y and states; 16-bit y


def varlen(monkeypatch, schedule, x, dt, A, B, C, lengths, **kwargs):
    """One varlen call under `schedule`; returns (y, final states)."""
    monkeypatch.setenv("TILEJIT_SSD_SCHEDULE", schedule)
    _plan.clear()  # a cached call keeps the schedule it was planned with
    cu, bounds, last, seq_idx, _ = ref.chunk_metadata(lengths, 64)
    out = torch.full(x.shape, float("nan"), dtype=x.dtype, device=DEV)
    states = ops.mamba_chunk_scan_combined_varlen(
        x, dt, A, B, C, 64, cu.to(DEV), bounds.to(DEV), last.to(DEV), seq_idx.to(DEV), out,
        **kwargs)
    return out, states


def on(*tensors):
    return [None if t is None else t.to(DEV) for t in tensors]


@pytest.mark.parametrize("itype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("lengths,initial", [([300], False), ([5, 200, 1, 130], True)])
def test_varlen(monkeypatch, poisoned, itype, lengths, initial):
    heads, head_dim, groups, state = 4, 16, 2, 16
    tokens = sum(lengths)
    gen = torch.Generator().manual_seed(tokens + initial)
    A, dt, x, B, C = on(*ref.inputs(gen, tokens, heads, head_dim, groups, state, itype))
    D = torch.rand(heads, head_dim, generator=gen).to(DEV)
    z = torch.randn(tokens, heads, head_dim, generator=gen).to(itype).to(DEV)
    dt_bias = (torch.rand(heads, generator=gen) - 0.5).to(DEV)
    init = (torch.randn(len(lengths), heads, head_dim, state, generator=gen).to(DEV)
            if initial else None)
    kwargs = dict(D=D, z=z, dt_bias=dt_bias, dt_softplus=True, initial_states=init,
                  state_dtype=torch.float32)
    y, states = varlen(monkeypatch, "chunked", x, dt, A, B, C, lengths, **kwargs)
    span_y, _ = varlen(monkeypatch, "span", x, dt, A, B, C, lengths, **kwargs)
    band = F32_BAND if itype == torch.float32 else LOW_BAND
    at = 0
    for i, n in enumerate(lengths):
        rows = slice(at, at + n)
        want, S, _ = ref.scan(x[rows], dt[rows], A, B[rows], C[rows], D=D, z=z[rows],
                              dt_bias=dt_bias, softplus=True,
                              state=None if init is None else init[i])
        assert_band(y[rows], want, *band, n * heads * head_dim)
        assert_band(states[i], S, *F32_BAND, heads * head_dim * state)
        if init is not None and n > 1:  # the counterfactual: the initial state dropped
            cut, _, _ = ref.scan(x[at:at + 1], dt[at:at + 1], A, B[at:at + 1], C[at:at + 1],
                                 D=D, z=z[at:at + 1], dt_bias=dt_bias, softplus=True)
            assert outside(y[at:at + 1], cut, *band) > heads * head_dim // 4
        at += n
    assert not torch.equal(y, span_y)  # the schedule took effect


def test_batch_major(monkeypatch, poisoned):
    # Two rows of 200 tokens (two chunks of 128 each, the second short), final
    # states returned; then a head_dim * state the pass cannot walk in 16-byte
    # vectors (5 x 5) falls back to the span schedule and stays in the band.
    for heads, head_dim, state, different in [(4, 16, 16, True), (2, 5, 5, False)]:
        gen = torch.Generator().manual_seed(heads + head_dim)
        A, dt, x, B, C = on(*ref.inputs(gen, 400, heads, head_dim, 1, state, torch.float32))
        results = {}
        for schedule in ("chunked", "span"):
            monkeypatch.setenv("TILEJIT_SSD_SCHEDULE", schedule)
            _plan.clear()
            results[schedule] = ops.mamba_chunk_scan_combined(
                x.view(2, 200, heads, head_dim), dt.view(2, 200, heads), A,
                B.view(2, 200, 1, state), C.view(2, 200, 1, state), 64,
                return_final_states=True)
        y, states = results["chunked"]
        for row in range(2):
            rows = slice(200 * row, 200 * row + 200)
            want, S, _ = ref.scan(x[rows], dt[rows], A, B[rows], C[rows])
            assert_band(y[row], want, *F32_BAND, 200 * heads * head_dim)
            assert_band(states[row], S, *F32_BAND, heads * head_dim * state)
        assert torch.equal(y, results["span"][0]) != different
