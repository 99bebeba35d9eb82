"""Launching `tilejit compile` output through libcuda itself (ctypes), supplying
what the C++ runtime supplies (runtime/lib/Kernel.cpp): a persistent kernel's
logical grid (parameters with a `grid_axis`; the launch then runs at most one
program per multiprocessor) and each `tensormap` parameter, built from its
source (base pointer parameter, sizes, row stride, box, element bytes) with
cuTensorMapEncodeTiled and cached by base and extents.
Memory and streams come from torch, which makes the primary context current."""
import ctypes
import json

import torch

_cuda = ctypes.CDLL("libcuda.so.1")
for _name in ("cuModuleLoadData", "cuModuleGetFunction", "cuFuncSetAttribute",
              "cuTensorMapEncodeTiled", "cuLaunchKernel", "cuGetErrorName"):
    getattr(_cuda, _name).restype = ctypes.c_int

_MAX_DYNAMIC_SHARED = 8        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
_UINT8, _UINT16 = 0, 1         # CU_TENSOR_MAP_DATA_TYPE_UINT8 / _UINT16
_SWIZZLE = {32: 1, 64: 2, 128: 3}  # CU_TENSOR_MAP_SWIZZLE_32B / 64B / 128B
_L2_256B = 3                   # CU_TENSOR_MAP_L2_PROMOTION_L2_256B


def _check(result, call):
    if result != 0:
        name = ctypes.c_char_p()
        _cuda.cuGetErrorName(result, ctypes.byref(name))
        raise RuntimeError(f"{call}: {name.value.decode() if name.value else result}")


class _TensorMap:
    """128 descriptor bytes at a 64-byte aligned address (CUtensorMap's)."""

    def __init__(self):
        self._buffer = ctypes.create_string_buffer(128 + 64)
        self.address = (ctypes.addressof(self._buffer) + 63) & ~63


class Kernel:
    """One compiled kernel: folder/NAME.ptx with NAME.json (`tilejit compile --meta`)."""

    def __init__(self, folder, name):
        self.meta = json.loads((folder / f"{name}.json").read_text())
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # the primary context, current on this thread
        ptx = (folder / f"{name}.ptx").read_bytes() + b"\0"
        self._module = ctypes.c_void_p()
        _check(_cuda.cuModuleLoadData(ctypes.byref(self._module), ptx), "cuModuleLoadData")
        self._fn = ctypes.c_void_p()
        _check(_cuda.cuModuleGetFunction(ctypes.byref(self._fn), self._module,
                                         self.meta["entry"].encode()), "cuModuleGetFunction")
        self.shared = self.meta["shared_bytes"]
        if self.shared > 48 * 1024:
            _check(_cuda.cuFuncSetAttribute(self._fn, _MAX_DYNAMIC_SHARED, self.shared),
                   "cuFuncSetAttribute")
        self.params = self.meta["params"]
        # The launcher supplies a persistent kernel's grid and the tensor maps.
        self.user_params = [p for p in self.params
                            if p["kind"] != "tensormap" and "grid_axis" not in p]
        self._sms = torch.cuda.get_device_properties(0).multi_processor_count
        self._maps = {}

    def _tensor_map(self, p, args):
        sizes = [s if s >= 0 else int(args[a]) for s, a in zip(p["sizes"], p["size_args"])]
        base = int(args[p["base"]])
        key = (p["name"], base, tuple(sizes))
        if key not in self._maps:
            m = _TensorMap()
            eb = p["element_bytes"]
            u64 = ctypes.c_uint64
            _check(_cuda.cuTensorMapEncodeTiled(
                ctypes.c_void_p(m.address), _UINT8 if eb == 1 else _UINT16, 2, ctypes.c_void_p(base),
                (u64 * 2)(sizes[1], sizes[0]), (u64 * 1)(p["row_stride"] * eb),
                (ctypes.c_uint32 * 2)(p["box"][1], p["box"][0]), (ctypes.c_uint32 * 2)(1, 1),
                0, _SWIZZLE[p["box"][1] * eb], _L2_256B, 0), "cuTensorMapEncodeTiled")
            self._maps[key] = m
        return self._maps[key]

    def launch(self, grid, args, stream=None):
        """args: one value per non-tensormap parameter (tensors by data_ptr)."""
        assert len(args) == len(self.user_params), (len(args), len(self.user_params))
        vals = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
        holders = []
        for p, v in zip(self.user_params, vals):
            kind = p["kind"]
            holders.append(ctypes.c_uint64(v) if kind == "ptr" else
                           ctypes.c_int32(v) if kind == "i32" else
                           ctypes.c_float(v) if kind == "f32" else None)
            assert holders[-1] is not None, f"parameter kind {kind}"
        grid = tuple(grid) + (1,) * (3 - len(grid))
        launch_grid = grid
        for p in self.params[len(self.user_params):]:
            if "grid_axis" in p:
                holders.append(ctypes.c_int32(grid[p["grid_axis"]]))
                programs = self._sms * self.meta.get("programs_per_sm", 1)
                launch_grid = (min(grid[0] * grid[1], programs), 1, 1)
        addresses = [ctypes.addressof(h) for h in holders]
        for p in self.params[len(self.user_params):]:
            if p["kind"] == "tensormap":
                addresses.append(self._tensor_map(p, vals).address)
        ptrs = (ctypes.c_void_p * len(addresses))(*addresses)
        s = (stream or torch.cuda.current_stream()).cuda_stream
        grid = launch_grid
        _check(_cuda.cuLaunchKernel(self._fn, *grid, self.meta["threads"], 1, 1, self.shared,
                                    ctypes.c_void_p(s), ptrs, None), "cuLaunchKernel")
