"""Set operations on 1-D arrays (intersect1d, setdiff1d, setxor1d, union1d), membership (isin)
and the Array API unique family (unique_all, unique_counts, unique_inverse, unique_values), as
in jax.numpy.

The size of a set operation's result depends on the values of its inputs, so without `size=`
the inputs must be concrete (not traced by jit or vmap) and the function raises
ConcretizationTypeError otherwise, as JAX does. With a static `size=` the result is cut or padded
to that length and everything is built from traceable sorts, scatters and gathers, so it works
under jit and vmap. The padding follows JAX: by default the smallest result (0 when there is
none) for intersect1d, setxor1d and union1d, 0 for setdiff1d.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import cumulative, lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import slicing as lax_slicing
from gpuarr.lax import sorting as lax_sorting
from gpuarr.numpy import creation, manipulation, reductions, selection, sorting, ufuncs
from gpuarr.numpy.arguments import check_arraylike, concrete_value, ensure_array, promote_dtypes

__all__ = ["intersect1d", "isin", "setdiff1d", "setxor1d", "union1d", "unique_all", "unique_counts",
           "unique_inverse", "unique_values"]

# Follows JAX's message ("The error arose in setdiff1d()") in a ConcretizationTypeError.
_SIZE_HINT = ("Its output size depends on the values of its inputs; pass a static size= (and "
              "optionally fill_value=) to use it under jit, vmap or other transformations.")


# ---------------------------------------------------------------- helpers


def _require_concrete(fun_name, *arrays):
    """Raise ConcretizationTypeError for an abstract (jit/vmap-traced) input, as JAX does."""
    for x in arrays:
        concrete_value(x, f"The error arose in {fun_name}(). {_SIZE_HINT}")


def _concrete_size(fun_name, size):
    """A static `size` as an int; a traced one is JAX's ConcretizationTypeError."""
    if size is None:
        return None
    return operator.index(concrete_value(size, f"The error arose in {fun_name}(). {_SIZE_HINT}"))


def _static_size(size):
    # A traced size raises TracerIntegerConversionError (a ConcretizationTypeError) here.
    return None if size is None else operator.index(size)


def _len(x):
    return get_aval(x).shape[0]


def _iota(n):
    return creation.arange(n)


def _unique_padded(x):
    """Sorted unique values of the 1-D `x` padded with 0 to len(x), the index of each one's first
    occurrence, and how many there are (traceable: uses unique's static size)."""
    vals, index, counts = sorting.unique(x, return_index=True, return_counts=True, size=_len(x),
                                         fill_value=0)
    return vals, index, reductions.sum(counts > 0)


def _pad(vals, num, fill_value):
    """Entries of `vals` past the first `num` become fill_value, or by default the smallest of
    the first `num` (0 when num is 0), as JAX pads intersect1d and setxor1d. (For size=0 that
    default is the max of nothing, JAX's ValueError.)"""
    valid = _iota(_len(vals)) < num
    if fill_value is not None:
        return ufuncs.where(valid, vals, fill_value)
    vals = ufuncs.where(valid, vals, reductions.max(vals))
    return ufuncs.where(valid, vals, reductions.min(vals))


def _select_sorted(aux, keep, size):
    """The first `size` entries of the sorted `aux` where `keep` holds (0 past the end)."""
    positions = selection.nonzero(keep, size=size, fill_value=_len(aux))[0]
    return aux.at[positions].get(mode="fill", fill_value=0), positions


def sorted_membership(x, y):
    """Whether each entry of the 1-D `x` occurs in the 1-D `y`, from one sort of both: O(n log n)
    where comparing all pairs needs len(x) * len(y) memory. NaN is never found, as with ==."""
    n1, n2 = _len(x), _len(y)
    if not (n1 and n2):
        return creation.zeros(n1, np.bool_)
    x, y = promote_dtypes(x, y)
    n = n1 + n2
    # The stable sort keeps every y entry before the x entries equal to it, so an x entry is
    # in y exactly when the last y entry at or before it is equal to it.
    aux, perm = lax_sorting.sort([manipulation.concatenate([y, x]), _iota(n)], num_keys=1)
    last_y = cumulative.cummax(ufuncs.where(perm < n2, _iota(n), -1), 0)
    hit = (last_y >= 0) & (aux[ufuncs.maximum(last_y, 0)] == aux)
    return creation.zeros(n, np.bool_).at[perm].set(hit)[n2:]


# ---------------------------------------------------------------- intersect1d


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted values found in both (flattened) `ar1` and `ar2`, optionally with the index of
    each in `ar1` and `ar2`. Without `size` the inputs must be concrete; with a static `size` the
    result has that length, padded with `fill_value` (default: the smallest common value), and
    padded indices are len(ar1) and len(ar2), as in JAX."""
    check_arraylike("intersect1d", ar1, ar2, converts=True)
    arr1, arr2 = promote_dtypes(ensure_array(ar1), ensure_array(ar2))
    arr1, arr2 = manipulation.ravel(arr1), manipulation.ravel(arr2)
    size = _static_size(size)
    if size is not None:
        return _intersect1d_size(arr1, arr2, fill_value, assume_unique, size, return_indices)
    n1 = _len(arr1)
    if not assume_unique:
        _require_concrete("intersect1d", arr1, arr2)
        arr1, ind1 = sorting.unique(arr1, return_index=True)
        arr2, ind2 = sorting.unique(arr2, return_index=True)
        n1 = _len(arr1)
    aux, perm = lax_sorting.sort([manipulation.concatenate([arr1, arr2]), _iota(n1 + _len(arr2))],
                                 num_keys=1)
    mask = aux[1:] == aux[:-1]  # a value in both sits next to itself
    values = aux[:-1][mask]
    if not return_indices:
        return values
    i1, i2 = perm[:-1][mask], perm[1:][mask] - n1
    if not assume_unique:
        i1, i2 = ind1[i1], ind2[i2]
    return values, i1, i2


def _intersect1d_size(arr1, arr2, fill_value, assume_unique, size, return_indices):
    n1, n2 = _len(arr1), _len(arr2)
    n = n1 + n2
    if assume_unique:
        ind1, ind2, k1 = _iota(n1), _iota(n2), n1
        aux, perm = lax_sorting.sort([manipulation.concatenate([arr1, arr2]), _iota(n)], num_keys=1)
        valid = creation.ones(n, np.bool_)
    else:
        arr1, ind1, k1 = _unique_padded(arr1)
        arr2, ind2, k2 = _unique_padded(arr2)
        arr = _place_after(arr1, arr2, k1)
        valid = _iota(n) < k1 + k2
        _, aux, perm = lax_sorting.sort([~valid, arr, _iota(n)], num_keys=2)  # padding sorts last
    both = (aux[1:] == aux[:-1]) & valid[1:]
    num = reductions.sum(both)
    if not (n1 and n2):  # nothing in common: all padding (JAX fails to gather here)
        vals = _pad(creation.zeros(size, get_aval(aux).dtype), 0, fill_value)
        if not return_indices:
            return vals
        return vals, creation.full(size, n1, ind1.dtype), creation.full(size, n2, ind2.dtype)
    vals, positions = _select_sorted(aux, both, size)
    vals = _pad(vals, num, fill_value)
    if not return_indices:
        return vals
    in_result = _iota(_len(positions)) < num
    i1 = ufuncs.where(in_result, perm.at[positions].get(mode="fill", fill_value=n1), n1)
    i2 = perm.at[positions + 1].get(mode="fill", fill_value=n2) - k1
    i2 = ufuncs.where(in_result, i2, n2)
    if not assume_unique:
        i1 = ind1.at[i1].get(mode="fill", fill_value=n1)
        i2 = ind2.at[i2].get(mode="fill", fill_value=n2)
    return vals, i1, i2


def _place_after(arr1, arr2, k1):
    """[arr1[:k1], arr2, ...] in a buffer of len(arr1) + len(arr2): the first k1 entries of arr1
    followed by arr2, with k1 traced."""
    n = _len(arr1) + _len(arr2)
    out = creation.zeros(n, dtypes.result_type(arr1, arr2))
    out = lax_slicing.dynamic_update_slice(out, arr1, (0,))
    return lax_slicing.dynamic_update_slice(out, arr2, (k1,))


# ---------------------------------------------------------------- setdiff1d, union1d, setxor1d


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of (flattened) `ar1` that are not in `ar2`, in ar1's dtype.
    Without `size`, `ar1` must be concrete; with a static `size` the result has that length,
    padded with `fill_value` (default 0), as in JAX."""
    check_arraylike("setdiff1d", ar1, ar2, converts=True)
    arr1 = manipulation.ravel(ensure_array(ar1))
    arr2 = manipulation.ravel(ensure_array(ar2))
    if size is None:
        _require_concrete("setdiff1d", arr1)
    size = _concrete_size("setdiff1d", size)
    fill = creation.full_like(arr1, 0 if fill_value is None else fill_value, shape=())
    n1 = _len(arr1)
    if n1 == 0:
        return creation.full_like(arr1, fill, shape=size or 0)
    if size is None:
        if not assume_unique:
            arr1 = sorting.unique(arr1)
        return arr1[~sorted_membership(arr1, arr2)]
    if not assume_unique:
        # padded with its smallest value; for size=0 JAX asks for (and indexes) no values
        arr1 = sorting.unique(arr1, size=size and n1)
        n1 = _len(arr1)
    keep = ~sorted_membership(arr1, arr2)
    if not assume_unique:
        n_unique = n1 + 1 - reductions.sum(arr1 == arr1[0])  # the padding repeats arr1[0]
        keep = keep & (_iota(n1) < n_unique)
    picked = arr1[selection.nonzero(keep, size=size)[0]]
    return ufuncs.where(_iota(size) < reductions.sum(keep), picked, fill)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values found in either (flattened) `ar1` or `ar2`. Without `size` both
    must be concrete; with a static `size` the result has that length, padded with `fill_value`
    (default: the smallest value), as jnp.unique pads."""
    check_arraylike("union1d", ar1, ar2, converts=True)
    both = manipulation.concatenate((ensure_array(ar1), ensure_array(ar2)), axis=None)
    if size is None:
        _require_concrete("union1d", ar1, ar2)
    size = _concrete_size("union1d", size)
    return sorting.unique(both, size=size, fill_value=fill_value)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values found in exactly one of (flattened) `ar1` and `ar2`. Without `size`
    the inputs must be concrete; with a static `size` the result has that length, padded with
    `fill_value` (default: the smallest result), as in JAX."""
    check_arraylike("setxor1d", ar1, ar2, converts=True)
    arr1 = manipulation.ravel(ensure_array(ar1))
    arr2 = manipulation.ravel(ensure_array(ar2))
    arr1, arr2 = promote_dtypes(arr1, arr2)
    size = _static_size(size)
    if size is not None:
        return _setxor1d_size(arr1, arr2, fill_value, assume_unique, size)
    if not assume_unique:  # unique raises JAX's error for traced inputs
        arr1, arr2 = sorting.unique(arr1), sorting.unique(arr2)
    aux = manipulation.concatenate((arr1, arr2))
    if _len(aux) == 0:
        return aux
    aux = sorting.sort(aux)
    true = creation.ones(1, np.bool_)
    edge = manipulation.concatenate((true, aux[1:] != aux[:-1], true))
    return aux[edge[1:] & edge[:-1]]  # different from both neighbours


def _setxor1d_size(arr1, arr2, fill_value, assume_unique, size):
    n = _len(arr1) + _len(arr2)
    if n == 0:
        return _pad(creation.zeros(size, get_aval(arr1).dtype), 0, fill_value)
    true, false = creation.ones(1, np.bool_), creation.zeros(1, np.bool_)
    if assume_unique:
        aux = sorting.sort(manipulation.concatenate([arr1, arr2]))
        edge = manipulation.concatenate((true, aux[1:] != aux[:-1], true))
    else:
        u1, _, k1 = _unique_padded(arr1)
        u2, _, k2 = _unique_padded(arr2)
        num_unique = k1 + k2
        valid = _iota(n + 1) < num_unique + 1
        _, aux = lax_sorting.sort([~valid[1:], _place_after(u1, u2, k1)], num_keys=2)  # padding last
        edge = manipulation.concatenate((true, aux[1:] != aux[:-1], false))
        edge = valid & edge.at[num_unique].set(True)  # the last unique value ends a run
    alone = edge[1:] & edge[:-1]
    vals, _ = _select_sorted(aux, alone, size)
    return _pad(vals, reductions.sum(alone), fill_value)


# ---------------------------------------------------------------- the Array API unique family


class _UniqueAllResult(NamedTuple):
    """What unique_all returns: values, first indices, inverse indices and counts."""

    values: object
    indices: object
    inverse_indices: object
    counts: object


class _UniqueCountsResult(NamedTuple):
    """What unique_counts returns: values and counts."""

    values: object
    counts: object


class _UniqueInverseResult(NamedTuple):
    """What unique_inverse returns: values and inverse indices (shaped like the input)."""

    values: object
    inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
    """The sorted unique values of `x` (each NaN distinct), the index of each one's first
    occurrence, the inverse indices (shaped like `x`) that rebuild `x`, and the counts. Under
    jit pass a static `size`; padding is `fill_value` (default: the smallest value)."""
    check_arraylike("unique_all", x, converts=True)
    values, indices, inverse, counts = sorting.unique(
        x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False,
        size=size, fill_value=fill_value)
    return _UniqueAllResult(values=values, indices=indices, inverse_indices=inverse,
                            counts=counts)


def unique_counts(x, /, *, size=None, fill_value=None):
    """The sorted unique values of `x` (each NaN distinct) and how often each occurs. Under jit
    pass a static `size`; padded counts are 0."""
    check_arraylike("unique_counts", x, converts=True)
    values, counts = sorting.unique(x, return_counts=True, equal_nan=False, size=size,
                             fill_value=fill_value)
    return _UniqueCountsResult(values=values, counts=counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """The sorted unique values of `x` (each NaN distinct) and the inverse indices, shaped like
    `x`, with `values[inverse_indices] == x`. Under jit pass a static `size`."""
    check_arraylike("unique_inverse", x, converts=True)
    values, inverse = sorting.unique(x, return_inverse=True, equal_nan=False, size=size,
                              fill_value=fill_value)
    return _UniqueInverseResult(values=values, inverse_indices=inverse)


def unique_values(x, /, *, size=None, fill_value=None):
    """The sorted unique values of `x`, each NaN distinct. Under jit pass a static `size`; the
    result is padded with `fill_value` (default: the smallest value)."""
    check_arraylike("unique_values", x, converts=True)
    return sorting.unique(x, equal_nan=False, size=size, fill_value=fill_value)


# Above this many element pairs `isin` sorts instead of comparing all pairs (whose memory grows
# as the product of the two sizes).
_ISIN_COMPARE_ALL_PAIRS = 1 << 20


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element occurs in test_elements. `method` is "compare_all" (every pair,
    memory len(element) * len(test_elements)), "sort" (one sort of both, O(n log n)), or "auto"
    (compare_all for small inputs, sort otherwise); "binary_search" is taken as "sort"."""
    check_arraylike("isin", element, test_elements, converts=True)
    if method not in ("auto", "compare_all", "sort", "binary_search"):
        raise ValueError(f"isin: unknown method={method!r}; use 'auto', 'compare_all', 'sort' "
                         "or 'binary_search'.")
    out = _in1d(element, test_elements, invert=invert, method=method,
                assume_unique=assume_unique)
    return lax_shape_ops.reshape(out, np.shape(element))


@_jit(static_argnames=("assume_unique", "invert", "method"))  # as JAX's
def _in1d(ar1, ar2, invert, method="auto", assume_unique=False):
    arr1, arr2 = promote_dtypes(ar1, ar2)
    arr1, arr2 = manipulation.ravel(arr1), manipulation.ravel(arr2)
    n1, n2 = get_aval(arr1).shape[0], get_aval(arr2).shape[0]
    if n1 == 0 or n2 == 0:
        return (creation.ones if invert else creation.zeros)((n1,), dtype=np.bool_)
    if method == "compare_all" or (method == "auto" and n1 * n2 <= _ISIN_COMPARE_ALL_PAIRS):
        pairs = (lax_shape_ops.broadcast_in_dim(arr1, (n1, 1), (0,)),
                 lax_shape_ops.broadcast_in_dim(arr2, (1, n2), (1,)))
        if invert:
            return reductions.all(lax.ne(*pairs), axis=-1)
        return reductions.any(lax.eq(*pairs), axis=-1)
    out = sorted_membership(arr1, arr2)
    return lax.bitwise_not(out) if invert else out
