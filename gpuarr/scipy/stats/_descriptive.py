"""Descriptive statistics of samples (jax.scipy.stats.mode, rankdata and sem). Like
JAX's, they keep static shapes: mode counts values with a fixed-size `unique`, and
rankdata finds ties from a sort."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import sorting as lax_sorting
from gpuarr.numpy import creation, functional, manipulation, reductions, selection, sorting, ufuncs
from gpuarr.numpy.arguments import canonicalize_axis, check_arraylike
from gpuarr.scipy._arguments import promote_args_inexact
from gpuarr.vmap_api import vmap


class ModeResult(NamedTuple):
    mode: object
    count: object


def _check_nan_policy(nan_policy, fun_name):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{fun_name}`, we cannot know whether `x` contains nans."
            f" Please check if nans exist in `x` outside of the `{fun_name}` function.")


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False) -> ModeResult:
    """The most common value along `axis` (of the flattened array for None) and how often it
    occurs, as ModeResult(mode, count); ties go to the smallest value. Only
    nan_policy='propagate' is implemented, and as in JAX it counts NaNs as equal values
    rather than propagating them. An empty slice gives (NaN, 0) in the default float type."""
    check_arraylike("mode", a)
    x = manipulation.atleast_1d(a)
    _check_nan_policy(nan_policy, "mode")
    if axis is not None:
        axis = canonicalize_axis(axis, x.ndim)
    if keepdims:
        output_shape = tuple(1 if axis is None or i == axis else s for i, s in enumerate(x.shape))
    elif axis is None:
        output_shape = ()
    else:
        output_shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
    if axis is None:
        axis, x = 0, x.ravel()
    x = manipulation.moveaxis(x, axis, 0)
    x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
    vals, counts = vmap(_mode_of_column, in_axes=1)(x)
    return ModeResult(vals.reshape(output_shape), counts.reshape(output_shape))


def _mode_of_column(x):
    if x.size == 0:
        nan = creation.array(np.nan, dtype=dtypes.default_float_dtype())
        return nan, creation.array(0, dtype=dtypes.default_float_dtype())
    # A fixed-size unique pads with zero counts, which never win the argmax.
    vals, counts = sorting.unique(x, return_counts=True, size=x.size)
    return vals[reductions.argmax(counts)], counts.max()


def _inverse_permutation(i):
    return creation.empty_like(i).at[i].set(creation.arange(i.size, dtype=i.dtype))


def rankdata(a, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate"):
    """The ranks 1..n of the values of `a` (flattened, or along `axis`) in the default float
    type, ties ranked by `method`: 'average', 'min', 'max', 'dense' (consecutive ranks of the
    distinct values) or 'ordinal' (first come first ranked). All ranks are NaN where the
    values contain a NaN; only nan_policy='propagate' is implemented."""
    check_arraylike("rankdata", a)
    _check_nan_policy(nan_policy, "rankdata")
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    if axis is not None:
        return functional.apply_along_axis(rankdata, axis, a, method)
    a = manipulation.ravel(a)
    out_dtype = dtypes.default_float_dtype()

    def ranks(a):
        arr, sorter = lax_sorting.sort_key_val(a, creation.arange(a.size))
        inv = _inverse_permutation(sorter)
        if method == "ordinal":
            return (inv + 1).astype(out_dtype)
        # obs marks the first of each run of equal sorted values; dense[i] is the run of a[i].
        obs = manipulation.concatenate([creation.array([True]), arr[1:] != arr[:-1]])
        dense = obs.cumsum()[inv]
        if method == "dense":
            return dense.astype(out_dtype)
        # count[j] is where run j + 1 starts in the sorted order (n past the last run).
        count = selection.nonzero(obs, size=arr.size + 1, fill_value=obs.size)[0].astype(out_dtype)
        if method == "max":
            return count[dense]
        if method == "min":
            return count[dense - 1] + 1
        return 0.5 * (count[dense] + count[dense - 1] + 1)

    return lax_control_flow.cond(reductions.any(ufuncs.isnan(a)),
                                 lambda a: creation.full_like(a, np.nan, out_dtype), ranks, a)


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False):
    """The standard error of the mean, std(a, ddof=ddof) / sqrt(n), along `axis` (all of
    `a` for None). nan_policy='omit' leaves NaNs out of both the deviation and n;
    'propagate' lets them through."""
    (b,) = promote_args_inexact("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / ufuncs.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = (~ufuncs.isnan(b)).sum(axis, keepdims=keepdims)
        return reductions.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / ufuncs.sqrt(count).astype(b.dtype)
    raise ValueError(f"{nan_policy} is not supported")
