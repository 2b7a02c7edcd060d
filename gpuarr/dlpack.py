"""DLPack and CUDA-array-interface interchange (JAX's `jax.dlpack`).

`from_dlpack` takes any object exporting `__dlpack__` (NumPy, CuPy, PyTorch, JAX, gpuarr) or
`__cuda_array_interface__` (CuPy, Numba, PyTorch) and wraps its memory without copying where
it can: GPU memory becomes an Array on the cuda platform (copied when it is strided, offset to
an address the kernels' vector loads cannot use, or when `copy=True`), host memory an Array on
the cpu platform.
gpuarr Arrays export both protocols themselves (`x.__dlpack__()`, `x.__cuda_array_interface__`).
"""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array

# DLPack device types (dlpack.h: DLDeviceType).
CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13

SUPPORTED_DTYPES = tuple(np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))


def device_type(x) -> tuple:
    """(DLPack device type, device id) of `x`; objects with only the CUDA array interface
    report (CUDA, 0)."""
    if hasattr(x, "__dlpack_device__"):
        kind, index = x.__dlpack_device__()
        return int(kind), int(index)
    if hasattr(x, "__cuda_array_interface__"):
        return CUDA, 0
    return CPU, 0


def is_gpu_array(x) -> bool:
    """True for foreign arrays living in CUDA memory (CuPy arrays, CUDA PyTorch tensors)."""
    if type(x) is Array or not (hasattr(x, "__dlpack_device__")
                                    or hasattr(x, "__cuda_array_interface__")):
        return False
    return device_type(x)[0] in (CUDA, CUDA_MANAGED)


def from_dlpack(external_array, device=None, copy=None) -> Array:
    """Wrap an array from another library as a gpuarr Array, sharing its memory when possible.

    GPU memory stays on its GPU (the cuda platform must be usable); host memory becomes an
    Array on the cpu platform. With x64 off, 64-bit values are converted (copied) to 32 bits,
    as every other way of making an Array does. `device` commits the result to that device."""
    if type(external_array) is Array:
        return external_array if device is None else _commit(external_array, device)
    kind, index = device_type(external_array)
    if kind in (CUDA, CUDA_MANAGED):
        out = _from_gpu(external_array, index, copy)
    else:
        host = np.from_dlpack(external_array) if hasattr(external_array, "__dlpack__") \
            else np.asarray(external_array)
        if copy:
            host = host.copy()
        out = _from_host(host)
    return out if device is None else _commit(out, device)


def _canonical(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in SUPPORTED_DTYPES and dt.name != "bfloat16":
        raise TypeError(f"from_dlpack: unsupported dtype {dt}")
    return np.dtype(dtypes.canonicalize_dtype(dt))


def _from_host(host: np.ndarray) -> Array:
    from gpuarr import platforms
    dt = _canonical(host.dtype)
    if dt != host.dtype:
        host = host.astype(dt)
    plat = platforms.default_platform()
    if plat.name == "cpu":
        return Array(host)
    return Array(plat.from_host(host, plat.local_devices()[0]), platform=plat)


def _from_gpu(x, index: int, copy=None) -> Array:
    """`x`'s GPU memory as an Array of the cuda platform: shared when kernels can read it as
    it is (dense, aligned) and no copy was asked for; copied otherwise, since kernels index
    every buffer as dense row-major memory."""
    from gpuarr import platforms
    plat = platforms.get_platform("cuda")
    ctx = plat.context(index)
    cp = ctx.cp
    with ctx.device:
        # DLPack orders the producer's work before the stream current here (the consumer
        # stream CuPy names in __dlpack__); gpuarr's own stream then waits for that stream.
        user_stream = cp.cuda.get_current_stream()
        source = cp.from_dlpack(x) if hasattr(x, "__dlpack__") else cp.asarray(x)
        ctx.stream.wait_event(user_stream.record())
    with ctx.scope():
        dt = _canonical(source.dtype)
        data = source.astype(dt) if dt != source.dtype else source.copy() if copy else source
    data = ctx.kernel_ready(data)
    done = ctx.record()
    if data is not source:  # a copy is a snapshot: the user's later work waits for it
        user_stream.wait_event(done)
    # Committed to its GPU, as device_put makes it: computations follow it there.
    return Array(ctx.buffer(data, done), device=plat.devices()[index], committed=True,
                 platform=plat)


def _commit(x: Array, device) -> Array:
    from gpuarr import placement
    return placement.put(x, device)
