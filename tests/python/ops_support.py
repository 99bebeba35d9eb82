"""What the tilejit.ops tests (test_ops_*.py) share: the device they run on, the
band assertions, the poisoned-output fixture and input helpers. Imported after
each test module's `pytest.importorskip("torch")`."""

import pytest
import torch

import tilejit as tj

from ops_reference import F64, bf16

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


# The reduced SSM geometry of the selective_state_update tests.
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


# ssd_prefill's reduced geometry (SsdPrefillTest), for the SSD op tests.
SH, SP, SN, SG = 4, 32, 32, 2
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
