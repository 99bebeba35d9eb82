"""On a GPU (torch with CUDA): the registered Mamba2 ops and a Python-built kernel
with torch tensors in and out, against plain-torch references, launched on the
tensors' current stream. Skipped, with the reason, where there is no GPU."""

import pytest

torch = pytest.importorskip("torch", reason="the GPU tests need torch")
if not torch.cuda.is_available():
    pytest.skip("the GPU tests need a CUDA device", allow_module_level=True)

import tilejit as tj  # noqa: E402
import numpy as np  # noqa: E402

from test_builder import build_fma, build_scale, fma_inputs  # noqa: E402


def torch_gated_rmsnorm(y, z, w, group, eps):
    """R6 in f64 with its two bf16 rounding points, in plain torch."""
    v = y.double() * torch.nn.functional.silu(z.double())
    rows, width = v.shape
    g = v.view(rows, width // group, group)
    normed = (g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + eps)).view(rows, width)
    return (w.double() * normed.bfloat16().double()).bfloat16()


def assert_band(got, want, atol, rtol):
    err = (got.double() - want.double()).abs()
    bad = err > atol + rtol * want.double().abs()
    assert got.numel() == want.numel() and not bad.any(), (
        f"{int(bad.sum())} of {got.numel()} out of band, worst {float(err.max()):.3g}")


def test_gated_rmsnorm_on_torch_tensors():
    rows, width, group, eps = 64, 4096, 512, 1e-5
    gen = torch.Generator(device="cuda").manual_seed(1)
    y = torch.randn(rows, width, device="cuda", generator=gen).bfloat16()
    y *= torch.repeat_interleave(2.0 ** torch.arange(width // group, device="cuda"), group)
    z = torch.randn(rows, width, device="cuda", generator=gen).bfloat16()
    w = (1 + 0.1 * torch.randn(width, device="cuda", generator=gen)).bfloat16()
    out = torch.full_like(y, float("nan"))
    tj.kernels.gated_rmsnorm(y, z, w, out, rows, eps, grid=(rows, width // group))
    torch.cuda.synchronize()
    want = torch_gated_rmsnorm(y, z, w, group, eps)
    assert_band(out, want, 5e-2, 1e-2)  # R6's bf16 band
    whole_row = torch_gated_rmsnorm(y, z, w, width, eps)
    assert (whole_row.double() - want.double()).abs().max() > 1e-1


def test_conv_update_on_torch_tensors():
    batch, channels, slots = 8, 6144, 16
    gen = torch.Generator(device="cuda").manual_seed(2)
    rnd = lambda *s: torch.randn(*s, device="cuda", generator=gen)  # noqa: E731
    x, state = rnd(batch, channels).bfloat16(), rnd(slots, channels, 3).bfloat16()
    weight, bias = (0.5 * rnd(channels, 4)).bfloat16(), (0.1 * rnd(channels)).bfloat16()
    slot_of = torch.tensor([3, -1, 0, 7, 9, 1, 15, 4], dtype=torch.int32, device="cuda")
    before = state.clone()
    out = torch.full_like(x, float("nan"))
    tj.kernels.conv_update(x, state, slot_of, weight, bias, out, grid=(batch, channels // 256))
    torch.cuda.synchronize()
    want_state = before.clone()
    for row, slot in enumerate(slot_of.tolist()):
        if slot < 0:
            assert (out[row] == 0).all()
            continue
        s = before[slot].double()
        pre = bias.double() + (weight[:, :3].double() * s).sum(1) + weight[:, 3].double() * x[row].double()
        assert_band(out[row], torch.nn.functional.silu(pre).bfloat16(), 1e-2, 1e-2)
        want_state[slot] = torch.stack([before[slot, :, 1], before[slot, :, 2], x[row]], -1)
    assert torch.equal(state, want_state)


def test_python_kernel_on_a_side_stream_and_in_a_cuda_graph():
    module = build_scale(block=128)
    # The runtime's counters are per process: earlier tests (the decode step's
    # weights) count too, so this test compares what its own launches add.
    before = tj.runtime().stats()
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    out = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        module(x, out, n, 0.5, grid=(n // 128,))
    side.synchronize()
    assert torch.equal(out, (x * 0.5).bfloat16())
    # A launch captured into a CUDA graph proves the launch path does no host
    # copy or synchronization (both are illegal during capture).
    graph, y = torch.cuda.CUDAGraph(), torch.zeros_like(x)
    with torch.cuda.graph(graph):
        module(y, out, n, 3.0, grid=(n // 128,))
    y.copy_(x)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, (x * 3.0).bfloat16())
    stats = tj.runtime().stats()
    assert stats.modules_loaded >= before.modules_loaded + 1, str(stats)
    assert stats.bytes_uploaded == before.bytes_uploaded, str(stats)


def test_fma_matches_the_interpreter_bit_for_bit():
    """fma.rn.f32 on the GPU is the interpreter's std::fma, and `a * b + c` is
    never contracted into one: both outputs equal the interpreter's exactly, and
    element 0 tells the two spellings apart."""
    n = 128
    xs, ys, zs = fma_inputs(np.random.default_rng(41), n)
    module = build_fma(n)
    want_fused, want_split = np.zeros(n, np.float32), np.zeros(n, np.float32)
    module.run((1,), xs, ys, zs, want_fused, want_split)
    fused, split = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
    module(*(torch.from_numpy(v).cuda() for v in (xs, ys, zs)), fused, split, grid=(1,))
    torch.cuda.synchronize()
    assert np.array_equal(fused.cpu().numpy().view(np.uint32), want_fused.view(np.uint32))
    assert np.array_equal(split.cpu().numpy().view(np.uint32), want_split.view(np.uint32))
    assert float(fused[0]) != float(split[0])


def test_device_errors_are_exceptions():
    module = build_scale()
    x = torch.zeros(128, device="cuda")
    with pytest.raises(tj.ArgumentError, match="expects torch.bfloat16"):
        module(x, x, 128, 1.0, grid=1)
    with pytest.raises(tj.ArgumentError, match="mix of host and device"):
        module(x.cpu().numpy(), torch.zeros(128, dtype=torch.bfloat16, device="cuda"), 1, 1.0,
               grid=1)


def test_ssm_update_on_torch_tensors():
    heads, head_dim, n, groups, rows, slots = 64, 64, 128, 8, 4, 8
    inner = heads * head_dim
    gen = torch.Generator(device="cuda").manual_seed(3)
    rnd = lambda *s: torch.randn(*s, device="cuda", generator=gen)  # noqa: E731
    xbc, dt = rnd(rows, inner + 2 * groups * n).bfloat16(), rnd(rows, heads).bfloat16()
    a_log, dt_bias, d = rnd(heads), rnd(heads), rnd(heads)
    page = rnd(slots, heads, head_dim, n)
    before = page.clone()
    slot_of = torch.tensor([6, -1, 0, 3], dtype=torch.int32, device="cuda")
    y = torch.full((rows, inner), float("nan"), dtype=torch.bfloat16, device="cuda")
    tj.kernels.ssm_update(xbc, dt, a_log, dt_bias, d, slot_of, page, y, 0.0, float("inf"),
                          grid=(head_dim // 16, heads, rows))
    torch.cuda.synchronize()
    g = torch.arange(heads, device="cuda") // (heads // groups)
    for row, slot in enumerate(slot_of.tolist()):
        if slot < 0:
            assert (y[row] == 0).all()
            continue
        v = xbc[row].double()
        x = v[:inner].view(heads, head_dim)
        b = v[inner:inner + groups * n].view(groups, n)[g]
        c = v[inner + groups * n:].view(groups, n)[g]
        dtp = torch.nn.functional.softplus(dt[row].double() + dt_bias.double())
        decay = torch.exp(-torch.exp(a_log.double()) * dtp)
        new = decay[:, None, None] * before[slot].double() + \
            (dtp[:, None] * x)[:, :, None] * b[:, None, :]
        want_y = ((new * c[:, None, :]).sum(-1) + d.double()[:, None] * x).reshape(inner)
        assert_band(page[slot], new, 1e-3, 3e-4)  # R5d's f32 band
        assert_band(y[row], want_y.bfloat16(), 1e-2, 1e-2)
    untouched = [s for s in range(slots) if s not in slot_of.tolist()]
    assert torch.equal(page[untouched], before[untouched])
