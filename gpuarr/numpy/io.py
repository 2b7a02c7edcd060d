"""Printing and files: print options, array_repr/array_str, save/savez (fromfile is refused,
as in JAX)."""
from __future__ import annotations

import numpy as np

from gpuarr.numpy.arguments import ensure_array

printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """repr of an Array."""
    return repr(ensure_array(arr))


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """str of an Array."""
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def save(file, arr, allow_pickle=True):
    """numpy.save of the array's values."""
    np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file, *args, allow_pickle=True, **kwds):
    """numpy.savez of the arrays' values."""
    np.savez(file, *[np.asarray(a) for a in args], allow_pickle=allow_pickle,
             **{k: np.asarray(v) for k, v in kwds.items()})


def fromfile(*args, **kwargs):
    """Not supported, as in JAX: read with numpy.fromfile and convert with jnp.asarray."""
    raise NotImplementedError("jnp.fromfile() is not implemented because it may be non-pure and "
                              "thus unsafe for use with JIT and other JAX transformations. "
                              "Consider using jnp.asarray(np.fromfile(...)) instead.")
