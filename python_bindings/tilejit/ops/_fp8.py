"""The FP8 projection of docs/numerics.md R1: the static activation quant
(vLLM's scaled_fp8_quant with a scale), the e4m3 GEMM (torch._scaled_mm's
form) and the two as one W8A8 linear, on the registered `quantize_e4m3` and
`out_proj` kernels. e4m3 tensors are torch.float8_e4m3fn where torch has it,
else (torch < 2.1) uint8 bit patterns, which are also accepted everywhere."""

import functools
import os

import torch

from .. import _tilejit
from ._launch import (E4M3, E4M3_TYPES, as_tensor, check, check_aligned, check_strides, fail,
                      launch, matrix_rows)
from ._plan import cached
from ._recording import keep, per_call


def _scale(op, name, value, device):
    """A per-tensor scale as the one-element f32 tensor the kernels read
    (scale_ptr=1): no host read, so a CUDA graph may capture the call."""
    if isinstance(value, (int, float)):
        return keep(torch.tensor([float(value)], dtype=torch.float32, device=device))
    value = as_tensor(op, name, value)
    check(op, name, value, (torch.float32,), device=device)
    if value.numel() != 1:
        raise fail(op, f"{name} has {value.numel()} elements: tilejit's FP8 ops take one "
                       "per-tensor scale (static quantization, R1)")
    return value.reshape(1)


def _e4m3_empty(shape, device):
    return per_call("empty", shape, dtype=E4M3 if E4M3 is not None else torch.uint8,
                    device=device)


@cached
def scaled_fp8_quant(input, scale=None, num_token_padding=None, scale_ub=None,
                     use_per_token_if_dynamic=False, output=None):
    """R1's static activation quant, a_q = e4m3(x * (1 / scale)), saturating at
    +-448. input (..., K) bf16 with contiguous rows; scale a float or a
    one-element f32 tensor (required: dynamic quantization is refused).
    Returns (output, scale) as vLLM's does."""
    op = "scaled_fp8_quant"
    input, output = as_tensor(op, "input", input), as_tensor(op, "output", output)
    if scale is None:
        raise fail(op, "scale=None asks for dynamic quantization; tilejit's quant is static "
                       "(R1: the checkpoint's input_scale, never recomputed): pass scale")
    if num_token_padding is not None:
        raise fail(op, "num_token_padding is not supported; pass None")
    x = matrix_rows(op, "input", input, (torch.bfloat16,))
    rows, width = x.shape
    device = input.device
    scale_t = _scale(op, "scale", scale, device)
    if output is None:
        output = _e4m3_empty(tuple(input.shape), device)
    check(op, "output", output, E4M3_TYPES, tuple(input.shape), device)
    # A view, never reshape: reshape copies a layout it cannot view, and the
    # kernel would fill the copy while the caller's output kept its old bytes.
    try:
        out_rows = output.view(-1, width)
    except RuntimeError:
        raise fail(op, f"output of strides {tuple(output.stride())} does not view as "
                       f"[{rows}, {width}] rows: pass an output with contiguous rows") from None
    check_aligned(op, "output", check_strides(op, "output", out_rows, (width, 1)), (0,))
    block = 1024
    launch("quantize_e4m3", dict(width=width, block=block, scale_ptr=1), device,
           (-(-width // block), rows), x=x, out=out_rows, rows=rows, input_scale=scale_t)
    return output, scale_t


_projections = {}  # (device, rows, *geometry.items()) -> out_proj's constants

# out_proj's k_splits for every scaled_mm / w8a8_linear, instead of the
# planner's (the split GEMM on sm_90a where its tiles are few, none elsewhere):
# TILEJIT_FP8_K_SPLITS=1 never splits, S > 1 always splits K S ways (on any
# arch, the interpreter included). For measuring the forms side by side.
K_SPLITS = int(os.environ.get("TILEJIT_FP8_K_SPLITS", "0"))

# out_proj's tail_splits S > 1 for every scaled_mm / w8a8_linear: the tiles of
# the last rows, as many as fill the persistent walk's last wave best, take K
# in S parts (docs/decode-projections.md#the-last-wave); off (0 or 1) by
# default. TILEJIT_FP8_TAIL_PROGRAMS: the programs that walk the tiles (the
# device's multiprocessors; on the interpreter, which has none, 132).
TAIL_SPLITS = int(os.environ.get("TILEJIT_FP8_TAIL_SPLITS", "0"))
TAIL_PROGRAMS = int(os.environ.get("TILEJIT_FP8_TAIL_PROGRAMS", "0"))


@functools.lru_cache(maxsize=256)
def tail_rows(rows, block_m, columns, splits, programs):
    """The last rows whose tiles a tail-split out_proj divides `splits` ways:
    the fewest whole row tiles (the last one ragged) that minimize the busiest
    program's work when `programs` walk the items in order (item i on program
    i % programs; a whole tile costs `splits` pieces). 0: no split helps.
    Memoized: the search takes milliseconds of Python and every call of the op
    asks it again for its shape."""
    row_tiles = -(-rows // block_m)

    def busiest(tail_tiles):
        whole = (row_tiles - tail_tiles) * columns
        items = whole + tail_tiles * columns * splits
        return max(max(0, -(-(whole - p) // programs)) * (splits - 1) +
                   max(0, -(-(items - p) // programs)) for p in range(programs))

    best = min(range(row_tiles + 1), key=lambda r: (busiest(r), r))
    return rows - (row_tiles - best) * block_m if best else 0


def _projection(device, rows, geometry):
    """out_proj's constants for `rows` rows, tiled as the Mamba2 plans tile
    theirs (docs/models.md) for the device's arch with the tuning database: on
    sm_90a the prefill plan's producer GEMM for large M, decode's GEMV, direct
    or 16-row tiles for small M; on the interpreter the tiles every arch runs.
    Planned once per device and shape."""
    if K_SPLITS:
        geometry = dict(geometry, k_splits=K_SPLITS)
    if TAIL_SPLITS > 1:
        geometry = dict(geometry, tail_splits=TAIL_SPLITS)
    key = (device, rows, *geometry.items())
    constants = _projections.get(key)
    if constants is None:
        rt = None
        if device.type == "cuda":
            from .. import runtime

            rt = runtime(device.index if device.index is not None else 0)
        constants = _projections[key] = _tilejit._plan_projection(rt, rows, geometry)
    return constants


@cached
def scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=torch.bfloat16, scale_result=None,
              use_fast_accum=False):
    """The e4m3 GEMM in torch._scaled_mm's form: out = (scale_a * scale_b) *
    (a @ b) with f32 accumulation (R1), rounded to out_dtype (bf16 or f32).
    a (M, K) row-major and b (K, N) column-major (b.t() contiguous: an
    nn.Linear weight's (N, K) rows), both e4m3; per-tensor f32 scales."""
    op = "scaled_mm"
    a, b, bias, scale_result = (as_tensor(op, n, v) for n, v in
                                [("a", a), ("b", b), ("bias", bias),
                                 ("scale_result", scale_result)])
    if bias is not None:
        raise fail(op, "bias is not supported (NemotronH's projections have none); pass None")
    if scale_result is not None:
        raise fail(op, "scale_result is not supported (an e4m3 output); pass None")
    if out_dtype not in (torch.bfloat16, torch.float32):
        raise fail(op, f"out_dtype {out_dtype} is not supported: bfloat16 or float32")
    check(op, "a", a, E4M3_TYPES)
    if a.dim() != 2:
        raise fail(op, f"a has shape {tuple(a.shape)}, expected (M, K)")
    rows, inner = a.shape
    device = a.device
    check_aligned(op, "a", check_strides(op, "a", a, (inner, 1)), (0,))
    check(op, "b", b, E4M3_TYPES, (inner, None), device)
    hidden = b.shape[1]
    check_strides(op, "b", b, (1, inner))
    weight = check_aligned(op, "b", b.t(), (0,))
    scales = _scale(op, "scale_a", scale_a, device), _scale(op, "scale_b", scale_b, device)
    out = check_aligned(op, "the output", per_call("empty", rows, hidden, dtype=out_dtype,
                                                   device=device), (0,))
    out_f32 = int(out_dtype == torch.float32)
    constants = _projection(device, rows, dict(inner=inner, hidden=hidden, fp8=1,
                                               out_f32=out_f32, scale_ptr=1))
    if constants.get("tail_splits", 1) > 1:
        return _tail_split_mm(constants, device, a, weight, out, scales)
    splits = constants["k_splits"]
    grid = (-(-hidden // constants["block_n"]), -(-rows // constants["block_m"]) * splits)
    if splits == 1:
        launch("out_proj", constants, device, grid, a=a, weight=weight, out=out, rows=rows,
               scale_a=scales[0], scale_b=scales[1])
        return out
    # Split K: f32 partials, summed in split order by a second launch.
    partials = per_call("empty", splits, rows, hidden, dtype=torch.float32, device=device)
    launch("out_proj", constants, device, grid, a=a, weight=weight, partials=partials,
           rows=rows)
    block = 1024
    launch("split_k_sum", dict(width=hidden, splits=splits, block=block, fp8=1,
                               out_f32=out_f32, scale_ptr=1), device,
           (-(-hidden // block), rows), partials=partials, out=out, rows=rows,
           scale_a=scales[0], scale_b=scales[1])
    return out


def _tail_split_mm(constants, device, a, weight, out, scales, tail=None):
    """out_proj (e4m3 with `scales`, the caller's two scale tensors; bf16
    without) with tail_splits: the whole tiles and the split tail's f32
    partials in one launch (grid (items, 1)), then split_k_sum over the tail's
    rows in split order. `tail`: the split rows (the last ones after whole
    row tiles), else tail_rows' choice (the unsplit launch where none helps)."""
    rows, hidden = out.shape
    splits, block_m = constants["tail_splits"], constants["block_m"]
    columns = -(-hidden // constants["block_n"])
    scale_args = dict(scale_a=scales[0], scale_b=scales[1]) if scales else {}
    if tail is None:
        programs = TAIL_PROGRAMS
        if not programs and device.type == "cuda":
            programs = torch.cuda.get_device_properties(device).multi_processor_count
        tail = tail_rows(rows, block_m, columns, splits, programs or 132)
    if tail and (rows - tail) % block_m:
        raise ValueError(f"tail {tail} of {rows} rows leaves no whole tiles of {block_m}")
    if tail == 0:
        launch("out_proj", dict(constants, tail_splits=1), device,
               (columns, -(-rows // block_m)), a=a, weight=weight, out=out, rows=rows,
               **scale_args)
        return out
    tail_tiles = -(-tail // block_m)
    items = (-(-rows // block_m) - tail_tiles) * columns + tail_tiles * columns * splits
    partials = per_call("empty", splits, tail, hidden, dtype=torch.float32, device=device)
    launch("out_proj", constants, device, (items, 1), a=a, weight=weight, out=out,
           partials=partials, rows=rows, tail=tail, **scale_args)
    block = 1024
    launch("split_k_sum", dict(width=hidden, splits=splits, block=block, fp8=int(bool(scales)),
                               out_f32=int(out.dtype == torch.float32),
                               scale_ptr=int(bool(scales)), tail_only=1), device,
           (-(-hidden // block), tail), partials=partials, out=out, rows=rows, tail=tail,
           **scale_args)
    return out


@cached
def w8a8_linear(x, weight, weight_scale, input_scale, bias=None, out_dtype=torch.bfloat16):
    """R1's FP8 W8A8 linear: y = bf16((s_x * s_w) * (e4m3(x / s_x) @ W^T)).
    x (..., K) bf16; weight (N, K) e4m3 (nn.Linear's layout); static
    per-tensor scales. Two launches: the quant, then the e4m3 GEMM."""
    op = "w8a8_linear"
    x, weight = as_tensor(op, "x", x), as_tensor(op, "weight", weight)
    check(op, "x", x, (torch.bfloat16,))
    check(op, "weight", weight, E4M3_TYPES, device=x.device)
    if weight.dim() != 2 or x.dim() == 0 or weight.shape[1] != x.shape[-1]:
        raise fail(op, f"weight has shape {tuple(weight.shape)}, expected (N, "
                       f"{x.shape[-1] if x.dim() else '?'})")
    a, s_x = scaled_fp8_quant(x, input_scale)
    y = scaled_mm(a.reshape(-1, x.shape[-1]), weight.t(), s_x, weight_scale, bias=bias,
                  out_dtype=out_dtype)
    return y.view(*x.shape[:-1], weight.shape[0])
