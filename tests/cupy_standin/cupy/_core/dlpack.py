"""DLPack export and import (copies cupy/_core/dlpack.pyx and ndarray.__dlpack__ in core.pyx).

Capsules are real: a DLManagedTensor (or DLManagedTensorVersioned, for max_version >= (1, 0))
built with ctypes, device kDLCUDA, the view's data pointer with byte_offset 0 (as CuPy), shape
and strides in elements. The producer array stays alive until the consumer calls the deleter.
"""
from __future__ import annotations

import ctypes
import warnings

import numpy as np

from cupy.cuda import memory, runtime
from cupy.cuda import stream as stream_mod

kDLCPU, kDLCUDA, kDLCUDAManaged = 1, 2, 13  # noqa: N816 - DLPack's names
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KINDS = {v: k for k, v in _CODES.items()}
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_NAME, _NAME_VER = b"dltensor", b"dltensor_versioned"
_USED, _USED_VER = b"used_dltensor", b"used_dltensor_versioned"
_api = ctypes.pythonapi
_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_get_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", _api))

_exports: dict = {}  # managed tensor address -> what keeps it and its array alive


@_DELETER
def _delete(addr):
    _exports.pop(addr, None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # dlpack.pyx: an unconsumed capsule calls the tensor's deleter when it dies
    for name in (_NAME, _NAME_VER):
        if _is_valid_raw(capsule, name):
            _delete(_get_raw(capsule, name))


def _dl_dtype(dtype) -> DLDataType:
    if dtype.kind not in _CODES:
        raise BufferError("dtype is not supported for dlpack export")
    return DLDataType(_CODES[dtype.kind], dtype.itemsize * 8, 1)


def export(a, stream, max_version, dl_device, copy):
    """ndarray.__dlpack__ (core.pyx)."""
    versioned = max_version is not None and max_version[0] >= 1
    if dl_device is None or tuple(dl_device) == a.__dlpack_device__():
        if copy is True:
            raise BufferError("copy=True only supported for copy to CPU.")
    elif tuple(dl_device) == (kDLCPU, 0):
        if copy is False:
            raise ValueError("GPU memory cannot be exported to CPU without copy.")
        return a.get().__dlpack__(max_version=max_version)
    else:
        raise BufferError("unsupported device requested.")
    curr = stream_mod.get_current_stream()
    curr_ptr = curr.ptr or runtime.streamLegacy
    consumer = runtime.streamLegacy if stream is None else stream
    if not isinstance(consumer, int) or consumer < -1:
        raise ValueError("On CUDA, the valid stream for the DLPack protocol is -1, 1, 2, or any "
                         f"larger value, but {stream} was provided")
    if consumer == 0:
        warnings.warn("Stream 0 is passed from a library that you are converting to; CuPy "
                      "assumes 0 as a legacy default stream. Please report this problem to the "
                      "library as this violates the DLPack protocol.", stacklevel=3)
        consumer = runtime.streamLegacy
    if consumer >= 0 and consumer != curr_ptr:
        stream_mod.ExternalStream(consumer).wait_event(curr.record())
    return _capsule(a, versioned)


def _capsule(a, versioned):
    n = a.ndim
    shape = (ctypes.c_int64 * max(n, 1))(*a.shape)
    strides = (ctypes.c_int64 * max(n, 1))(*[s // a.itemsize for s in a.strides])
    tensor = DLTensor(a.data.ptr, DLDevice(kDLCUDA, a.data.device_id), n, _dl_dtype(a.dtype),
                      ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                      ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)), 0)
    if versioned:
        managed = DLManagedTensorVersioned(DLPackVersion(1, 0), None, _delete, 0, tensor)
    else:
        managed = DLManagedTensor(tensor, None, _delete)
    addr = ctypes.addressof(managed)
    _exports[addr] = (managed, shape, strides, a)
    return _new(addr, _NAME_VER if versioned else _NAME,
                ctypes.cast(_capsule_destructor, ctypes.c_void_p))


class _DLPackMemory:
    """Memory of an imported tensor; releases it through the producer's deleter
    (dlpack.pyx: DLPackMemory)."""

    def __init__(self, managed_addr, deleter, ptr, size, device_id):
        self._managed, self._deleter = managed_addr, deleter
        self.ptr, self.size, self.device_id = ptr, size, device_id

    def __del__(self):
        if self._deleter:
            _DELETER(self._deleter)(self._managed)
            self._deleter = None


def _to_array(capsule):
    from cupy._core.core import ndarray
    if _is_valid(capsule, _NAME):
        addr = _get(capsule, _NAME)
        _set_name(capsule, _USED)
        managed = DLManagedTensor.from_address(addr)
    elif _is_valid(capsule, _NAME_VER):
        addr = _get(capsule, _NAME_VER)
        _set_name(capsule, _USED_VER)
        managed = DLManagedTensorVersioned.from_address(addr)
        if managed.version.major > 1:
            raise BufferError("DLPack exported too new major version.")
    else:
        raise ValueError("A DLPack tensor object cannot be consumed multiple times "
                         f"(or object was not a DLPack capsule). Got: {capsule!r}")
    t = managed.dl_tensor
    if t.device.device_type not in (kDLCUDA, kDLCUDAManaged):
        raise RuntimeError("CuPy is built against CUDA, different from the backend that backs "
                           "the incoming DLPack tensor")
    if t.dtype.lanes != 1 or t.dtype.code not in _KINDS:
        raise TypeError(f"Unsupported dtype. dtype code: {t.dtype.code}")
    dtype = np.dtype(f"{_KINDS[t.dtype.code]}{t.dtype.bits // 8}" if t.dtype.code != 6 else "?")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] * dtype.itemsize for i in range(t.ndim))
    else:
        strides = None
    ptr = (t.data or 0) + t.byte_offset
    size = int(np.prod(shape, dtype=np.int64))
    if size and memory.owner_of(ptr) is None:
        raise ValueError(f"DLPack tensor at 0x{ptr:x} is not device memory of the CuPy stand-in")
    deleter = ctypes.cast(managed.deleter, ctypes.c_void_p).value
    mem = _DLPackMemory(addr, deleter, ptr, size * dtype.itemsize, t.device.device_id)
    return ndarray(shape, dtype, memory.MemoryPointer(mem, 0), strides)


def from_dlpack(array, *, device=None, copy=None):
    """cupy.from_dlpack (dlpack.pyx): asks the producer for a capsule on CuPy's stream."""
    if not hasattr(array, "__dlpack_device__"):
        return _to_array(array)
    if device is not None:
        raise NotImplementedError("from_dlpack() does not support device yet.")
    dev_type, dev_id = array.__dlpack_device__()
    if dev_type in (kDLCUDA, kDLCUDAManaged):
        prev = runtime.getDevice()
        try:
            runtime.setDevice(dev_id)
            s = stream_mod.get_current_stream_ptr() or stream_mod.get_default_stream_ptr()
            try:
                capsule = array.__dlpack__(stream=s, max_version=(1, 0), copy=copy)
            except TypeError:
                if copy is not None:
                    raise
                capsule = array.__dlpack__(stream=s)
        finally:
            runtime.setDevice(prev)
    elif dev_type == kDLCPU:
        raise TypeError("CPU arrays cannot be directly imported to CuPy. "
                        "Use `cupy.array(numpy.from_dlpack(input))` instead.")
    else:
        raise TypeError(f"Unsupported array type: {dev_type}")
    return _to_array(capsule)
