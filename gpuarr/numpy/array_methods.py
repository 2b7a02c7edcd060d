"""Install Python operators and NumPy-style methods on Array and on tracers.

Both get the same methods, so code behaves the same eagerly and under transformations.
"""
from __future__ import annotations

import sys

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.core import Tracer, get_aval
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import special as lax_special
from gpuarr.numpy import (
    creation,
    indexing,
    manipulation,
    products,
    reductions,
    selection,
    sorting,
    ufuncs,
)


def _defer(op, reverse=False):
    def method(self, other):
        if not isinstance(other, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)):
            return NotImplemented
        return op(other, self) if reverse else op(self, other)
    return method


def _astype(self, dtype, copy=False, device=None):
    """Cast to `dtype` (float -> int saturates)."""
    return lax_conversions.convert_element_type(self, dtypes.check_user_dtype(dtype, "astype")
                                                if hasattr(dtypes, "check_user_dtype") else dtype)


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = tuple(shape[0])
    return manipulation.reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
        axes = axes[0]
    return manipulation.transpose(self, axes or None)


_OPERATORS = {
    "__add__": _defer(ufuncs.add), "__radd__": _defer(ufuncs.add, True),
    "__sub__": _defer(ufuncs.subtract), "__rsub__": _defer(ufuncs.subtract, True),
    "__mul__": _defer(ufuncs.multiply), "__rmul__": _defer(ufuncs.multiply, True),
    "__truediv__": _defer(ufuncs.true_divide), "__rtruediv__": _defer(ufuncs.true_divide, True),
    "__floordiv__": _defer(ufuncs.floor_divide), "__rfloordiv__": _defer(ufuncs.floor_divide, True),
    "__mod__": _defer(ufuncs.remainder), "__rmod__": _defer(ufuncs.remainder, True),
    "__pow__": _defer(ufuncs.power), "__rpow__": _defer(ufuncs.power, True),
    "__matmul__": _defer(products.matmul), "__rmatmul__": _defer(products.matmul, True),
    "__and__": _defer(ufuncs.bitwise_and), "__rand__": _defer(ufuncs.bitwise_and, True),
    "__or__": _defer(ufuncs.bitwise_or), "__ror__": _defer(ufuncs.bitwise_or, True),
    "__xor__": _defer(ufuncs.bitwise_xor), "__rxor__": _defer(ufuncs.bitwise_xor, True),
    "__lt__": _defer(ufuncs.less), "__le__": _defer(ufuncs.less_equal),
    "__gt__": _defer(ufuncs.greater), "__ge__": _defer(ufuncs.greater_equal),
    "__eq__": _defer(ufuncs.equal), "__ne__": _defer(ufuncs.not_equal),
    "__neg__": lambda self: ufuncs.negative(self),
    "__pos__": lambda self: self,
    "__abs__": lambda self: ufuncs.absolute(self),
    "__invert__": lambda self: ufuncs.invert(self),
    "__getitem__": indexing.getitem,
    "__divmod__": lambda self, other: (ufuncs.floor_divide(self, other), ufuncs.remainder(self, other)),
}

_METHODS = {
    "astype": _astype,
    "reshape": _reshape,
    "transpose": _transpose,
    "sum": reductions.sum, "prod": reductions.prod, "max": reductions.max, "min": reductions.min,
    "mean": reductions.mean, "var": reductions.var, "std": reductions.std,
    "all": reductions.all, "any": reductions.any,
    "argmax": reductions.argmax, "argmin": reductions.argmin,
    "ravel": manipulation.ravel, "flatten": manipulation.ravel,
    "squeeze": manipulation.squeeze, "swapaxes": manipulation.swapaxes,
    "dot": products.dot, "clip": ufuncs.clip, "round": ufuncs.round,
    "conj": ufuncs.conjugate, "conjugate": ufuncs.conjugate,
}

_PROPERTIES = {
    "T": property(lambda self: manipulation.transpose(self)),
    "mT": property(lambda self: manipulation.matrix_transpose(self)),
    "real": property(lambda self: ufuncs.real(self)),
}


def install(methods=None, operators=None, properties=None):
    """Add (more) methods to Array and Tracer; later modules call this for their functions."""
    for cls in (Array, Tracer):
        for name, fn in (operators or {}).items():
            setattr(cls, name, fn)
        for name, fn in (methods or {}).items():
            setattr(cls, name, fn)
        for name, prop in (properties or {}).items():
            setattr(cls, name, prop)


install(_METHODS, _OPERATORS, _PROPERTIES)


def _array_namespace(self, api_version=None):
    # The package this module belongs to, gpuarr.numpy: the namespace the array API asks for.
    return sys.modules[__package__]




def _to_device(self, device, *, stream=None):
    """The array on `device` (the array API's `to_device`; `stream` must be None, as in JAX)."""
    if stream is not None:
        raise NotImplementedError("stream argument of array.to_device()")
    from gpuarr.device_api import device_put
    return device_put(self, device)


install({"__array_namespace__": _array_namespace, "to_device": _to_device})


def _lazy(name):
    """A method calling gpuarr.numpy.<name> (from the module that defines it)."""
    def method(self, *args, **kwargs):
        return getattr(_LAZY_MODULES[name], name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Same as jnp.{name}(self, ...)."
    return method


def _view(self, dtype=None, type=None):
    """Reinterpret the bits as `dtype` (same item size), as ndarray.view."""
    if type is not None:
        raise NotImplementedError("`type` argument of array.view() is not supported.")
    if dtype is None:
        return self
    new = dtypes.canonicalize_dtype(dtype)
    old = get_aval(self).dtype
    if new.itemsize != old.itemsize:
        raise NotImplementedError(f"view from {old.name} to {new.name}: only dtypes of the same "
                                  "size are supported; use lax.bitcast_convert_type.")
    if old == np.bool_:
        self = lax_conversions.convert_element_type(self, np.uint8)
    if new == np.bool_:
        return lax.ne(lax_special.bitcast_convert_type(self, np.uint8), np.uint8(0))
    return lax_special.bitcast_convert_type(self, new)


def _contains(self, item):
    return bool(reductions.any(ufuncs.equal(self, item)))


_LAZY_METHODS = ("argpartition", "argsort", "choose", "compress", "cumprod", "cumsum", "diagonal",
                 "nonzero", "ptp", "repeat", "searchsorted", "sort", "take", "trace", "copy")
# The module defining each of them.
_LAZY_MODULES = {
    **dict.fromkeys(("argpartition", "argsort", "searchsorted", "sort"), sorting),
    **dict.fromkeys(("choose", "compress", "cumprod", "cumsum", "nonzero", "take"), selection),
    **dict.fromkeys(("copy", "diagonal"), creation),
    "ptp": reductions, "repeat": manipulation, "trace": products,
}
install({name: _lazy(name) for name in _LAZY_METHODS})
install({
    "view": _view,
    "__contains__": _contains,
    "__copy__": lambda self: self,
    "__deepcopy__": lambda self, memo: self,
    "__round__": lambda self, ndigits=None: ufuncs.round(self, ndigits or 0),
    "__divmod__": _defer(ufuncs.divmod), "__rdivmod__": _defer(ufuncs.divmod, True),
    "__lshift__": _defer(ufuncs.left_shift), "__rlshift__": _defer(ufuncs.left_shift, True),
    "__rshift__": _defer(ufuncs.right_shift), "__rrshift__": _defer(ufuncs.right_shift, True),
}, properties={"imag": property(lambda self: ufuncs.imag(self))})
_ = get_aval
