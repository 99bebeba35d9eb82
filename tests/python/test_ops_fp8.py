"""tilejit.ops: the static FP8 quant, scaled_mm and the W8A8 linear (R1, R1h), and interop: DLPack, the CUDA array interface stream, __version__, against plain-torch f64 references (ops_reference.py) at
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
from ops_support import (BF16_ULP, CHANNELS, DEV, G, H, N, P,  # noqa: E402,F401
                         assert_band, on_device, outside, poisoned, split_xbc,
                         ssm_inputs, uniform)

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
    # A given output is written in place, or refused: never a copy of it.
    out = torch.empty(37, 208, dtype=q.dtype, device=DEV)
    q2, _ = ops.scaled_fp8_quant(x, scale, output=out)
    assert q2.data_ptr() == out.data_ptr() and torch.equal(out.view(torch.uint8),
                                                           q.view(torch.uint8))
    transposed = torch.empty(208, 37, dtype=q.dtype, device=DEV).t()
    with pytest.raises(tj.ArgumentError, match="strides"):
        ops.scaled_fp8_quant(x, scale, output=transposed)
    # Rows that are each contiguous but do not collapse into one [rows, K] view
    # (reshape would copy them).
    swapped = torch.empty(9, 4, 208, dtype=q.dtype, device=DEV).permute(1, 0, 2)
    with pytest.raises(tj.ArgumentError, match="does not view as"):
        ops.scaled_fp8_quant(x[:36].reshape(4, 9, 208), scale, output=swapped)


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


def r1h(rows, k, n):
    """Whether out_proj's tiles for `rows` take Hopper's reduced-precision e4m3
    wgmma sums (R1h): tiles of 64 rows or more on sm_90a, where the op plans
    them as the Mamba2 plans do (ops/_fp8.py)."""
    if DEV.type != "cuda" or tj.runtime().arch != "sm_90a":
        return False
    geometry = dict(inner=k, hidden=n, fp8=1, out_f32=0, scale_ptr=1)
    return ops._fp8._projection(DEV, rows, geometry)["block_m"] >= 64


# GEMV, 16-row tiles, and from 64 rows the prefill plans' tiles (on sm_90a, as
# decode: a widening projection from 64 rows, a narrowing one from 256).
@pytest.mark.parametrize("rows, n", [(3, 96), (20, 96), (70, 96), (70, 320)])
def test_scaled_mm(poisoned, rows, n):
    gen = torch.Generator().manual_seed(82 + rows + n)
    k, s_a, s_b = 256, 0.05, 0.01
    a_codes, a = e4m3_codes(gen, rows, k)
    w_codes, w = e4m3_codes(gen, n, k)
    scale_a, scale_b = (torch.tensor([v], device=DEV) for v in (s_a, s_b))
    want, magnitude = ref.w8a8(a, w, s_a, s_b)
    reduced = 2.0 ** -8 * magnitude if r1h(rows, k, n) else 0
    y = ops.scaled_mm(as_e4m3(a_codes), as_e4m3(w_codes).t(), scale_a, scale_b)
    assert y.dtype == torch.bfloat16 and y.shape == (rows, n)
    # R1: one bf16 ulp of the oracle (rarely reached); R1h adds 2^-8 s sum|a w| on wgmma.
    err = (y.to(F64).cpu() - bf16(want)).abs()
    assert int((err > BF16_ULP * want.abs() + reduced).sum()) == 0
    assert int((err > 0).sum()) <= (y.numel() // 100 if not r1h(rows, k, n) else y.numel())
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
