"""Creation, copies and host transfers (cupy/_creation/*.py, cupy/_core/core.pyx: array)."""
from __future__ import annotations

import numpy as np

from cupy._core import _device_op
from cupy._core.core import ndarray
from cupy.cuda import memory, runtime
from cupy.cuda import stream as stream_mod


def empty(shape, dtype=float, order="C"):
    return ndarray(shape, dtype, order=order)


def full(shape, fill_value, dtype=None, order="C"):
    if dtype is None:
        dtype = np.array(fill_value).dtype
    out = ndarray(shape, dtype, order=order)
    out.fill(fill_value)
    return out


def zeros(shape, dtype=float, order="C"):
    return full(shape, 0, dtype, order)


def ones(shape, dtype=float, order="C"):
    return full(shape, 1, dtype, order)


def empty_like(a, dtype=None, shape=None):
    return empty(a.shape if shape is None else shape, a.dtype if dtype is None else dtype)


def zeros_like(a, dtype=None, shape=None):
    return zeros(a.shape if shape is None else shape, a.dtype if dtype is None else dtype)


def ones_like(a, dtype=None, shape=None):
    return ones(a.shape if shape is None else shape, a.dtype if dtype is None else dtype)


def full_like(a, fill_value, dtype=None, shape=None):
    return full(a.shape if shape is None else shape, fill_value, a.dtype if dtype is None else dtype)


def arange(start, stop=None, step=1, dtype=None):
    return _device_op.apply(lambda: np.arange(start, stop, step, dtype))


def _upload(host: np.ndarray) -> ndarray:
    out = ndarray(host.shape, host.dtype)
    out.set(np.ascontiguousarray(host))
    return out


def _from_cuda_array_interface(obj) -> ndarray:
    """Wrap memory exported through __cuda_array_interface__ without a copy (core.pyx:
    _convert_object_with_cuda_array_interface); CuPy synchronises the producer's stream."""
    cai = obj.__cuda_array_interface__
    shape, dtype = tuple(cai["shape"]), np.dtype(cai["typestr"])
    ptr = cai["data"][0]
    strides = cai.get("strides")
    if strides is None:
        strides = tuple(np.empty(shape, np.bool_).strides[i] * dtype.itemsize for i in range(len(shape)))
    stream_ptr = cai.get("stream")
    if stream_ptr is not None:
        runtime.streamSynchronize(stream_ptr)
    size = int(np.prod(shape, dtype=np.int64))
    if size and memory.owner_of(ptr) is None:
        raise ValueError(f"__cuda_array_interface__ pointer 0x{ptr:x} is not device memory of "
                         "the CuPy stand-in (only memory it allocated can be wrapped)")
    dev = memory.owner_of(ptr)[0] if size else runtime.getDevice()
    mem = memory.UnownedMemory(ptr, size * dtype.itemsize, obj, dev)
    return ndarray(shape, dtype, memory.MemoryPointer(mem, 0), strides)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0):
    if isinstance(obj, ndarray):
        out = obj.astype(obj.dtype if dtype is None else dtype, copy=copy)
    elif hasattr(obj, "__cuda_array_interface__"):
        out = _from_cuda_array_interface(obj)
        if dtype is not None or copy:
            out = out.astype(out.dtype if dtype is None else dtype, copy=bool(copy))
    else:
        out = _upload(np.array(obj, dtype=dtype))
    while out.ndim < ndmin:
        out = out.reshape((1,) + out.shape)
    return out


def asarray(a, dtype=None, order=None):
    if isinstance(a, ndarray):
        return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    return array(a, dtype=dtype, copy=False)


def ascontiguousarray(a, dtype=None):
    a = asarray(a, dtype)
    return a if a.flags.c_contiguous else a.copy()


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    return np.asarray(a, order=order)


def copyto(dst, src, casting="same_kind", where=None):
    # cupy/_manipulation/basic.py: copyto - casting checked, host arrays refused
    _device_op.check_operand(src)
    src_dtype = src.dtype if isinstance(src, ndarray) else np.result_type(src)
    if isinstance(src, ndarray) and not np.can_cast(src_dtype, dst.dtype, casting):
        raise TypeError(f"Cannot cast array data from {src_dtype!r} to {dst.dtype!r} "
                        f"according to the rule '{casting}'")
    args = (dst, src) if where is None else (dst, src, where)

    def run(d, s, w=True):
        np.copyto(d, s, casting="unsafe", where=w)
    _device_op.apply(run, args, avals=[])


def get_current_stream():
    return stream_mod.get_current_stream()
