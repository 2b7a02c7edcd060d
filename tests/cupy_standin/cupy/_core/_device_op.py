"""The one mechanism behind every non-kernel device computation of the stand-in.

`apply(fn, args)` queues `fn` (a NumPy function) on the current stream. Its output shapes and
dtypes are found now by calling `fn` on stand-in operands of the same shapes and dtypes
(identity matrices, ones); fresh device outputs are allocated now; at execution time `fn` runs
on NumPy views of the operands' device memory (found by pointer, so a stale or reused buffer
reads what the GPU would read) and its results are copied into the outputs. Elementwise
operators, reductions, copies and the CuPy library functions (matmul, sort, fft, linalg, ...)
all go through here, so they are queued and ordered like kernels.
"""
from __future__ import annotations

import ctypes

import numpy as np

from cupy import _standin
from cupy.cuda import _queue


class Geometry:
    """Where an array's elements are: (pointer, shape, byte strides, dtype)."""

    __slots__ = ("ptr", "shape", "strides", "dtype")

    def __init__(self, ptr, shape, strides, dtype):
        self.ptr, self.shape, self.strides, self.dtype = ptr, tuple(shape), tuple(strides), dtype

    def view(self) -> np.ndarray:
        return host_view(self.ptr, self.shape, self.strides, self.dtype)


def host_view(ptr: int, shape, strides, dtype) -> np.ndarray:
    """A NumPy array over the (host-backed) device memory at `ptr`."""
    dtype = np.dtype(dtype)
    if 0 in shape:
        return np.empty(shape, dtype)
    lo = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0)
    hi = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0) + dtype.itemsize
    buf = (ctypes.c_char * (hi - lo)).from_address(ptr + lo)
    return np.ndarray(shape, dtype, buffer=buf, offset=-lo, strides=strides)


def tree_map(f, x):
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(tree_map(f, i) for i in x)
    if isinstance(x, dict):
        return {k: tree_map(f, v) for k, v in x.items()}
    return f(x)


def leaves(x) -> list:
    out: list = []
    tree_map(out.append, x)
    return out


def check_operand(x):
    """Host NumPy arrays may not mix into device operations (_scalar.pyx: CScalar raises
    `Unsupported type <class 'numpy.ndarray'>`); Python and NumPy scalars may."""
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)}")
    return x


def _is_array(x) -> bool:
    from cupy._core.core import ndarray
    return isinstance(x, ndarray)


def dummy(x):
    """A stand-in operand for finding output shapes: identity matrices in the last two axes
    of square floating arrays (so factorisations succeed), else ones; integers and bools are
    zeros, square or not, so they are valid indices (an identity's 1 is out of bounds along an
    axis of length 1); it allocates nothing big."""
    if not _is_array(x):
        return x
    if x.dtype.kind in "biu":
        return np.broadcast_to(np.zeros((), x.dtype), x.shape)
    base = np.ones((), x.dtype)
    if x.ndim >= 2 and x.shape[-1] == x.shape[-2] and x.size:
        base = np.eye(x.shape[-1], dtype=x.dtype)
    return np.broadcast_to(base, x.shape)


def _flatten_result(res) -> tuple:
    if isinstance(res, (tuple, list)):
        return [np.asarray(r) for r in res], False
    return [np.asarray(res)], True


def apply(fn, args=(), kwargs=None, *, name=None, library=False, out=None, avals=None):
    """Queue `fn(*args, **kwargs)` on the current stream; returns the device outputs (one
    array, or a tuple when `fn` returns several). `out` gives existing outputs to write."""
    from cupy._core.core import ndarray
    kwargs = kwargs or {}
    tree_map(check_operand, (args, kwargs))
    single = True
    if avals is None:
        with np.errstate(all="ignore"):
            flat, single = _flatten_result(fn(*tree_map(dummy, args), **tree_map(dummy, kwargs)))
        avals = [(r.shape, r.dtype) for r in flat]
    if out is None:
        outs = [ndarray(shape, dtype) for shape, dtype in avals]
    else:
        outs, single = (list(out), False) if isinstance(out, (list, tuple)) else ([out], True)
    geoms = tree_map(lambda x: x._geometry() if isinstance(x, ndarray) else x, (args, kwargs))
    out_geoms = [o._geometry() for o in outs]

    def run():
        a, k = tree_map(lambda g: g.view() if isinstance(g, Geometry) else g, geoms)
        with np.errstate(all="ignore"):
            results, _ = _flatten_result(fn(*a, **k))
        for g, r in zip(out_geoms, results):
            np.copyto(g.view(), r, casting="unsafe")

    _queue.submit(run)
    if library:
        _standin.counters.library_call(name or getattr(fn, "__name__", "?"))
    if not outs:
        return None
    return outs[0] if single else tuple(outs)
