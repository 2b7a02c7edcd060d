"""Array creation: array, asarray, zeros, ones, full, empty, their _like forms, arange, linspace, eye
(and copyto, which immutable arrays refuse)."""
from __future__ import annotations

import numpy as np

from gpuarr import dlpack, dtypes
from gpuarr.array import Array
from gpuarr.core import ShapedArray, Tracer, current_trace, get_aval
from gpuarr.dispatch import eval_trace, to_device_array
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import arguments as lax_arguments
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax.platform_dependent import platform_dependent
from gpuarr.numpy.arguments import check_arraylike, static_hashable

_SCALARS = (bool, int, float, complex)


def _named_jit(name, **options):
    """A jit decorator whose program is named `name` (a public function's, as JAX names it)."""
    def wrap(fun):
        fun.__name__ = fun.__qualname__ = name
        return _jit(fun, **options)
    return wrap


def _user_dtype(dtype, fun_name):
    if dtype is None:
        return None
    try:
        dt = dtypes.canonicalize_dtype(dtype)
    except TypeError:
        raise TypeError(f"data type {dtype!r} not understood") from None
    if dt.kind in "OUSMm" or dt.type is np.void:  # objects, strings, records, dates
        raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype {dtype} "
                        f"in {fun_name}")
    return dt


def _placed(result, name, device, out_sharding=None):
    """`result` put on `device` when one is given (as device_put); gpuarr has no shardings."""
    lax_arguments.check_no_sharding(f"numpy.{name}", out_sharding)
    if device is None:
        return result
    from gpuarr.device_api import device_put
    return device_put(result, device)


def _array_positional(args, copy, order, ndmin):
    """copy, order and ndmin passed to `array` by position (deprecated in JAX, still accepted)."""
    if len(args) > 3:
        raise TypeError(f"array() takes at most 5 positional arguments but {len(args) + 2} were "
                        "given")
    for i, name in enumerate(["copy", "order", "ndmin"]):
        if i < len(args) and [copy, order, ndmin][i] != [True, "K", 0][i]:
            raise TypeError(f"array() got multiple values for argument '{name}'")
    import warnings
    warnings.warn("Passing the copy, order, and ndmin arguments to jnp.array positionally is "
                  "deprecated. Use keyword arguments instead.", DeprecationWarning, stacklevel=3)
    return (list(args) + [copy, order, ndmin][len(args):])[:3]


def array(object, dtype=None, *args, copy=True, order="K", ndmin=0, device=None,
          out_sharding=None):
    """Create an Array from array-like data (nested lists/tuples of numbers or arrays allowed),
    on `device` if one is given."""
    if args:
        copy, order, ndmin = _array_positional(args, copy, order, ndmin)
    if device is not None or out_sharding is not None:
        return _placed(array(object, dtype, copy=copy, order=order, ndmin=ndmin), "array", device,
                       out_sharding)
    dt = _user_dtype(dtype, "array")
    if isinstance(object, (Array, Tracer)):
        out = lax.copy_p.bind(object) if copy else object  # a new buffer, as JAX's `copy`
        out = out if dt is None else lax_conversions.convert_element_type(out, dt)
        return _ndmin(out, ndmin)
    if isinstance(object, (list, tuple)) and _has_tracers(object):
        # As JAX: the elements in the leaves' common dtype, each given a leading axis and
        # concatenated (in groups of 16, which compile faster than one wide concatenation).
        if dt is None:
            dt = dtypes.result_type(*_leaves(object))
        parts = [lax_shape_ops.expand_dims(array(o, dt, copy=False), (0,)) for o in object]
        while len(parts) > 16:
            parts = [lax.concatenate(parts[i:i + 16], 0) for i in range(0, len(parts), 16)]
        return _ndmin(lax_conversions.convert_element_type(lax.concatenate(parts, 0), dt), ndmin)
    if hasattr(object, "__jax_array__"):
        return array(object.__jax_array__(), dtype, copy=copy, order=order, ndmin=ndmin)
    if dlpack.is_gpu_array(object):  # CuPy arrays, CUDA PyTorch tensors: shared, not copied
        return array(dlpack.from_dlpack(object, copy=copy), dtype, copy=False, order=order,
                     ndmin=ndmin)
    if isinstance(object, (list, tuple)):
        object = [np.asarray(o) if type(o) is Array else o for o in object]
    # Python numbers are weak; NumPy scalars (np.float64 subclasses float) are not.
    weak = dt is None and type(object) in (int, float, complex)
    if object is None:
        raise ValueError("None is not a valid value for jnp.array")
    host = np.array(object, dtype=dt)
    if not (dtypes.is_bool(host.dtype) or dtypes.is_int(host.dtype) or dtypes.is_inexact(host.dtype)):
        # strings, bytes, objects, records: JAX names the first such value
        first = host.flat[0] if host.size else object
        raise TypeError(f"Value '{first}' with dtype {host.dtype} is not a valid gpuarr array type. "
                        "Only arrays of numeric types are supported by gpuarr.")
    if dt is None:
        canonical = dtypes.canonicalize_dtype(host.dtype)
        if canonical != host.dtype and host.dtype.kind in "iu" and isinstance(object, (int, list, tuple)):
            _check_python_ints_fit(host, np.dtype(dtypes.default_int_dtype()))
        host = host.astype(canonical, copy=False)
    return _ndmin(to_device_array(host, weak_type=weak), ndmin)


def _check_python_ints_fit(host, dtype):
    """Python ints beyond the default integer type are an OverflowError, as in JAX (NumPy
    integer arrays wrap when narrowed instead, as they do in JAX)."""
    info = np.iinfo(dtype)
    if host.size and (host.min() < info.min or host.max() > info.max):
        bad = host.max() if host.max() > info.max else host.min()
        raise OverflowError(f"Python int {int(bad)} too large to convert to {dtype.name}. "
                            "Enable 64-bit types (jax_enable_x64) or pass a smaller value.")


object_dtype = np.dtype(object)


def _leaves(seq):
    for o in seq:
        if isinstance(o, (list, tuple)):
            yield from _leaves(o)
        else:
            yield o


def _has_tracers(seq):
    for o in seq:
        if isinstance(o, Tracer):
            return True
        if isinstance(o, (list, tuple)) and _has_tracers(o):
            return True
    return False


def _ndmin(x, ndmin):
    nd = get_aval(x).ndim
    if ndmin > nd:  # leading axes, as JAX's expand_dims
        return lax_shape_ops.expand_dims(x, tuple(range(ndmin - nd)))
    return x


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
    """Convert to an Array without copying when `a` already is one of the right dtype (on
    `device` if one is given)."""
    if device is not None or out_sharding is not None:
        return _placed(asarray(a, dtype, order, copy=copy), "asarray", device, out_sharding)
    if isinstance(a, (Array, Tracer)) and dtype is None:
        return a
    return array(a, dtype=dtype, copy=False if copy is None else copy)


def _fill(shape, value, dtype, fun_name):
    shape = _shape_arg(shape, fun_name)
    dt = _user_dtype(dtype, fun_name)
    if dt is None:
        dt = dtypes.default_float_dtype()
    return lax_shape_ops.full(shape, value, dt)


def _shape_arg(shape, fun_name):
    if np.ndim(shape) == 0:
        shape = (shape,)
    try:
        shape = tuple(int(operator_index(d)) for d in shape)
    except TypeError:
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{tuple(shape)}.") from None
    if any(d < 0 for d in shape):  # JAX's error, from the broadcast that fills the array
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{shape}.")
    return shape


def operator_index(d):
    import operator
    return operator.index(d)


def zeros(shape, dtype=None, *, device=None, out_sharding=None):
    """An array of zeros (default dtype float32, float64 under x64)."""
    if device is not None or out_sharding is not None:
        return _placed(zeros(shape, dtype), "zeros", device, out_sharding)
    return _fill(shape, 0, dtype, "zeros")


def ones(shape, dtype=None, *, device=None, out_sharding=None):
    """An array of ones."""
    if device is not None or out_sharding is not None:
        return _placed(ones(shape, dtype), "ones", device, out_sharding)
    return _fill(shape, 1, dtype, "ones")


def empty(shape, dtype=None, *, device=None, out_sharding=None):
    """Like zeros: arrays are immutable, so uninitialised memory is never exposed."""
    if device is not None or out_sharding is not None:
        return _placed(empty(shape, dtype), "empty", device, out_sharding)
    return _fill(shape, 0, dtype, "empty")


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
    """An array of `shape` filled with `fill_value` (which may be an array to broadcast)."""
    if device is not None or out_sharding is not None:
        return _placed(full(shape, fill_value, dtype), "full", device, out_sharding)
    shape = _shape_arg(shape, "full")
    dt = _user_dtype(dtype, "full")
    if np.ndim(fill_value) if not isinstance(fill_value, (Array, Tracer)) else get_aval(fill_value).ndim:
        from gpuarr.numpy.arguments import broadcast_to
        fv = asarray(fill_value, dtype=dt)
        return broadcast_to(fv, shape)
    # Without a dtype, a Python scalar fill gives a weakly typed array, as in JAX.
    return lax_shape_ops.full(shape, fill_value, dt)


def _like(a, dtype, shape):
    if isinstance(a, (Array, Tracer, np.ndarray, np.generic)) or not hasattr(a, "dtype"):
        aval = get_aval(a) if isinstance(a, (Array, Tracer)) else get_aval(np.asarray(a))
    else:  # a shaped object (ShapeDtypeStruct, say) gives its shape and dtype
        aval = ShapedArray(tuple(a.shape), dtypes.canonicalize_dtype(a.dtype))
    return (aval.shape if shape is None else _shape_arg(shape, "like"),
            aval.dtype if dtype is None else dtype)


def _keep_weak(out, a, dtype):
    # Without a dtype the result keeps the weak type of `a` (Python scalars are weak), as in JAX.
    if dtype is None and dtypes.is_weakly_typed(a):
        return lax_conversions._convert_weak(out, get_aval(out).dtype, True)
    return out


def _check_like(name, a):
    # Shaped objects (ShapeDtypeStruct, say) pass as JAX lets them; lists do not.
    if not (hasattr(a, "dtype") and hasattr(a, "shape")):
        check_arraylike(name, a)


def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    """Zeros with the shape and dtype of `a`."""
    if device is not None or out_sharding is not None:
        return _placed(zeros_like(a, dtype, shape), "zeros_like", device, out_sharding)
    _check_like("zeros_like", a)
    s, d = _like(a, _user_dtype(dtype, "zeros_like"), shape)
    return _keep_weak(lax_shape_ops.full(s, 0, d), a, dtype)


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    """Ones with the shape and dtype of `a`."""
    if device is not None or out_sharding is not None:
        return _placed(ones_like(a, dtype, shape), "ones_like", device, out_sharding)
    _check_like("ones_like", a)
    s, d = _like(a, _user_dtype(dtype, "ones_like"), shape)
    return _keep_weak(lax_shape_ops.full(s, 1, d), a, dtype)


def empty_like(prototype, dtype=None, shape=None, *, device=None):
    """Zeros with the shape and dtype of `prototype`."""
    if device is not None:
        return _placed(empty_like(prototype, dtype, shape), "empty_like", device)
    # JAX's empty_like checks its arguments under the name ones_like.
    _check_like("ones_like", prototype)
    s, d = _like(prototype, _user_dtype(dtype, "ones_like"), shape)
    return _keep_weak(lax_shape_ops.full(s, 0, d), prototype, dtype)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
    """`fill_value` with the shape and dtype of `a`."""
    if device is not None or out_sharding is not None:
        return _placed(full_like(a, fill_value, dtype, shape), "full_like", device, out_sharding)
    # Shaped objects (ShapeDtypeStruct, say) pass, as in JAX; lists do not.
    check_arraylike("full_like", 0 if hasattr(a, "dtype") and hasattr(a, "shape") else a,
                    fill_value)
    s, d = _like(a, _user_dtype(dtype, "full_like"), shape)
    return _keep_weak(full(s, fill_value, d), a, dtype)


def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
    """Evenly spaced values in [start, stop); the bounds must be concrete."""
    if device is not None or out_sharding is not None:
        return _placed(arange(start, stop, step, dtype), "arange", device, out_sharding)
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, Tracer):
            from gpuarr.errors import ConcretizationTypeError
            raise ConcretizationTypeError(v, f"It arose in the jnp.arange argument '{name}'. "
                                          "arange needs concrete bounds; mark them static.")
    _check_arange_scalars(start, stop, step)
    dt = _user_dtype(dtype, "arange")
    vals = [np.asarray(v) for v in (start, stop, step) if v is not None]
    if dt is None:
        dt = dtypes.canonicalize_dtype(np.result_type(*vals))
    if dt == np.bool_:  # JAX's iota refuses bool, given or inferred
        raise TypeError("iota does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")
    if dt in dtypes.NARROW_DTYPES:
        return _narrow_arange(start, stop, step, dt)
    if current_trace() is not eval_trace:  # traced: JAX's program (iotas, not constants)
        return _traced_arange(start, stop, step, dt)
    host = np.arange(start, stop, step)
    return to_device_array(host.astype(dt), weak_type=False)


def _check_arange_scalars(start, stop, step):
    """JAX's errors for array and complex bounds (a lone bound is `stop`)."""
    names = ("stop", "start", "step") if stop is None else ("start", "stop", "step")
    for name, v in zip(names, (start, stop, step)):
        if v is not None and np.ndim(v) != 0:
            raise ValueError(f"jax.numpy.arange: arguments must be scalars; got {name}={v}")
    if any(v is not None and np.iscomplexobj(v) for v in (start, stop, step)):
        raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported "
                         "starting in JAX v0.10.0.")


def _traced_arange(start, stop, step, dt):
    """arange built from an iota as JAX builds it under a trace (half floats step in float32)."""
    half = dtypes.is_float(dt) and dt.itemsize < 4
    return _iota_arange(start, stop, step, dt, np.dtype(np.float32) if half else dt)


def _narrow_arange(start, stop, step, dt):
    """arange in a narrow type (float8_*, int4, ...) built as JAX builds it, so its values round
    as the type rounds them: an iota in that type offset by `start`, or with a `step`, float32
    (integers: the type itself) values start + step * i converted to it."""
    return _iota_arange(start, stop, step, dt, np.dtype(np.float32) if dtypes.is_float(dt) else dt)


def _iota_arange(start, stop, step, dt, work):
    """start + step * iota, computed in `work` and converted to `dt` (with no step: an iota in
    `dt` offset by `start`)."""
    start, stop, step = (None if v is None else np.asarray(v)[()] for v in (start, stop, step))
    if stop is None:
        start, stop = 0, start
    if step is not None:
        size = max(0, int(np.ceil((stop - start) / step)))
        values = lax.add(lax_conversions.convert_element_type(start, work),
                         lax.mul(lax_conversions.convert_element_type(step, work), lax_shape_ops.iota(work,
                                                                                                      size)))
        return lax_conversions.convert_element_type(values, dt)
    if start == 0:
        return lax_shape_ops.iota(dt, max(0, int(np.ceil(stop))))
    return lax.add(lax_conversions.convert_element_type(start, dt),
                   lax_shape_ops.iota(dt, max(0, int(np.ceil(stop - start)))))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """`num` evenly spaced samples over [start, stop]."""
    if device is not None:
        return _placed(linspace(start, stop, num, endpoint, retstep, dtype, axis), "linspace",
                       device)
    num = operator_index(num)  # a float count is JAX's TypeError
    axis = operator_index(axis)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_arraylike("linspace", start, stop)
    dt = _user_dtype(dtype, "linspace")
    # The samples' position among the bounds' dimensions, refusing what JAX would misshape.
    b = len(np.broadcast_shapes(np.shape(start), np.shape(stop)))
    _linspace_axis(axis, b, num)
    return _linspace(start, stop, num, endpoint, retstep, dt, axis)


def _inexact_dtype(dtype, start, stop):
    """The result dtype (given, or the bounds' promoted to inexact) and the inexact one the
    samples are computed in, as JAX picks them."""
    if dtype is None:
        dtype = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
    return dtype, dtypes.to_inexact_dtype(dtype)


@_named_jit("_linspace", static_argnames=("num", "endpoint", "retstep", "dtype", "axis"))
def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
    """linspace's body, JAX's jit: (1 - t) * start + t * stop, with the endpoint appended."""
    from gpuarr.numpy.arguments import broadcast_to, canonicalize_axis
    from gpuarr.numpy.ufuncs import floor
    start, stop = asarray(start), asarray(stop)
    dtype, compute_dt = _inexact_dtype(dtype, start, stop)
    start = lax_conversions.convert_element_type(start, compute_dt)
    stop = lax_conversions.convert_element_type(stop, compute_dt)
    bounds_shape = list(np.broadcast_shapes(get_aval(start).shape, get_aval(stop).shape))
    b_start, b_stop = broadcast_to(start, bounds_shape), broadcast_to(stop, bounds_shape)
    axis = len(bounds_shape) + axis + 1 if axis < 0 else axis
    bounds_shape.insert(axis, 1)
    div = (num - 1) if endpoint else num
    if num > 1:
        delta = lax_conversions.convert_element_type(stop - start, compute_dt) / asarray(div, compute_dt)
        iota_shape = [1] * len(bounds_shape)
        iota_shape[axis] = div
        real_dt = dtypes.finfo(compute_dt).dtype
        step = lax_shape_ops.iota(real_dt, div).reshape(iota_shape) / asarray(div, real_dt)
        step = lax_conversions.convert_element_type(step, compute_dt)
        out = b_start.reshape(bounds_shape) * (1 - step) + b_stop.reshape(bounds_shape) * step
        if endpoint:
            out = lax.concatenate([out, lax_shape_ops.expand_dims(b_stop, (axis,))],
                                  canonicalize_axis(axis, get_aval(out).ndim))
    elif num == 1:
        delta = asarray(np.nan if endpoint else stop - start, dtype=compute_dt)
        out = b_start.reshape(bounds_shape)
    else:  # no samples, as NumPy (the axis goes in as JAX inserts it: clamped)
        empty_shape = list(get_aval(b_start).shape)
        empty_shape.insert(axis, 0)
        delta = lax_shape_ops.full((), np.nan, compute_dt)
        out = lax_shape_ops.full(tuple(empty_shape), 0, dtype)
    if dtypes.is_int(dtype) and not dtypes.is_int(get_aval(out).dtype):
        out = floor(out)
    # The result (and step) are never weakly typed, as in JAX.
    out = lax_conversions.convert_element_type(out, dtype)
    return (out, delta) if retstep else out


def _linspace_axis(axis, b, num):
    """Where linspace's samples go among the b dimensions of the bounds, as JAX places them:
    it inserts the new axis into a list of dimensions (which clamps the position) and, with
    more than one sample, sets the sample count at that index of a list of b + 1."""
    ax = b + axis + 1 if axis < 0 else axis
    if num > 1 and not -(b + 1) <= ax <= b:
        raise IndexError("list assignment index out of range")
    if ax >= 0:
        return min(ax, b)
    if num > 1 and ax != -(b + 1):
        # The two indices disagree in JAX (the result would be misshapen): refused here.
        from gpuarr.numpy.arguments import canonicalize_axis
        canonicalize_axis(axis, b + 1)
    return max(0, b + ax)


def eye(N, M=None, k=0, dtype=None, *, device=None):
    """A 2-D array with ones on the k-th diagonal."""
    if device is not None:
        return _placed(eye(N, M, k, dtype), "eye", device)
    N, M = _eye_dims(N, M)
    dt = _user_dtype(dtype, "eye") or dtypes.default_float_dtype()
    if isinstance(k, (Array, Tracer)):  # a dynamic offset (as trace passes one), as in JAX
        if get_aval(k).ndim or not dtypes.is_int(get_aval(k).dtype):
            raise ValueError(f"k must be a scalar integer; got {k}")
        kdt = get_aval(k).dtype
    else:
        # Offsets beyond the matrix give all zeros: clamped, they fit in int32.
        kdt, k = np.dtype(np.int32), np.int32(min(max(operator_index(k), -N), M))
    rows = lax_shape_ops.broadcasted_iota(kdt, (N, M), 0)
    cols = lax_shape_ops.broadcasted_iota(kdt, (N, M), 1)
    if isinstance(k, (Array, Tracer)):  # a weakly typed offset loses its weak type
        k = lax_conversions.convert_element_type(k, kdt)
    return lax_conversions.convert_element_type(lax.eq(lax.add(rows, k), cols), dt)


def _eye_dims(N, M):
    """eye's (N, M) as ints, with JAX's errors (whose wording differs for N and M)."""
    where = {"N": "argument of 'N' jnp.eye()", "M": "argument 'M' of jnp.eye()"}
    for name, d in (("N", N), ("M", M)):
        if d is None:
            continue
        try:
            operator_index(d)
        except TypeError:
            raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                            f"got ({d},). {where[name]}.") from None
    if N < 0 or (M is not None and M < 0):
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
    return int(N), int(N if M is None else M)


def identity(n, dtype=None):
    """The n x n identity matrix."""
    return eye(n, dtype=dtype)


def copy(a, order=None):
    """A copy of `a` (arrays are immutable, so this is the same values)."""
    check_arraylike("copy", a)
    return array(a, copy=True, order=order)


# ---------------------------------------------------------------- more creation


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """`base ** linspace(start, stop, num)`."""
    num, axis = operator_index(num), operator_index(axis)
    return _logspace(start, stop, num, endpoint, base, _user_dtype(dtype, "logspace"), axis)


@_named_jit("_logspace", static_argnames=("num", "endpoint", "dtype", "axis"))  # as JAX's
def _logspace(start, stop, num, endpoint, base, dtype, axis):
    from gpuarr.numpy.ufuncs import power
    check_arraylike("logspace", start, stop)
    dtype, compute_dt = _inexact_dtype(dtype, start, stop)
    start = lax_conversions.convert_element_type(asarray(start), compute_dt)
    stop = lax_conversions.convert_element_type(asarray(stop), compute_dt)
    lin = linspace(start, stop, num, endpoint=endpoint, retstep=False, dtype=None, axis=axis)
    return lax_conversions.convert_element_type(power(base, lin), dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """A geometric progression from `start` to `stop` (both nonzero, same sign)."""
    num, axis = operator_index(num), operator_index(axis)
    return _geomspace(start, stop, num, endpoint, _user_dtype(dtype, "geomspace"), axis)


@_named_jit("_geomspace", static_argnames=("num", "endpoint", "dtype", "axis"))  # as JAX's
def _geomspace(start, stop, num, endpoint, dtype, axis):
    from gpuarr.numpy.arguments import canonicalize_axis
    from gpuarr.numpy.ufuncs import log10, sign
    check_arraylike("geomspace", start, stop)
    dtype, compute_dt = _inexact_dtype(dtype, start, stop)
    start = lax_conversions.convert_element_type(asarray(start), compute_dt)
    stop = lax_conversions.convert_element_type(asarray(stop), compute_dt)
    s = sign(start)
    res = s * logspace(log10(start / s), log10(stop / s), num, endpoint=endpoint, base=10.0,
                       dtype=compute_dt, axis=0)
    nd = get_aval(res).ndim
    axis = canonicalize_axis(axis, nd)
    if axis != 0:  # the samples' axis moved into place, as JAX does
        res = lax_shape_ops.transpose(res, (*range(1, axis + 1), 0, *range(axis + 1, nd)))
    return lax_conversions.convert_element_type(res, dtype)


def _tri_mask(N, M, k):
    # JAX's order: the offset row iota, then the column iota.
    rows = lax.add(lax_shape_ops.broadcasted_iota(np.int32, (N, M), 0), np.int32(k))
    return lax.ge(rows, lax_shape_ops.broadcasted_iota(np.int32, (N, M), 1))


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the k-th diagonal of an N x M matrix."""
    M = N if M is None else M
    dt = _user_dtype(dtype, "tri") or dtypes.default_float_dtype()
    try:
        N, M = operator_index(N), operator_index(M)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{(N, M)}.") from None
    if N < 0 or M < 0:  # JAX's error, from the iota that builds the mask
        raise TypeError(f"iota shape must have every element be nonnegative, got {(N, M)}.")
    return lax_conversions.convert_element_type(_tri_mask(N, M, operator_index(k)), dt)


def _tri_select(name, m, k, lower):
    check_arraylike(name, m)
    m = asarray(m)
    shape = get_aval(m).shape
    if len(shape) < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    # JAX's triu masks below diagonal k - 1, computed before k is checked to be an int.
    k = operator_index(k) if lower else operator_index(k - 1)
    return (_tril if lower else _triu)(m, k=k)


def _tri_which(m, k):
    shape = get_aval(m).shape
    mask = _tri_mask(*shape[-2:], k)
    if len(shape) > 2:
        mask = lax_shape_ops.broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))
    return mask


@_named_jit("tril", static_argnames=("k",))  # as JAX's (k is the mask's diagonal)
def _tril(m, k):
    return lax.select(_tri_which(m, k), m, lax_shape_ops.full_like(m, 0))


@_named_jit("triu", static_argnames=("k",))
def _triu(m, k):
    return lax.select(_tri_which(m, k), lax_shape_ops.full_like(m, 0), m)


def tril(m, k=0):
    """The lower triangle (at and below the k-th diagonal) of the last two axes."""
    # k is static in JAX's tril: an array is refused as unhashable.
    return _tri_select("tril", m, static_hashable(k), True)


def triu(m, k=0):
    """The upper triangle (at and above the k-th diagonal) of the last two axes."""
    return _tri_select("triu", m, static_hashable(k), False)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The `offset` diagonal of the 2-D sub-arrays on (axis1, axis2), as a new last axis."""
    check_arraylike("diagonal", a)
    return _diagonal(a, offset=offset, axis1=axis1, axis2=axis2)


@_named_jit("diagonal", static_argnames=("offset", "axis1", "axis2"))  # as JAX's
def _diagonal(a, offset, axis1, axis2):
    from gpuarr.numpy.arguments import canonicalize_axis
    from gpuarr.numpy.manipulation import moveaxis
    a = asarray(a)
    nd = get_aval(a).ndim
    if nd < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")  # JAX's
    ax1, ax2 = canonicalize_axis(axis1, nd), canonicalize_axis(axis2, nd)
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = operator_index(offset)
    shape = get_aval(a).shape

    def default_diag(a):
        # Gathered at (i, i + offset), as JAX does.
        a = moveaxis(a, (ax1, ax2), (-2, -1))
        n = max(0, min(shape[ax1] + min(offset, 0), shape[ax2] - max(offset, 0)))
        i = arange(n)
        j = arange(abs(offset), abs(offset) + n)
        return a[..., i, j] if offset >= 0 else a[..., j, i]

    if nd != 2 or shape[0] != shape[1] or offset != 0 or get_aval(a).dtype == np.bool_:
        return default_diag(a)
    # A square matrix's main diagonal has a second branch, for Pallas TPU kernels (mosaic),
    # as in JAX: the column sums of the matrix masked by the identity.
    mask = eye(shape[0], dtype=get_aval(a).dtype)

    def mosaic_diag(a):
        return lax_extras.reduce(lax.mul(mask, a), np.array(0, get_aval(a).dtype), lax.add, (0,))
    return platform_dependent(a, default=default_diag, mosaic=mosaic_diag)


def diag(v, k=0):
    """The k-th diagonal of a 2-D array, or a 2-D array with 1-D `v` on its k-th diagonal."""
    check_arraylike("diag", v)
    return _diag(v, operator_index(k))


@_named_jit("_diag", static_argnames=("k",))  # as JAX's
def _diag(v, k):
    from gpuarr.numpy.ufuncs import where
    v = asarray(v)
    shape = get_aval(v).shape
    if len(shape) == 2:
        return diagonal(v, offset=k)
    if len(shape) != 1:
        raise ValueError("diag input must be 1d or 2d")
    n = shape[0] + abs(k)
    zero = np.zeros((), get_aval(v).dtype)
    v = lax.pad(v, zero[()], ((max(0, -k), max(0, k), 0),))
    return where(eye(n, k=k, dtype=bool), v[:, None], zero)


def diagflat(v, k=0):
    """A 2-D array with the flattened input on its k-th diagonal."""
    from gpuarr.numpy.manipulation import ravel
    check_arraylike("diagflat", v)
    v = ravel(v)
    n = get_aval(v).shape[0] + abs(k)
    res = zeros(n * n, dtype=get_aval(v).dtype)
    i = arange(0, n - abs(k))
    # Scattered at its flat positions, as JAX builds it.
    fi = i + k + i * n if k >= 0 else i + (i - k) * n
    return res.at[fi].set(v).reshape(n, n)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors ('xy' or 'ij' indexing)."""
    check_arraylike("meshgrid", *xi)
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing!r}.")
    xs = [asarray(x) for x in xi]
    for i, x in enumerate(xs):
        if get_aval(x).ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shape "
                             f"{get_aval(x).shape} at position {i}.")
    shape = [get_aval(x).shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        dim = (1 - i if i < 2 else i) if indexing == "xy" and len(xs) >= 2 else i
        if sparse:
            s = [1] * len(xs)
            s[dim] = get_aval(x).shape[0]
            out.append(lax_shape_ops.reshape(x, tuple(s)))
        else:
            out.append(lax_shape_ops.broadcast_in_dim(x, tuple(shape), (dim,)))
    return out


def indices(dimensions, dtype=None, sparse=False):
    """Arrays of the indices of a grid of shape `dimensions` (stacked unless `sparse`)."""
    dims = _shape_arg(dimensions, "indices")
    dt = _user_dtype(dtype, "indices") or dtypes.default_int_dtype()
    out = []
    for i, d in enumerate(dims):
        if sparse:
            s = [1] * len(dims)
            s[i] = d
            out.append(lax_shape_ops.broadcasted_iota(dt, tuple(s), i))
        else:
            out.append(lax_shape_ops.broadcasted_iota(dt, dims, i))
    if sparse:
        return tuple(out)
    if not out:
        return lax_shape_ops.full((0,), 0, dt)
    from gpuarr.numpy.manipulation import stack
    return stack(out)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix: columns are powers of `x` (decreasing unless `increasing`)."""
    from gpuarr.numpy import ufuncs
    check_arraylike("vander", x)
    x = asarray(x)
    if get_aval(x).ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    n = get_aval(x).shape[0] if N is None else operator_index(static_hashable(N))
    if n < 0:
        raise ValueError("N must be nonnegative")
    # The powers have x's dtype, as in JAX: integer results keep it (and wrap around).
    dt = get_aval(x).dtype
    if dt == np.bool_:
        raise TypeError("iota does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")
    powers = lax_shape_ops.iota(dt, n)
    if not increasing:
        powers = lax_shape_ops.rev(powers, (0,))
    return ufuncs.power(lax_shape_ops.reshape(x, (get_aval(x).shape[0], 1)), lax_shape_ops.reshape(powers,
                                                                                                   (1, n)))


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """`function(*indices(shape))`, the indices having `dtype`."""
    dt = _user_dtype(dtype, "fromfunction")
    grids = indices(shape, dtype=dt, sparse=False)
    return function(*[grids[i] for i in range(len(_shape_arg(shape, "fromfunction")))], **kwargs)


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """An Array from the bytes of `buffer`, read as `dtype`."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """An Array from text numbers separated by `sep`."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(*args, **kwargs):
    """Not supported, as in JAX: iterators can't be traced; use jnp.array(list(it))."""
    raise NotImplementedError("jnp.fromiter() is not implemented because it may be non-pure and "
                              "thus unsafe for use with JIT and other JAX transformations. "
                              "Consider using jnp.asarray(np.fromiter(...)) instead.")


def from_dlpack(x, /, *, device=None, copy=None):
    """An Array from an object that supports the DLPack protocol (copied to the host)."""
    return asarray(np.from_dlpack(x))


def load(file, *args, **kwargs):
    """numpy.load, with arrays (not archives) returned as Arrays. NumPy saves bfloat16 as
    two-byte voids (`V2`), which load as bfloat16 again, as in JAX; arrays of types gpuarr
    does not hold stay NumPy arrays."""
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2"):
        out = out.view(dtypes.bfloat16)
    try:
        return asarray(out)
    except TypeError:
        return out


def copyto(dst, src, casting=None, where=None):
    """Not possible: arrays are immutable (as in JAX)."""
    raise NotImplementedError("jnp.copyto is not implemented because JAX arrays cannot be modified "
                              "in-place. For functional approaches to updating array values, see "
                              "jax.numpy.ndarray.at.")
