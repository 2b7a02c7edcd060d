"""Argument handling shared by gpuarr.numpy: array-like checks, dtype promotion, broadcasting."""
from __future__ import annotations

import operator
import warnings

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.config import config
from gpuarr.core import Tracer, get_aval
from gpuarr.errors import ConcretizationTypeError
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import shape_ops as lax_shape_ops

_SCALARS = (bool, int, float, complex)
_flags = config._values  # read directly: broadcast_arrays runs in every jnp binary op
ARRAY_TYPES = (Array, Tracer, np.ndarray, np.generic)


def static_hashable(value):
    """`value`, or JAX's error for an argument its jitted function takes statically and cannot
    hash (an array as tril's k, a list as nansum's axis...)."""
    try:
        hash(value)
    except TypeError as e:
        raise ValueError("Non-hashable static arguments are not supported. An error occurred "
                         f"while trying to hash an object of type {type(value)}, {value}. The "
                         f"error was:\n{type(e).__name__}: {e}\n") from e
    return value


def reject_out(fun_name: str, out) -> None:
    """JAX's NotImplementedError for an `out=` argument: arrays are immutable."""
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{fun_name} is not supported.")


def check_arraylike(fun_name: str, *args, converts: bool = False) -> None:
    """Lists and tuples are not arrays (SPEC S8): raise JAX's TypeError naming the argument.

    `converts=True` is for functions JAX writes with ensure_arraylike: its check lets other
    NumPy scalars (strings, bytes: np.isscalar) through, and its conversion then refuses the
    first of them with lax.asarray's message."""
    odd = []
    for pos, arg in enumerate(args):
        if isinstance(arg, ARRAY_TYPES + _SCALARS):
            continue
        if converts and np.isscalar(arg):
            odd.append(arg)
            continue
        raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got {type(arg)} at "
                        f"position {pos}.")
    if odd:
        raise TypeError(f"asarray: expected ArrayLike, got {odd[0]} of type {type(odd[0])}.")


def promote_dtypes(*args):
    """Convert arguments to their common JAX result type (keeping weak types weak)."""
    if len(args) < 2 and not any(isinstance(a, _SCALARS) for a in args):
        return [a if not isinstance(a, (np.ndarray, np.generic)) else _from_numpy(a) for a in args]
    try:
        dt, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    except dtypes.TypePromotionError:
        _check_no_float0s(args)
        raise
    return [_convert(a, dt, weak) for a in args]


def _check_no_float0s(args):
    """float0 (the tangent type of integers) takes part in no arithmetic: JAX's TypeError."""
    if any(getattr(a, "dtype", None) == dtypes.float0 for a in args):
        raise TypeError(
            "Called a gpuarr.numpy function with a float0 array. float0s do not support any "
            "operations by design because they are not compatible with non-trivial vector "
            "spaces. No implicit dtype conversion is done. You can use np.zeros_like(arr, "
            "dtype=np.float) to cast a float0 array to a regular zeros array.")


def promote_dtypes_inexact(*args):
    """Like promote_dtypes, then integers and booleans become the default float type."""
    dt, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    dt = dtypes.to_inexact_dtype(dt)
    return [_convert(a, dt, weak) for a in args]


def promote_dtypes_numeric(*args):
    """Like promote_dtypes, then booleans become the default integer type."""
    dt, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    if dt == np.bool_:
        dt = dtypes.default_int_dtype()
    return [_convert(a, dt, weak) for a in args]


def _from_numpy(x):
    dt = dtypes.canonicalize_dtype(x.dtype)
    return np.asarray(x, dt) if x.dtype != dt else x


def _convert(x, dt, weak):
    if isinstance(x, _SCALARS):
        return _scalar_value(x, dt)[()] if not weak else _weak_scalar(x, dt)
    if isinstance(x, (np.ndarray, np.generic)):
        x = np.asarray(x)
        x = x.astype(dt) if x.dtype != dt else x
        if weak:  # a weak result (an integer array with a Python float) is weak, as in JAX
            from gpuarr.dispatch import to_device_array
            return to_device_array(x, weak_type=True)
        return x
    aval = get_aval(x)
    if aval.dtype == dt and aval.weak_type == weak:
        if weak and isinstance(x, Tracer) and x.to_concrete_value() is not None:
            # A weakly typed tracer over a concrete value (an eager jvp's of a Python float)
            # converts even to its own type, as in JAX: a Python float tangent becomes an
            # Array there (lax functions keep it).
            return lax_conversions.convert_element_type_p.bind(
                x, new_dtype=np.dtype(dt), weak_type=weak)
        return x
    return lax_conversions._convert_weak(x, dt, weak)


def _weak_scalar(x, dt):
    """A Python scalar as a weakly typed 0-d Array of dtype `dt` (a literal when staged)."""
    from gpuarr.dispatch import wrap
    return wrap(_scalar_value(x, dt), True)._keep_python_float(x)


def _scalar_value(x, dt):
    """A Python scalar as a 0-d NumPy array of dtype `dt`. A Python int must fit the default
    integer dtype (else OverflowError) and then wraps into a narrower one (uint8 - 1), as in JAX."""
    if dtypes.is_int(dt) and isinstance(x, int):
        return np.asarray(x, dtypes.default_int_dtype()).astype(dt)
    return np.asarray(x).astype(dt) if dtypes.is_int(dt) and isinstance(x, float) else np.asarray(x, dt)


def _shapes(args) -> list:
    return [np.shape(a) if isinstance(a, (np.ndarray, np.generic)) else get_aval(a).shape
            for a in args]


def _common_shape(shapes) -> tuple:
    """NumPy's broadcast of `shapes`, with JAX's error where they do not broadcast."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}") from None


def broadcast_arrays(*args, fun_name="broadcast_arrays"):
    """Broadcast arrays against each other with NumPy's rules (rank-0 values stay rank 0),
    warning or raising for operands of different nonzero ranks as `jax_numpy_rank_promotion`
    says."""
    shapes = _shapes(args)
    if len(set(shapes)) <= 1:
        return list(args)
    if _flags["numpy_rank_promotion"] != "allow" and len({len(s) for s in shapes if s}) > 1:
        _rank_promotion_warning_or_error(fun_name, shapes)
    result = _common_shape(shapes)
    return [a if s == result or s == () else broadcast_to(a, result) for a, s in zip(args, shapes)]


def promote_shapes(*args, fun_name="promote_shapes"):
    """Operands of an elementwise lax operation, as JAX's jnp passes them: operands of lower
    nonzero rank gain leading size-1 axes, and lax broadcasts the size-1 axes itself (so a
    bias added to a batch is a broadcast_in_dim to [1, n], not a [batch, n] copy)."""
    shapes = _shapes(args)
    if len({len(s) for s in shapes if s}) < 2:
        return list(args)
    if _flags["numpy_rank_promotion"] != "allow":
        _rank_promotion_warning_or_error(fun_name, shapes)
    rank = len(_common_shape(shapes))
    return [a if len(s) == rank else lax_shape_ops.broadcast(a, (1,) * (rank - len(s)))
            for a, s in zip(args, shapes)]


def _rank_promotion_warning_or_error(fun_name, shapes):
    listed = " ".join(map(str, shapes))
    if _flags["numpy_rank_promotion"] == "warn":
        warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes "
                      f"{listed}. Set the jax_numpy_rank_promotion config option to 'allow' to "
                      "disable this warning; for more information, see "
                      "https://docs.jax.dev/en/latest/rank_promotion_warning.html.",
                      stacklevel=4)
    else:
        raise ValueError(f"Operands could not be broadcast together for {fun_name} on shapes "
                         f"{listed} and with the config option "
                         "jax_numpy_rank_promotion='raise'. For more information, see "
                         "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")


def broadcast_all(*args) -> list:
    """Every operand broadcast to the operands' common shape (0-d ones too), with JAX's error
    for shapes that do not broadcast."""
    shapes = _shapes(args)
    if len(set(shapes)) <= 1:
        return list(args)
    shape = _common_shape(shapes)
    return [broadcast_to(a, shape) for a in args]


def broadcast_to(x, shape):
    """Broadcast `x` to `shape` with NumPy's rules."""
    aval = get_aval(x)
    shape = tuple(int(d) for d in shape)
    if aval.shape == shape:
        return x
    nlead = len(shape) - aval.ndim
    if nlead < 0:
        raise ValueError("Cannot broadcast to shape with fewer dimensions: "
                         f"arr_shape={aval.shape} shape={shape}")
    if any(a not in (1, b) for a, b in zip(aval.shape, shape[nlead:])):
        raise ValueError(f"Incompatible types for broadcasting: input type={aval} and "
                         f"requested type={aval.update(shape=shape)}")
    return lax_shape_ops.broadcast_in_dim(x, shape, tuple(range(nlead, len(shape))))


def canonicalize_axis(axis: int, ndim: int) -> int:
    axis = operator.index(axis)  # a tuple or float axis is JAX's TypeError
    if not -ndim <= axis < max(ndim, 1) and not (ndim == 0 and axis in (0, -1)):
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


def canonicalize_axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {axis}")
        return axes
    return (canonicalize_axis(axis, ndim),)


def ensure_array(x):
    """Turn NumPy values and Python scalars into Arrays or keep tracers as they are."""
    if isinstance(x, (Array, Tracer)):
        return x
    from gpuarr.numpy.creation import asarray
    return asarray(x)


def concrete_value(value, message: str):
    """`value` itself, or for a tracer its concrete value (known under grad, for instance);
    ConcretizationTypeError (saying `message`) for a traced value with none (under jit or
    vmap), where a result's shape or a check depends on the values."""
    if isinstance(value, Tracer):
        concrete = value.to_concrete_value()
        if concrete is None:
            raise ConcretizationTypeError(value, message)
        return concrete
    return value


def concrete_or_error(force, value, message: str):
    """JAX's core.concrete_or_error: `force` (int, operator.index...) of `value`'s concrete
    value; for a traced value with none, ConcretizationTypeError saying `message` and, as JAX,
    which argument of the traced function the value depends on."""
    if isinstance(value, Tracer) and value.to_concrete_value() is None:
        describe = getattr(value._trace, "describe_provenance", None)
        origin = describe(value) if describe is not None else ""
        raise ConcretizationTypeError(value, message + (f"\n{origin}" if origin else ""))
    return force(concrete_value(value, message))


def concrete_dim_or_error(value, message: str) -> int:
    """JAX's core.concrete_dim_or_error: a static dimension (`operator.index`) from `value`."""
    return concrete_or_error(operator.index, value, message)


def concrete_int(value, message: str) -> int:
    """A Python int from `value`, or ConcretizationTypeError (saying `message`) when it is a
    traced value with no concrete one (a degree or a dimension that must be static)."""
    return int(concrete_value(value, message))


def widen_narrow_int(dt) -> np.dtype:
    """The dtype sums, products and cumulative sums of `dt` accumulate in: booleans and integers
    narrower than the default integer (int64 under x64, else int32) widen to the default
    (unsigned) integer; other dtypes are kept."""
    if dt in dtypes.NARROW_DTYPES and dtypes.is_int(dt):
        # JAX asks NumPy's iinfo for the width, which does not know int4 and the like.
        raise ValueError(f"Invalid integer data type {dt.kind!r}.")
    if dt == np.bool_ or (dtypes.is_int(dt) and dt.itemsize < np.dtype(dtypes.default_int_dtype()).itemsize):
        return dtypes.default_uint_dtype() if dtypes.is_unsigned(dt) else dtypes.default_int_dtype()
    return dt


def update_core_sizes(sizes: dict, dims, core_shape, context: str) -> None:
    """Record the size of each core dimension named in `dims` (from `core_shape`) in `sizes`,
    or raise ValueError (ending in `context`) where one disagrees with a size seen before."""
    for name, size in zip(dims, core_shape):
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"inconsistent size for core dimension {name!r}: {size} vs "
                             f"{sizes[name]} {context}")


def check_core_dims(signature, names, shapes, excluded=frozenset()):
    """Check that the core dimensions `names` (one tuple per input) exist in `shapes` and
    agree in size, as jnp.vectorize checks them; return ({name: size}, the broadcast shape of
    the leading (loop) dimensions)."""
    context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
    sizes = {}
    for shape, dims in zip(shapes, names):
        if len(shape) < len(dims):
            raise ValueError(f"input with shape {shape} does not have enough dimensions for all "
                             f"core dimensions {dims} {context}")
        update_core_sizes(sizes, dims, shape[len(shape) - len(dims):], context)
    batches = [tuple(shape[:len(shape) - len(dims)]) for shape, dims in zip(shapes, names)]
    try:
        return sizes, np.broadcast_shapes(*batches)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={batches}") from None
