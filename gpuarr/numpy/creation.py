"""Array creation: array, asarray, zeros, ones, full, empty, their _like forms, arange, linspace, eye."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes, lax
from gpuarr.array import Array
from gpuarr.core import Tracer, current_trace, get_aval
from gpuarr.dispatch import eval_trace, to_device_array
from gpuarr.numpy._util import check_arraylike

_SCALARS = (bool, int, float, complex)


def _user_dtype(dtype, fun_name):
    if dtype is None:
        return None
    try:
        return dtypes.canonicalize_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{fun_name}: invalid dtype {dtype!r}: {e}") from None


def array(object, dtype=None, copy=True, order="K", ndmin=0):
    """Create an Array from array-like data (nested lists/tuples of numbers or arrays allowed)."""
    dt = _user_dtype(dtype, "array")
    if isinstance(object, (Array, Tracer)):
        out = object if dt is None else lax.convert_element_type(object, dt)
        return _ndmin(out, ndmin)
    if isinstance(object, (list, tuple)) and _has_tracers(object):
        from gpuarr.numpy.manipulation import stack
        out = stack([array(o) for o in object])
        return _ndmin(out if dt is None else out.astype(dt), ndmin)
    if hasattr(object, "__jax_array__"):
        return array(object.__jax_array__(), dtype, copy, order, ndmin)
    if isinstance(object, (list, tuple)):
        object = [np.asarray(o) if isinstance(o, Array) else o for o in object]
    weak = dt is None and isinstance(object, _SCALARS) and type(object) is not bool
    host = np.array(object, dtype=dt)
    if host.dtype == object_dtype:
        raise TypeError(f"Unexpected input type for array: {type(object).__name__} with "
                        "ragged or non-numeric content.")
    if dt is None:
        host = host.astype(dtypes.canonicalize_dtype(host.dtype), copy=False)
    return _ndmin(to_device_array(host, weak_type=weak), ndmin)


object_dtype = np.dtype(object)


def _has_tracers(seq):
    for o in seq:
        if isinstance(o, Tracer):
            return True
        if isinstance(o, (list, tuple)) and _has_tracers(o):
            return True
    return False


def _ndmin(x, ndmin):
    nd = get_aval(x).ndim
    if ndmin > nd:
        return lax.reshape(x, (1,) * (ndmin - nd) + get_aval(x).shape)
    return x


def asarray(a, dtype=None, order=None, copy=None):
    """Convert to an Array without copying when `a` already is one of the right dtype."""
    if isinstance(a, (Array, Tracer)) and dtype is None:
        return a
    return array(a, dtype=dtype, copy=False if copy is None else copy)


def _fill(shape, value, dtype, fun_name):
    shape = _shape_arg(shape, fun_name)
    dt = _user_dtype(dtype, fun_name)
    if dt is None:
        dt = dtypes.default_float_dtype()
    return lax.full(shape, value, dt)


def _shape_arg(shape, fun_name):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(operator_index(d)) for d in shape)
    except TypeError as e:
        raise TypeError(f"{fun_name}: shape must be an int or a sequence of ints, got {shape!r}. "
                        f"({e})") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{fun_name}: negative dimensions are not allowed, got shape {shape}")
    return shape


def operator_index(d):
    import operator
    return operator.index(d)


def zeros(shape, dtype=None, device=None):
    """An array of zeros (default dtype float32, float64 under x64)."""
    return _fill(shape, 0, dtype, "zeros")


def ones(shape, dtype=None, device=None):
    """An array of ones."""
    return _fill(shape, 1, dtype, "ones")


def empty(shape, dtype=None, device=None):
    """Like zeros: arrays are immutable, so uninitialised memory is never exposed."""
    return _fill(shape, 0, dtype, "empty")


def full(shape, fill_value, dtype=None, device=None):
    """An array of `shape` filled with `fill_value` (which may be an array to broadcast)."""
    shape = _shape_arg(shape, "full")
    dt = _user_dtype(dtype, "full")
    if np.ndim(fill_value) if not isinstance(fill_value, (Array, Tracer)) else get_aval(fill_value).ndim:
        from gpuarr.numpy._util import broadcast_to
        fv = asarray(fill_value, dtype=dt)
        return broadcast_to(fv, shape)
    if dt is None:
        dt = dtypes.dtype(fill_value, canonicalize=True)
    return lax.full(shape, fill_value, dt)


def _like(a, dtype, shape):
    aval = get_aval(a) if isinstance(a, (Array, Tracer)) else get_aval(np.asarray(a))
    return (aval.shape if shape is None else _shape_arg(shape, "like"),
            aval.dtype if dtype is None else dtype)


def zeros_like(a, dtype=None, shape=None, device=None):
    """Zeros with the shape and dtype of `a`."""
    s, d = _like(a, dtype, shape)
    return lax.full(s, 0, d)


def ones_like(a, dtype=None, shape=None, device=None):
    """Ones with the shape and dtype of `a`."""
    s, d = _like(a, dtype, shape)
    return lax.full(s, 1, d)


def empty_like(a, dtype=None, shape=None, device=None):
    """Zeros with the shape and dtype of `a`."""
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None, device=None):
    """`fill_value` with the shape and dtype of `a`."""
    s, d = _like(a, dtype, shape)
    return full(s, fill_value, d)


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in [start, stop); the bounds must be concrete."""
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, Tracer):
            from gpuarr.errors import ConcretizationTypeError
            raise ConcretizationTypeError(v, f"It arose in the jnp.arange argument '{name}'. "
                                          "arange needs concrete bounds; mark them static.")
    dt = _user_dtype(dtype, "arange")
    vals = [np.asarray(v) for v in (start, stop, step) if v is not None]
    if dt is None:
        dt = dtypes.canonicalize_dtype(np.result_type(*vals))
        if dt == np.bool_:
            dt = dtypes.default_int_dtype()
    if stop is None and step is None and current_trace() is not eval_trace:
        return lax.iota(dt, int(np.ceil(float(np.asarray(start)))))
    host = np.arange(start, stop, step)
    return to_device_array(host.astype(dt), weak_type=False)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """`num` evenly spaced samples over [start, stop]."""
    from gpuarr.numpy import ufuncs
    from gpuarr.numpy._util import promote_dtypes_inexact
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    dt = _user_dtype(dtype, "linspace")
    start, stop = promote_dtypes_inexact(asarray(start), asarray(stop))
    compute_dt = get_aval(start).dtype
    div = (num - 1) if endpoint else num
    steps = lax.iota(compute_dt, num)
    s_shape = get_aval(start).shape
    delta = ufuncs.subtract(stop, start)
    if s_shape:
        steps = lax.broadcast_in_dim(steps, (num,) + s_shape, (0,))
    step = ufuncs.true_divide(delta, div) if div > 0 else delta
    out = ufuncs.add(start, ufuncs.multiply(steps, step)) if div > 0 else \
        lax.broadcast_in_dim(start, (num,) + s_shape, tuple(range(1, len(s_shape) + 1)))
    if endpoint and num > 1:
        from gpuarr.numpy.indexing import _set_last
        out = _set_last(out, stop)
    if axis != 0 and s_shape:
        from gpuarr.numpy.manipulation import moveaxis
        out = moveaxis(out, 0, axis)
    out = out.astype(dt) if dt is not None else out
    return (out, step) if retstep else out


def eye(N, M=None, k=0, dtype=None):
    """A 2-D array with ones on the k-th diagonal."""
    M = N if M is None else M
    dt = _user_dtype(dtype, "eye") or dtypes.default_float_dtype()
    rows = lax.broadcasted_iota(np.int32, (N, M), 0)
    cols = lax.broadcasted_iota(np.int32, (N, M), 1)
    return lax.convert_element_type(lax.eq(lax.add(rows, np.int32(k)), cols), dt)


def identity(n, dtype=None):
    """The n x n identity matrix."""
    return eye(n, dtype=dtype)


def copy(a, order=None):
    """A copy of `a` (arrays are immutable, so this is the same values)."""
    check_arraylike("copy", a)
    return asarray(a) if not isinstance(a, np.ndarray) else asarray(a.copy())
