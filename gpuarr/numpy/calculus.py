"""Integrals and derivatives of sampled functions: trapezoid, gradient, unwrap."""
from __future__ import annotations

import builtins
import functools
import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import manipulation, reductions, ufuncs
from gpuarr.numpy.arguments import (
    canonicalize_axis,
    check_arraylike,
    ensure_array,
    promote_dtypes,
    promote_dtypes_inexact,
)


@_jit(static_argnames=("axis",))  # as JAX's
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of y by the trapezoidal rule along `axis` (sample points x or spacing dx),
    computed as JAX does: y and x are promoted together, and a constant spacing takes the
    sum of y less half its end values."""
    if x is None:
        check_arraylike("trapezoid", y)
        (y,) = promote_dtypes_inexact(y)
        d = ensure_array(dx)
        if get_aval(d).ndim:
            d = lax_shape_ops.expand_dims(d, tuple(range(get_aval(y).ndim - get_aval(d).ndim)))
            d = manipulation.moveaxis(d, axis, -1)
    else:
        check_arraylike("trapezoid", y, x)
        y, x = promote_dtypes_inexact(y, x)
        if get_aval(x).ndim == 1:
            d = manipulation.diff(x)
        else:
            d = manipulation.moveaxis(manipulation.diff(x, axis=axis), axis, -1)
    y = manipulation.moveaxis(y, axis, -1)
    nd, n = get_aval(y).ndim, get_aval(y).shape[-1]
    if get_aval(d).ndim == 0 or get_aval(d).shape[-1] == 1:
        if n == 0:  # JAX reads y[..., 0]
            raise IndexError(f"index is out of bounds for axis {nd - 1} with size 0")
        d = d if get_aval(d).ndim == 0 else _last(d, 0)
        total = reductions.sum(y, axis=-1)
        ends = ufuncs.multiply(0.5, ufuncs.add(_last(y, 0), _last(y, n - 1)))
        return ufuncs.multiply(d, ufuncs.subtract(total, ends))
    mid = ufuncs.add(y[..., 1:], y[..., :-1])  # indexing, as JAX's
    return ufuncs.multiply(0.5, reductions.sum(ufuncs.multiply(d, mid), axis=-1))


def _last(x, i):
    """x[..., i] for a static i (no slice of an axis of length 1, as JAX's indexing)."""
    nd = get_aval(x).ndim
    if get_aval(x).shape[-1] != 1:
        x = x[..., i:i + 1]
    return lax_shape_ops.squeeze(x, (nd - 1,))


@_jit(static_argnames=("axis", "edge_order"))  # as JAX's
def gradient(f, *varargs, axis=None, edge_order=None):
    """Second-order central differences inside, first-order at the edges, per axis; spacings
    are scalars or 1-D coordinate arrays."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    check_arraylike("gradient", f, *varargs)
    a, *spacing = promote_dtypes_inexact(f, *varargs)
    nd = get_aval(a).ndim
    if axis is None:
        axes = tuple(builtins.range(nd))
    else:
        axes = tuple(canonicalize_axis(operator.index(i), nd)
                     for i in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if not axes:
        return []
    if builtins.min(get_aval(a).shape[i] for i in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least 2 "
                         "elements are required.")
    if not spacing:
        dx = [1.0] * len(axes)
    elif len(spacing) == 1:
        dx = spacing * len(axes)
    elif len(spacing) == len(axes):
        dx = spacing
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
    grads = [_gradient_along_axis(a, h, ax) for ax, h in zip(axes, dx)]
    return grads[0] if len(axes) == 1 else grads


def _gradient_along_axis(a, h, axis):
    sliced = functools.partial(lax.slice_in_dim, a, axis=axis)
    upper_edge = ufuncs.subtract(sliced(1, 2), sliced(0, 1))
    lower_edge = ufuncs.subtract(sliced(-1, None), sliced(-2, -1))
    if np.ndim(h) == 0:
        inner = ufuncs.true_divide(
            ufuncs.multiply(ufuncs.subtract(sliced(2, None), sliced(None, -2)), 0.5), h)
        lower_edge = ufuncs.true_divide(lower_edge, h)
        upper_edge = ufuncs.true_divide(upper_edge, h)
    elif np.ndim(h) == 1:
        n = get_aval(h).shape[0]
        if n != get_aval(a).shape[axis]:
            raise ValueError("Spacing arrays must have the same length as the dimension along "
                             "which the gradient is calculated.")
        h_shape = [1] * get_aval(a).ndim
        h_shape[axis] = n
        sliced_x = functools.partial(lax.slice_in_dim, lax_shape_ops.reshape(h, tuple(h_shape)), axis=axis)
        sub, mul, div = ufuncs.subtract, ufuncs.multiply, ufuncs.true_divide
        upper_edge = div(upper_edge, sub(sliced_x(1, 2), sliced_x(0, 1)))
        lower_edge = div(lower_edge, sub(sliced_x(-1, None), sliced_x(-2, -1)))
        dx1 = sub(sliced_x(1, -1), sliced_x(0, -2))
        dx2 = sub(sliced_x(2, None), sliced_x(1, -1))
        # Second-order differences on a non-uniform grid, as JAX's (and NumPy's).
        ca = div(ufuncs.negative(dx2), mul(dx1, ufuncs.add(dx1, dx2)))
        cb = div(sub(dx2, dx1), mul(dx1, dx2))
        cc = div(dx1, mul(dx2, ufuncs.add(dx1, dx2)))
        inner = ufuncs.add(ufuncs.add(mul(ca, sliced(0, -2)), mul(cb, sliced(1, -1))),
                           mul(cc, sliced(2, None)))
    else:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    return manipulation.concatenate((upper_edge, inner, lower_edge), axis=axis)


@_jit(static_argnames=("axis",))  # as JAX's
def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """Unwrap phase jumps larger than discont (default period/2) along `axis`. As in JAX, p and
    period are promoted together: integer phases with an integer period stay integers."""
    check_arraylike("unwrap", p)
    p, period = promote_dtypes(p, period)
    if dtypes.is_complex(get_aval(p).dtype):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    shape = get_aval(p).shape
    if shape[axis] == 0:  # indexed as JAX does: its errors for a bad axis
        return p
    ax = axis % len(shape)
    if discont is None:
        discont = ufuncs.true_divide(period, 2)
    is_int = np.issubdtype(get_aval(p).dtype, np.integer)
    interval = (ufuncs.floor_divide if is_int else ufuncs.true_divide)(period, 2)
    dd = manipulation.diff(p, axis=ax)
    ddmod = ufuncs.subtract(ufuncs.mod(ufuncs.add(dd, interval), period), interval)
    ddmod = ufuncs.where(ufuncs.logical_and(ufuncs.equal(ddmod, ufuncs.negative(interval)),
                                            ufuncs.greater(dd, 0)), interval, ddmod)
    correct = ufuncs.where(ufuncs.less(ufuncs.abs(dd), discont), 0, ufuncs.subtract(ddmod, dd))
    from gpuarr.numpy.selection import cumsum
    first = lax.slice_in_dim(p, 0, 1, axis=ax)
    rest = ufuncs.add(lax.slice_in_dim(p, 1, None, axis=ax), cumsum(correct, axis=ax))
    return manipulation.concatenate((first, rest), ax)
