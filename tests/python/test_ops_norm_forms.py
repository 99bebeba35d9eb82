"""tilejit.ops' gated norm in every forward form of mamba_ssm's layernorm_gated
(layernorm_fn, rmsnorm_fn) and vLLM's rms_norm_gated: RMSNorm and LayerNorm, with
and without bias and z, the gate before or after the norm, per group or over the
whole row, f32/f16/bf16 inputs and weights (docs/numerics.md R6), against the f64
reference of norm_reference.py at R6's bands. On the interpreter with CPU
tensors (CI), on the GPU when torch has CUDA. Every band is paired with the
counterfactuals it separates (the other group extent, the other gate position,
the other norm, z or the bias dropped), each shown to land outside it; every
output starts poisoned."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402

from norm_reference import gated_norm  # noqa: E402
from ops_reference import F64  # noqa: E402
from ops_support import DEV, assert_band, outside, poisoned, uniform  # noqa: E402,F401

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
# R6's bands against f64 by output dtype (docs/numerics.md R6).
BANDS = {F32: (5e-3, 1e-3), F16: (1e-2, 2e-3), BF16: (5e-2, 1e-2)}
SHAPE = (2, 3)          # x is (batch, seqlen, d), as the peers' tests pass it
ROWS = SHAPE[0] * SHAPE[1]
GROUP = 64              # the peers' group size


def norm_inputs(seed, width, dtype, ztype, wtype, btype):
    """x with a positive offset per 16 channels (so LayerNorm and RMSNorm differ in
    every group and over the row) and a scale of 1, 2, 4, 8 per quarter row (so
    a per-group and a whole-row norm differ); z in [-2, 2]; weight in [0.5, 1.5];
    bias of either sign with |b| in [0.25, 1]. Each rounded to its dtype."""
    gen = torch.Generator().manual_seed(seed)
    offset = torch.repeat_interleave(uniform(gen, width // 16, lo=0.5, hi=1.5), 16)
    scale = torch.repeat_interleave(2.0 ** torch.arange(4.0, dtype=F64), width // 4)
    x = ((uniform(gen, *SHAPE, width) + offset) * scale).to(dtype)
    z = uniform(gen, *SHAPE, width, lo=-2, hi=2).to(ztype)
    weight = uniform(gen, width, lo=0.5, hi=1.5).to(wtype)
    sign = torch.where(uniform(gen, width) < 0, -1.0, 1.0).to(F64)
    bias = (uniform(gen, width, lo=0.25, hi=1.0) * sign).to(btype)
    return x, z, weight, bias


def check_form(out, x, z, weight, bias, eps, group, norm_before_gate, rms):
    """The band against the f64 reference of this form, and each counterfactual
    (a mistake the band must catch) outside it on a third of the elements."""
    width = x.shape[-1]
    assert out.shape == x.shape and out.dtype == x.dtype
    flat = lambda t: None if t is None else t.reshape(ROWS, width).cpu()  # noqa: E731
    form = dict(x=flat(x), z=flat(z), weight=weight.cpu(), bias=None if bias is None else
                bias.cpu(), eps=eps, group=group, norm_before_gate=norm_before_gate, rms=rms,
                normed_type=x.dtype, out_type=x.dtype)
    atol, rtol = BANDS[x.dtype]
    got = flat(out)
    assert_band(got, gated_norm(**form), atol, rtol, ROWS * width)
    mistakes = [dict(group=width if group < width else width // 4), dict(rms=not rms)]
    if z is not None:
        mistakes += [dict(norm_before_gate=not norm_before_gate), dict(z=None)]
    if bias is not None:
        mistakes.append(dict(bias=None))
    for mistake in mistakes:
        wrong = gated_norm(**{**form, **mistake})
        assert outside(got, wrong, atol, rtol) > ROWS * width // 3, mistake
    return form


def run_form(seed, width, dtype, wtype, has_z, has_bias, group, norm_before_gate, rms,
             ztype=None):
    x, z, weight, bias = norm_inputs(seed, width, dtype, ztype or dtype, wtype, wtype)
    x, z, weight, bias = (t.to(DEV) for t in (x, z, weight, bias))
    z, bias = (z if has_z else None), (bias if has_bias else None)
    out = ops.layernorm_fn(x, weight, bias, z=z, eps=1e-5, group_size=group,
                           norm_before_gate=norm_before_gate, is_rms_norm=rms)
    return out, check_form(out, x, z, weight, bias, 1e-5, group or width, norm_before_gate,
                           rms)


@pytest.mark.parametrize("d", [256, 512])
@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("has_z", [False, True])
@pytest.mark.parametrize("is_rms_norm", [False, True])
@pytest.mark.parametrize("has_group", [False, True])
@pytest.mark.parametrize("norm_before_gate", [True, False])
def test_layernorm_fn_forms(poisoned, d, has_bias, has_z, is_rms_norm, has_group,
                            norm_before_gate):
    """mamba_ssm's forward grid (its dtype f16, wtype f32), at reduced sizes, with
    the LayerNorm gate-before-norm form its test skips for want of a reference."""
    if not has_z and not norm_before_gate:
        pytest.skip("without z the gate position has no meaning (the case above)")
    run_form(d, d, F16, F32, has_z, has_bias, GROUP if has_group else None,
             norm_before_gate, is_rms_norm)


@pytest.mark.parametrize("wtype", [F32, F16, BF16])
@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("form", ["rms_bias_after", "layer_before_row"])
def test_element_types(poisoned, dtype, wtype, form):
    """Every x/z and weight/bias dtype of the peers' commented-out grids, in two
    forms that between them use every part of the kernel. With 16-bit x the
    test also pins R6's rounding points: x̂ rounded to x's dtype, then the
    output (a single-rounding kernel matches the reference less often)."""
    if form == "rms_bias_after":
        out, ref = run_form(7, 256, dtype, wtype, True, True, GROUP, True, True)
    else:
        out, ref = run_form(8, 256, dtype, wtype, True, False, None, False, False)
    if dtype != F32:
        got = out.reshape(ROWS, -1).cpu().to(F64)
        exact = int((got == gated_norm(**ref)).sum())
        single = int((got == gated_norm(**{**ref, "normed_type": None})).sum())
        assert exact >= got.numel() * 0.99 and exact - single > got.numel() // 100


@pytest.mark.parametrize("width,group", [(8192, None), (1536, None), (768, 96)])
@pytest.mark.parametrize("form", ["rms_before", "layer_after_bias"])
def test_one_group_models(poisoned, width, group, form):
    """Whole-row norms of Mamba2 models with n_groups = 1 (8192 channels, spread
    over more warps; 1536, mamba2-130m's, padded to a power of two) and groups
    that are not powers of two."""
    if form == "rms_before":
        run_form(10, width, BF16, BF16, True, False, group, False, True)
    else:
        run_form(11, width, F32, F32, True, True, group, True, False)


def test_rms_norm_gated_defaults(poisoned):
    """vLLM's signature with its defaults (norm_before_gate=True, eps 1e-6); x and
    z given 2-D as columns of wider rows (read in place), z of another dtype."""
    x, _, weight, bias = norm_inputs(5, 256, BF16, F32, BF16, BF16)
    gen = torch.Generator().manual_seed(6)
    xwide = torch.cat([x.reshape(ROWS, 256), uniform(gen, ROWS, 64).bfloat16()], dim=1)
    zwide = uniform(gen, ROWS, 256 + 32, lo=-2, hi=2).float()
    xwide, zwide, weight, bias = (t.to(DEV) for t in (xwide, zwide, weight, bias))
    x, z = xwide[:, :256], zwide[:, 32:]
    out = ops.rms_norm_gated(x, weight, bias, z=z, group_size=GROUP)
    check_form(out, x, z, weight, bias, 1e-6, GROUP, True, True)
    again = ops.rmsnorm_fn(x.contiguous(), weight, bias, z=z.contiguous(), group_size=GROUP)
    assert torch.equal(out, again)


@pytest.mark.parametrize("gate_first", [False, True])
def test_nan_stays_in_its_group(gate_first):
    """A NaN in x reaches only its own group of its own row; one in z reaches the
    group when the gate comes first and only its element when it comes after."""
    x, z, weight, bias = (t.to(DEV) for t in norm_inputs(9, 256, BF16, BF16, F32, F32))
    clean = ops.layernorm_fn(x, weight, bias, z=z, group_size=GROUP,
                             norm_before_gate=not gate_first)
    for name, where, reach in [("x", (1, 2, 70), slice(64, 128)),
                               ("z", (0, 1, 200), slice(192, 256) if gate_first else 200)]:
        xn, zn = x.clone(), z.clone()
        (xn if name == "x" else zn)[where] = float("nan")
        out = ops.layernorm_fn(xn, weight, bias, z=zn, group_size=GROUP,
                               norm_before_gate=not gate_first)
        hit = torch.zeros_like(out, dtype=torch.bool)
        hit[where[0], where[1], reach] = True
        assert bool(out[hit].isnan().all()), name
        assert torch.equal(out[~hit], clean[~hit]), name


def test_refusals():
    x = torch.ones(2, 128, dtype=BF16, device=DEV)
    w = torch.ones(128, dtype=BF16, device=DEV)
    odd = torch.ones(1, 100, dtype=BF16, device=DEV)
    wide = torch.ones(1, 32768, dtype=BF16, device=DEV)
    cases = [
        (lambda: ops.rms_norm_gated(x, w, None, upcast=False), "upcast=False"),
        (lambda: ops.rmsnorm_fn(x, w, None, group_size=48), "group_size 48 does not divide"),
        (lambda: ops.layernorm_fn(odd, odd[0], None), "a norm group of 100 channels"),
        (lambda: ops.rmsnorm_fn(wide, wide[0], None), "up to 16384 channels"),
        (lambda: ops.rmsnorm_fn(x.int(), w, None), "x must be bfloat16 or float16 or float32"),
        (lambda: ops.rmsnorm_fn(x, w.double(), None), "weight must be"),
        (lambda: ops.rmsnorm_fn(x, w, w[:64]), r"bias has shape \(64,\)"),
        (lambda: ops.rmsnorm_fn(x, w, None, z=x[:, :64]), r"z has shape \(2, 64\)"),
    ]
    for call, text in cases:
        with pytest.raises(tj.ArgumentError, match=text):
            call()


def test_kernel_rules():
    """The rules gated_rmsnorm adds: fp8_out quantizes the bf16 form; a group
    padded to a power of two keeps 16-byte aligned rows."""
    build = tj.kernels.gated_rmsnorm.build
    with pytest.raises(tj.ArgumentError, match=r"fp8_out = 1, out_type = 1 breaks the "
                                               r"rule fp8_out = 0 or out_type = 0"):
        build(fp8_out=1, out_type=1)
    with pytest.raises(tj.ArgumentError, match=r"group_size = 1500 breaks the rule "
                                               r"group_size is a power of two or a multiple "
                                               r"of 8"):
        build(width=1500, group_size=1500)
