"""tilejit.ops' launch path (ops/_launch.py's launch(), module/LaunchBindings.cpp):
one specialization per (kernel, constants), the arguments taken by name and
checked in C++, the error word made once per device. On the interpreter."""

import pytest

import tilejit
from tilejit.ops import _checks, _launch

torch = pytest.importorskip("torch")

CPU = torch.device("cpu")
QUANT = ("quantize_e4m3", dict(width=64, block=1024, scale_ptr=1))


def _quant_args(rows=2):
    x = torch.randn(rows, 64).to(torch.bfloat16)
    out = torch.zeros(rows, 64, dtype=_launch.E4M3 or torch.uint8)
    return dict(x=x, out=out, rows=rows, input_scale=torch.tensor([0.5]))


def test_one_specialization_per_constants():
    kernel, constants = QUANT
    args = _quant_args()
    _launch.launch(kernel, constants, CPU, (1, 2), **args)
    plan = _launch._launches[(kernel, *constants.items())]
    _launch.launch(kernel, dict(constants), CPU, [1, 2], **_quant_args())
    assert _launch._launches[(kernel, *constants.items())] is plan
    assert plan.module is tilejit.kernels.quantize_e4m3.build(**constants)
    # The launch wrote every element: e4m3(x * 2), as the op computes it.
    want, _ = tilejit.ops.scaled_fp8_quant(args["x"], 0.5)
    assert torch.equal(args["out"].view(torch.uint8), want.view(torch.uint8))


@pytest.mark.parametrize("change, message", [
    (lambda a: a.pop("rows"), "takes the arguments (x, out, rows, input_scale), got 3"),
    (lambda a: a.update(rows=2, extra=1), "takes the arguments (x, out, rows, input_scale), "
                                          "got 5"),
    (lambda a: a.update(row=a.pop("rows")), "no argument 'rows'"),
    (lambda a: a.update(x=a["x"].float()), "argument 'x' is torch.float32, the parameter "
                                           "takes (torch.bfloat16,)"),
    (lambda a: a.update(x=3), "argument 'x' is a int, expected a tensor"),
    (lambda a: a.update(x=torch.empty(2, 64, dtype=torch.bfloat16, device="meta")),
     "argument 'x' is on a device other than the CPU and CUDA, the launch on the CPU"),
], ids=["missing", "extra", "misnamed", "dtype", "not-a-tensor", "device"])
def test_argument_errors_name_the_kernel_and_argument(change, message):
    kernel, constants = QUANT
    args = _quant_args()
    change(args)
    with pytest.raises(tilejit.ArgumentError) as error:
        _launch.launch(kernel, constants, CPU, (1, 2), **args)
    assert f"kernel 'quantize_e4m3': {message}" in str(error.value)


def test_scalars_convert_as_the_parameter_takes_them():
    # rows is an i32 parameter: an integral float or a 0-d tensor passes as int() does.
    kernel, constants = QUANT
    for rows in (2.0, torch.tensor(2)):
        args = _quant_args()
        args["rows"] = rows
        _launch.launch(kernel, constants, CPU, (1, 2), **args)
        assert bool((args["out"].view(torch.uint8) != 0).any())


def test_bad_grid():
    kernel, constants = QUANT
    with pytest.raises(tilejit.ArgumentError, match="a negative grid extent -1"):
        _launch.launch(kernel, constants, CPU, (1, -1), **_quant_args())
    with pytest.raises(tilejit.ArgumentError, match="a grid of 4 dimensions"):
        _launch.launch(kernel, constants, CPU, (1, 1, 1, 1), **_quant_args())


def test_error_word_made_once_per_device():
    word = _checks.error_word(CPU)
    assert _checks.error_word(torch.device("cpu")) is word
    assert word.dtype == torch.int64 and word.shape == (1,) and int(word) == 0
    _checks.check_errors("cpu")  # a string names the same device's word


def test_error_word_refused_when_first_made_inside_a_capture(monkeypatch):
    """A word made inside a capture would be zeroed by every replay: the first
    call on a device must come before the capture, and says so."""
    cuda = torch.device("cuda", 7)  # never opened: the refusal comes first
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    monkeypatch.delitem(_checks._words, cuda, raising=False)
    with pytest.raises(tilejit.ArgumentError, match="inside a CUDA graph capture"):
        _checks.error_word(cuda)
    assert cuda not in _checks._words
