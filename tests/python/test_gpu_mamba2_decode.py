"""On a GPU (torch with CUDA): tilejit.mamba2.DecodeStep at the full NemotronH
geometry with torch tensors in and out, against a plain-torch f64 reference of
R1-R8 written here (and the numpy one of mamba2_reference.py), in the bands of
docs/models.md; B=1 and B=3 (a padding row), carried steps. The launch path
makes no host copy: the runtime's copy counters show it, and the torch calls
that would copy through the host fail while a step runs. Skipped, with the
reason, where there is no GPU."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the GPU tests need torch")
if not torch.cuda.is_available():
    pytest.skip("the GPU tests need a CUDA device", allow_module_level=True)

import tilejit as tj  # noqa: E402
from conftest import assert_close, bf16_bits, from_bf16_bits, round_bf16  # noqa: E402
from mamba2_reference import decode_step  # noqa: E402
from test_mamba2_decode import OUT_BAND, STATE_BAND, random_pages  # noqa: E402


def torch_weights(w):
    """The layer's parameters as f64 CUDA tensors (bf16 bits and e4m3 codes
    decoded by torch's own dtypes)."""
    dev = lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()  # noqa: E731
    bf16 = lambda a: dev(a.view(np.int16)).view(torch.bfloat16).double()  # noqa: E731
    proj = (lambda a: dev(a).view(torch.float8_e4m3fn).double()) if w["fp8"] else bf16
    return {"in": proj(w["in_proj.weight"]), "out": proj(w["out_proj.weight"]),
            "conv_w": bf16(w["conv1d.weight"]), "conv_b": bf16(w["conv1d.bias"]),
            "A_log": dev(w["A_log"]).double(), "dt_bias": dev(w["dt_bias"]).double(),
            "D": dev(w["D"]).double(), "norm": bf16(w["norm.weight"]), "fp8": w["fp8"],
            "scales": [w[k] for k in ("in_proj.input_scale", "in_proj.weight_scale",
                                      "out_proj.input_scale", "out_proj.weight_scale")]}


def torch_linear(x, weight, fp8, input_scale, weight_scale):
    """R1 (static e4m3 activation quantization) or R1b, f64 accumulation."""
    if fp8:
        s_x = torch.tensor(input_scale, dtype=torch.float32)
        a = (x.float() / s_x).clamp(-448, 448).to(torch.float8_e4m3fn).double()
        scale = float(s_x * torch.tensor(weight_scale, dtype=torch.float32))
        return (scale * (a @ weight.T)).bfloat16().double()
    return (x @ weight.T).bfloat16().double()


def torch_decode_layer(cfg, w, hidden, slots, conv, ssm):
    """One layer in plain torch: hidden [R, Hd] f64 -> [R, Hd]; conv [S, Cd, 3]
    bf16 and ssm [S, H, P, N] f32 pages updated in place."""
    H, P, G, N = cfg.num_heads, cfg.head_dim, cfg.num_groups, cfg.state_size
    inner, gn = H * P, G * N
    silu = torch.nn.functional.silu
    zxbcdt = torch_linear(hidden, w["in"], w["fp8"], w["scales"][0], w["scales"][1])
    out = torch.zeros_like(hidden)
    g = torch.arange(H, device="cuda") // (H // G)
    for r, slot in enumerate(slots):
        if slot < 0:
            continue
        z, xbc, dt = zxbcdt[r, :inner], zxbcdt[r, inner:inner + inner + 2 * gn], \
            zxbcdt[r, inner + inner + 2 * gn:]
        taps = conv[slot].double()                                            # R3d
        pre = w["conv_b"] + (w["conv_w"][:, :3] * taps).sum(1) + w["conv_w"][:, 3] * xbc
        xc = silu(pre).bfloat16().double()
        conv[slot] = torch.cat([conv[slot][:, 1:], xbc.bfloat16()[:, None]], 1)
        x = xc[:inner].view(H, P)
        B, C = xc[inner:inner + gn].view(G, N)[g], xc[inner + gn:].view(G, N)[g]
        dtp = torch.nn.functional.softplus(dt + w["dt_bias"]).clamp(cfg.dt_min, cfg.dt_max)
        S = torch.exp(-torch.exp(w["A_log"]) * dtp)[:, None, None] * ssm[slot].double() + \
            dtp[:, None, None] * B[:, None, :] * x[:, :, None]                # R5d
        y = ((S * C[:, None, :]).sum(-1) + w["D"][:, None] * x).bfloat16().double().view(inner)
        ssm[slot] = S.float()
        v = (y * silu(z)).view(G, inner // G)                                 # R6
        normed = (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + cfg.eps)).bfloat16()
        normed = (w["norm"] * normed.double().view(inner)).bfloat16().double()
        out[r] = torch_linear(normed[None], w["out"], w["fp8"], w["scales"][2],
                              w["scales"][3])[0]
    return out


def as_torch_bf16(bits):
    return torch.from_numpy(np.ascontiguousarray(bits).view(np.int16)).cuda().view(torch.bfloat16)


def host_bits(t):
    return t.cpu().view(torch.int16).numpy().view(np.uint16)


class NoHostCopies:
    """Makes the torch calls that copy a tensor through the host raise while
    active, so a launch path that used them would fail the test."""
    NAMES = ("cpu", "numpy", "tolist", "item", "to", "__array__")

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch

    def __enter__(self):
        for name in self.NAMES:
            def refuse(*args, _name=name, **kwargs):
                raise AssertionError(f"torch.Tensor.{_name} called in the launch path")
            self.monkeypatch.setattr(torch.Tensor, name, refuse)
        self.monkeypatch.setattr(torch, "from_numpy", lambda *a: (_ for _ in ()).throw(
            AssertionError("torch.from_numpy called in the launch path")))
        return self

    def __exit__(self, *exc):
        self.monkeypatch.undo()


@pytest.mark.parametrize("rows,batches", [(1, [[2], [2], [2]]),
                                          (3, [[4, -1, 1], [4, -1, 1], [1, -1, 4]])])
def test_gpu_decode_against_torch_without_host_copies(rows, batches, rng, monkeypatch):
    step = tj.mamba2.DecodeStep(layers=1, rows=rows, slots=rows + 3, backend="gpu")
    cfg, weights = step.config, step.weights(0)
    assert weights["fp8"]
    tw = torch_weights(weights)
    np_pages = random_pages(step, rng)
    conv = as_torch_bf16(np_pages[0][0])
    ssm = torch.from_numpy(np_pages[0][1].copy()).cuda()
    rt = tj.runtime()
    hidden_bytes = rows * cfg.hidden_size * 2
    out = torch.full((rows, cfg.hidden_size), float("nan"), dtype=torch.bfloat16, device="cuda")
    uploaded_slots, inputs = None, []
    for slots in batches:
        x = as_torch_bf16(bf16_bits(round_bf16(rng.standard_normal((rows, cfg.hidden_size)))))
        inputs.append(x.double())
        slots_np = np.array(slots, np.int32)
        torch.cuda.synchronize()
        before = rt.stats()
        with NoHostCopies(monkeypatch):
            returned = step.step(x, slots_np, out=out)
        after = rt.stats()
        assert returned is out
        # Only new slots pass through the host (4 bytes a row); hidden in and
        # the output out are device-to-device copies on the current stream.
        assert after.bytes_to_host == before.bytes_to_host, str(after)
        want_up = 0 if slots == uploaded_slots else 4 * rows
        assert after.bytes_to_device - before.bytes_to_device == want_up
        assert after.bytes_on_device - before.bytes_on_device == 2 * hidden_bytes
        uploaded_slots = slots
        want = torch_decode_layer(cfg, tw, x.double(), slots, conv, ssm)
        # The same step in numpy f64 (mamba2_reference.py), from the same input.
        want_np = decode_step(cfg, [weights], from_bf16_bits(host_bits(x)), slots, np_pages)
    got = from_bf16_bits(host_bits(out))
    count = rows * cfg.hidden_size
    assert_close(got, want.cpu().numpy(), *OUT_BAND, count=count)
    assert_close(got, want_np, *OUT_BAND, count=count)
    assert np.all(got[[r for r, s in enumerate(batches[-1]) if s < 0]] == 0)
    used = sorted({s for b in batches for s in b if s >= 0})
    conv_got, ssm_got = step.pages(0)
    cd = conv.shape[1]
    assert_close(from_bf16_bits(conv_got[used]), from_bf16_bits(host_bits(conv)[used]),
                 *OUT_BAND, count=len(used) * cd * 3)
    assert_close(ssm_got[used], ssm.cpu().numpy()[used], *STATE_BAND,
                 count=len(used) * cfg.num_heads * cfg.head_dim * cfg.state_size)
    # The counterfactual of the bands: the same steps from zeroed pages (a
    # dropped carry) land outside them on most of the state and the output.
    conv0, ssm0 = torch.zeros_like(conv), torch.zeros_like(ssm)
    for x_, slots in zip(inputs, batches):
        dropped = torch_decode_layer(cfg, tw, x_, slots, conv0, ssm0)
    # (Fast-decaying heads forget the carry within the steps, so not all of it.)
    twin = ssm0.cpu().numpy()[used]
    state_out = (np.abs(ssm_got[used] - twin) > STATE_BAND[0] + STATE_BAND[1] * np.abs(twin))
    live = [r for r, s in enumerate(batches[-1]) if s >= 0]
    twin_out = dropped.cpu().numpy()[live]
    out_out = np.abs(got[live] - twin_out) > OUT_BAND[0] + OUT_BAND[1] * np.abs(twin_out)
    assert state_out.mean() > 0.2 and out_out.mean() > 0.1, (state_out.mean(), out_out.mean())


def test_gpu_decode_on_a_side_stream_and_bad_tensors(rng):
    rows = 3
    step = tj.mamba2.DecodeStep(layers=1, rows=rows, slots=4, backend="gpu")
    cfg = step.config
    x = as_torch_bf16(bf16_bits(round_bf16(rng.standard_normal((rows, cfg.hidden_size)))))
    slots = [0, -1, 2]
    reference = step.step(x, slots)
    torch.cuda.synchronize()
    # A second object with the same weights and zero pages on a side stream.
    other = tj.mamba2.DecodeStep(layers=1, rows=rows, slots=4, backend="gpu")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = other.step(x, slots)
    side.synchronize()
    assert torch.equal(out, reference)
    bad = [
        (x.cpu(), slots, r"tensor 'hidden' \(plan buffer 'act0'\) must be on cuda:0, got the host"),
        (x.float(), slots, r"'hidden' .* must be bf16, got f32"),
        (x.t().contiguous().t(), slots,
         r"'hidden' .* must be contiguous \(row-major\): strides \[1, 3\]"),
        (x[:2], slots, r"must have shape \[3, 2688\], got \[2, 2688\]"),
        (x, torch.tensor(slots, dtype=torch.int32, device="cuda"),
         "slots must be host integers"),
        (x, [0, 0, -1], "slot 0 appears twice"),
        (x, [0, 4, -1], "row 1 uses slot 4, but the pages hold 4 slots"),
    ]
    conv, ssm = other.pages(0)
    poisoned = torch.full_like(x, float("nan"))
    for hidden, s, message in bad:
        with pytest.raises(tj.ArgumentError, match=message):
            other.step(hidden, s, out=poisoned)
    with pytest.raises(tj.ArgumentError, match=r"'out' .* must be bf16, got f32"):
        other.step(x, slots, out=torch.zeros(rows, cfg.hidden_size, device="cuda"))
    torch.cuda.synchronize()
    assert torch.isnan(poisoned).all()
    conv_after, ssm_after = other.pages(0)
    assert np.array_equal(conv, conv_after) and np.array_equal(ssm, ssm_after)
