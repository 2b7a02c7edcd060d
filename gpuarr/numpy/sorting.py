"""Sorting and searching: sort, argsort, lexsort, partition, argpartition, unique, searchsorted,
digitize, bincount. NaNs sort last; sorts are stable, as in JAX."""
from __future__ import annotations

import math
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import arguments as lax_arguments
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import cumulative, lax, slicing, sorting
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy.arguments import (
    canonicalize_axis,
    check_arraylike,
    concrete_value,
    ensure_array,
    promote_dtypes,
)


def _named_jit(name, **options):
    """A jit decorator whose program is named `name` (a public function's, as JAX names it)."""
    def wrap(fun):
        fun.__name__ = fun.__qualname__ = name
        return _jit(fun, **options)
    return wrap


def _int_dtype():
    return dtypes.default_int_dtype()


def _ravel(a):
    return lax_shape_ops.reshape(a, (get_aval(a).size,))


def _prepare(name, a, axis):
    check_arraylike(name, a)
    (a,) = promote_dtypes(ensure_array(a))
    if axis is None:
        return _ravel(a), 0
    nd = get_aval(a).ndim
    if nd == 0:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    return a, canonicalize_axis(axis, nd)


@_jit(static_argnames=("axis", "kind", "order", "stable", "descending"))  # as JAX's
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """A sorted copy of `a` along `axis` (flattened when None); NaNs go last."""
    if kind is not None:
        raise TypeError("'kind' argument to sort is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError("'order' argument to sort is not supported.")
    a, axis = _prepare("sort", a, axis)
    if descending:  # equal values are alike, so reversing the ascending sort is enough
        return lax_shape_ops.rev(sorting.sort(a, axis, is_stable=stable), (axis,))
    return sorting.sort(a, axis, is_stable=stable)


@_jit(static_argnames=("axis", "kind", "order", "stable", "descending", "dtype"))
def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """The (stable) permutation that sorts `a` along `axis`, as indices of integer `dtype`
    (default: the default integer type)."""
    if order is not None:
        raise ValueError("The 'order' argument to argsort is not supported.")
    index_dtype = _int_dtype() if dtype is None else dtypes.check_user_dtype(dtype, "argsort")
    a, axis = _prepare("argsort", a, axis)
    shape = get_aval(a).shape
    iota = lax_shape_ops.broadcasted_iota(index_dtype, shape, axis)
    if descending:
        _, perm = sorting.sort([lax_shape_ops.rev(a, (axis,)), iota], axis, is_stable=stable, num_keys=1)
        last = lax_shape_ops.full(shape, shape[axis] - 1, index_dtype)
        return lax_shape_ops.rev(lax.sub(last, perm), (axis,))
    _, perm = sorting.sort([a, iota], axis, is_stable=stable, num_keys=1)
    return perm


def lexsort(keys, axis=-1):
    """The stable permutation sorting by several keys along `axis`; the last key is primary."""
    # An array of keys goes into the jit whole (its rows are taken inside), as in JAX.
    if not hasattr(keys, "shape"):
        keys = tuple(keys)
        check_arraylike("lexsort", *keys)
    elif not np.ndim(keys):
        raise TypeError("iteration over a 0-d array")
    if not len(keys):
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    return _lexsort(keys, axis=axis)


@_named_jit("lexsort", static_argnames=("axis",))
def _lexsort(keys, axis):
    """lexsort's body, a jit named as the function (with a static axis), as JAX's."""
    keys = [ensure_array(k) for k in keys]  # an array's iteration gives its rows
    shapes = {get_aval(k).shape for k in keys}
    if len(shapes) > 1:
        raise ValueError("all keys need to be the same shape")
    shape = shapes.pop()
    if not shape:
        return lax_shape_ops.full((), 0, _int_dtype())
    axis = canonicalize_axis(axis, len(shape))
    iota = lax_shape_ops.broadcasted_iota(_int_dtype(), shape, axis)
    outs = sorting.sort(keys[::-1] + [iota], axis, num_keys=len(keys))
    return outs[-1]


def _prepare_partition(name, a, axis):
    """`_prepare` for partition and argpartition, with JAX's refusals: an integer axis (not
    None), no complex values, and no booleans (JAX negates the values to find the top k)."""
    a, axis = _prepare(name, a, operator.index(axis))
    dt = get_aval(a).dtype
    if dtypes.is_complex(dt):
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    if dt == np.bool_:
        raise TypeError("neg does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")
    return a, axis


def partition(a, kth, axis=-1):
    """`a` along `axis` with its kth smallest entry at position kth, the smaller ones (ascending)
    before it and the larger ones (descending) after it, as JAX returns them."""
    a, axis = _prepare_partition("partition", a, axis)
    n = get_aval(a).shape[axis]
    kth = _check_kth(kth, n)
    s = sorting.sort(a, axis)
    lo = lax.slice_in_dim(s, 0, kth + 1, axis=axis)
    hi = lax_shape_ops.rev(lax.slice_in_dim(s, kth + 1, n, axis=axis), (axis,))
    return lax.concatenate([lo, hi], axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition `a` along `axis` at `kth` (see `partition`); the indices after kth
    are in increasing order, as JAX returns them."""
    a, axis = _prepare_partition("argpartition", a, axis)
    n = get_aval(a).shape[axis]
    kth = _check_kth(kth, n)
    perm = argsort(a, axis)
    lo = lax.slice_in_dim(perm, 0, kth + 1, axis=axis)
    hi = sorting.sort(lax.slice_in_dim(perm, kth + 1, n, axis=axis), axis)
    return lax.concatenate([lo, hi], axis)


def _check_kth(kth, n):
    kth = operator.index(kth)
    if not -n <= kth < n:
        raise ValueError(f"kth(={kth}) out of bounds {n}")
    return kth % n


# ---------------------------------------------------------------- unique


def _concrete(x, what):
    return np.asarray(concrete_value(
        x, f"\n{what} depends on the values of its input; pass a static size= to use it under jit."))


_UNIQUE_SIZE_HINT = ("To make jnp.unique() compatible with JIT and other transforms, you can "
                     "specify a concrete value for the size argument, which will determine the "
                     "output size.")


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """The sorted unique elements of `ar`, or its unique slices along `axis` (optionally the
    first indices, inverse and counts).

    Under jit pass a static `size`: the result is cut or padded to it with `fill_value`, by
    default the smallest element (which is then repeated), as in JAX.
    """
    del sorted  # the result is always sorted
    check_arraylike("unique", ar, converts=True)
    arr = ensure_array(ar)
    if size is None:
        arr = ensure_array(concrete_value(
            arr, "The error arose for the first argument of jnp.unique(). " + _UNIQUE_SIZE_HINT))
    else:
        size = operator.index(concrete_value(
            size, "The error arose for the size argument of jnp.unique(). " + _UNIQUE_SIZE_HINT))
    shape = get_aval(arr).shape
    flatten = axis is None
    if flatten:
        arr, axis = _ravel(arr), 0
    else:  # JAX's ValueError, not NumPy's AxisError; 0-d has no axis 0
        if not shape:
            raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
        axis = canonicalize_axis(axis, len(shape))
    result = _unique(arr, axis, return_index, return_inverse, return_counts, equal_nan, size,
                     fill_value)
    if return_inverse and flatten:
        k = 2 if return_index else 1  # a flattened input's inverse has the input's shape
        result = (*result[:k], lax_shape_ops.reshape(result[k], shape), *result[k + 1:])
    return result[0] if len(result) == 1 else result


def _unique_sorted_mask(arr, axis, equal_nan):
    """The slices of `arr` along `axis` moved first and sorted (lexicographically), a mask of
    the first of each run of equal slices, and the sorting permutation, as JAX computes them."""
    from gpuarr.numpy import manipulation, ufuncs
    aux = manipulation.moveaxis(arr, axis, 0)
    dt = get_aval(aux).dtype
    if dtypes.is_complex(dt):  # every complex NaN is the same NaN
        aux = ufuncs.where(ufuncs.isnan(aux), np.array(np.nan, dt), aux)
    n, *rest = get_aval(aux).shape
    cols = math.prod(rest)
    if cols == 0:
        n, perm = 1, lax_shape_ops.full((1,), 0, _int_dtype())
    else:
        keys = lax_shape_ops.reshape(aux, (n, cols))
        perm = lexsort([keys[:, j] for j in range(cols - 1, -1, -1)])
    aux = aux[perm]
    if not get_aval(aux).size:
        return aux, lax_shape_ops.full((n,), False, np.bool_), perm
    nxt, prev = aux[1:], aux[:-1]
    differs = lax.ne(nxt, prev)
    if equal_nan and dtypes.is_inexact(dt):
        differs = lax.bitwise_and(differs, lax.bitwise_not(
            lax.bitwise_and(ufuncs.isnan(nxt), ufuncs.isnan(prev))))
    if get_aval(differs).ndim > 1:
        differs = lax.reduce_or(differs, tuple(range(1, get_aval(differs).ndim)))
    mask = lax.concatenate([lax_shape_ops.full((1,), True, np.bool_), differs], 0)
    return aux, mask, perm


def _unique(arr, axis, return_index, return_inverse, return_counts, equal_nan, size, fill_value):
    """jnp.unique's results along the canonical `axis`, in a tuple (JAX's algorithm: sort, mark
    the first of each run, gather)."""
    from gpuarr.numpy import creation, manipulation, ufuncs
    from gpuarr.numpy.selection import nonzero
    n_axis = get_aval(arr).shape[axis]
    if n_axis == 0 and size and fill_value is None:
        raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    aux, mask, perm = _unique_sorted_mask(arr, axis, equal_nan)
    has_data = get_aval(aux).size > 0
    ind = nonzero(mask, size=size)[0]
    result = aux[ind] if has_data else aux
    if size is not None and fill_value is not None:
        fill = lax_conversions.convert_element_type(ensure_array(fill_value), get_aval(result).dtype)
        if get_aval(result).shape[0]:
            count = lax_shape_ops.reduce_sum(lax_conversions.convert_element_type(mask, _int_dtype()), (0,))
            valid = lax.lt(lax_shape_ops.iota(_int_dtype(), size),
                           lax_shape_ops.broadcast_in_dim(count, (size,), ()))
            valid = lax_shape_ops.broadcast_in_dim(valid, get_aval(result).shape, (0,))
            result = ufuncs.where(valid, result, fill)
        else:
            target = (size, *get_aval(result).shape[1:])
            try:
                np.broadcast_shapes(get_aval(fill).shape, target)
            except ValueError:  # JAX: "Incompatible types for broadcasting: ..."
                raise ValueError(f"jnp.unique: fill_value must be a scalar, got shape "
                                 f"{get_aval(fill).shape}") from None
            result = creation.full_like(result, fill, shape=target)
    out = (manipulation.moveaxis(result, 0, axis),)
    if return_index:
        out += (perm[ind] if has_data else perm,)
    if return_inverse:
        if has_data:
            imask = lax.sub(cumulative.cumsum(lax_conversions.convert_element_type(mask, _int_dtype()), 0),
                            lax_shape_ops.full(get_aval(mask).shape, 1, _int_dtype()))
            inv = lax_shape_ops.full(get_aval(mask).shape, 0, _int_dtype()).at[perm].set(imask)
        else:
            inv = lax_shape_ops.full((n_axis,), 0, _int_dtype())
        out += (inv,)
    if return_counts:
        m = get_aval(mask).shape[0]
        if has_data:
            if size is None:
                idx = lax.concatenate([ind, lax_shape_ops.full((1,), m, get_aval(ind).dtype)], 0)
            else:
                idx = nonzero(mask, size=size + 1)[0]
                idx = idx.at[1:].set(ufuncs.where(idx[1:], idx[1:], m))
            out += (lax.sub(idx[1:], idx[:-1]),)
        elif n_axis:
            out += (lax_shape_ops.full((1,), n_axis, _int_dtype()),)
        else:
            out += (lax_shape_ops.full((0,), 0, _int_dtype()),)
    return out


# ---------------------------------------------------------------- searching


def _eq_total(x, y):
    """x == y in the sort order (all NaNs equal)."""
    from gpuarr.numpy.ufuncs import isnan
    eq = lax.eq(x, y)
    if dtypes.is_inexact(get_aval(x).dtype):
        eq = lax.bitwise_or(eq, lax.bitwise_and(isnan(x), isnan(y)))
    return eq


def _lt_total(x, y):
    """x < y in the sort order: NaN after everything, complex numbers by real part, then
    imaginary part, as JAX's sort comparator orders them."""
    from gpuarr.numpy.ufuncs import isnan
    if dtypes.is_complex(get_aval(x).dtype):
        xr, yr = lax_extras.real(x), lax_extras.real(y)
        return lax.bitwise_or(_lt_total(xr, yr), lax.bitwise_and(
            _eq_total(xr, yr), _lt_total(lax_extras.imag(x), lax_extras.imag(y))))
    lt = lax.lt(x, y)
    if dtypes.is_inexact(get_aval(x).dtype):
        lt = lax.bitwise_or(lt, lax.bitwise_and(isnan(y), lax.bitwise_not(isnan(x))))
    return lt


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Where to insert `v` into the sorted 1-D `a` to keep it sorted (int32 indices, as JAX
    returns them whatever the default integer type)."""
    if sorter is None:
        check_arraylike("searchsorted", a, v)
    else:
        check_arraylike("searchsorted", a, v, sorter)
    a, v = ensure_array(a), ensure_array(v)
    if get_aval(a).ndim != 1:
        raise ValueError("a should be 1-dimensional")
    a, v = promote_dtypes(a, v)
    if sorter is not None:
        a = a[ensure_array(sorter)]  # out-of-bound entries clamp, as JAX's indexing does
    # JAX checks the options after the operands.
    if side not in ("left", "right"):
        raise ValueError(f"invalid argument side={side!r}, expected 'left' or 'right'")
    methods = ["compare_all", "scan", "scan_unrolled", "sort"]
    if method not in methods:
        raise ValueError(f"invalid argument method={method!r}, expected one of {methods}")
    n = get_aval(a).shape[0]
    v_shape = get_aval(v).shape
    vv = lax_shape_ops.broadcast_in_dim(v, v_shape + (n,), tuple(range(len(v_shape))))
    aa = lax_shape_ops.broadcast_in_dim(a, v_shape + (n,), (len(v_shape),))
    hit = _lt_total(aa, vv) if side == "left" else lax.bitwise_not(_lt_total(vv, aa))
    return lax_shape_ops.reduce_sum(lax_conversions.convert_element_type(hit, np.int32), (len(v_shape),))


def digitize(x, bins, right=False, *, method=None):
    """The index of the bin each `x` falls in (bins increasing or decreasing), as numpy.digitize."""
    from gpuarr.numpy.ufuncs import where
    check_arraylike("digitize", x, bins)
    bins = ensure_array(bins)
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    n = get_aval(bins).shape[0]
    if n == 0:
        return lax_shape_ops.full(get_aval(ensure_array(x)).shape, 0, np.int32)
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    up = searchsorted(bins, x, side=side, **kw)
    down = lax.sub(lax_shape_ops.full(get_aval(up).shape, n, np.int32),
                   searchsorted(lax_shape_ops.rev(bins, (0,)), x, side=side, **kw))
    increasing = lax.ge(lax_shape_ops.reshape(lax.slice_in_dim(bins, n - 1, n), ()),
                        lax_shape_ops.reshape(lax.slice_in_dim(bins, 0, 1), ()))
    return where(increasing, up, down)


def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
    """Counts (or summed `weights`) of each non-negative integer in `x`; negative values count
    as 0 and values >= `length` are dropped, as in JAX. Under jit pass a static `length`."""
    check_arraylike("bincount", x)
    lax_arguments.check_no_sharding("numpy.bincount", out_sharding)
    x = ensure_array(x)
    aval = get_aval(x)
    if not dtypes.is_int(aval.dtype) and aval.dtype != np.bool_:
        raise TypeError(f"x argument to bincount must have an integer type; got {aval.dtype}")
    if aval.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = int(minlength)
    if minlength < 0:
        raise ValueError("minlength must not be negative")
    if length is None:
        host = _concrete(x, "The length of bincount's result")
        length = max(minlength, int(host.max()) + 1 if host.size else 0)
    length = max(int(length), minlength)
    if weights is None:
        w = lax_shape_ops.full(aval.shape, 1, _int_dtype())
    else:
        check_arraylike("bincount", weights)
        (w,) = promote_dtypes(ensure_array(weights))
        if get_aval(w).shape != aval.shape:
            raise ValueError(f"bincount: weights shape {get_aval(w).shape} must match x shape "
                             f"{aval.shape}.")
    xi = lax_conversions.convert_element_type(x, np.int32)
    xi = lax.max(xi, lax_shape_ops.full(aval.shape, 0, np.int32))
    dn = slicing.ScatterDimensionNumbers((), (0,), (0,))
    zeros = lax_shape_ops.full((length,), 0, get_aval(w).dtype)
    return slicing.scatter_add(zeros, lax_shape_ops.reshape(xi, aval.shape + (1,)), w, dn, mode="drop")
