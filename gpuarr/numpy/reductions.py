"""Reductions with axis / keepdims / where: sum, prod, max, min, mean, var, std, all, any, argmax."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from gpuarr import dtypes, lax
from gpuarr.api import jit as _jit
from gpuarr.core import get_aval
from gpuarr.numpy._util import (
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    concrete_value,
    ensure_array,
    promote_dtypes,
    reject_out,
    static_hashable,
    widen_narrow_int,
)

# bfloat16 exists only with the optional ml_dtypes package.
_HALF_FLOATS = tuple(np.dtype(t) for t in (np.float16, getattr(dtypes, "bfloat16", None))
                     if t is not None)


def _upcast_f16(dt):
    # float16 and bfloat16 sums and means accumulate in float32, as in JAX.
    return np.dtype(np.float32) if dt in _HALF_FLOATS else dt


def _axes(axis, ndim):
    """canonicalize_axes, where a 0-d array has no axis 0 (ValueError, as in JAX)."""
    if ndim == 0 and axis is not None and not (isinstance(axis, (tuple, list)) and not axis):
        first = axis[0] if isinstance(axis, (tuple, list)) else axis  # JAX names the first
        raise ValueError(f"axis {first} is out of bounds for array of dimension 0")
    return canonicalize_axes(axis, ndim)


def _static_axis(axis):
    """`axis` as JAX's sum, mean, var... read it: None, an int, or else a tuple of ints (so a
    list or a NumPy array of axes works as a tuple does)."""
    if axis is None:
        return None
    axis = concrete_value(axis, "The axis argument must be known statically.")
    try:
        return operator.index(axis)
    except TypeError:
        return tuple(operator.index(i) for i in axis)


def _check_axis_index(axis, ndim):
    """JAX's mean and var index the shape with each axis to count the elements (without a
    `where`): an axis out of range is an IndexError there."""
    if axis is None:
        return
    for ax in (axis if isinstance(axis, tuple) else (axis,)):
        if not -ndim <= ax < ndim:
            raise IndexError("tuple index out of range")


def _user_dtype(dtype):
    if dtype is None:
        return None
    try:
        return dtypes.canonicalize_dtype(dtype)
    except TypeError:
        raise TypeError(f"data type {dtype!r} not understood") from None


def _check_where(name, where):
    """A `where` mask must be boolean: JAX rejects others rather than truth-testing them."""
    if where is None:
        return
    check_arraylike(name, where)
    dt = np.dtype(dtypes.dtype(where))
    if dt != np.bool_:
        raise ValueError(f"jnp.{name}: where must be None or a boolean array; got where.dtype={dt!r}.")


def _reduction(name, prim_fn, identity, upcast_bool=False, bool_fn=None):
    """The reduction `name` as a function of all the arguments any of these reductions take
    (the public functions below pass theirs, with JAX's signature for each)."""
    def reduce(a, axis, dtype, out, keepdims, initial, where, promote_integers=True):
        reject_out(name, out)
        check_arraylike(name, a)
        _check_where(name, where)
        (a,) = promote_dtypes(a)
        aval = get_aval(a)
        axis = _static_axis(axis)
        dt = _user_dtype(dtype) if dtype is not None else aval.dtype
        if dtype is None and upcast_bool and (promote_integers or aval.dtype == np.bool_):
            dt = widen_narrow_int(aval.dtype)  # booleans are counted as integers, as in JAX
        # Results are never weakly typed (jnp.sum(2.0) is a float32), as in JAX. Half floats
        # accumulate in float32 unless a dtype is asked for, as in JAX.
        comp = _upcast_f16(dt) if upcast_bool and dtype is None else dt
        if comp != aval.dtype or aval.weak_type:
            a = lax.convert_element_type(a, comp)
        # A sum or product as booleans is any / all.
        reduce_fn = bool_fn if dt == np.bool_ and bool_fn is not None else prim_fn
        axes = _axes(axis, aval.ndim)
        if where is not None:
            from gpuarr.numpy.ufuncs import where as jwhere
            if identity is None and initial is not None:
                # Masked-out entries can't win once `initial` is combined in.
                fill = _identity_value("max" if name in ("max", "amax") else "min", comp, name)
            else:
                fill = _identity_value(identity, comp, name)
            a = jwhere(where, a, fill)
        elif identity is None and builtins.any(aval.shape[i] == 0 for i in axes) and initial is None:
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        result = reduce_fn(a, axes)
        if initial is not None:
            result = _combine_initial(reduce_fn is bool_fn, name, result, initial, comp)
        if comp != dt:
            result = lax.convert_element_type(result, dt)
        if keepdims:
            result = lax.expand_dims(result, tuple(sorted(axes)))  # as JAX keeps dims
        return result
    return reduce


def _identity_value(identity, dt, name):
    if identity is None:
        raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                         "where mask one has to specify 'initial'")
    if identity in ("max", "min"):
        low = identity == "max"  # max's identity is the lowest value
        if dtypes.is_float(dt) or dtypes.is_complex(dt):  # complex: -inf + 0j, as JAX's
            value = -np.inf if low else np.inf
        elif dt == np.bool_:
            value = not low
        else:
            value = dtypes.iinfo(dt).min if low else dtypes.iinfo(dt).max
        return np.asarray(value, dt)[()]
    return np.asarray(identity, dt)[()]


def _combine_initial(as_bool, name, result, initial, dt):
    # Converted with lax, not NumPy, so that a traced `initial` works under jit.
    init = lax.convert_element_type(initial, dt)
    shape = get_aval(init).shape
    if shape != ():
        raise ValueError(f"initial value must be a scalar. Got array of shape {shape}")
    ops = {"sum": lax.bitwise_or if as_bool else lax.add,
           "prod": lax.bitwise_and if as_bool else lax.mul, "max": lax.max, "min": lax.min}
    return ops[name](init, result)


def _bool_reduce(prim_fn):
    def reduce(a, axes):
        if get_aval(a).dtype != np.bool_:
            a = lax.ne(a, np.zeros((), get_aval(a).dtype)[()])
        return prim_fn(a, axes)
    return reduce


_sum = _reduction("sum", lax.reduce_sum, 0, upcast_bool=True, bool_fn=lax.reduce_or)
_prod = _reduction("prod", lax.reduce_prod, 1, upcast_bool=True, bool_fn=lax.reduce_and)
_max = _reduction("max", lax.reduce_max, None)
_min = _reduction("min", lax.reduce_min, None)
_all = _reduction("all", _bool_reduce(lax.reduce_and), True)
_any = _reduction("any", _bool_reduce(lax.reduce_or), False)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    """The sum over `axis` (all axes by default), as numpy.sum; booleans and integers narrower
    than the default integer type sum in it unless `promote_integers` is False."""
    return _sum(a, axis, dtype, out, keepdims, initial, where, promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    """The product over `axis` (all axes by default), as numpy.prod; booleans and integers
    narrower than the default integer type multiply in it unless `promote_integers` is False."""
    return _prod(a, axis, dtype, out, keepdims, initial, where, promote_integers)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """The maximum over `axis` (all axes by default), as numpy.max."""
    return _max(a, axis, None, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """The minimum over `axis` (all axes by default), as numpy.min."""
    return _min(a, axis, None, out, keepdims, initial, where)


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether every element over `axis` is true (nonzero), as numpy.all."""
    return _all(a, axis, None, out, keepdims, None, where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """Whether any element over `axis` is true (nonzero), as numpy.any."""
    return _any(a, axis, None, out, keepdims, None, where)


def _count(aval, axes):
    n = 1
    for i in axes:
        n *= aval.shape[i]
    return n


def _where_count(aval, axes, keepdims, where, dt):
    """The number of elements reduced over `axes` (those where `where` holds), of dtype dt."""
    if where is None:
        n = np.asarray(_count(aval, axes), dt)[()]
        return n
    from gpuarr.numpy._util import broadcast_to
    return sum(lax.convert_element_type(broadcast_to(where, aval.shape), dt), axis=axes,
               keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """The arithmetic mean over `axis` (integers average in the default float dtype; float16
    accumulates in float32)."""
    check_arraylike("mean", a)
    _check_where("mean", where)
    reject_out("mean", out)
    (a,) = promote_dtypes(a)
    aval = get_aval(a)
    axis = _static_axis(axis)
    if where is None:
        _check_axis_index(axis, aval.ndim)
    axes = _axes(axis, aval.ndim)
    dt = _user_dtype(dtype) if dtype is not None else dtypes.to_inexact_dtype(aval.dtype)
    # Half floats accumulate in float32 unless a dtype is asked for, as in JAX.
    comp = _upcast_f16(dt) if dtypes.is_inexact(dt) and dtype is None else dt
    # Counted first: a `where` that does not broadcast fails there, with JAX's message.
    count = _where_count(aval, axes, keepdims, where, comp)
    total = sum(a, axis=axes, dtype=comp, keepdims=keepdims, where=where)
    return lax.convert_element_type(lax.div(total, count), dt)


_mean = mean  # var's `mean` parameter shadows the function there


def _var_dtypes(a_dtype, dtype):
    """(computation dtype, result dtype) of var, as JAX's: complex data has a real variance."""
    if dtype is not None:
        dtype = _user_dtype(dtype)
        if dtypes.is_complex(a_dtype) and not dtypes.is_complex(dtype):
            raise ValueError("jax.numpy.var does not yet support real dtype parameters when "
                             "computing the variance of an array of complex values. The "
                             "semantics of numpy.var seem unclear in this case. Please comment "
                             "on https://github.com/jax-ml/jax/issues/2283 if this behavior is "
                             "important to you.")
        comp = dtype
    else:
        comp, dtype = dtypes.to_inexact_dtype(a_dtype), dtypes.to_floating_dtype(a_dtype)
    return _upcast_f16(comp), np.dtype(dtype)


def _abs2(centered):
    """|centered|**2, real for complex values."""
    if dtypes.is_complex(get_aval(centered).dtype):
        from gpuarr.numpy.ufuncs import conj, real
        return real(lax.mul(centered, conj(centered)))
    return lax.mul(centered, centered)


def _given_mean(name, mean, comp):
    """A `mean` passed to var/std (broadcast-compatible with the data, as keepdims gives it)."""
    check_arraylike(name, mean)
    return lax.convert_element_type(ensure_array(mean), comp)


def _ddof(ddof, correction):
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """The variance over `axis` with `ddof` (or `correction`) degrees of freedom removed (NaN
    where none are left; real for complex data), about `mean` if given (computed otherwise)."""
    ddof = _ddof(ddof, correction)
    check_arraylike("var", a)
    _check_where("var", where)
    reject_out("var", out)
    (a,) = promote_dtypes(a)
    aval = get_aval(a)
    comp, out_dt = _var_dtypes(aval.dtype, dtype)
    a = lax.convert_element_type(a, comp)
    axis = _static_axis(axis)
    if where is None:
        _check_axis_index(axis, aval.ndim)
    axes = _axes(axis, aval.ndim)
    a_mean = (_mean(a, axes, dtype=comp, keepdims=True, where=where) if mean is None
              else _given_mean("var", mean, comp))
    sq = _abs2(lax.sub(a, a_mean))
    comp = get_aval(sq).dtype
    n = _where_count(aval, axes, keepdims, where, comp)
    n = lax.sub(n, lax.convert_element_type(ensure_array(ddof), comp))
    total = sum(sq, axis=axes, dtype=comp, keepdims=keepdims, where=where)
    out = lax.convert_element_type(lax.div(total, n), out_dt)
    from gpuarr.numpy.ufuncs import where as jwhere
    return jwhere(lax.gt(n, np.zeros((), comp)[()]), out, np.nan)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """The standard deviation over `axis` (about `mean` if given)."""
    check_arraylike("std", a)
    _check_where("std", where)
    if dtype is not None and not dtypes.is_inexact(dt := _user_dtype(dtype)):
        raise ValueError(f"dtype argument to jnp.std must be inexact; got {dt}")
    reject_out("std", out)
    return lax.sqrt(var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                        correction=correction))


def _check_ordered(name, aval):
    if dtypes.is_complex(aval.dtype):  # complex numbers have no order: JAX's comparison error
        op = "gt" if name == "argmax" else "lt"
        raise TypeError(f"{op} does not accept dtype {aval.dtype} at position 0. Accepted dtypes "
                        "at position 0 are subtypes of integer, floating, bool.")


def _arg_reduce(name, lax_fn):
    def fn(a, axis=None, out=None, keepdims=None):
        check_arraylike(name, a)
        reject_out(name, out)
        (a,) = promote_dtypes(a)
        aval = get_aval(a)
        if axis is None:
            if aval.size == 0:
                raise ValueError(f"attempt to get {name} of an empty sequence")
            _check_ordered(name, aval)
            flat = lax.reshape(a, (aval.size,))
            res = lax_fn(flat, 0, dtypes.default_int_dtype())
            return lax.reshape(res, (1,) * aval.ndim) if keepdims else res
        ax = canonicalize_axis(axis, aval.ndim)
        if aval.shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        _check_ordered(name, aval)
        res = lax_fn(a, ax, dtypes.default_int_dtype())
        return lax.expand_dims(res, (ax,)) if keepdims else res
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Index of the {name[3:]}imum along `axis` (first occurrence), as numpy.{name}."
    return fn


argmax = _arg_reduce("argmax", lax.argmax)
argmin = _arg_reduce("argmin", lax.argmin)


# ---------------------------------------------------------------- more reductions


def _is_inexact(a):  # complex values can hold NaNs too, as JAX treats them
    return dtypes.is_inexact(get_aval(a).dtype)


def _isnan(a):
    return lax.ne(a, a)


def _replace_nan(a, value):
    if not _is_inexact(a):
        return a
    return lax.select(_isnan(a), lax.full_like(a, value), a)


def ptp(a, axis=None, out=None, keepdims=False):
    """max - min over `axis` (peak to peak)."""
    check_arraylike("ptp", a)
    reject_out("ptp", out)
    axis = _static_axis(axis)
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


@_jit(static_argnames=("axis", "keepdims"))  # as JAX's
def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero elements over `axis`, in the default integer dtype."""
    static_hashable(axis)
    check_arraylike("count_nonzero", a)
    (a,) = promote_dtypes(a)
    nz = lax.ne(a, np.zeros((), get_aval(a).dtype)[()])
    return sum(nz, axis=axis, keepdims=keepdims, dtype=dtypes.default_int_dtype())


def _nan_reduction(name, plain, fill):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        static_hashable(axis)
        check_arraylike(name, a)
        _check_where(name, where)
        (a,) = promote_dtypes(a)
        return plain(_replace_nan(a, fill), axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                      initial=initial, where=where)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{plain.__name__} over `axis` treating NaNs as {fill} (numpy.{name})."
    return fn


nansum = _nan_reduction("nansum", sum, 0)
nanprod = _nan_reduction("nanprod", prod, 1)


def _nan_extreme(name, plain, fill):
    def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        static_hashable(axis)
        check_arraylike(name, a)
        _check_where(name, where)
        (a,) = promote_dtypes(a)
        if not _is_inexact(a):  # `out` goes on, for plain's own error about it, as in JAX
            return plain(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
        res = plain(_replace_nan(a, fill), axis=axis, out=out, keepdims=keepdims, initial=initial,
                    where=where)
        if initial is not None:  # `initial` answers for an all-NaN slice, as in JAX
            return res
        # An all-NaN slice gives NaN, as in NumPy and JAX.
        all_nan = all(_isnan(a), axis=axis, keepdims=keepdims, where=where)
        return lax.select(all_nan, lax.full_like(res, np.nan), res)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{plain.__name__} over `axis` ignoring NaNs (NaN for all-NaN slices), as numpy.{name}."
    return fn


nanmax = _nan_extreme("nanmax", max, -np.inf)
nanmin = _nan_extreme("nanmin", min, np.inf)


def _not_nan_count(a, axis, keepdims, where, dt):
    valid = lax.bitwise_not(_isnan(a)) if _is_inexact(a) else lax.full(get_aval(a).shape, True, np.bool_)
    return sum(valid, axis=axis, keepdims=keepdims, where=where, dtype=dt)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """The mean over `axis` ignoring NaNs (NaN for all-NaN slices)."""
    static_hashable(axis)
    check_arraylike("nanmean", a)
    _check_where("nanmean", where)
    reject_out("nanmean", out)
    (a,) = promote_dtypes(a)
    if not _is_inexact(a):
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else get_aval(a).dtype
    total = nansum(a, axis, dtype=dt, keepdims=keepdims, where=where)
    return lax.div(total, _not_nan_count(a, axis, keepdims, where, dt))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """The variance over `axis` ignoring NaNs (NaN where no degrees of freedom are left),
    about `mean` if given."""
    static_hashable(axis)
    check_arraylike("nanvar", a)
    _check_where("nanvar", where)
    reject_out("nanvar", out)
    (a,) = promote_dtypes(a)
    comp, out_dt = _var_dtypes(get_aval(a).dtype, dtype)
    a = lax.convert_element_type(a, comp)
    from gpuarr.numpy.ufuncs import where as jwhere
    nan = _isnan(a)
    a_mean = (nanmean(a, axis, comp, keepdims=True, where=where) if mean is None
              else _given_mean("nanvar", mean, comp))
    centered = jwhere(nan, 0, lax.sub(a, a_mean))
    sq = _abs2(centered)
    count = sum(lax.bitwise_not(nan), axis=axis, keepdims=keepdims, where=where)
    from gpuarr.numpy.ufuncs import subtract
    count = subtract(count, ddof)  # promoted: a float ddof is not truncated, as in JAX
    empty = lax.le(count, np.zeros((), get_aval(count).dtype)[()])
    # A plain sum: an infinite mean leaves NaNs in `sq` that must show, as in JAX.
    total = jwhere(empty, np.nan, sum(sq, axis, keepdims=keepdims, where=where))
    divisor = lax.convert_element_type(jwhere(empty, 1, count), get_aval(total).dtype)
    return lax.convert_element_type(lax.div(total, divisor), out_dt)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """The standard deviation over `axis` ignoring NaNs (about `mean` if given)."""
    static_hashable(axis)
    check_arraylike("nanstd", a)
    _check_where("nanstd", where)
    if dtype is not None and not dtypes.is_inexact(dtypes.canonicalize_dtype(dtype)):
        raise TypeError(f"nanstd needs an inexact dtype, got {np.dtype(dtype)}")
    reject_out("nanstd", out)
    return lax.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The weighted mean over `axis`; with `returned`, also the sum of the weights."""
    check_arraylike("average", a)
    axis = _static_axis(axis)
    if axis is not None:  # checked first, with JAX's messages
        ndim = get_aval(ensure_array(a)).ndim
        axes = tuple(canonicalize_axis(i, ndim) for i in
                     (axis if isinstance(axis, tuple) else (axis,)))
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis: {axes}")
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        aval = get_aval(promote_dtypes(a)[0])
        n = _count(aval, canonicalize_axes(axis, aval.ndim))
        total = lax.full_like(avg, n)
        return (avg, total) if returned else avg
    check_arraylike("average", weights)
    from gpuarr.numpy._util import promote_dtypes_inexact
    a, weights = promote_dtypes_inexact(a, weights)
    a_shape, w_shape = get_aval(a).shape, get_aval(weights).shape
    if w_shape != a_shape:
        if axis is None:
            raise ValueError(f"Axis must be specified when shapes of a and weights differ: a has "
                             f"shape {a_shape}, weights have shape {w_shape}.")
        if len(w_shape) != 1:
            raise ValueError(f"1D weights expected when shapes of a and weights differ: weights "
                             f"have shape {w_shape}.")
        ax = canonicalize_axis(axis, len(a_shape))
        if w_shape[0] != a_shape[ax]:
            raise ValueError(f"Length of weights ({w_shape[0]}) not compatible with the size of "
                             f"axis {axis} of a, shape {a_shape}.")
        weights = lax.broadcast_in_dim(weights, a_shape, (ax,))
    wsum = sum(weights, axis, keepdims=keepdims)
    avg = lax.div(sum(lax.mul(a, weights), axis, keepdims=keepdims), wsum)
    if returned:
        from gpuarr.numpy._util import broadcast_arrays
        return tuple(broadcast_arrays(avg, wsum))
    return avg


# ---------------------------------------------------------------- quantiles

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _quantile_weights(name, a, weights, axis, method):
    """`weights` broadcast to `a`'s shape: they have its shape, or that of the reduced axes."""
    check_arraylike(name, weights)
    if dtypes.is_complex(get_aval(weights).dtype):
        raise ValueError("Weights cannot be complex types.")
    if method != "inverted_cdf":
        raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                  "'inverted_cdf' supports weights.")
    from gpuarr.numpy._util import promote_dtypes_inexact
    a, weights = promote_dtypes_inexact(a, weights)
    a_shape, w_shape = get_aval(a).shape, get_aval(weights).shape
    if w_shape == a_shape:
        return a, weights
    if axis is None:
        raise ValueError("Weights shape must match 'a' shape when axis is None.")
    axes = tuple(canonicalize_axis(ax, len(a_shape))
                 for ax in (axis if isinstance(axis, tuple) else (axis,)))
    if w_shape != tuple(a_shape[ax] for ax in axes):
        raise ValueError(f"Weights shape {w_shape} must match reduction axes "
                         f"{tuple(a_shape[ax] for ax in axes)}")
    return a, lax.broadcast_in_dim(weights, a_shape, axes)


def _inverted_cdf(srt, weights, q, ignore_nan):
    """The smallest sorted value whose cumulative weight reaches q times the total (NumPy's
    'inverted_cdf'), for `srt` of shape outer + (n,) sorted along its last axis with its
    `weights` alongside, and q of shape q_shape; the result has shape q_shape + outer. NaN
    where a weight is negative or NaN, and where the data has a NaN (all NaNs if `ignore_nan`)."""
    from gpuarr.lax.cumulative import cumsum
    from gpuarr.numpy.selection import take_along_axis
    shape, dt = get_aval(srt).shape, get_aval(srt).dtype
    q_shape, nq = get_aval(q).shape, get_aval(q).ndim
    zero = np.zeros((), dt)[()]
    bad_weights = lax.bitwise_or(lax.lt(weights, zero), _isnan(weights))
    nan_data = _isnan(srt)
    clean = lax.select(lax.bitwise_or(bad_weights, nan_data), lax.full_like(weights, 0), weights)
    cum = cumsum(clean, axis=len(shape) - 1)
    total = lax.slice_in_dim(cum, shape[-1] - 1, shape[-1], axis=len(shape) - 1)
    target = lax.mul(lax.reshape(q, q_shape + (1,) * len(shape)),
                     lax.reshape(total, (1,) * nq + shape[:-1] + (1,)))
    below = lax.lt(lax.reshape(cum, (1,) * nq + shape), target)
    idx = sum(below, axis=-1)  # default-int count of values whose cumulative weight is short
    valid = (sum(lax.bitwise_not(nan_data), axis=-1) if ignore_nan
             else lax.full(shape[:-1], shape[-1], get_aval(idx).dtype))
    idx = lax.max(lax.full_like(idx, 0), lax.min(idx, lax.sub(
        lax.broadcast_in_dim(valid, get_aval(idx).shape, tuple(range(nq, nq + len(shape) - 1))),
        lax.full_like(idx, 1))))
    values = lax.broadcast_in_dim(srt, q_shape + shape, tuple(range(nq, nq + len(shape))))
    out = lax.reshape(take_along_axis(values, lax.expand_dims(idx, (nq + len(shape) - 1,)), -1),
                      q_shape + shape[:-1])
    force_nan = any(bad_weights, axis=-1)
    force_nan = lax.bitwise_or(force_nan, lax.eq(valid, lax.full_like(valid, 0)) if ignore_nan
                               else any(nan_data, axis=-1))
    return lax.select(lax.broadcast_in_dim(force_nan, get_aval(out).shape,
                                           tuple(range(nq, nq + len(shape) - 1))),
                      lax.full_like(out, np.nan), out)


def _quantile_checks(name, a, method, out, overwrite_input):
    """JAX's argument errors, in its order."""
    check_arraylike(name, a)
    if dtypes.is_complex(dtypes.dtype(a)):
        raise ValueError("quantile does not support complex input, as the operation is poorly "
                         "defined.")
    if out is not None or overwrite_input:
        quant = "nanquantile" if name.startswith("nan") else "quantile"
        raise ValueError(f"jax.numpy.{quant} does not support overwrite_input=True or "
                         "out != None")
    if method not in _METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' "
                         "or 'inverted_cdf'")


def _check_q_dtype(ignore_nan, method, q_dt, a_dt):
    """JAX's errors for a q it cannot compute with: positions are computed in q's dtype."""
    if q_dt == np.bool_:  # JAX fails at q * (n - 1), or at counts - 1 ignoring NaNs
        op = "sub" if ignore_nan else "mul"
        raise TypeError(f"{op} does not accept dtype bool at position 0. Accepted dtypes at "
                        "position 0 are subtypes of integer, floating, complexfloating.")
    if not dtypes.is_float(q_dt):
        raise TypeError(f"floor does not accept dtype {q_dt}. Accepted dtypes are subtypes of "
                        "floating.")
    if method == "inverted_cdf" and q_dt != a_dt:  # JAX multiplies q into a's weights unpromoted
        raise TypeError(f"lax.mul requires arguments to have the same dtypes, got {q_dt}, {a_dt}. "
                        "(Tip: jnp.multiply is a similar function that does automatic type "
                        "promotion on inputs).")


def _quantile(name, a, q, axis, method, keepdims, ignore_nan, weights=None):
    static_hashable(axis)
    check_arraylike(name, a, q)
    from gpuarr.lax.sorting import sort, sort_key_val
    from gpuarr.numpy._util import promote_dtypes_inexact
    from gpuarr.numpy.selection import take_along_axis
    if weights is not None:
        a, weights = _quantile_weights(name, a, weights, axis, method)
    else:
        (a,) = promote_dtypes_inexact(a)
    # q is not promoted with a: positions and interpolation use q's dtype and the result is
    # cast to a's, as in JAX.
    q = ensure_array(q)
    a_aval, q_aval = get_aval(a), get_aval(q)
    if q_aval.ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q_aval.shape}")
    axes = _axes(axis, a_aval.ndim)
    keep = tuple(i for i in range(a_aval.ndim) if i not in axes)
    n = _count(a_aval, axes)
    if n == 0:
        raise ValueError(f"{name} of an empty axis is undefined: array shape {a_aval.shape}.")
    dt, q_dt = a_aval.dtype, np.dtype(q_aval.dtype)
    _check_q_dtype(ignore_nan, method, q_dt, dt)
    outer = tuple(a_aval.shape[i] for i in keep)
    flat = lax.reshape(lax.transpose(a, keep + axes), outer + (n,))
    if method == "inverted_cdf":
        w = (lax.full_like(flat, 1) if weights is None else lax.convert_element_type(
            lax.reshape(lax.transpose(weights, keep + axes), outer + (n,)), dt))
        srt, w = sort_key_val(flat, w, dimension=len(outer))  # NaNs sort last
        # convert_element_type drops the weak type, as JAX's result has none.
        out = lax.convert_element_type(_inverted_cdf(srt, w, q, ignore_nan), dt)
        return _quantile_keepdims(out, q_aval, a_aval, axes) if keepdims else out
    srt = sort(flat, dimension=len(outer))  # NaNs sort last
    nan_in = any(_isnan(flat), axis=-1, keepdims=True)
    count = (lax.convert_element_type(sum(lax.bitwise_not(_isnan(flat)), axis=-1, keepdims=True), q_dt)
             if ignore_nan else lax.full(outer + (1,), n, q_dt))
    # q goes on a leading axis: positions have shape q.shape + outer + (1,).
    qs = lax.reshape(q, q_aval.shape + (1,) * (len(outer) + 1))
    count = lax.reshape(count, (1,) * q_aval.ndim + outer + (1,))
    one = np.ones((), q_dt)[()]
    pos = lax.mul(qs, lax.sub(count, one))
    lo, hi = lax.floor(pos), lax.ceil(pos)
    hi_w = lax.sub(pos, lo)  # before clamping, as in JAX
    lo_w = lax.sub(one, hi_w)
    # q outside [0, 1] reads the end values, as JAX clamps the positions.
    top = lax.sub(count, one)
    lo, hi = (lax.max(lax.full_like(x, 0), lax.min(x, top)) for x in (lo, hi))
    int_dt = dtypes.default_int_dtype()
    values = lax.broadcast_in_dim(srt, q_aval.shape + outer + (n,),
                                  tuple(range(q_aval.ndim, q_aval.ndim + len(outer) + 1)))

    def pick(idx):  # the sorted values at positions idx (shape q.shape + outer + (1,))
        idx = lax.convert_element_type(idx, int_dt)
        return lax.reshape(take_along_axis(values, idx, -1), q_aval.shape + outer)

    v_lo, v_hi = pick(lo), pick(hi)
    lo_w, hi_w = (lax.reshape(x, get_aval(v_lo).shape) for x in (lo_w, hi_w))
    if method == "linear":
        out = lax.add(lax.mul(lax.convert_element_type(v_lo, q_dt), lo_w),
                      lax.mul(lax.convert_element_type(v_hi, q_dt), hi_w))
    elif method == "lower":
        out = v_lo
    elif method == "higher":
        out = v_hi
    elif method == "nearest":  # ties go to the lower neighbour, as in JAX
        out = lax.select(lax.le(hi_w, np.asarray(0.5, q_dt)[()]), v_lo, v_hi)
    else:  # midpoint, in a's dtype
        out = lax.mul(lax.add(v_lo, v_hi), np.asarray(0.5, dt)[()])
    bad = (lax.le(lax.reshape(count, outer), np.zeros((), q_dt)[()]) if ignore_nan
           else lax.reshape(nan_in, outer))
    out = lax.select(lax.broadcast_in_dim(bad, get_aval(out).shape,
                                          tuple(range(q_aval.ndim, q_aval.ndim + len(outer)))),
                     lax.full_like(out, np.nan), out)
    out = lax.convert_element_type(out, dt)
    return _quantile_keepdims(out, q_aval, a_aval, axes) if keepdims else out


def _quantile_keepdims(out, q_aval, a_aval, axes):
    # A 0-d input keeps one axis, as in JAX.
    shape = q_aval.shape + (tuple(1 if i in axes else d for i, d in enumerate(a_aval.shape))
                            or (1,))
    return lax.reshape(out, shape)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None):
    """The q-th quantiles (q in [0, 1]) over `axis`; q's shape leads the result's. `weights`
    (method 'inverted_cdf' only) weigh each element of `a`."""
    _quantile_checks("quantile", a, method, out, overwrite_input)
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
                *, weights=None):
    """quantile ignoring NaNs (NaN for all-NaN slices)."""
    _quantile_checks("nanquantile", a, method, out, overwrite_input)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def _percent(name, q):
    check_arraylike(name, q)
    from gpuarr.numpy._util import promote_dtypes_inexact
    (q,) = promote_dtypes_inexact(q)
    return lax.div(q, lax.full_like(q, 100))  # full_like keeps q's weak type


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
               *, weights=None, out_sharding=None):
    """The q-th percentiles (q in [0, 100]) over `axis`."""
    _quantile_checks("percentile", a, method, out, overwrite_input)
    lax.lax.check_no_sharding("numpy.percentile", out_sharding)
    return _quantile("percentile", a, _percent("percentile", q), axis, method, keepdims, False,
                     weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
                  *, weights=None):
    """percentile ignoring NaNs."""
    _quantile_checks("nanpercentile", a, method, out, overwrite_input)
    return _quantile("nanpercentile", a, _percent("nanpercentile", q), axis, method, keepdims, True,
                     weights)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over `axis` (NaN if a slice has a NaN): the midpoint of the middle values,
    as JAX computes it."""
    static_hashable(axis)
    check_arraylike("median", a)
    return quantile(a, 0.5, axis, out, overwrite_input, method="midpoint", keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over `axis` ignoring NaNs (the midpoint of the middle values, as JAX)."""
    static_hashable(axis)
    check_arraylike("nanmedian", a)
    return nanquantile(a, 0.5, axis, out, overwrite_input, method="midpoint", keepdims=keepdims)
