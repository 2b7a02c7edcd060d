"""Array routines and library calls, each a NumPy function queued through
`_device_op.apply` (cupy/_manipulation, cupy/_sorting, cupy/_core/_routines_linalg.pyx, ...).
Library calls (cuBLAS, CUB sorts, cuFFT, cuSOLVER on a GPU) are counted by name."""
from __future__ import annotations

import numpy as np

from cupy._core import _device_op


def _library(name, fn):
    def call(*args, **kwargs):
        return _device_op.apply(fn, args, kwargs, name=name, library=True)
    call.__name__ = name
    call.__doc__ = f"{name} on the device (NumPy's numpy.{name} at execution time)."
    return call


def _op(fn):
    def call(*args, **kwargs):
        return _device_op.apply(fn, args, kwargs)
    call.__name__ = fn.__name__
    return call


matmul = _library("matmul", np.matmul)
dot = _library("dot", np.dot)
einsum = _library("einsum", np.einsum)
sort = _library("sort", np.sort)
argsort = _library("argsort", np.argsort)


def lexsort(keys):
    # cupy/_sorting/sort.py: lexsort takes a 2-D array of keys (the last key sorts first)
    if isinstance(keys, (tuple, list)):
        keys = stack(keys)
    return _device_op.apply(np.lexsort, (keys,), name="lexsort", library=True)


where = _op(np.where)
concatenate = _op(np.concatenate)
stack = _op(np.stack)
take_along_axis = _op(np.take_along_axis)
take = _op(np.take)
sum = _op(np.sum)  # noqa: A001 - CuPy's name
prod = _op(np.prod)
any = _op(np.any)  # noqa: A001
all = _op(np.all)  # noqa: A001
max = _op(np.max)  # noqa: A001
min = _op(np.min)  # noqa: A001
amax, amin = max, min
mean = _op(np.mean)
cumsum = _op(np.cumsum)
argmax = _op(np.argmax)
argmin = _op(np.argmin)
clip = _op(np.clip)


def moveaxis(a, source, destination):
    return a._derive(lambda h: np.moveaxis(h, source, destination))


def diagonal(a, offset=0, axis1=0, axis2=1):
    # cupy/_core/_routines_indexing.pyx: a view, as NumPy's
    return a._derive(lambda h: np.diagonal(h, offset, axis1, axis2))


def transpose(a, axes=None):
    return a.transpose(axes) if axes is not None else a.transpose()


def flip(a, axis=None):
    return a._derive(lambda h: np.flip(h, axis))


def reshape(a, newshape, order="C"):
    return a.reshape(newshape, order=order)


def ravel(a, order="C"):
    return a.ravel(order)


def squeeze(a, axis=None):
    return a.squeeze(axis)


def expand_dims(a, axis):
    return a._derive(lambda h: np.expand_dims(h, axis))


def broadcast_to(a, shape):
    return a._derive(lambda h: np.broadcast_to(h, shape))


def swapaxes(a, axis1, axis2):
    return a.swapaxes(axis1, axis2)


def shape(a):
    return a.shape


def ndim(a):
    return a.ndim


def size(a):
    return a.size


def real(val):
    """cupy/_math/arithmetic.py: `val.real`, a host value made a device array first."""
    from cupy._core.core import ndarray
    from cupy._creation import array
    return (val if isinstance(val, ndarray) else array(val)).real


def imag(val):
    """cupy/_math/arithmetic.py: `val.imag`, a host value made a device array first."""
    from cupy._core.core import ndarray
    from cupy._creation import array
    return (val if isinstance(val, ndarray) else array(val)).imag
