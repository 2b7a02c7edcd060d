"""Index helpers, as in jax.numpy (NumPy's index_tricks): ravel_multi_index, unravel_index,
place, put and sort_complex; the index expressions s_, index_exp, mgrid, ogrid, r_, c_; and the
index arrays diag_indices, tril_indices, triu_indices (and their _from forms), mask_indices,
ix_ and fill_diagonal.

place and put exist for NumPy compatibility: NumPy's versions modify their argument, which an
immutable array cannot do, so (as in JAX) they insist on `inplace=False` and return the updated
copy, built on `x.at[...].set`. Gradients flow to the placed values through that scatter.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import sorting as lax_sorting
from gpuarr.numpy import creation, manipulation, reductions, selection, ufuncs
from gpuarr.numpy.arguments import check_arraylike, concrete_value, ensure_array, promote_dtypes
from gpuarr.numpy.dtype_functions import shape

__all__ = [
    "c_", "diag_indices", "diag_indices_from", "fill_diagonal", "index_exp", "ix_", "mask_indices",
    "mgrid", "ogrid", "place", "put", "r_", "ravel_multi_index", "s_", "sort_complex",
    "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from", "unravel_index",
]

_MODES = "Expected 'raise', 'wrap', 'clip', or 'ignore'."


# ---------------------------------------------------------------- flat <-> multi-dimensional


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """Flat indices into an array of shape `dims` from one integer index array per dimension
    (C or Fortran `order`). `mode='raise'` checks bounds and so needs concrete indices (not
    under jit); 'clip' and 'wrap' bring out-of-bound indices into range and work under jit;
    'ignore' trusts them. The result dtype promotes the indices with Python int, as in JAX."""
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: len(multi_index)={len(multi_index)} must equal "
                         f"len(dims)={len(dims)}.")
    dims = tuple(operator.index(d) for d in dims)
    check_arraylike("ravel_multi_index", *multi_index, converts=True)
    indices = [ensure_array(i) for i in multi_index]
    dt = dtypes.result_type(int, *indices) if dtype is None else \
        dtypes.check_user_dtype(dtype, "ravel_multi_index")
    if not dtypes.is_int(dt):
        raise ValueError(f"dtype={dt!r} is not an integer type.")
    if math.prod(dims) - 1 > np.iinfo(dt).max:
        raise ValueError(f"jnp.ravel_multi_index: dtype={dt!r} not large enough to hold flattened "
                         f"index for dims={dims}. Use the dtype argument to pass a suitable dtype "
                         "(e.g. dtype=np.min_scalar_type(prod(dims))).")
    for i in indices:
        if mode == "raise":
            concrete_value(i, "\nThe error occurred because ravel_multi_index was jit-compiled "
                              "with mode='raise'. Use mode='wrap' or mode='clip' instead.")
        if not dtypes.is_int(get_aval(i).dtype):
            raise TypeError("only int indices permitted")
    indices = _bring_in_bounds(indices, dims, mode)
    strides = _strides(dims, order)
    result = creation.zeros((), dt)
    for i, s in zip(indices, strides):
        result = result + i.astype(dt) * int(s)
    return result


def _bring_in_bounds(indices, dims, mode):
    if mode == "raise":
        if any(bool(reductions.any((i < 0) | (i >= d))) for i, d in zip(indices, dims)):
            raise ValueError("invalid entry in coordinates array")
        return indices
    if mode == "clip":
        return [ufuncs.clip(i, 0, d - 1) for i, d in zip(indices, dims)]
    if mode == "wrap":
        return [i % d for i, d in zip(indices, dims)]
    if mode == "ignore":
        return indices
    raise ValueError(f"invalid mode={mode!r}. {_MODES}")


def _strides(dims, order):
    if order == "C":
        return np.cumprod((1,) + dims[1:][::-1])[::-1]
    if order == "F":
        return np.cumprod((1,) + dims[:-1])
    raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")


def unravel_index(indices, shape):
    """The multi-dimensional indices, one array per dimension of `shape`, of the flat `indices`.
    Unlike NumPy (and as in JAX) nothing raises: an index of -1 means the last element and other
    out-of-bound indices are clipped to the nearest valid position."""
    check_arraylike("unravel_index", indices, converts=True)
    (rest,) = promote_dtypes(ensure_array(indices) if not isinstance(indices, int) else indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    out = [0] * len(shape)
    for k in range(len(shape) - 1, -1, -1):
        rest, out[k] = ufuncs.divmod(rest, shape[k])
    above = rest > 0
    below = (creation.asarray(False) if dtypes.is_unsigned_int(get_aval(rest).dtype)
             else rest < -1)  # -1 survives the divisions as "from the end"
    return tuple(ufuncs.where(above, s - 1, ufuncs.where(below, 0, i))
                 for s, i in zip(shape, out))


# ---------------------------------------------------------------- place, put


def _inplace_error(fun_name):
    return ValueError(f"jax.numpy.{fun_name} cannot modify arrays in-place, because JAX arrays "
                      "are immutable. Pass inplace=False to instead return an updated array.")


def place(arr, mask, vals, *, inplace=True):
    """A copy of `arr` whose entries where `mask` (same size as `arr`) is true are taken, in
    order, from the flattened `vals`, repeated as needed. NumPy changes `arr` in place; arrays
    here are immutable, so pass `inplace=False` (as in JAX; the default raises ValueError)."""
    check_arraylike("place", arr, mask, vals)
    data, mask = ensure_array(arr), ensure_array(mask)
    vals = manipulation.ravel(ensure_array(vals))
    if inplace:
        raise _inplace_error("place")
    n = get_aval(data).size
    if n != get_aval(mask).size:
        raise ValueError("place: arr and mask must be the same size")
    if not get_aval(vals).size:
        raise ValueError("Cannot place values from an empty array")
    if not n:
        return data
    # Positions of the true entries, padded with an out-of-bounds index whose update is dropped.
    where = selection.nonzero(manipulation.ravel(mask), size=n, fill_value=n)[0]
    vals = manipulation.resize(vals, (n,))
    flat = manipulation.ravel(data).at[where].set(vals, mode="drop")
    return manipulation.reshape(flat, get_aval(data).shape)


def put(a, ind, v, mode=None, *, inplace=True):
    """A copy of `a` with its flattened entries at `ind` set to the flattened `v` (repeated as
    needed). Out-of-bound indices are clipped (`mode=None` or 'clip') or wrapped ('wrap'). NumPy
    changes `a` in place; pass `inplace=False` (as in JAX; the default raises ValueError)."""
    if inplace:
        raise _inplace_error("put")
    check_arraylike("put", a, ind, v)
    arr = ensure_array(a)
    ind = manipulation.ravel(ensure_array(ind))
    v = manipulation.ravel(ensure_array(v))
    n = get_aval(arr).size
    if not n or not get_aval(ind).size or not get_aval(v).size:
        return arr
    v = manipulation.resize(v, (get_aval(ind).size,))
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind, scatter_mode = ufuncs.clip(ind, 0, n - 1), "promise_in_bounds"
    elif mode == "wrap":
        ind, scatter_mode = ind % n, "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return arr.at[unravel_index(ind, get_aval(arr).shape)].set(v, mode=scatter_mode)


# ---------------------------------------------------------------- sort_complex


def sort_complex(a):
    """A copy of `a` sorted along its last axis by real part, then imaginary part, in the
    complex dtype for `a` (complex64, or complex128 for 64-bit floats)."""
    check_arraylike("sort_complex", a)
    return _sort_complex(a)


def _sort_complex(a):
    """sort_complex's body: a jit named as the function, as JAX's."""
    a = ensure_array(a)
    if get_aval(a).ndim == 0:  # JAX's error for the last axis of a 0-d array
        raise ValueError("axis -1 is out of bounds for array of dimension 0")
    a = lax_sorting.sort(a)
    return lax_conversions.convert_element_type(a, dtypes.to_complex_dtype(get_aval(a).dtype))


_sort_complex.__name__ = "sort_complex"  # the jit's name, as JAX's
_sort_complex = _jit(_sort_complex)


# ---------------------------------------------------------------- index helpers

index_exp = np.index_exp
s_ = np.s_


class _Grid:
    """mgrid/ogrid: `mgrid[0:2, 0:3]` evaluates NumPy's grid and returns Arrays."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        grid = (np.ogrid if self.sparse else np.mgrid)[key]
        if isinstance(grid, (list, tuple)):
            return [creation.asarray(g) for g in grid]
        return creation.asarray(grid)


class _Concat:
    """r_/c_: NumPy's concatenation helpers over Arrays."""

    def __init__(self, helper):
        self.helper = helper

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        host = tuple(np.asarray(k) if type(k) is Array else k for k in key)
        return creation.asarray(self.helper[host])


mgrid, ogrid = _Grid(False), _Grid(True)
r_, c_ = _Concat(np.r_), _Concat(np.c_)


# ---------------------------------------------------------------- index arrays


def _index_arrays(host_arrays):
    return tuple(creation.asarray(h.astype(dtypes.default_int_dtype())) for h in host_arrays)


def diag_indices(n, ndim=2):
    """The indices of the main diagonal of an n x ... x n array."""
    if n < 0 or ndim < 0:
        raise ValueError(f"n and ndim must be non-negative, got n={n}, ndim={ndim}")
    return _index_arrays(np.diag_indices(n, ndim))


def diag_indices_from(arr):
    """diag_indices for a square array `arr`."""
    check_arraylike("diag_indices_from", arr)
    s = shape(arr)
    if len(s) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(s)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(s[0], len(s))


def _tri_indices_dims(n, k, m):
    """n, k and m as ints, known statically (JAX's errors); n x m must be a valid shape."""
    n, k = (operator.index(concrete_value(v, f"{name} argument of jnp.triu_indices"))
            for v, name in ((n, "n"), (k, "k")))
    m = n if m is None else operator.index(concrete_value(m, "m argument of jnp.triu_indices"))
    if n < 0 or m < 0:  # JAX builds ones((n, m))
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{(n, m)}.")
    return n, k, m


def _triu_size(n, m, k):
    """The number of entries of triu(ones((n, m)), k)."""
    if k < 0:
        return n * m - _triu_size(m, n, 1 - k)
    if k >= m:
        return 0
    mk = builtins.min(n, m - k)
    return mk * (mk + 1) // 2 + mk * (m - k - mk)


def tril_indices(n, k=0, m=None):
    """The row and column indices of the lower triangle of an n x m array (the nonzeros of
    tril(ones((n, m)), k), computed as JAX does)."""
    n, k, m = _tri_indices_dims(n, k, m)
    return selection.nonzero(creation.tril(creation.ones((n, m)), k=k), size=_triu_size(m, n, -k))


def triu_indices(n, k=0, m=None):
    """The row and column indices of the upper triangle of an n x m array."""
    n, k, m = _tri_indices_dims(n, k, m)
    return selection.nonzero(creation.triu(creation.ones((n, m)), k=k), size=_triu_size(n, m, k))


def _shape_2d(name, arr):
    if not hasattr(arr, "shape"):
        check_arraylike(name, arr)
    s = shape(arr)
    if len(s) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return s


def tril_indices_from(arr, k=0):
    """tril_indices for the shape of the 2-D array `arr`."""
    s = _shape_2d("tril_indices_from", arr)
    return tril_indices(s[0], k, s[1])


def triu_indices_from(arr, k=0):
    """triu_indices for the shape of the 2-D array `arr`."""
    s = _shape_2d("triu_indices_from", arr)
    return triu_indices(s[0], k, s[1])


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where mask_func(ones((n, n)), k) is nonzero."""
    # Unpacking into two fails for masks that are not 2-D (jnp.diag), as in JAX.
    i, j = selection.nonzero(mask_func(creation.ones((n, n)), k), size=size)
    return (i, j)


def ix_(*args):
    """Open-mesh index arrays: the i-th has shape 1 except along axis i."""
    out = []
    for i, a in enumerate(args):
        check_arraylike("ix", a)  # JAX's message names it "ix"
        a = ensure_array(a)
        if get_aval(a).dtype == np.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        if get_aval(a).ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{get_aval(a).shape}")
        s = [1] * len(args)
        s[i] = get_aval(a).shape[0]
        out.append(lax_shape_ops.reshape(a, tuple(s)))
    return tuple(out)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """`a` with its main diagonal set to `val` (needs inplace=False: arrays are immutable)."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    check_arraylike("fill_diagonal", a, val)
    a = ensure_array(a)
    s = get_aval(a).shape
    if len(s) < 2:
        raise ValueError("array must be at least 2-d")
    if len(s) > 2 and len(set(s)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    host_mask = np.zeros(s, bool)
    np.fill_diagonal(host_mask, True, wrap=wrap)
    count = int(host_mask.sum())
    vals = manipulation.ravel(lax_conversions.convert_element_type(ensure_array(val), get_aval(a).dtype))
    vals = manipulation.resize(vals, (count,)) if get_aval(vals).size else vals
    # Scatter the cycled values onto the diagonal positions by a static permutation.
    flat = manipulation.ravel(a)
    pos = np.flatnonzero(host_mask)
    src = np.arange(flat.size)
    src[pos] = flat.size + np.arange(count)
    joined = manipulation.concatenate([flat, vals])
    return lax_shape_ops.reshape(joined[src], s)
