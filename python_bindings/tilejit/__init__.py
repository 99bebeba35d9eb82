"""tilejit: write tile kernels in Python, compile them for a GPU arch, dump every
stage, run them on the CPU interpreter (numpy) or the GPU (torch). See docs/python.md.
"""

import os

from . import _arrays, _tilejit
from ._tilejit import (
    ArgumentError, BuildError, CompileError, DeviceError, Error, RunError,
    Kernel, KernelModule, Value, Param, PTXResult, Runtime, DeviceKernel, LoadStats,
    dtype, registered_kernels, build_registered,
    program_id, num_programs, arange, constant, full, zeros,
    broadcast_to, expand_dims, reshape, transpose,
    maximum, minimum, shr, bitcast, where, fma, exp, log, log1p, sqrt, rsqrt, abs, silu, softplus,
    sum, max, min, cumsum, dot, make_view, load, store, for_range, if_then,
    wait_for_predecessors, launch_dependents, prefetch_l2,
    f32_to_bf16, bf16_to_f32, f32_to_e4m3, e4m3_to_f32,
)
from .kernels import KernelSet, RegisteredKernel
from . import mamba2
from ._version import __version__

# Ops are located at the user's line: frames inside this package are skipped.
_tilejit._set_package_directory(os.path.dirname(os.path.abspath(__file__)) + os.sep)

f32, f16, bf16, f8e4m3 = dtype.f32, dtype.f16, dtype.bf16, dtype.f8e4m3
i1, i8, i32, i64 = dtype.i1, dtype.i8, dtype.i32, dtype.i64

kernels = KernelSet()

_default_runtimes = {}
_device_kernels = {}


def runtime(ordinal=0):
    """The process's runtime on CUDA device `ordinal` (opened on first use);
    DeviceError when there is no driver or GPU."""
    if ordinal not in _default_runtimes:
        _default_runtimes[ordinal] = Runtime("cuda", ordinal)
    return _default_runtimes[ordinal]


def device_kernel(module, runtime=None, opt_level=3):
    """The runtime's kernel handle for `module`, one per (runtime, module, level):
    later launches find it compiled and loaded."""
    rt = runtime if runtime is not None else globals()["runtime"]()
    key = (id(rt), id(module), opt_level)
    if key not in _device_kernels:
        _device_kernels[key] = (rt, module, rt._kernel(module, opt_level))
    return _device_kernels[key][2]


# The array handling lives in Python (_arrays.py); these methods join the C++ class.
def _release(borrowed):
    for view in borrowed:
        view.release()


def _run(self, grid, *args):
    """Runs on the CPU interpreter: numpy arrays (or DLPack producers of host
    memory) for pointers, numbers for scalars."""
    borrowed = []
    try:
        self._run(_arrays.grid3(grid), _arrays.host_args(self, args, borrowed))
    finally:
        _release(borrowed)


def _launch(self, grid, *args, stream=None, runtime=None, opt_level=3):
    """Launches on the GPU: torch CUDA tensors, __cuda_array_interface__
    objects or DLPack producers for pointers. Runs on `stream` (a CUstream as
    int), else the current torch stream of the first torch tensor, else the
    interface stream of the first array naming one; an array whose interface
    names another stream is waited for first. Asynchronous, no host copies."""
    rt = runtime if runtime is not None else globals()["runtime"]()
    borrowed = []
    try:
        args_, chosen, waits = _arrays.device_args(self, args, rt.ordinal, stream, borrowed)
        for producer in waits:
            rt._synchronize(producer)
        device_kernel(self, rt, opt_level)._launch(chosen, _arrays.grid3(grid), args_)
    finally:
        _release(borrowed)


def _call(self, *args, grid, stream=None, runtime=None):
    """run() when the arrays are numpy arrays, launch() when they are CUDA arrays."""
    pointers = [a for p, a in zip(self.params, args) if p.pointer]
    on_device = [_arrays.is_device_array(a) for a in pointers]
    if any(on_device) and not all(on_device):
        raise ArgumentError(f"kernel '{self.name}': mix of host and device arrays")
    if any(on_device):
        return _launch(self, grid, *args, stream=stream, runtime=runtime)
    return _run(self, grid, *args)


def __getattr__(name):
    """tilejit.ops (which needs torch) is imported on first use."""
    if name == "ops":
        import importlib
        return importlib.import_module(".ops", __name__)
    raise AttributeError(f"module 'tilejit' has no attribute '{name}'")


KernelModule.run = _run
KernelModule.launch = _launch
KernelModule.__call__ = _call
