"""Reductions with axis / keepdims / where: sum, prod, max, min, mean, var, std, all, any, argmax."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import arguments as lax_arguments
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import slicing as lax_slicing
from gpuarr.lax import special as lax_special
from gpuarr.numpy.arguments import (
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    concrete_value,
    ensure_array,
    promote_dtypes,
    promote_dtypes_numeric,
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


def _reduction(name, prim_fn, identity, upcast_bool=False, bool_fn=None, preproc=None):
    """The reduction `name` as a function of all the arguments any of these reductions take
    (the public functions below pass theirs, with JAX's signature for each)."""
    def reduce(a, axis, dtype, out, keepdims, initial, where, promote_integers=True):
        reject_out(name, out)
        check_arraylike(name, a)
        _check_where(name, where)
        (a,) = promote_dtypes(a)
        if preproc is not None:
            a = preproc(a)
        aval = get_aval(a)
        axis = _static_axis(axis)
        dt = _user_dtype(dtype) if dtype is not None else aval.dtype
        if dtype is None and upcast_bool and promote_integers:
            dt = widen_narrow_int(aval.dtype)  # narrow integers widen, as in JAX
        # Results are never weakly typed (jnp.sum(2.0) is a float32), as in JAX. Half floats
        # accumulate in float32 unless a dtype is asked for, as in JAX.
        comp = _upcast_f16(dt) if upcast_bool and dtype is None else dt
        if comp != aval.dtype or aval.weak_type:
            a = lax_conversions.convert_element_type(a, comp)
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
            result = lax_conversions.convert_element_type(result, dt)
        if keepdims:
            result = lax_shape_ops.expand_dims(result, tuple(sorted(axes)))  # as JAX keeps dims
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
    init = lax_conversions.convert_element_type(initial, dt)
    shape = get_aval(init).shape
    if shape != ():
        raise ValueError(f"initial value must be a scalar. Got array of shape {shape}")
    ops = {"sum": lax.bitwise_or if as_bool else lax.add,
           "prod": lax.bitwise_and if as_bool else lax.mul, "max": lax.max, "min": lax.min}
    return ops[name](init, result)


def _cast_to_bool(a):
    """all/any's truth values, as JAX's: a conversion to bool, of the real part of complex
    values (so jnp.all(1j) is False there)."""
    if dtypes.is_complex(get_aval(a).dtype):
        a = lax_extras.real(a)
    return lax_conversions.convert_element_type(a, np.bool_)


def _cast_to_numeric(a):
    # Booleans are summed and multiplied as default integers, converted from there to a
    # requested dtype, as in JAX.
    return promote_dtypes_numeric(a)[0]


_sum = _reduction("sum", lax_shape_ops.reduce_sum, 0, upcast_bool=True, bool_fn=lax.reduce_or,
                  preproc=_cast_to_numeric)
_prod = _reduction("prod", lax.reduce_prod, 1, upcast_bool=True, bool_fn=lax.reduce_and,
                   preproc=_cast_to_numeric)
_max = _reduction("max", lax.reduce_max, None)
_min = _reduction("min", lax.reduce_min, None)
_all = _reduction("all", lax.reduce_and, True, preproc=_cast_to_bool)
_any = _reduction("any", lax.reduce_or, False, preproc=_cast_to_bool)


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
    from gpuarr.numpy.arguments import broadcast_to
    return sum(broadcast_to(where, aval.shape), axis=axes, dtype=dt, keepdims=keepdims)


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
    return lax_conversions.convert_element_type(lax.div(total, count), dt)


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
    """|centered|**2, real for complex values, as JAX's var computes it."""
    if dtypes.is_complex(get_aval(centered).dtype):
        return lax_extras.real(lax.mul(centered, lax_extras.conj(centered)))
    return lax.square(centered)


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
    correction = _ddof(ddof, correction)
    check_arraylike("var", a, converts=True)  # ensure_arraylike, as JAX's
    return _var(a, axis=_static_axis(axis), dtype=dtype, out=out, correction=correction,
                keepdims=keepdims, where=where, a_mean=mean)


@_jit(static_argnames=("axis", "dtype", "keepdims"))  # as JAX's; `correction` is traced
def _var(a, *, axis=None, dtype=None, out=None, correction=0, keepdims=False, where=None,
         a_mean=None):
    _check_where("var", where)
    reject_out("var", out)
    (a,) = promote_dtypes(a)
    aval = get_aval(a)
    comp, out_dt = _var_dtypes(aval.dtype, dtype)
    a = lax_conversions.convert_element_type(a, comp)
    if where is None:
        _check_axis_index(axis, aval.ndim)
    axes = _axes(axis, aval.ndim)
    if a_mean is None:
        a_mean = _mean(a, axes, dtype=comp, keepdims=True, where=where)
    else:
        check_arraylike("var", a_mean)
        a_mean = lax_conversions.convert_element_type(a_mean, comp)
    sq = _abs2(lax.sub(a, a_mean))
    comp = get_aval(sq).dtype
    n = _where_count(aval, axes, keepdims, where, comp)
    n = lax.sub(n, lax_conversions.convert_element_type(correction, comp))
    total = sum(sq, axis=axes, dtype=comp, keepdims=keepdims, where=where)
    out = lax_conversions.convert_element_type(lax.div(total, n), out_dt)
    from gpuarr.numpy.ufuncs import where as jwhere
    return jwhere(lax.gt(n, np.zeros((), comp)[()]), out, np.nan)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """The standard deviation over `axis` (about `mean` if given)."""
    correction = _ddof(ddof, correction)
    check_arraylike("std", a, converts=True)  # ensure_arraylike, as JAX's
    return _std(a, axis=_static_axis(axis), dtype=dtype, out=out, correction=correction,
                keepdims=keepdims, where=where, mean=mean)


@_jit(static_argnames=("axis", "dtype", "keepdims"))  # as JAX's; calls var's jit
def _std(a, *, axis=None, dtype=None, out=None, correction=0, keepdims=False, where=None,
         mean=None):
    _check_where("std", where)
    if dtype is not None and not dtypes.is_inexact(dt := _user_dtype(dtype)):
        raise ValueError(f"dtype argument to jnp.std must be inexact; got {dt}")
    reject_out("std", out)
    return lax.sqrt(var(a, axis, dtype, None, keepdims=keepdims, where=where, mean=mean,
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
            flat = lax_shape_ops.reshape(a, (aval.size,))
            res = lax_fn(flat, 0, dtypes.default_int_dtype())
            return lax_shape_ops.reshape(res, (1,) * aval.ndim) if keepdims else res
        if not -aval.ndim <= operator.index(axis) < aval.ndim:  # JAX's class: it indexes the shape
            raise IndexError(f"axis {axis} is out of bounds for array of dimension {aval.ndim}")
        ax = canonicalize_axis(axis, aval.ndim)
        if aval.shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        _check_ordered(name, aval)
        res = lax_fn(a, ax, dtypes.default_int_dtype())
        return lax_shape_ops.expand_dims(res, (ax,)) if keepdims else res
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


def _const(like, value):
    """`value` as JAX's lax._const gives it for `like`: a Python scalar (weakly typed) where
    `like` is a weakly typed scalar, else a NumPy value of its dtype."""
    aval = get_aval(like)
    value = np.asarray(value, aval.dtype)
    return value.item() if aval.weak_type and aval.ndim == 0 else value


def ptp(a, axis=None, out=None, keepdims=False):
    """max - min over `axis` (peak to peak)."""
    check_arraylike("ptp", a, converts=True)  # ensure_arraylike, as JAX's
    return _ptp(a, _static_axis(axis), out, keepdims)


@_jit(static_argnames=("axis", "keepdims"))  # as JAX's
def _ptp(a, axis=None, out=None, keepdims=False):
    reject_out("ptp", out)
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


@_jit(static_argnames=("axis", "keepdims"))  # as JAX's
def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero elements over `axis`, in the default integer dtype."""
    static_hashable(axis)
    check_arraylike("count_nonzero", a)
    (a,) = promote_dtypes(a)
    nz = lax.ne(a, np.zeros((), get_aval(a).dtype)[()])
    return sum(nz, axis=axis, keepdims=keepdims, dtype=dtypes.default_int_dtype())


def _nan_reduction(a, name, plain, init_val, nan_if_all_nan, axis=None, keepdims=False,
                   where=None, **kwargs):
    """JAX's nan-reductions: `plain` with NaNs replaced by its identity `init_val` (NaN for an
    all-NaN slice if `nan_if_all_nan`)."""
    check_arraylike(name, a)
    _check_where(name, where)
    (a,) = promote_dtypes(a)
    if not _is_inexact(a):  # `out` goes on, for plain's own error about it, as in JAX
        return plain(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
    from gpuarr.numpy.ufuncs import where as jwhere
    dt = get_aval(a).dtype
    out = plain(jwhere(_isnan(a), np.asarray(init_val, dt), a), axis=axis, keepdims=keepdims,
                where=where, **kwargs)
    if not nan_if_all_nan:
        return out
    # An all-NaN slice gives NaN (the mask is not applied here, as in JAX).
    return jwhere(all(_isnan(a), axis=axis, keepdims=keepdims), _const(a, np.nan), out)


@_jit(static_argnames=("axis", "keepdims"))  # as JAX's
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """min over `axis` ignoring NaNs (NaN for all-NaN slices), as numpy.nanmin."""
    return _nan_reduction(a, "nanmin", min, np.inf, initial is None, axis=axis, out=out,
                          keepdims=keepdims, initial=initial, where=where)


@_jit(static_argnames=("axis", "keepdims"))  # as JAX's
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """max over `axis` ignoring NaNs (NaN for all-NaN slices), as numpy.nanmax."""
    return _nan_reduction(a, "nanmax", max, -np.inf, initial is None, axis=axis, out=out,
                          keepdims=keepdims, initial=initial, where=where)


@_jit(static_argnames=("axis", "dtype", "keepdims"))  # as JAX's
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """sum over `axis` treating NaNs as 0 (numpy.nansum)."""
    dtype = _user_dtype(dtype)
    return _nan_reduction(a, "nansum", sum, 0, False, axis=axis, dtype=dtype, out=out,
                          keepdims=keepdims, initial=initial, where=where)


@_jit(static_argnames=("axis", "dtype", "keepdims"))  # as JAX's
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """prod over `axis` treating NaNs as 1 (numpy.nanprod)."""
    dtype = _user_dtype(dtype)
    return _nan_reduction(a, "nanprod", prod, 1, False, axis=axis, dtype=dtype, out=out,
                          keepdims=keepdims, initial=initial, where=where)


@_jit(static_argnames=("axis", "dtype", "keepdims"))  # as JAX's
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """The mean over `axis` ignoring NaNs (NaN for all-NaN slices)."""
    check_arraylike("nanmean", a)
    _check_where("nanmean", where)
    reject_out("nanmean", out)
    (a,) = promote_dtypes(a)
    if not _is_inexact(a):
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    dt = _user_dtype(dtype) if dtype is not None else get_aval(a).dtype
    count = sum(lax.bitwise_not(_isnan(a)), axis=axis, dtype=dt, keepdims=keepdims, where=where)
    return lax.div(nansum(a, axis, dtype=dt, keepdims=keepdims, where=where), count)


@_jit(static_argnames=("axis", "dtype", "keepdims"))  # as JAX's; `ddof` is traced
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """The variance over `axis` ignoring NaNs (NaN where no degrees of freedom are left),
    about `mean` if given."""
    check_arraylike("nanvar", a)
    _check_where("nanvar", where)
    dtype = _user_dtype(dtype)
    reject_out("nanvar", out)
    (a,) = promote_dtypes(a)
    comp, out_dt = _var_dtypes(get_aval(a).dtype, dtype)
    a = lax_conversions.convert_element_type(a, comp)
    from gpuarr.numpy.ufuncs import subtract
    from gpuarr.numpy.ufuncs import where as jwhere
    if mean is None:
        mean = nanmean(a, axis, comp, keepdims=True, where=where)
    else:
        check_arraylike("nanvar", mean)
        mean = lax_conversions.convert_element_type(mean, comp)
    centered = jwhere(_isnan(a), 0, lax.sub(a, mean))
    sq = _abs2(centered)
    count = sum(lax.bitwise_not(_isnan(a)), axis=axis, keepdims=keepdims, where=where)
    count = subtract(count, ddof)  # promoted: a float ddof is not truncated, as in JAX
    empty = lax.le(count, np.zeros((), get_aval(count).dtype))
    # A plain sum: an infinite mean leaves NaNs in `sq` that must show, as in JAX.
    total = jwhere(empty, np.nan, sum(sq, axis, keepdims=keepdims, where=where))
    divisor = lax_conversions.convert_element_type(jwhere(empty, 1, count), get_aval(total).dtype)
    return lax_conversions.convert_element_type(lax.div(total, divisor), out_dt)


@_jit(static_argnames=("axis", "dtype", "keepdims"))  # as JAX's
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """The standard deviation over `axis` ignoring NaNs (about `mean` if given)."""
    check_arraylike("nanstd", a)
    _check_where("nanstd", where)
    dtype = _user_dtype(dtype)
    reject_out("nanstd", out)
    return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                           mean=mean))


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
        total = lax_shape_ops.full_like(avg, n)
        return (avg, total) if returned else avg
    check_arraylike("average", weights)
    from gpuarr.numpy.arguments import promote_dtypes_inexact
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
        weights = lax_shape_ops.broadcast_in_dim(weights, a_shape, (ax,))
    wsum = sum(weights, axis, keepdims=keepdims)
    avg = lax.div(sum(lax.mul(a, weights), axis, keepdims=keepdims), wsum)
    if returned:
        from gpuarr.numpy.arguments import broadcast_arrays
        return tuple(broadcast_arrays(avg, wsum))
    return avg


# ---------------------------------------------------------------- quantiles

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _check_q_dtype(squash_nans, method, q_dt, a_dt):
    """JAX's errors for a q it cannot compute with: positions are computed in q's dtype."""
    if q_dt == np.bool_:  # JAX fails at q * (n - 1), or at counts - 1 ignoring NaNs
        op = "sub" if squash_nans else "mul"
        raise TypeError(f"{op} does not accept dtype bool at position 0. Accepted dtypes at "
                        "position 0 are subtypes of integer, floating, complexfloating.")
    if not dtypes.is_float(q_dt):
        raise TypeError(f"floor does not accept dtype {q_dt}. Accepted dtypes are subtypes of "
                        "floating.")
    if method == "inverted_cdf" and q_dt != a_dt:  # JAX multiplies q into a's weights unpromoted
        raise TypeError(f"lax.mul requires arguments to have the same dtypes, got {q_dt}, {a_dt}. "
                        "(Tip: jnp.multiply is a similar function that does automatic type "
                        "promotion on inputs).")


@_jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"))  # as JAX's
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None):
    """The q-th quantiles (q in [0, 1]) over `axis`; q's shape leads the result's. `weights`
    (method 'inverted_cdf' only) weigh each element of `a`."""
    _check_quantile_args("quantile", a, q, weights, out, overwrite_input)
    return _quantile(a, q, axis, method, keepdims, False, weights)


@_jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"))  # as JAX's
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
                *, weights=None):
    """quantile ignoring NaNs (NaN for all-NaN slices)."""
    _check_quantile_args("nanquantile", a, q, weights, out, overwrite_input)
    return _quantile(a, q, axis, method, keepdims, True, weights)


def _check_quantile_args(name, a, q, weights, out, overwrite_input):
    check_arraylike(name, a, q)
    if weights is not None:
        check_arraylike(name, weights)
    if overwrite_input or out is not None:
        raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or "
                         "out != None")


def _quantile(a, q, axis, method, keepdims, squash_nans, weights=None):
    """JAX's quantile, step by step: sorted along one axis (the reduced axes moved last and
    merged), the values at the floor and ceiling of q * (n - 1) (of the non-NaN count with
    `squash_nans`) are read and combined by `method`."""
    from gpuarr.lax.sorting import sort, sort_key_val
    from gpuarr.numpy.arguments import promote_dtypes_inexact
    from gpuarr.numpy.ufuncs import where as jwhere
    if method not in _METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' "
                         "or 'inverted_cdf'")
    a, q = ensure_array(a), ensure_array(q)
    if weights is not None:
        if dtypes.is_complex(get_aval(weights).dtype):
            raise ValueError("Weights cannot be complex types.")
        if method != "inverted_cdf":
            raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                      "'inverted_cdf' supports weights.")
        a, weights = promote_dtypes_inexact(a, weights)
        a_shape, w_shape = get_aval(a).shape, get_aval(weights).shape
        if w_shape != a_shape:
            if axis is None:
                raise ValueError("Weights shape must match 'a' shape when axis is None.")
            ax_tuple = tuple(canonicalize_axis(ax, len(a_shape))
                             for ax in (axis if isinstance(axis, tuple) else (axis,)))
            if w_shape != tuple(a_shape[ax] for ax in ax_tuple):
                raise ValueError(f"Weights shape {w_shape} must match reduction axes "
                                 f"{tuple(a_shape[ax] for ax in ax_tuple)}")
            weights = lax_shape_ops.broadcast_in_dim(weights, a_shape, ax_tuple)
    else:
        (a,) = promote_dtypes_inexact(a)
    a_aval = get_aval(a)
    if dtypes.is_complex(a_aval.dtype):
        raise ValueError("quantile does not support complex input, as the operation is poorly "
                         "defined.")
    keepdim = []
    if axis is None:
        if keepdims:
            keepdim = [1] * a_aval.ndim
        a = lax_shape_ops.reshape(a, (a_aval.size,))
        if weights is not None:
            weights = lax_shape_ops.reshape(weights, (a_aval.size,))
        axis = 0
    elif isinstance(axis, tuple):
        nd = a_aval.ndim
        keepdim = list(a_aval.shape)
        axis = tuple(_axes(ax, nd)[0] for ax in axis)
        if len(set(axis)) != len(axis):
            raise ValueError("repeated axis")
        for ax in axis:
            keepdim[ax] = 1
        keep = set(range(nd)) - set(axis)
        # The kept axes first, then the reduced ones merged into one, as JAX permutes them.
        dimensions = list(range(nd))
        for i, s in enumerate(sorted(keep)):
            dimensions[i], dimensions[s] = dimensions[s], dimensions[i]
        kept = tuple(d for i, d in enumerate(a_aval.shape) if i not in axis)
        merged = int(np.prod([d for i, d in enumerate(a_aval.shape) if i in axis]))
        a = lax_shape_ops.reshape(a, kept + (merged,), tuple(dimensions))
        if weights is not None:
            weights = lax_shape_ops.reshape(weights, kept + (merged,), tuple(dimensions))
        axis = len(kept)
    else:
        axis = _axes(axis, a_aval.ndim)[0]

    q_aval = get_aval(q)
    q_shape, q_ndim, q_dt = q_aval.shape, q_aval.ndim, np.dtype(q_aval.dtype)
    if q_ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q_shape}")
    a_shape = get_aval(a).shape
    _check_q_dtype(squash_nans, method, q_dt, a_aval.dtype)
    int_dt = dtypes.default_int_dtype()
    q_orig = q
    if squash_nans:
        a = jwhere(_isnan(a), np.nan, a)  # NaNs made positive, so that they sort last
        if weights is not None:
            a, weights = sort_key_val(a, weights, dimension=axis)
        else:
            a = sort(a, dimension=axis)
        counts = sum(lax.bitwise_not(_isnan(a)), axis=axis, dtype=q_dt, keepdims=keepdims)
        reduced_shape = get_aval(counts).shape
        q = lax_shape_ops.expand_dims(q, tuple(range(q_ndim, len(reduced_shape) + q_ndim)))
        counts = lax_shape_ops.expand_dims(counts, tuple(range(q_ndim)))
        q = lax.mul(q, lax.sub(counts, _const(q, 1)))
        low, high = lax.floor(q), lax.ceil(q)
        high_weight = lax.sub(q, low)
        low_weight = lax.sub(_const(high_weight, 1), high_weight)
        low = lax.max(_const(low, 0), lax.min(low, counts - 1))
        high = lax.max(_const(high, 0), lax.min(high, counts - 1))
        low = lax_conversions.convert_element_type(low, int_dt)
        high = lax_conversions.convert_element_type(high, int_dt)
        out_shape = q_shape + reduced_shape
        index = [lax_shape_ops.broadcasted_iota(int_dt, out_shape, dim + q_ndim)
                 for dim in range(len(reduced_shape))]
        if keepdims:
            index[axis] = low
        else:
            index.insert(axis, low)
        low_value = a[tuple(index)]
        index[axis] = high
        high_value = a[tuple(index)]
    else:
        a = jwhere(any(_isnan(a), axis=axis, keepdims=True), np.nan, a)
        if weights is not None:
            a, weights = sort_key_val(a, weights, dimension=axis)
        else:
            a = sort(a, dimension=axis)
        n = lax_conversions.convert_element_type(a_shape[axis], q_dt)
        q = lax.mul(q, n - 1)
        low, high = lax.floor(q), lax.ceil(q)
        high_weight = lax.sub(q, low)
        low_weight = lax.sub(_const(high_weight, 1), high_weight)
        low = lax_special.clamp(_const(low, 0), low, n - 1)
        high = lax_special.clamp(_const(high, 0), high, n - 1)
        low = lax_conversions.convert_element_type(low, int_dt)
        high = lax_conversions.convert_element_type(high, int_dt)
        slice_sizes = list(a_shape)
        slice_sizes[axis] = 1
        end = len(a_shape) + q_ndim if keepdims else len(a_shape) + q_ndim - 1
        dnums = lax_slicing.GatherDimensionNumbers(
            offset_dims=tuple(range(q_ndim, end)),
            collapsed_slice_dims=() if keepdims else (axis,), start_index_map=(axis,))
        low_value = lax_slicing.gather(a, lax_shape_ops.expand_dims(low, (q_ndim,)), dnums, slice_sizes)
        high_value = lax_slicing.gather(a, lax_shape_ops.expand_dims(high, (q_ndim,)), dnums, slice_sizes)
        if q_ndim == 1:
            low_weight = lax_shape_ops.broadcast_in_dim(low_weight, get_aval(low_value).shape, (0,))
            high_weight = lax_shape_ops.broadcast_in_dim(high_weight, get_aval(high_value).shape, (0,))

    if method == "linear":
        result = lax.add(lax.mul(lax_conversions.convert_element_type(low_value, q_dt), low_weight),
                         lax.mul(lax_conversions.convert_element_type(high_value, q_dt), high_weight))
    elif method == "lower":
        result = low_value
    elif method == "higher":
        result = high_value
    elif method == "nearest":  # ties go to the lower neighbour, as in JAX
        result = lax.select(lax.le(high_weight, _const(high_weight, 0.5)), low_value, high_value)
    elif method == "midpoint":
        result = lax.mul(lax.add(low_value, high_value), _const(low_value, 0.5))
    else:
        result = _inverted_cdf(a, weights, q_orig, axis, keepdims, squash_nans, a_shape)
    if keepdims and keepdim:
        if q_ndim > 0:
            keepdim = [q_shape[0], *keepdim]
        result = lax_shape_ops.reshape(result, tuple(keepdim))
    return lax_conversions.convert_element_type(result, get_aval(a).dtype)


def _inverted_cdf(a, weights, q, axis, keepdims, squash_nans, a_shape):
    """The smallest sorted value whose cumulative weight reaches q times the total (NumPy's
    'inverted_cdf'), for `a` sorted along `axis` with its `weights` alongside; NaN where a
    weight is negative or NaN, and where the data has a NaN (all NaNs with `squash_nans`)."""
    from gpuarr.numpy.selection import cumsum, take_along_axis
    from gpuarr.numpy.ufuncs import where as jwhere
    q_aval = get_aval(q)
    q_ndim, q_dt = q_aval.ndim, np.dtype(q_aval.dtype)
    int_dt = dtypes.default_int_dtype()
    if weights is None:
        weights = lax_shape_ops.full_like(a, 1.0)
    zeros = lax_shape_ops.full_like(weights, 0)
    bad_weights = lax.bitwise_or(lax.lt(weights, zeros), _isnan(weights))
    nan_data = _isnan(a)
    clean_weights = lax.select(lax.bitwise_or(bad_weights, nan_data), zeros, weights)
    cum_weights = cumsum(clean_weights, axis=axis)
    total_weight = lax_slicing.index_in_dim(cum_weights, -1, axis=axis, keepdims=keepdims)
    tw_f = lax_shape_ops.expand_dims(total_weight, tuple(range(q_ndim)))
    q_f = lax_shape_ops.reshape(q, q_aval.shape + (1,) * get_aval(total_weight).ndim)
    target_w = lax.mul(q_f, tw_f)
    if not keepdims:
        target_w = lax_shape_ops.expand_dims(target_w, (axis + q_ndim,))
    cw_f = lax_shape_ops.expand_dims(cum_weights, tuple(range(q_ndim)))
    is_less = lax.lt(cw_f, target_w)
    idx = sum(lax_conversions.convert_element_type(is_less, int_dt), axis=axis + q_ndim, keepdims=keepdims)
    if squash_nans:
        valid_counts = sum(lax.bitwise_not(nan_data), axis=axis, dtype=q_dt, keepdims=keepdims)
    else:
        valid_counts = lax_shape_ops.full_like(total_weight, a_shape[axis], dtype=q_dt)
    limit = lax.sub(valid_counts, _const(valid_counts, 1))
    max_idx = lax_conversions.convert_element_type(limit, int_dt)
    max_idx_f = lax_shape_ops.expand_dims(max_idx, tuple(range(q_ndim)))
    max_idx_f = lax_conversions.convert_element_type(max_idx_f, get_aval(idx).dtype)
    idx = lax.max(_const(idx, 0), lax.min(idx, max_idx_f))
    idx_take = lax_shape_ops.squeeze(idx, (q_ndim + axis,)) if keepdims else idx
    if q_ndim == 0:
        result = take_along_axis(a, lax_shape_ops.expand_dims(idx_take, (axis,)), axis=axis)
        result = lax_shape_ops.squeeze(result, (axis,))
    else:
        ndim = get_aval(idx_take).ndim
        perm = [*range(q_ndim, q_ndim + axis), *range(q_ndim), *range(q_ndim + axis, ndim)]
        result = take_along_axis(a, lax_shape_ops.transpose(idx_take, perm), axis=axis)
        result = lax_shape_ops.transpose(result, [perm.index(i) for i in range(len(perm))])
    if keepdims:
        result = lax_shape_ops.expand_dims(result, (q_ndim + axis,))
    all_nan_data = lax.eq(valid_counts, lax_shape_ops.full_like(valid_counts, 0))
    any_bad_weight = any(bad_weights, axis=axis, keepdims=keepdims)
    if squash_nans:
        force_nan = lax.bitwise_or(any_bad_weight, all_nan_data)
    else:
        force_nan = lax.bitwise_or(any_bad_weight, any(nan_data, axis=axis, keepdims=keepdims))
    force_nan_f = lax_shape_ops.expand_dims(force_nan, tuple(range(q_ndim)))
    return jwhere(force_nan_f, lax_shape_ops.full_like(result, np.nan), result)


def _percent(name, q):
    check_arraylike(name, q)
    from gpuarr.numpy.arguments import promote_dtypes_inexact
    (q,) = promote_dtypes_inexact(q)
    return lax.div(q, _const(q, 100))  # q / 100, of q's dtype and weak type


@_jit(static_argnames=("axis", "overwrite_input", "keepdims", "method", "out_sharding"))
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
               *, weights=None, out_sharding=None):
    """The q-th percentiles (q in [0, 100]) over `axis` (a jit calling quantile's, as JAX's)."""
    check_arraylike("percentile", a, q)
    if weights is not None:
        check_arraylike("percentile", weights)
    q = _percent("percentile", q)
    lax_arguments.check_no_sharding("numpy.percentile", out_sharding)
    return quantile(a, q, axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                    keepdims=keepdims, weights=weights)


@_jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"))  # as JAX's
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
                  *, weights=None):
    """percentile ignoring NaNs (a jit calling nanquantile's, as JAX's)."""
    check_arraylike("nanpercentile", a, q)
    if weights is not None:
        check_arraylike("nanpercentile", weights)
    q = _percent("nanpercentile", q)
    return nanquantile(a, q, axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                       keepdims=keepdims, weights=weights)


@_jit(static_argnames=("axis", "overwrite_input", "keepdims"))  # as JAX's
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over `axis` (NaN if a slice has a NaN): the midpoint of the middle values,
    as JAX computes it."""
    check_arraylike("median", a)
    return quantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                    keepdims=keepdims, method="midpoint")


@_jit(static_argnames=("axis", "overwrite_input", "keepdims"))  # as JAX's
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over `axis` ignoring NaNs (the midpoint of the middle values, as JAX)."""
    check_arraylike("nanmedian", a)
    return nanquantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                       keepdims=keepdims, method="midpoint")
