"""The NemotronH Mamba2 decode mixer step (reference-math.md R7 with R3d + R5d) as
a Python object, over the C++ decode plan (docs/models.md, "The decode step").

    step = tilejit.mamba2.DecodeStep(config=tilejit.mamba2.Config(), layers=1,
                                     rows=3, slots=8, backend="gpu")
    out = step.step(hidden, slots)

On the interpreter (backend="interp") hidden and out are numpy uint16 bf16 bit
patterns; on the GPU (backend="gpu") torch bfloat16 CUDA tensors. The pages live
inside the step (on the device for the GPU) and are read back as numpy copies.
"""

import numpy as np

from . import _tilejit
from ._tilejit import ArgumentError, MambaGeometry

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


class DecodeStep:
    """One decode step through the first `layers` Mamba layers (synthetic
    weights from `seed`) for `rows` rows over pages of `slots` slots.
    backend: "interp" (CPU interpreter, numpy) or "gpu" (GpuDecoder, torch)."""

    def __init__(self, config=None, layers=1, rows=1, slots=1, backend="interp",
                 seed=SYNTHETIC_SEED, runtime=None):
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
                                           int(slots), int(seed))
        self.rows, self.num_slots = self._step.rows, self._step.num_slots
        self.layers = list(self._step.layers)
        self._sizes = {name: size for name, _, size in self._step.buffers}

    @property
    def hidden_size(self):
        return self.config.hidden_size

    def step(self, hidden, slots):
        """hidden [rows, hidden_size] bf16 (numpy uint16 bits on the
        interpreter, a torch bfloat16 CUDA tensor on the GPU), slots [rows]
        (negative: padding row). Returns the last layer's output, same kind."""
        if self.backend == "gpu":
            return self._step_torch(hidden, slots)
        hidden = np.asarray(hidden)
        if hidden.dtype != np.uint16 or hidden.shape != (self.rows, self.hidden_size):
            raise ArgumentError(
                f"decode step: hidden must be uint16 (bf16 bits) of shape "
                f"({self.rows}, {self.hidden_size}), got {hidden.dtype} {hidden.shape}")
        out = np.empty((self.rows, self.hidden_size), np.uint16)
        self._step.step(np.ascontiguousarray(hidden), self._slots(slots), out)
        return out

    def _step_torch(self, hidden, slots):
        import torch
        if (not isinstance(hidden, torch.Tensor) or hidden.dtype != torch.bfloat16
                or not hidden.is_cuda or tuple(hidden.shape) != (self.rows, self.hidden_size)):
            raise ArgumentError(
                f"decode step: hidden must be a torch.bfloat16 CUDA tensor of shape "
                f"({self.rows}, {self.hidden_size})")
        if isinstance(slots, torch.Tensor):
            slots = slots.cpu().numpy()
        # GpuDecoder exposes no device addresses: the step's input and output
        # travel through host copies (the pages stay on the device).
        host = hidden.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)
        out = np.empty((self.rows, self.hidden_size), np.uint16)
        self._step.step(host, self._slots(slots), out)
        return torch.from_numpy(out.view(np.int16)).to(hidden.device).view(torch.bfloat16)

    def _slots(self, slots):
        slots = np.asarray(slots)
        if slots.shape != (self.rows,) or not np.issubdtype(slots.dtype, np.integer):
            raise ArgumentError(f"decode step: slots must be {self.rows} integers, "
                                f"got {slots.dtype} {slots.shape}")
        return np.ascontiguousarray(slots, dtype=np.int32)

    def _layer(self, layer):
        if not 0 <= layer < len(self.layers):
            raise ArgumentError(f"decode step: layer {layer} of {len(self.layers)}")
        return f"l{self.layers[layer].layer}."

    def pages(self, layer=0):
        """Copies of Mamba layer `layer`'s pages: conv [slots, Cd, K-1] uint16
        (bf16 bits, oldest tap first) and ssm [slots, H, P, N] float32."""
        c = self.config
        cd = c.num_heads * c.head_dim + 2 * c.num_groups * c.state_size
        conv = np.empty((self.num_slots, cd, c.conv_kernel - 1), np.uint16)
        ssm = np.empty((self.num_slots, c.num_heads, c.head_dim, c.state_size), np.float32)
        self._step.read(self._layer(layer) + "conv_page", conv)
        self._step.read(self._layer(layer) + "ssm_page", ssm)
        return conv, ssm

    def set_pages(self, layer, conv, ssm):
        """Overwrites Mamba layer `layer`'s pages (shapes and dtypes as pages())."""
        self._step.write(self._layer(layer) + "conv_page",
                         np.ascontiguousarray(conv, dtype=np.uint16))
        self._step.write(self._layer(layer) + "ssm_page",
                         np.ascontiguousarray(ssm, dtype=np.float32))

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
