"""numpy's dtype names and functions of dtypes (result_type, can_cast, isdtype, astype), and
the queries of a value's type: shape, ndim, size, isscalar, iscomplexobj."""
from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.core import Tracer, get_aval
from gpuarr.lax import conversions as lax_conversions
from gpuarr.numpy.arguments import canonicalize_axis, check_arraylike, ensure_array

bool = dtypes.bool_  # noqa: A001  (numpy's name)
int_ = dtypes.int64
uint = dtypes.uint64
single = dtypes.float32
double = dtypes.float64
csingle = dtypes.complex64
cdouble = dtypes.complex128
generic, number, integer, signedinteger = np.generic, np.number, np.integer, np.signedinteger
unsignedinteger, inexact, floating = np.unsignedinteger, np.inexact, np.floating
complexfloating, character, flexible, object_ = np.complexfloating, np.character, np.flexible, np.object_
isdtype = dtypes.isdtype


def result_type(*args):
    """The dtype JAX's promotion gives these arguments (x64-aware)."""
    return dtypes.result_type(*args)


# NumPy's dtype class itself, as JAX's `jnp.dtype` is: libraries write types such as
# `jnp.dtype | np.dtype`, and `jnp.dtype(x)` is what NumPy makes of `x` (of an array, its dtype).
dtype = np.dtype


def can_cast(from_, to, casting="safe"):
    """Whether numpy.can_cast allows casting `from_` to `to` under `casting`."""
    if isinstance(from_, (Array, Tracer)):
        from_ = get_aval(from_).dtype
    return builtins.bool(np.can_cast(from_, to, casting=casting))


def _aval_of(a):
    if isinstance(a, (Array, Tracer)):
        return get_aval(a)
    return get_aval(np.asarray(a))


def _warn_not_arraylike(name, a):
    """JAX's DeprecationWarning for a list (or other non-array) given to shape, ndim or size."""
    try:
        check_arraylike(name, a)
    except TypeError as e:
        warnings.warn(f"{e} In a future JAX release this will be an error.",
                      category=DeprecationWarning, stacklevel=3)


def shape(a):
    """The shape of `a` (works on lists too, as numpy.shape, with JAX's warning)."""
    # Anything with a .shape (a ShapeDtypeStruct, say) answers for itself, as in JAX.
    if hasattr(a, "shape"):
        return a.shape
    _warn_not_arraylike("shape", a)
    return _aval_of(a).shape


def ndim(a):
    """The number of dimensions of `a`."""
    if hasattr(a, "ndim"):
        return a.ndim
    _warn_not_arraylike("ndim", a)
    return _aval_of(a).ndim


def size(a, axis=None):
    """The number of elements of `a` (along `axis`, an int or a tuple, if given)."""
    _warn_not_arraylike("size", a)
    if axis is None and hasattr(a, "size"):
        return a.size
    s = shape(a)
    if axis is None:
        return math.prod(s)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(canonicalize_axis(ax, len(s)) for ax in axes)
    if not s and axes:  # a 0-d array has no axis 0
        raise ValueError(f"axis {axes[0]} is out of bounds for array of dimension 0")
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis: {axes}")
    return math.prod(s[ax] for ax in axes)


def isscalar(element):
    """True for Python and NumPy scalars and 0-d arrays (JAX counts 0-d arrays as scalars)."""
    if isinstance(element, (Array, Tracer)):
        return get_aval(element).ndim == 0
    return np.isscalar(element) and not isinstance(element, (str, bytes))


def iscomplexobj(x):
    """True when `x` has a complex dtype: its `dtype` attribute's, so a scalar type such as
    jnp.complex64 counts too (optax's tests ask it of dtypes), as in JAX."""
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    try:
        typ = x.dtype.type
    except AttributeError:
        try:
            typ = _aval_of(x).dtype.type
        except (TypeError, ValueError):
            return np.iscomplexobj(x)
    return dtypes.issubdtype(typ, np.complexfloating)


def isrealobj(x):
    """not iscomplexobj(x)."""
    return not iscomplexobj(x)


def iterable(y):
    """Whether iter(y) works."""
    try:
        iter(y)
    except TypeError:
        return False
    return True


def astype(x, dtype, /, *, copy=False, device=None):
    """`x` converted to `dtype` (float -> int saturates)."""
    check_arraylike("astype", x)
    if isinstance(dtype, dtypes.ExtendedDType) or isinstance(getattr(x, "dtype", None),
                                                             dtypes.ExtendedDType):
        return lax_conversions.convert_element_type(x, dtype)  # key arrays: only to their dtype
    return lax_conversions.convert_element_type(ensure_array(x), dtypes.check_user_dtype(dtype, "astype"))
