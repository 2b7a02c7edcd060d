"""Sorting and searching: sort, argsort, lexsort, partition, argpartition, unique, searchsorted,
digitize, bincount. NaNs sort last; sorts are stable, as in JAX."""
from __future__ import annotations

import operator

import numpy as np

from gpuarr import dtypes, lax
from gpuarr.core import get_aval
from gpuarr.lax import cumulative, slicing, sorting
from gpuarr.numpy._util import (
    canonicalize_axis,
    check_arraylike,
    concrete_value,
    ensure_array,
    promote_dtypes,
)


def _int_dtype():
    return dtypes.default_int_dtype()


def _ravel(a):
    return lax.reshape(a, (get_aval(a).size,))


def _prepare(name, a, axis):
    check_arraylike(name, a)
    (a,) = promote_dtypes(ensure_array(a))
    if axis is None:
        return _ravel(a), 0
    nd = get_aval(a).ndim
    if nd == 0:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
    return a, canonicalize_axis(axis, nd)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """A sorted copy of `a` along `axis` (flattened when None); NaNs go last."""
    if kind is not None:
        raise TypeError("'kind' argument to sort is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError("'order' argument to sort is not supported.")
    a, axis = _prepare("sort", a, axis)
    if descending:
        return lax.rev(sorting.sort(lax.rev(a, (axis,)), axis, is_stable=stable), (axis,))
    return sorting.sort(a, axis, is_stable=stable)


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """The (stable) permutation that sorts `a` along `axis`, as indices of integer `dtype`
    (default: the default integer type)."""
    if order is not None:
        raise ValueError("The 'order' argument to argsort is not supported.")
    index_dtype = _int_dtype() if dtype is None else dtypes.check_user_dtype(dtype, "argsort")
    a, axis = _prepare("argsort", a, axis)
    shape = get_aval(a).shape
    iota = lax.broadcasted_iota(index_dtype, shape, axis)
    if descending:
        _, perm = sorting.sort([lax.rev(a, (axis,)), iota], axis, is_stable=stable, num_keys=1)
        last = lax.full(shape, shape[axis] - 1, index_dtype)
        return lax.rev(lax.sub(last, perm), (axis,))
    _, perm = sorting.sort([a, iota], axis, is_stable=stable, num_keys=1)
    return perm


def lexsort(keys, axis=-1):
    """The stable permutation sorting by several keys along `axis`; the last key is primary."""
    keys = list(keys)
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    check_arraylike("lexsort", *keys)
    keys = [ensure_array(k) for k in keys]
    shapes = {get_aval(k).shape for k in keys}
    if len(shapes) > 1:
        raise ValueError("all keys need to be the same shape")
    shape = shapes.pop()
    if not shape:
        return lax.full((), 0, _int_dtype())
    axis = canonicalize_axis(axis, len(shape))
    iota = lax.broadcasted_iota(_int_dtype(), shape, axis)
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
    hi = lax.rev(lax.slice_in_dim(s, kth + 1, n, axis=axis), (axis,))
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


def _keep_weak(out, a, dtype):
    from gpuarr.numpy.creation import _keep_weak as keep
    return keep(out, a, dtype)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    """The sorted unique elements of `ar` (optionally first indices, inverse and counts).

    Under jit pass a static `size` (flattened input only): the result is padded with
    `fill_value`, by default the smallest element.
    """
    check_arraylike("unique", ar)
    ar = ensure_array(ar)
    if axis is not None:  # JAX's ValueError, not NumPy's AxisError; 0-d has no axis 0
        nd = get_aval(ar).ndim
        if nd == 0:
            raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
        axis = canonicalize_axis(axis, nd)
    if size is None:
        host = _concrete(ar, "The number of unique elements")
        res = np.unique(host, return_index=True, return_inverse=True, return_counts=True,
                        axis=axis, equal_nan=equal_nan)
        vals, index, inverse, counts = res
        if axis is None:
            inverse = inverse.reshape(host.shape)
        outs = [_keep_weak(ensure_array(vals), ar, None)]  # a Python scalar's values stay weak
        outs += [ensure_array(index.astype(_int_dtype()))] if return_index else []
        outs += [ensure_array(inverse.astype(_int_dtype()))] if return_inverse else []
        outs += [ensure_array(counts.astype(_int_dtype()))] if return_counts else []
        return outs[0] if len(outs) == 1 else tuple(outs)
    if axis is not None:
        raise NotImplementedError("jnp.unique with both size= and axis= is not supported.")
    return _unique_sized(ar, int(size), fill_value, equal_nan, return_index, return_inverse,
                         return_counts)


def _unique_sized(ar, size, fill_value, equal_nan, return_index, return_inverse, return_counts):
    from gpuarr.numpy.ufuncs import isnan
    shape = get_aval(ar).shape
    flat = _ravel(ar)
    n = get_aval(flat).shape[0]
    dt = get_aval(flat).dtype
    if fill_value is not None:  # a value or a traced scalar, in the result's dtype
        fill = lax.convert_element_type(ensure_array(fill_value), dt)
        if get_aval(fill).shape:
            raise ValueError(f"jnp.unique: fill_value must be a scalar, got shape "
                             f"{get_aval(fill).shape}")
    if n == 0:  # JAX's answer: fill_value repeated (it must be given) and empty index arrays
        if size and fill_value is None:
            raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                             "fill_value must be specified")
        empty = lax.full((0,), 0, _int_dtype())
        outs = [lax.full((size,), 0, dt) if fill_value is None else
                lax.broadcast_in_dim(fill, (size,), ())]
        outs += [empty] if return_index else []
        outs += [lax.full(shape, 0, _int_dtype())] if return_inverse else []
        outs += [empty] if return_counts else []
        return outs[0] if len(outs) == 1 else tuple(outs)
    iota = lax.iota(_int_dtype(), n)
    vals, perm = sorting.sort([flat, iota], 0, num_keys=1)
    prev = lax.slice_in_dim(vals, 0, n - 1)
    nxt = lax.slice_in_dim(vals, 1, n)
    differs = lax.ne(nxt, prev)
    if equal_nan and dtypes.is_inexact(dt):
        differs = lax.bitwise_and(differs, lax.bitwise_not(lax.bitwise_and(isnan(nxt), isnan(prev))))
    first = lax.concatenate([lax.full((1,), True, np.bool_), differs], 0)
    slot = lax.sub(cumulative.cumsum(lax.convert_element_type(first, _int_dtype()), 0),
                   lax.full((n,), 1, _int_dtype()))
    where_first = lax.select(first, slot, lax.full((n,), size, _int_dtype()))
    dn = slicing.ScatterDimensionNumbers((), (0,), (0,))
    if fill_value is None:  # the smallest element
        fill = lax.reshape(lax.slice_in_dim(vals, 0, 1), ())
    out = slicing.scatter(lax.broadcast_in_dim(fill, (size,), ()),
                          lax.reshape(where_first, (n, 1)), vals, dn, mode="drop")
    outs = [out]
    if return_index:
        first_index = lax.reshape(lax.slice_in_dim(perm, 0, 1), ())
        outs.append(slicing.scatter(lax.broadcast_in_dim(first_index, (size,), ()),
                                    lax.reshape(where_first, (n, 1)), perm, dn, mode="drop"))
    if return_inverse:
        inv = slicing.scatter(lax.full((n,), 0, _int_dtype()), lax.reshape(perm, (n, 1)), slot, dn)
        outs.append(lax.reshape(inv, shape))
    if return_counts:
        outs.append(slicing.scatter_add(lax.full((size,), 0, _int_dtype()), lax.reshape(slot, (n, 1)),
                                        lax.full((n,), 1, _int_dtype()), dn, mode="drop"))
    return outs[0] if len(outs) == 1 else tuple(outs)


# ---------------------------------------------------------------- searching


def _lt_total(x, y):
    """x < y in the sort order (NaN after everything)."""
    from gpuarr.numpy.ufuncs import isnan
    lt = lax.lt(x, y)
    if dtypes.is_inexact(get_aval(x).dtype):
        lt = lax.bitwise_or(lt, lax.bitwise_and(isnan(y), lax.bitwise_not(isnan(x))))
    return lt


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Where to insert `v` into the sorted 1-D `a` to keep it sorted (int32 indices)."""
    check_arraylike("searchsorted", a, v)
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                         "['left', 'right'].")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"invalid argument method={method!r} for searchsorted")
    a, v = promote_dtypes(ensure_array(a), ensure_array(v))
    if get_aval(a).ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if sorter is not None:
        from gpuarr.numpy.selection import take
        a = take(a, sorter, mode="clip")
    n = get_aval(a).shape[0]
    v_shape = get_aval(v).shape
    vv = lax.broadcast_in_dim(v, v_shape + (n,), tuple(range(len(v_shape))))
    aa = lax.broadcast_in_dim(a, v_shape + (n,), (len(v_shape),))
    hit = _lt_total(aa, vv) if side == "left" else lax.bitwise_not(_lt_total(vv, aa))
    return lax.reduce_sum(lax.convert_element_type(hit, _int_dtype()), (len(v_shape),))


def digitize(x, bins, right=False, *, method=None):
    """The index of the bin each `x` falls in (bins increasing or decreasing), as numpy.digitize."""
    from gpuarr.numpy.ufuncs import where
    check_arraylike("digitize", x, bins)
    bins = ensure_array(bins)
    if get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    n = get_aval(bins).shape[0]
    if n == 0:
        return lax.full(get_aval(ensure_array(x)).shape, 0, _int_dtype())
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    up = searchsorted(bins, x, side=side, **kw)
    down = lax.sub(lax.full(get_aval(up).shape, n, _int_dtype()),
                   searchsorted(lax.rev(bins, (0,)), x, side=side, **kw))
    increasing = lax.ge(lax.reshape(lax.slice_in_dim(bins, n - 1, n), ()),
                        lax.reshape(lax.slice_in_dim(bins, 0, 1), ()))
    return where(increasing, up, down)


def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
    """Counts (or summed `weights`) of each non-negative integer in `x`; negative values count
    as 0 and values >= `length` are dropped, as in JAX. Under jit pass a static `length`."""
    check_arraylike("bincount", x)
    lax.lax.check_no_sharding("numpy.bincount", out_sharding)
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
        w = lax.full(aval.shape, 1, _int_dtype())
    else:
        check_arraylike("bincount", weights)
        (w,) = promote_dtypes(ensure_array(weights))
        if get_aval(w).shape != aval.shape:
            raise ValueError(f"bincount: weights shape {get_aval(w).shape} must match x shape "
                             f"{aval.shape}.")
    xi = lax.convert_element_type(x, np.int32)
    xi = lax.max(xi, lax.full(aval.shape, 0, np.int32))
    dn = slicing.ScatterDimensionNumbers((), (0,), (0,))
    zeros = lax.full((length,), 0, get_aval(w).dtype)
    return slicing.scatter_add(zeros, lax.reshape(xi, aval.shape + (1,)), w, dn, mode="drop")
