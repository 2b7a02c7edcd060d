"""NumPy protocol hooks of `ndarray`: ufuncs run as queued device operations, and NumPy
functions dispatch (`__array_function__`) only to what the stand-in implements, as CuPy's do;
anything else returns NotImplemented so NumPy raises TypeError."""
from __future__ import annotations

import numpy as np

from cupy._core import _device_op


def array_ufunc(ufunc, method, inputs, kwargs):
    from cupy._core.core import ndarray
    if method not in ("__call__", "reduce", "accumulate"):
        return NotImplemented
    out = kwargs.pop("out", None)
    if out is not None:
        if not all(isinstance(o, ndarray) for o in out):
            raise TypeError("Unsupported type " + str(type(next(o for o in out
                                                               if not isinstance(o, ndarray)))))
        out = out[0] if len(out) == 1 else tuple(out)
    fn = ufunc if method == "__call__" else getattr(ufunc, method)
    library = ufunc is np.matmul  # cuBLAS on a GPU
    return _device_op.apply(fn, inputs, kwargs, out=out, name=ufunc.__name__, library=library)


_table: dict = {}


def _implemented() -> dict:
    """{NumPy function: stand-in function} for every NumPy function the stand-in has."""
    if not _table:
        import cupy
        from cupy import fft, linalg
        for mod, np_mod in ((cupy, np), (fft, np.fft), (linalg, np.linalg)):
            for name in getattr(mod, "_dispatched", ()):
                _table[getattr(np_mod, name)] = getattr(mod, name)
    return _table


def array_function(func, types, args, kwargs):
    impl = _implemented().get(func)
    if impl is None:
        return NotImplemented
    return impl(*args, **kwargs)
