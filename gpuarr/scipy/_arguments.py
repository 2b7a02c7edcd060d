"""Argument handling shared by gpuarr.scipy: promotion to a common inexact dtype."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.numpy.arguments import (  # noqa: F401  (concrete_int: used by the scipy modules)
    broadcast_arrays,
    check_arraylike,
    concrete_int,
    ensure_array,
    promote_dtypes_inexact,
)


def promote_args_inexact(fun_name: str, *args):
    """Check that the arguments are arrays or scalars, give them their common inexact dtype
    (integers become the default float, weak types stay weak) and broadcast them together,
    as JAX's helper of the same name."""
    check_arraylike(fun_name, *args)
    return broadcast_arrays(*(ensure_array(a) for a in promote_dtypes_inexact(*args)))


def const(like, value):
    """`value` as a constant for arithmetic with `like`, as JAX's `lax._const`: for a weakly
    typed scalar `like`, the unrounded Python scalar of its kind (weak, so scalar results stay
    weak; printed as JAX prints it), and otherwise a NumPy scalar of `like`'s dtype (which makes
    the result strongly typed)."""
    dt = dtypes.dtype(like, canonicalize=True)
    if isinstance(like, (int, float, complex)):
        weak_scalar = True
    else:
        aval = get_aval(like)
        weak_scalar = aval.weak_type and not aval.shape
    if weak_scalar:
        value = type(np.zeros((), dt).item())(value)
        return value if dtypes.dtype(value, canonicalize=True) == dt else np.array(value, dt)
    return np.asarray(value, dt)[()]


def require_float32_or_64(x, fun_name: str):
    """`x` as an array, or TypeError unless it is float32 or float64 (JAX's ndtr family
    does not promote)."""
    x = ensure_array(x)
    dt = get_aval(x).dtype
    if dt not in (np.float32, np.float64):
        raise TypeError(f"x.dtype={dt} is not supported, see docstring for supported types."
                        f" ({fun_name} takes float32 or float64 input.)")
    return x


def require_real(x, fun_name: str):
    """`x`, or ValueError if it has a complex dtype (JAX's real-only special functions)."""
    if dtypes.is_complex(x.dtype):
        raise ValueError(f"{fun_name} does not support complex-valued inputs.")
    return x
