"""How tilejit.ops reaches the registered kernels: torch tensors (CPU: the
interpreter; CUDA: the GPU on the current torch stream) checked against what
each op accepts, and launched without a copy.

A tensor is passed by address with the extent of memory its view spans, so a
strided view (x, B and C as column ranges of one xBC row, dt inside in_proj's
output) reaches the kernel in place; on the interpreter every access is checked
against that extent. Nothing is converted: a dtype, layout or device an op does
not take is an ArgumentError naming the op, the argument and what it takes.
"""

import torch

from .. import _arrays, _tilejit
from .._tilejit import ArgumentError, BuildError
from . import _recording

# torch >= 2.1 has float8_e4m3fn; elsewhere (Debian's torch 1.13) e4m3 travels
# as uint8 bit patterns.
E4M3 = getattr(torch, "float8_e4m3fn", None)
E4M3_TYPES = tuple(t for t in (E4M3, torch.uint8) if t is not None)

_KERNEL_TYPES = {
    _tilejit.dtype.bf16: (torch.bfloat16,), _tilejit.dtype.f16: (torch.float16,),
    _tilejit.dtype.f32: (torch.float32,),
    _tilejit.dtype.i32: (torch.int32,), _tilejit.dtype.i64: (torch.int64,),
    _tilejit.dtype.f8e4m3: E4M3_TYPES,
}
INDEX_TYPES = (torch.int32, torch.int64)
# The float element types an op's operands may have, and the value of the
# kernels' element-type constants for each (models/mamba2/Registration.h).
FLOAT_TYPES = (torch.bfloat16, torch.float16, torch.float32)
_ELEMENT_TYPE = {torch.bfloat16: 0, torch.float16: 1, torch.float32: 2}


def element_type(t):
    """The element-type constant for tensor t (bf16, f16 or f32)."""
    return _ELEMENT_TYPE[t.dtype]


def fail(op, message):
    return ArgumentError(f"tilejit.ops.{op}: {message}")


def as_tensor(op, name, value):
    """`value` as a torch tensor: a tensor as it is, a DLPack producer
    (__dlpack__) through torch.from_dlpack, a __cuda_array_interface__ object
    through torch.as_tensor with the current stream made to wait for the
    interface's stream. None stays None; anything else is refused."""
    if value is None or isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "__dlpack__"):
        return torch.utils.dlpack.from_dlpack(value)
    if hasattr(value, "__cuda_array_interface__"):
        stream = value.__cuda_array_interface__.get("stream")
        tensor = torch.as_tensor(value, device="cuda")
        if stream is not None:
            producer = torch.cuda.ExternalStream(int(stream), device=tensor.device)
            torch.cuda.current_stream(tensor.device).wait_stream(producer)
        return tensor
    raise fail(op, f"{name} is a {type(value).__name__}, expected a torch tensor, a DLPack "
                   "producer or a __cuda_array_interface__ object")


def check(op, name, t, dtypes, shape=None, device=None):
    """Refuses `t` unless its dtype is one of `dtypes` and (when given) its shape
    is `shape` (None entries match any size) and it lives on `device`."""
    if not isinstance(t, torch.Tensor):
        raise fail(op, f"{name} must be a tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        names = " or ".join(str(d).replace("torch.", "") for d in dtypes)
        raise fail(op, f"{name} must be {names}, got {str(t.dtype).replace('torch.', '')}")
    if shape is not None:
        got = tuple(t.shape)
        if len(got) != len(shape) or any(w is not None and w != g for w, g in zip(shape, got)):
            want = "(" + ", ".join("?" if w is None else str(w) for w in shape) + ")"
            raise fail(op, f"{name} has shape {got}, expected {want}")
    if device is not None and t.device != device:
        raise fail(op, f"{name} is on {t.device}, the other tensors on {device}")
    return t


def check_strides(op, name, t, want):
    """Refuses `t` unless its strides (in elements) are `want` (None entries
    match any stride; a size-1 dimension matches any stride)."""
    got = t.stride()
    if any(w is not None and w != g and n != 1 for w, g, n in zip(want, got, t.shape)):
        shown = "(" + ", ".join("?" if w is None else str(w) for w in want) + ")"
        raise fail(op, f"{name} has strides {tuple(got)} (elements), tilejit needs {shown}")
    return t


def per_head(op, name, t, heads, trailing):
    """A per-head parameter given as [heads] or as [heads, *trailing] with
    stride 0 over the trailing dimensions (the expand() serving engines pass),
    as a [heads] view. Values that really vary over the trailing dimensions
    are refused: tilejit's kernels take one value per head."""
    if t.dim() == 1:
        return check_strides(op, name, check(op, name, t, (torch.float32,), (heads,)), (1,))
    check(op, name, t, (torch.float32,), (heads,) + tuple(trailing))
    if any(s != 0 and n != 1 for s, n in zip(t.stride()[1:], t.shape[1:])):
        raise fail(op, f"{name} of shape {tuple(t.shape)} varies over its last "
                       f"{len(trailing)} dimension(s) (strides {tuple(t.stride())}); tilejit "
                       f"takes one value per head: pass [{heads}] or a stride-0 expand of it")
    return check_strides(op, name, t[(slice(None),) + (0,) * len(trailing)], (1,))


def check_aligned(op, name, t, dims=()):
    """The kernels read and write rows with 16-byte vectors, which need 16-byte
    aligned addresses (docs/tile-dialect.md): t must start on a 16-byte
    boundary and step along `dims` by multiples of 16 bytes. On the GPU a
    misaligned vector access would be a sticky fault; the interpreter holds
    tensors to the same rule, so both backends refuse the same views."""
    misaligned = t.data_ptr() % 16
    if misaligned:
        raise fail(op, f"{name} starts {misaligned} bytes past a 16-byte boundary: tilejit's "
                       "kernels access it with 16-byte vectors (pass an aligned copy)")
    for d in dims:
        step = t.stride(d) * t.element_size()
        if t.shape[d] > 1 and step % 16:
            raise fail(op, f"{name} steps {step} bytes along dimension {d}: tilejit's kernels "
                           "access it with 16-byte vectors, so that must be a multiple of 16")
    return t


def matrix_rows(op, name, t, dtypes, any_row_stride=False):
    """t (..., width) as a [rows, width] view (no copy), rows contiguous and
    one width apart (any distance apart with any_row_stride)."""
    check(op, name, t, dtypes)
    if t.dim() == 0 or t.numel() == 0:
        raise fail(op, f"{name} has shape {tuple(t.shape)}: nothing to compute")
    width = t.shape[-1]
    try:
        flat = t.view(-1, width)
    except RuntimeError:
        flat = None
    if flat is None or flat.stride(-1) != 1 or (
            not any_row_stride and flat.shape[0] > 1 and flat.stride(0) != width):
        raise fail(op, f"{name} of shape {tuple(t.shape)} and strides {tuple(t.stride())} is "
                       f"not a stack of rows tilejit reads in place (pass {name}.contiguous())")
    return check_aligned(op, name, flat, (0,))


def row_stride(op, name, t, width):
    """The stride between t's rows (dimension 0) as a kernel constant: `width`
    for a single row. A stride of 0 (an expand over rows) is refused: the
    kernels read 0 as "rows `width` apart", which would read past the tensor."""
    if t.shape[0] == 1:
        return width
    if t.stride(0) == 0:
        raise fail(op, f"{name} has stride 0 over its {t.shape[0]} rows (an expand): "
                       f"tilejit reads rows in place; pass {name}.contiguous()")
    return t.stride(0)


def check_no_overlap(op, name, out, **others):
    """Refuses an output whose memory overlaps any of `others` (inputs and
    states it would overwrite while they are read): the byte spans of the
    views are compared, so interleaved views are refused too."""
    lo = out.data_ptr()
    hi = lo + span_bytes(out)
    for other_name, t in others.items():
        if t is None or t.numel() == 0 or t.device != out.device:
            continue
        start = t.data_ptr()
        if start < hi and lo < start + span_bytes(t):
            raise fail(op, f"{name} overlaps {other_name} in memory: the kernel would "
                           f"overwrite {other_name} while reading it; pass a separate {name}")


def slot_table(op, name, t, rows, device):
    """An index table (rows,) of int32 or int64 as the kernels read it, no
    conversion (int64 values reach the device checks whole), and whether it is
    int64."""
    check(op, name, t, INDEX_TYPES, (rows,), device)
    return check_strides(op, name, t, (1,)), t.dtype == torch.int64


def check_pad_slot_id(op, pad_slot_id):
    """Every negative index is a padding row (R8); a non-negative pad id is refused."""
    if not isinstance(pad_slot_id, int) or pad_slot_id >= 0:
        raise fail(op, f"pad_slot_id {pad_slot_id!r}: tilejit treats every negative index as "
                       "padding and refuses a non-negative pad id")


def span_bytes(t):
    """Bytes from the tensor's first element to one past its last."""
    if t.numel() == 0:
        return 0
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return (last + 1) * t.element_size()


def packed_rows(parts, row_elems):
    """A [rows, row_elems] row-major view over the tensors `parts` ([rows, ...],
    one dtype) when they are column ranges of one such buffer, side by side and
    in order (x, B and C split from xBC, as mamba_ssm's and vLLM's Mamba2
    layers pass them); else None."""
    offset, rows = 0, parts[0].shape[0]
    for t in parts:
        if any(t.stride(i) != _elements(t.shape[i + 1:]) for i in range(1, t.dim())
               if t.shape[i] != 1):
            return None
        if t.shape[0] != rows or (rows > 1 and t.stride(0) != row_elems):
            return None
        if t.data_ptr() != parts[0].data_ptr() + offset * t.element_size():
            return None
        offset += _elements(t.shape[1:])
    if offset != row_elems:
        return None
    return torch.as_strided(parts[0], (rows, row_elems), (row_elems, 1))


def pack_rows(parts):
    """`parts` ([rows, ...] each) side by side in one new [rows, sum] buffer: the
    copy an op makes when its inputs are not already laid out that way."""
    return torch.cat([t.reshape(t.shape[0], -1) for t in parts], dim=1)


def _elements(shape):
    count = 1
    for n in shape:
        count *= n
    return count


class Launch:
    """A registered kernel specialized by `constants`, launched with its
    arguments by parameter name (tensors or numbers): on the interpreter for CPU
    tensors, on the GPU (the tensors' device, the current torch stream) for CUDA
    ones. launch() keeps one per (kernel, constants); each launch is a single
    call into the module, which takes the arguments from the dict, checks each
    tensor's dtype and device and packs them (module/LaunchBindings.cpp)."""

    def __init__(self, kernel, constants):
        from .. import kernels  # the package's KernelSet, built at import

        try:
            self.module = kernels[kernel].build(**constants)
        except BuildError as error:  # a geometry the kernel has no layout for
            raise ArgumentError(f"tilejit.ops: kernel '{kernel}' cannot be built for "
                                f"{constants}: {error}") from None
        self._dtypes = [_KERNEL_TYPES[p.dtype] if p.pointer else None
                        for p in self.module.params]
        self._launchers = {}  # CUDA ordinal (-1: the interpreter) -> _OpLauncher

    def __call__(self, device, grid, args):
        if device.type == "cpu":
            ordinal = -1
        else:
            ordinal = device.index if device.index is not None else torch.cuda.current_device()
        launcher = self._launchers.get(ordinal)
        if launcher is None:
            launcher = self._launchers[ordinal] = self._launcher(ordinal)
        grid = grid if type(grid) is tuple else _arrays.grid3(grid)
        _recording.note_launch(self, launcher, ordinal, grid, args)
        if ordinal < 0:
            launcher.run(grid, args)
        else:
            launcher.launch(current_stream(ordinal), grid, args)

    def _launcher(self, ordinal):
        kernel = None
        if ordinal >= 0:  # compiled and loaded on the device once, here
            from .. import device_kernel, runtime

            kernel = device_kernel(self.module, runtime(ordinal))
        return _tilejit._OpLauncher(self.module, kernel, ordinal, self._dtypes)


# torch's own launchers read the current stream so; older or CPU-only builds
# lack the call.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current_stream(ordinal):
    if _raw_stream is not None:
        return _raw_stream(ordinal)
    return torch.cuda.current_stream(ordinal).cuda_stream


_launches = {}  # (kernel, *constants.items()) -> Launch


def launch(kernel, constants, device, grid, **args):
    """Launches registered `kernel` specialized by `constants` on `device` (a
    torch.device: the interpreter for the CPU), `grid` a tuple of 1 to 3
    extents, the arguments by parameter name. The specialization is found by
    the constants as given (built and loaded on first use), so a call builds
    no string and allocates nothing of its own."""
    key = (kernel, *constants.items())
    plan = _launches.get(key)
    if plan is None:
        plan = _launches[key] = Launch(kernel, constants)
    plan(device, grid, args)


def host_ints(op, name, t, check_slots):
    """The values of a small int tensor on the host, for the debug check that
    keeps two rows off one state slot (R8; check_slots=True). A CUDA tensor
    costs one device-to-host read, which a CUDA graph capture forbids."""
    if not check_slots:
        return None
    _recording.uncacheable()
    if t.is_cuda and torch.cuda.is_current_stream_capturing():
        raise fail(op, f"check_slots=True reads {name} on the host, which a CUDA graph "
                       "capture forbids: capture with check_slots=False (the default)")
    return [int(v) for v in t.tolist()]


def check_distinct_slots(op, name, slots, num_slots):
    """R8: every non-negative slot in range and used once."""
    seen = {}
    for row, s in enumerate(slots):
        if s < 0:
            continue
        if s >= num_slots:
            raise fail(op, f"{name}[{row}] = {s} is outside the {num_slots} state slots")
        if s in seen:
            raise fail(op, f"{name}[{row}] = {s} repeats {name}[{seen[s]}]: two rows on one "
                           "state slot would race (docs/numerics.md R8)")
        seen[s] = row
