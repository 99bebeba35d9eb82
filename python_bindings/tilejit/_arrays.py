"""Kernel arguments from Python objects, checked against the kernel's parameters.

numpy arrays feed the interpreter; torch CUDA tensors and objects with
``__cuda_array_interface__`` feed the GPU; DLPack producers (``__dlpack__``) feed
either, by the device they name. Only addresses are taken: no copy, no
conversion, so a wrong dtype, device or layout is an ArgumentError, never fixed up.
bf16 and f8e4m3 arrays are numpy uint16 / uint8 bit patterns (see f32_to_bf16).
"""

from . import _dlpack
from ._tilejit import ArgumentError, dtype

_NUMPY_NAMES = {
    dtype.f32: "float32", dtype.f16: "float16", dtype.bf16: "uint16",
    dtype.f8e4m3: "uint8", dtype.i1: "bool", dtype.i8: "int8",
    dtype.i32: "int32", dtype.i64: "int64",
}
_TYPESTRS = {
    dtype.f32: "<f4", dtype.f16: "<f2", dtype.bf16: "<u2", dtype.f8e4m3: "|u1",
    dtype.i1: "|b1", dtype.i8: "|i1", dtype.i32: "<i4", dtype.i64: "<i8",
}
_TORCH_NAMES = {
    dtype.f32: "torch.float32", dtype.f16: "torch.float16", dtype.bf16: "torch.bfloat16",
    dtype.f8e4m3: "torch.float8_e4m3fn", dtype.i1: "torch.bool", dtype.i8: "torch.int8",
    dtype.i32: "torch.int32", dtype.i64: "torch.int64",
}
_INTEGER = (dtype.i1, dtype.i8, dtype.i32, dtype.i64)


def grid3(grid):
    """(x,), (x, y) or (x, y, z), or an int, as three non-negative ints."""
    dims = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(dims) <= 3 or any(int(d) != d or d < 0 for d in dims):
        raise ArgumentError(f"grid {grid!r}: expected 1 to 3 non-negative integers")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


def _signature(module):
    return "(" + ", ".join(
        f"{p.name}: {'ptr<' + p.dtype.name + '>' if p.pointer else p.dtype.name}"
        for p in module.params) + ")"


def _check_count(module, args):
    if len(args) != len(module.params):
        raise ArgumentError(f"kernel '{module.name}' takes {len(module.params)} "
                            f"argument(s) {_signature(module)}, got {len(args)}")


def _where(module, i, p):
    return f"kernel '{module.name}': argument {i} ('{p.name}')"


def _scalar(module, i, p, value):
    if hasattr(value, "__index__"):
        return int(value)
    if p.dtype in _INTEGER:
        raise ArgumentError(f"{_where(module, i, p)} expects an integer ({p.dtype.name}), "
                            f"got {type(value).__name__} {value!r}")
    if hasattr(value, "__float__"):
        return float(value)
    raise ArgumentError(f"{_where(module, i, p)} expects a number, got {type(value).__name__}")


def _check_shape(module, i, p, shape, args):
    """The array's shape against the parameter's declared one (sizes, names of
    the scalar parameters holding sizes, '?' for any); nothing when undeclared."""
    if not p.shape:
        return
    want = []
    for d in p.shape:
        if isinstance(d, str) and d != "?":
            j = next(k for k, q in enumerate(module.params) if q.name == d)
            if not hasattr(args[j], "__index__"):
                return  # the scalar's own check reports it
            want.append(int(args[j]))
        else:
            want.append(d)
    got = tuple(int(x) for x in shape)
    if len(got) != len(want) or any(w != "?" and w != g for w, g in zip(want, got)):
        expected = ", ".join(f"{d}={w}" if isinstance(d, str) and d != "?" else str(w)
                             for d, w in zip(p.shape, want))
        raise ArgumentError(f"{_where(module, i, p)} has shape {got}, expected ({expected})")


def host_args(module, args, borrowed):
    """Arguments of an interpreter run: numpy arrays, DLPack producers of host
    memory (appended to `borrowed`, to be released after the run) and numbers."""
    import numpy as np

    _check_count(module, args)
    out = []
    for i, (p, a) in enumerate(zip(module.params, args)):
        if not p.pointer:
            out.append(_scalar(module, i, p, a))
            continue
        if not isinstance(a, np.ndarray) and _dlpack.is_producer(a):
            view = _dlpack.borrow(_where(module, i, p), p, a, _dlpack.HOST_READABLE)
            borrowed.append(view)
            _check_shape(module, i, p, view.shape, args)
            out.append(("buffer", view.address, view.bytes, True))
            continue
        want = _NUMPY_NAMES[p.dtype]
        if not isinstance(a, np.ndarray):
            raise ArgumentError(f"{_where(module, i, p)} expects a numpy array of {want} "
                                f"(ptr<{p.dtype.name}>), got {type(a).__name__}")
        if a.dtype != np.dtype(want):
            raise ArgumentError(f"{_where(module, i, p)} expects {want} elements "
                                f"(ptr<{p.dtype.name}>), got {a.dtype}")
        if not a.flags.c_contiguous:
            raise ArgumentError(f"{_where(module, i, p)} is not C-contiguous "
                                "(pass numpy.ascontiguousarray of it)")
        _check_shape(module, i, p, a.shape, args)
        out.append(("buffer", a.ctypes.data, a.nbytes, bool(a.flags.writeable)))
    return out


def is_device_array(a):
    """A torch CUDA tensor, an object exposing __cuda_array_interface__ or a
    DLPack producer of CUDA memory."""
    if type(a).__module__.startswith("torch"):
        return bool(getattr(a, "is_cuda", False))
    if hasattr(a, "__cuda_array_interface__"):
        return True
    return _dlpack.is_producer(a) and a.__dlpack_device__()[0] == _dlpack.CUDA


def _torch_pointer(module, i, p, t, ordinal):
    if not t.is_cuda or t.device.index != ordinal:
        raise ArgumentError(f"{_where(module, i, p)} is on {t.device}, the runtime on "
                            f"cuda:{ordinal}")
    if str(t.dtype) != _TORCH_NAMES[p.dtype]:
        raise ArgumentError(f"{_where(module, i, p)} expects {_TORCH_NAMES[p.dtype]} "
                            f"(ptr<{p.dtype.name}>), got {t.dtype}")
    if not t.is_contiguous():
        raise ArgumentError(f"{_where(module, i, p)} is not contiguous "
                            "(pass .contiguous() of it)")
    return t.data_ptr()


def _interface_pointer(module, i, p, a):
    cai = a.__cuda_array_interface__
    if cai["typestr"] != _TYPESTRS[p.dtype]:
        raise ArgumentError(f"{_where(module, i, p)} expects typestr {_TYPESTRS[p.dtype]} "
                            f"(ptr<{p.dtype.name}>), got {cai['typestr']}")
    strides = cai.get("strides")
    if strides is not None:
        expected, step = [], int(cai["typestr"][2:])
        for extent in reversed(cai["shape"]):
            expected.insert(0, step)
            step *= extent
        if list(strides) != expected:
            raise ArgumentError(f"{_where(module, i, p)} is not C-contiguous")
    return cai["data"][0]


def _interface_stream(module, i, p, a):
    """The producer stream of a __cuda_array_interface__ (v3) array, or None
    when the producer needs no synchronization."""
    stream = a.__cuda_array_interface__.get("stream")
    if stream is None:
        return None
    if int(stream) == 0:
        raise ArgumentError(f"{_where(module, i, p)} names stream 0, which the CUDA array "
                            "interface forbids as ambiguous (1: legacy default, 2: per-thread)")
    return int(stream)


def device_args(module, args, ordinal, stream, borrowed):
    """Arguments of a GPU launch, its stream and the streams it must follow.

    The stream is `stream` when given, else the current torch stream of the
    first torch tensor's device, else the interface stream of the first
    __cuda_array_interface__ array that names one, else the legacy default
    stream. Every other interface stream the arrays name is returned to be
    waited on before the launch; DLPack producers are consumed for that stream
    (appended to `borrowed`, to be released after the launch)."""
    _check_count(module, args)
    torch_stream, interface_streams = None, []
    for i, (p, a) in enumerate(zip(module.params, args)):
        if not p.pointer:
            continue
        if type(a).__module__.startswith("torch") and hasattr(a, "data_ptr"):
            if torch_stream is None and getattr(a, "is_cuda", False):
                import torch
                torch_stream = torch.cuda.current_stream(a.device).cuda_stream
        elif hasattr(a, "__cuda_array_interface__"):
            s = _interface_stream(module, i, p, a)
            if s is not None:
                interface_streams.append(s)
    if stream is not None:
        chosen = int(stream)
    elif torch_stream is not None:
        chosen = torch_stream
    else:
        chosen = interface_streams[0] if interface_streams else 0
    waits = sorted({s for s in interface_streams if s != chosen})

    out = []
    for i, (p, a) in enumerate(zip(module.params, args)):
        if not p.pointer:
            out.append(_scalar(module, i, p, a))
        elif type(a).__module__.startswith("torch") and hasattr(a, "data_ptr"):
            out.append(("ptr", _torch_pointer(module, i, p, a, ordinal)))
            _check_shape(module, i, p, a.shape, args)
        elif hasattr(a, "__cuda_array_interface__"):
            out.append(("ptr", _interface_pointer(module, i, p, a)))
            _check_shape(module, i, p, a.__cuda_array_interface__["shape"], args)
        elif _dlpack.is_producer(a):
            where = _where(module, i, p)
            view = _dlpack.borrow(where, p, a, _dlpack.DEVICE_READABLE,
                                  stream=chosen if chosen else 1)
            borrowed.append(view)
            if view.device_type == _dlpack.CUDA and view.device_id != ordinal:
                raise ArgumentError(f"{where} is on cuda:{view.device_id}, the runtime on "
                                    f"cuda:{ordinal}")
            _check_shape(module, i, p, view.shape, args)
            out.append(("ptr", view.address))
        else:
            raise ArgumentError(f"{_where(module, i, p)} expects a CUDA tensor "
                                f"(ptr<{p.dtype.name}>), got {type(a).__name__}")
    return out, chosen, waits
