"""tilejit.mamba2 with a 16-bit SSM page (docs/numerics.md R8s): carried decode
steps on the interpreter against the numpy f64 reference rounded to the page's
type where the step rounds, one page ulp per step beyond the f32 state band,
untouched slots byte-identical and a dropped carry outside the band; the option
in describe_plan, and its refusals."""

import numpy as np
import pytest

import tilejit as tj
from conftest import assert_close, bf16_bits, from_bf16_bits, round_bf16
from mamba2_reference import decode_step
from test_mamba2_decode import OUT_BAND, STATE_BAND, bad_count, small_config


def page_values(ssm, dtype):
    """A page as pages() returns it, widened to float32."""
    return from_bf16_bits(ssm) if dtype == "bf16" else ssm.astype(np.float32)


def to_page(values, dtype):
    """float values rounded to nearest even in the page's type, as pages() holds them."""
    return bf16_bits(round_bf16(values)) if dtype == "bf16" else values.astype(np.float16)


def page_ulp(values, dtype):
    """One unit in the last place of the page's type at |values|."""
    if dtype == "f16":
        return np.spacing(np.abs(values).astype(np.float16)).astype(np.float64)
    exponent = np.floor(np.log2(np.maximum(np.abs(values), 2.0**-126)))
    return 2.0 ** (exponent - 7)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("stochastic", [False, True])
def test_carried_steps_with_a_16_bit_page(dtype, stochastic, rng):
    step = tj.mamba2.DecodeStep(config=small_config(), layers=2, rows=3, slots=7,
                                ssm_state_dtype=dtype, stochastic_rounding=stochastic)
    cfg = step.config
    weights = [step.weights(i) for i in range(2)]
    ref_pages, initial = [], []
    for layer in range(2):
        conv, ssm = step.pages(layer)
        assert ssm.dtype == {"bf16": np.uint16, "f16": np.float16}[dtype]
        conv = bf16_bits(round_bf16(rng.standard_normal(conv.shape)))
        ssm = to_page(rng.uniform(-1, 1, ssm.shape), dtype)
        step.set_pages(layer, conv, ssm)
        initial.append((conv.copy(), ssm.copy()))
        ref_pages.append((conv.copy(), page_values(ssm, dtype)))
    dropped = [(c.copy(), np.zeros_like(s)) for c, s in ref_pages]
    batches = [[5, -1, 1], [1, 5, -1]]
    for slots in batches:
        hidden = round_bf16(rng.standard_normal((3, cfg.hidden_size)))
        got = from_bf16_bits(step.step(bf16_bits(hidden), np.array(slots, np.int32)))
        want = decode_step(cfg, weights, hidden, slots, ref_pages)
        decode_step(cfg, weights, hidden, slots, dropped)
        for pages in (ref_pages, dropped):  # R8s: rounded where the step rounds
            for _, ssm in pages:
                ssm[...] = page_values(to_page(ssm, dtype), dtype)
    if not stochastic:
        # Stochastic pages differ from the nearest-even reference by up to an
        # ulp per state, which moves e4m3 codes of the FP8 layer's out_proj
        # input; chained through the reference's layers that leaves R1's band.
        # The C++ check (tests/e2e/SsmStatePageTest.cpp) feeds each layer the
        # backend's own input and holds stochastic outputs there.
        assert_close(got, want, *OUT_BAND, count=3 * cfg.hidden_size)
    assert np.all(got[2] == 0)  # the padding row
    used, others = [1, 5], [0, 2, 3, 4, 6]
    elements = len(used) * cfg.num_heads * cfg.head_dim * cfg.state_size
    # Layer 1's input is layer 0's output, which the same code flips move
    # away from the chained reference with stochastic pages: there layer 0's
    # state is held, and untouched slots everywhere.
    for layer in range(2):
        conv, ssm = step.pages(layer)
        assert np.array_equal(ssm[others], initial[layer][1][others])
        assert np.array_equal(conv[others], initial[layer][0][others])
        if stochastic and layer > 0:
            continue
        values, want_ssm = page_values(ssm, dtype)[used], ref_pages[layer][1][used]
        atol = STATE_BAND[0] + len(batches) * page_ulp(want_ssm, dtype)
        assert_close(values, want_ssm, atol, STATE_BAND[1], count=elements)
        # The counterfactual: the reference from zeroed SSM pages.
        assert bad_count(values, dropped[layer][1][used], *STATE_BAND) > elements // 2


def test_describe_plan_names_the_page_type_and_the_seed():
    text = tj.mamba2.describe_plan(small_config(), rows=2, slots=4, ssm_state_dtype="bf16",
                                   stochastic_rounding=True)
    assert "buffer l0.ssm_page state bf16 [4, 8, 16, 32]" in text
    assert "buffer ssm_seed input i64 [1]" in text
    assert "state_type=0" in text and "stochastic=1" in text
    default = tj.mamba2.describe_plan(small_config(), rows=2, slots=4)
    assert "buffer l0.ssm_page state f32" in default
    assert "ssm_seed" not in default and "state_type" not in default.split("ssm_update")[1][:200]


def test_bad_page_options_raise():
    with pytest.raises(tj.ArgumentError, match="'f64' is not a page type"):
        tj.mamba2.DecodeStep(config=small_config(), ssm_state_dtype="f64")
    with pytest.raises(tj.ArgumentError, match="stochastic rounding needs a 16-bit page"):
        tj.mamba2.DecodeStep(config=small_config(), stochastic_rounding=True)
