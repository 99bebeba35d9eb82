"""On a GPU (torch with CUDA): tilejit.mamba2.DecodeStep at the full NemotronH
geometry with torch tensors in and out, B=1 and B=3 (one padding row), two
carried steps against the numpy f64 reference of mamba2_reference.py, in the
bands of docs/models.md. Skipped, with the reason, where there is no GPU."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the GPU tests need torch")
if not torch.cuda.is_available():
    pytest.skip("the GPU tests need a CUDA device", allow_module_level=True)

import tilejit as tj  # noqa: E402
from conftest import assert_close, bf16_bits, from_bf16_bits, round_bf16  # noqa: E402
from mamba2_reference import decode_step  # noqa: E402
from test_mamba2_decode import OUT_BAND, STATE_BAND, random_pages  # noqa: E402


@pytest.mark.parametrize("rows,batches", [(1, [[2], [2]]), (3, [[4, -1, 1], [1, -1, 4]])])
def test_gpu_decode_full_geometry(rows, batches, rng):
    step = tj.mamba2.DecodeStep(layers=1, rows=rows, slots=rows + 3, backend="gpu")
    cfg, weights = step.config, [step.weights(0)]
    assert weights[0]["fp8"]
    ref_pages = random_pages(step, rng)
    for slots in batches:
        hidden = round_bf16(rng.standard_normal((rows, cfg.hidden_size)))
        x = torch.from_numpy(bf16_bits(hidden).view(np.int16)).cuda().view(torch.bfloat16)
        out = step.step(x, torch.tensor(slots, dtype=torch.int32, device="cuda"))
        assert out.is_cuda and out.dtype == torch.bfloat16 and out.shape == x.shape
        want = decode_step(cfg, weights, hidden, slots, ref_pages)
    got = from_bf16_bits(out.cpu().view(torch.int16).numpy().view(np.uint16))
    assert_close(got, want, *OUT_BAND, count=rows * cfg.hidden_size)
    assert np.all(got[[r for r, s in enumerate(batches[-1]) if s < 0]] == 0)
    used = sorted({s for b in batches for s in b if s >= 0})
    conv, ssm = step.pages(0)
    assert_close(from_bf16_bits(conv[used]), from_bf16_bits(ref_pages[0][0][used]), *OUT_BAND,
                 count=len(used) * 6144 * 3)
    assert_close(ssm[used], ref_pages[0][1][used], *STATE_BAND,
                 count=len(used) * 64 * 64 * 128)
    with pytest.raises(tj.ArgumentError, match="appears twice|pages hold"):
        step.step(x, torch.tensor([0] * rows if rows > 1 else [9], dtype=torch.int32))
