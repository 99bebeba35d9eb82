"""The NemotronH Mamba2 decode mixer step (docs/numerics.md#r7-the-mixer, R3d + R5d) as
a Python object, over the C++ decode plan (docs/models.md#the-decode-step).

    step = tilejit.mamba2.DecodeStep(config=tilejit.mamba2.Config(), layers=1,
                                     rows=3, slots=8, backend="gpu")
    out = step.step(hidden, slots)

On the interpreter (backend="interp") hidden and out are numpy uint16 bf16 bit
patterns; on the GPU (backend="gpu") torch bfloat16 CUDA tensors, used in place
on the current stream (no host copy). The pages live inside the step (on the
device for the GPU) and are read back as numpy copies.
"""

import numpy as np

from . import _tilejit
from ._tilejit import ArgumentError, MambaGeometry

# Element types as the decode plan names them; bf16 and e4m3 travel in numpy
# as their uint16 / uint8 bit patterns.
_NUMPY_TYPES = {np.dtype(np.uint16): "bf16", np.dtype(np.uint8): "e4m3",
                np.dtype(np.float16): "f16", np.dtype(np.float32): "f32",
                np.dtype(np.int32): "i32"}
_TORCH_TYPES = {"torch.bfloat16": "bf16", "torch.float8_e4m3fn": "e4m3",
                "torch.float16": "f16", "torch.float32": "f32", "torch.int32": "i32"}
# The numpy dtype of an SSM page of each element type (bf16 as its bits).
_PAGE_TYPES = {"f32": np.float32, "bf16": np.uint16, "f16": np.float16}


def _describe(a, writable=False):
    """(element type, shape, strides in elements, device or -1, address) of a
    numpy array or torch tensor, without copying it: the C++ decode step
    checks this against its plan before anything runs."""
    if type(a).__module__.startswith("torch"):
        kind = _TORCH_TYPES.get(str(a.dtype), str(a.dtype).replace("torch.", ""))
        device = a.device.index if a.is_cuda else -1
        return (kind, list(a.shape), list(a.stride()), device, a.data_ptr())
    if not isinstance(a, np.ndarray):
        if hasattr(a, "__cuda_array_interface__"):
            # The interface names no device, which the plan's check needs.
            raise ArgumentError(f"decode step: a {type(a).__name__} is neither a torch "
                                "tensor nor a numpy array (wrap it with torch.as_tensor)")
        try:
            a = np.asarray(a)
        except Exception as error:
            raise ArgumentError(f"decode step: cannot read a {type(a).__name__} as an "
                                f"array: {error}") from None
    if writable and not a.flags.writeable:
        raise ArgumentError("decode step: the destination array is read-only")
    kind = _NUMPY_TYPES.get(a.dtype, str(a.dtype))
    # A stride that is no whole number of elements can never be row-major.
    strides = [s // a.itemsize if s % a.itemsize == 0 else -1 for s in a.strides]
    return (kind, list(a.shape), strides, -1, a.ctypes.data)

# models::kSyntheticSeed: the embedded synthetic weights.
SYNTHETIC_SEED = 0x7117E72026


def Config(**fields):
    """A NemotronH geometry: the full model's, with `fields` (hidden_size,
    num_heads, head_dim, num_groups, state_size, conv_kernel, eps, dt_min,
    dt_max, layer_pattern) overridden."""
    config = MambaGeometry()
    for name, value in fields.items():
        if not hasattr(config, name):
            raise ArgumentError(f"Config: no field '{name}'")
        setattr(config, name, value)
    return config


def describe_plan(config=None, layers=1, rows=1, slots=1, prefill=None, runtime=None,
                  plan_arch="", seed=SYNTHETIC_SEED, ssm_state_dtype="f32",
                  stochastic_rounding=False):
    """The plan of a decode step of `rows` rows (or, with `prefill`, a list of
    (tokens, slot, continued) sequences, of a prefill forward of them) over the
    first `layers` Mamba layers and pages of `slots` slots, as text: every
    launch (kernel, constants, grid, arguments, bytes) and buffer. On
    `runtime` (a GPU or compile-only tilejit.Runtime: its arch and tuning
    database) or, when None, on the interpreter planning for `plan_arch`
    (e.g. "sm_121a"; empty: the tiles every arch runs). `ssm_state_dtype`
    and `stochastic_rounding` as DecodeStep takes them. Nothing is compiled;
    the same text `tilejit run --dry-run` and the embedding API print."""
    if runtime is not None and plan_arch:
        raise ArgumentError(f"describe_plan: plan_arch='{plan_arch}' is for the interpreter; "
                            f"a runtime plans for its own arch ({runtime.arch})")
    config = config if config is not None else Config()
    sequences = [(int(t), int(s), bool(c)) for t, s, c in (prefill or [])]
    return _tilejit._describe_plan(runtime, config, int(layers), int(rows), int(slots),
                                   int(seed), str(plan_arch), sequences,
                                   str(ssm_state_dtype), bool(stochastic_rounding))


class DecodeStep:
    """One decode step through the first `layers` Mamba layers (synthetic
    weights from `seed`) for `rows` rows over pages of `slots` slots.
    backend: "interp" (CPU interpreter, numpy) or "gpu" (GpuRunner, torch).
    ssm_state_dtype: the SSM pages' element type, "f32", "bf16" or "f16"
    (vLLM's mamba_ssm_cache_dtype); stochastic_rounding: a 16-bit page takes
    each new state rounded stochastically, seeded by the step's counter,
    instead of to nearest even (docs/numerics.md R8s)."""

    def __init__(self, config=None, layers=1, rows=1, slots=1, backend="interp",
                 seed=SYNTHETIC_SEED, runtime=None, ssm_state_dtype="f32",
                 stochastic_rounding=False):
        self.config = config if config is not None else Config()
        if backend == "interp":
            rt = None
        elif backend == "gpu":
            from . import runtime as default_runtime
            rt = runtime if runtime is not None else default_runtime()
        else:
            raise ArgumentError(f"backend '{backend}': expected 'interp' or 'gpu'")
        self.backend = backend
        self._runtime = rt
        self._step = _tilejit._decode_step(rt, self.config, int(layers), int(rows),
                                           int(slots), int(seed), str(ssm_state_dtype),
                                           bool(stochastic_rounding))
        self.ssm_state_dtype = str(ssm_state_dtype)
        self.rows, self.num_slots = self._step.rows, self._step.num_slots
        self.layers = list(self._step.layers)

    @property
    def hidden_size(self):
        return self.config.hidden_size

    def step(self, hidden, slots, out=None):
        """hidden [rows, hidden_size] bf16 (numpy uint16 bits on the
        interpreter, a torch bfloat16 CUDA tensor on the GPU), slots [rows]
        host integers (negative: padding row). Writes the last layer's output
        into `out` (same kind as hidden; allocated when None) and returns it.
        On the GPU the step runs on the current torch stream of the runtime's
        device without waiting; nothing is copied through the host unless
        the slots changed since the last step (4 bytes per row)."""
        slots = self._slots(slots)
        if self.backend == "gpu":
            import torch
            device = torch.device("cuda", self._runtime.ordinal)
            if out is None:
                out = torch.empty((self.rows, self.hidden_size), dtype=torch.bfloat16,
                                  device=device)
            stream = torch.cuda.current_stream(device).cuda_stream
        else:
            if out is None:
                out = np.empty((self.rows, self.hidden_size), np.uint16)
            stream = 0
        self._step.step(_describe(hidden), slots, _describe(out, writable=True), stream)
        return out

    def _slots(self, slots):
        """The slots as host int32s: they are checked on the host before any
        launch, so a device tensor is refused rather than copied back."""
        if type(slots).__module__.startswith("torch"):
            if slots.is_cuda:
                raise ArgumentError(
                    f"decode step: slots must be host integers (a list, numpy array or "
                    f"CPU tensor), checked before anything launches; got a tensor on "
                    f"{slots.device}")
            slots = slots.numpy()
        slots = np.asarray(slots)
        if slots.shape != (self.rows,) or not np.issubdtype(slots.dtype, np.integer):
            raise ArgumentError(f"decode step: slots must be {self.rows} integers, "
                                f"got {slots.dtype} {slots.shape}")
        return np.ascontiguousarray(slots, dtype=np.int32)

    def device_address(self, name):
        """The device address of the plan's non-weight buffer `name` (a page:
        "l<layer>.conv_page", ...) on the GPU; 0 on the interpreter."""
        return self._step.device_address(name)

    def _layer(self, layer):
        if not 0 <= layer < len(self.layers):
            raise ArgumentError(f"decode step: layer {layer} of {len(self.layers)}")
        return f"l{self.layers[layer].layer}."

    def pages(self, layer=0):
        """Copies of Mamba layer `layer`'s pages: conv [slots, Cd, K-1] uint16
        (bf16 bits, oldest tap first) and ssm [slots, H, P, N] in the page's
        type (float32, bf16 bits as uint16, or float16)."""
        c = self.config
        cd = c.num_heads * c.head_dim + 2 * c.num_groups * c.state_size
        conv = np.empty((self.num_slots, cd, c.conv_kernel - 1), np.uint16)
        ssm = np.empty((self.num_slots, c.num_heads, c.head_dim, c.state_size),
                       _PAGE_TYPES[self.ssm_state_dtype])
        self._step.read(self._layer(layer) + "conv_page", _describe(conv, writable=True))
        self._step.read(self._layer(layer) + "ssm_page", _describe(ssm, writable=True))
        return conv, ssm

    def set_pages(self, layer, conv, ssm):
        """Overwrites Mamba layer `layer`'s pages: numpy arrays of exactly the
        shapes, dtypes and row-major layout pages() returns (never converted)."""
        prefix = self._layer(layer)
        conv_ref, ssm_ref = _describe(conv), _describe(ssm)
        self._step.check(prefix + "conv_page", conv_ref)  # both before either is written
        self._step.check(prefix + "ssm_page", ssm_ref)
        self._step.write(prefix + "conv_page", conv_ref)
        self._step.write(prefix + "ssm_page", ssm_ref)

    def weights(self, layer=0):
        """Mamba layer `layer`'s parameters as numpy arrays (bf16 as uint16
        bits, e4m3 as uint8 codes) plus its static scales (FP8 layers)."""
        c, info = self.config, self.layers[layer]
        prefix = self._layer(layer)
        inner = c.num_heads * c.head_dim
        cd = inner + 2 * c.num_groups * c.state_size
        proj = np.uint8 if info.fp8 else np.uint16

        def get(name, dtype, shape):
            return self._step.weight(prefix + name).view(dtype).reshape(shape)

        return {
            "in_proj.weight": get("in_proj.weight", proj, (inner + cd + c.num_heads,
                                                           c.hidden_size)),
            "conv1d.weight": get("conv1d.weight", np.uint16, (cd, c.conv_kernel)),
            "conv1d.bias": get("conv1d.bias", np.uint16, (cd,)),
            "A_log": get("A_log", np.float32, (c.num_heads,)),
            "dt_bias": get("dt_bias", np.float32, (c.num_heads,)),
            "D": get("D", np.float32, (c.num_heads,)),
            "norm.weight": get("norm.weight", np.uint16, (inner,)),
            "out_proj.weight": get("out_proj.weight", proj, (c.hidden_size, inner)),
            "fp8": info.fp8,
            "in_proj.weight_scale": info.in_weight_scale,
            "in_proj.input_scale": info.in_input_scale,
            "out_proj.weight_scale": info.out_weight_scale,
            "out_proj.input_scale": info.out_input_scale,
        }
