"""DLPack producers (objects with __dlpack__ / __dlpack_device__: numpy, CuPy,
JAX, torch, ...) as kernel arguments, without torch: the capsule's DLTensor is
read through ctypes (DLPack's ABI, unversioned capsules "dltensor"), its
memory used in place, and the capsule released once the call has been made.
The consumer's stream goes to __dlpack__(stream=...), so the producer orders
its pending work before the launch (DLPack's synchronization contract)."""

import ctypes

from ._tilejit import ArgumentError, dtype

CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
HOST_READABLE = (CPU, CUDA_HOST, CUDA_MANAGED)
DEVICE_READABLE = (CUDA, CUDA_MANAGED)

# (type code, bits) of each element type; e4m3 also as uint8 bit patterns and
# bf16 as uint16 ones, as the numpy path takes them.
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL, _FLOAT8_E4M3FN = 0, 1, 2, 4, 6, 10
_CODES = {
    dtype.f32: {(_FLOAT, 32)}, dtype.f16: {(_FLOAT, 16)},
    dtype.bf16: {(_BFLOAT, 16), (_UINT, 16)}, dtype.f8e4m3: {(_FLOAT8_E4M3FN, 8), (_UINT, 8)},
    dtype.i1: {(_BOOL, 8), (_UINT, 8)}, dtype.i8: {(_INT, 8)}, dtype.i32: {(_INT, 32)},
    dtype.i64: {(_INT, 64)},
}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _ManagedTensor(ctypes.Structure):
    pass


_ManagedTensor._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                           ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_ManagedTensor)))]

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


def is_producer(a):
    return hasattr(a, "__dlpack__") and hasattr(a, "__dlpack_device__")


class Borrowed:
    """One consumed capsule: the tensor's address, shape, strides (elements)
    and type; release() hands it back to its producer."""

    def __init__(self, capsule):
        if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
            raise ArgumentError("a DLPack capsule that is not an unconsumed 'dltensor'")
        self._managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, b"dltensor"),
                                    ctypes.POINTER(_ManagedTensor))
        # Renamed, the capsule's own destructor leaves the tensor to release().
        _api.PyCapsule_SetName(capsule, b"used_dltensor")
        t = self._managed.contents.dl_tensor
        self.device_type, self.device_id = t.device.device_type, t.device.device_id
        self.code, self.bits, self.lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        self.strides = None if not t.strides else tuple(t.strides[i] for i in range(t.ndim))
        self.address = (t.data or 0) + t.byte_offset
        self.bytes = self._count() * self.bits // 8

    def _count(self):
        count = 1
        for n in self.shape:
            count *= n
        return count

    def row_major(self):
        if self.strides is None:
            return True
        step = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != step:
                return False
            step *= n
        return True

    def release(self):
        deleter = self._managed.contents.deleter
        if deleter:
            deleter(self._managed)
        self._managed = None


def borrow(where, p, a, device_types, stream=None):
    """Consumes producer `a` for parameter `p` (described by `where` in errors):
    checked for device, element type and row-major layout, and returned
    borrowed. `stream`: the consumer's stream (a CUstream as int) for a device
    array, handed to __dlpack__."""
    device_type, _ = a.__dlpack_device__()
    if device_type not in device_types:
        raise ArgumentError(f"{where} is a DLPack array on device type {device_type}, expected "
                            f"{' or '.join(str(d) for d in device_types)}")
    capsule = a.__dlpack__() if stream is None else a.__dlpack__(stream=stream)
    view = Borrowed(capsule)
    try:
        if view.lanes != 1 or (view.code, view.bits) not in _CODES[p.dtype]:
            raise ArgumentError(f"{where} is a DLPack array of type code {view.code}, "
                                f"{view.bits} bits, expected ptr<{p.dtype.name}>")
        if not view.row_major():
            raise ArgumentError(f"{where} is a DLPack array that is not C-contiguous "
                                f"(strides {view.strides} for shape {view.shape})")
    except ArgumentError:
        view.release()
        raise
    return view
