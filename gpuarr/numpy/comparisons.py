"""Comparisons of whole arrays: isclose, allclose, array_equal, array_equiv."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.numpy import creation, reductions, ufuncs
from gpuarr.numpy.arguments import broadcast_arrays, check_arraylike, ensure_array, promote_dtypes_inexact


@_jit(static_argnames=("equal_nan",))  # as JAX's
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise, with infinities equal only to themselves."""
    check_arraylike("isclose", a, b)
    # Integers compare as floats too (with the tolerances), and the result is never weak,
    # as in JAX.
    a, b = promote_dtypes_inexact(a, b)
    a, b = broadcast_arrays(a, b)
    dt = dtypes.to_floating_dtype(get_aval(a).dtype)  # tolerances are real
    rtol, atol = (lax_conversions.convert_element_type(t, dt) for t in (rtol, atol))
    # Computed whether or not it is used, as JAX does.
    both_nan = ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b))
    check_fin = ufuncs.isfinite(b)
    in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
    out = ufuncs.logical_or(lax.eq(a, b), ufuncs.logical_and(check_fin, in_range))
    return ufuncs.logical_or(out, both_nan) if equal_nan else out


@_jit(static_argnames=("equal_nan",))  # as JAX's
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when isclose holds everywhere."""
    check_arraylike("allclose", a, b)
    return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """True when both have the same shape and elements."""
    try:
        a1, a2 = ensure_array(a1), ensure_array(a2)
    except TypeError:
        return creation.asarray(False)
    if get_aval(a1).shape != get_aval(a2).shape:
        return creation.asarray(False)
    eq = ufuncs.equal(a1, a2)
    if equal_nan:
        eq = lax.bitwise_or(eq, lax.bitwise_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return reductions.all(eq)


def array_equiv(a1, a2):
    """True when the arrays broadcast to one shape and are equal there."""
    a1, a2 = ensure_array(a1), ensure_array(a2)
    try:
        np.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return creation.asarray(False)
    return reductions.all(ufuncs.equal(a1, a2))
