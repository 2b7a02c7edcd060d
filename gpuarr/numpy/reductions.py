"""Reductions with axis / keepdims / where: sum, prod, max, min, mean, var, std, all, any, argmax."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes, lax
from gpuarr.core import get_aval
from gpuarr.numpy._util import canonicalize_axes, canonicalize_axis, check_arraylike, promote_dtypes


def _keepdims(out, shape, axes):
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return lax.reshape(out, kept)


def _reduction(name, prim_fn, identity, upcast_bool=False, dtype_arg=True):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        check_arraylike(name, a)
        if out is not None:
            raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported: arrays "
                                      "are immutable. Use the return value instead.")
        (a,) = promote_dtypes(a)
        aval = get_aval(a)
        dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else aval.dtype
        if dtype is None and upcast_bool and (aval.dtype == np.bool_ or
                                              (dtypes.is_int(aval.dtype) and aval.dtype.itemsize < 4)):
            dt = dtypes.default_uint_dtype() if dtypes.is_unsigned(aval.dtype) else dtypes.default_int_dtype()
        if dt != aval.dtype:
            a = lax.convert_element_type(a, dt)
        axes = canonicalize_axes(axis, aval.ndim)
        if where is not None:
            from gpuarr.numpy.ufuncs import where as jwhere
            a = jwhere(where, a, _identity_value(identity, dt, name))
        elif identity is None and any(aval.shape[i] == 0 for i in axes) and initial is None:
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        result = prim_fn(a, axes)
        if initial is not None:
            result = _combine_initial(name, result, initial, dt)
        if keepdims:
            result = _keepdims(result, aval.shape, axes)
        return result
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Reduce with {name} over `axis` (all axes by default), as numpy.{name}."
    return fn


def _identity_value(identity, dt, name):
    if identity is None:
        raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                         "where mask one has to specify 'initial'")
    if identity == "max":
        return np.asarray(-np.inf if dtypes.is_float(dt) else (dtypes.iinfo(dt).min if dt != np.bool_ else False), dt)[()]
    if identity == "min":
        return np.asarray(np.inf if dtypes.is_float(dt) else (dtypes.iinfo(dt).max if dt != np.bool_ else True), dt)[()]
    return np.asarray(identity, dt)[()]


def _combine_initial(name, result, initial, dt):
    init = np.asarray(initial, dt)[()]
    if name in ("sum",):
        return lax.add(result, init)
    if name in ("prod",):
        return lax.mul(result, init)
    if name in ("max", "amax"):
        return lax.max(result, init)
    if name in ("min", "amin"):
        return lax.min(result, init)
    return result


def _bool_reduce(prim_fn):
    def reduce(a, axes):
        if get_aval(a).dtype != np.bool_:
            a = lax.ne(a, np.zeros((), get_aval(a).dtype)[()])
        return prim_fn(a, axes)
    return reduce


sum = _reduction("sum", lax.reduce_sum, 0, upcast_bool=True)
prod = _reduction("prod", lax.reduce_prod, 1, upcast_bool=True)
max = _reduction("max", lax.reduce_max, None)
min = _reduction("min", lax.reduce_min, None)
amax, amin = max, min
all = _reduction("all", _bool_reduce(lax.reduce_and), True)
any = _reduction("any", _bool_reduce(lax.reduce_or), False)


def _count(aval, axes):
    n = 1
    for i in axes:
        n *= aval.shape[i]
    return n


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """The arithmetic mean over `axis` (integers average in the default float dtype)."""
    check_arraylike("mean", a)
    (a,) = promote_dtypes(a)
    aval = get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.to_inexact_dtype(aval.dtype)
    total = sum(lax.convert_element_type(a, dt) if aval.dtype != dt else a, axis=axes,
                keepdims=keepdims, where=where)
    if where is None:
        count = np.asarray(_count(aval, axes), dt)[()]
    else:
        from gpuarr.numpy._util import broadcast_to
        count = sum(lax.convert_element_type(broadcast_to(where, aval.shape), dt), axis=axes,
                    keepdims=keepdims)
    return lax.div(total, count)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """The variance over `axis` with `ddof` degrees of freedom removed."""
    check_arraylike("var", a)
    if correction is not None:
        ddof = correction
    (a,) = promote_dtypes(a)
    aval = get_aval(a)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.to_inexact_dtype(aval.dtype)
    a = lax.convert_element_type(a, dt) if aval.dtype != dt else a
    axes = canonicalize_axes(axis, aval.ndim)
    centered = lax.sub(a, mean(a, axes, keepdims=True, where=where))
    sq = lax.mul(centered, centered)
    total = sum(sq, axis=axes, keepdims=keepdims, where=where)
    if where is None:
        n = _count(aval, axes)
        return lax.div(total, np.asarray(n - ddof, dt)[()])
    from gpuarr.numpy._util import broadcast_to
    n = sum(lax.convert_element_type(broadcast_to(where, aval.shape), dt), axis=axes, keepdims=keepdims)
    return lax.div(total, lax.sub(n, np.asarray(ddof, dt)[()]))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """The standard deviation over `axis`."""
    return lax.sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction))


def _arg_reduce(name, lax_fn):
    def fn(a, axis=None, out=None, keepdims=False):
        check_arraylike(name, a)
        (a,) = promote_dtypes(a)
        aval = get_aval(a)
        if axis is None:
            if aval.size == 0:
                raise ValueError(f"attempt to get {name} of an empty sequence")
            flat = lax.reshape(a, (aval.size,))
            res = lax_fn(flat, 0, dtypes.default_int_dtype())
            return lax.reshape(res, (1,) * aval.ndim) if keepdims else res
        ax = canonicalize_axis(axis, aval.ndim)
        if aval.shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        res = lax_fn(a, ax, dtypes.default_int_dtype())
        return _keepdims(res, aval.shape, (ax,)) if keepdims else res
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Index of the {name[3:]}imum along `axis` (first occurrence), as numpy.{name}."
    return fn


argmax = _arg_reduce("argmax", lax.argmax)
argmin = _arg_reduce("argmin", lax.argmin)
