"""Pieces shared by the series, continued fractions and rational approximations of
gpuarr.scipy.special: Horner's rule with constant coefficients, and while loops that run per
element.

`elementwise_while` is what `lax.while_loop` becomes under `vmap` with a batched predicate,
which is how JAX runs its per-element loops (`jnp.vectorize` over a jitted scalar function):
each element's state stops changing once its own condition fails, and the loop ends when no
element's condition holds. Writing it out directly keeps one array-wide loop in the program.
"""
from __future__ import annotations

import numpy as np

from gpuarr.core import get_aval
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import dtype_functions, manipulation, reductions


def polyval(coeffs, x, dtype=None):
    """sum_i coeffs[i] x^(n-1-i) by Horner's rule from a zero start, with the coefficients
    rounded to `dtype` (x's by default), as `jnp.polyval(np.array(coeffs, dtype), x)`: the
    result is strongly typed, and an infinite x gives NaN (0 * inf) as it does there."""
    dt = np.dtype(get_aval(x).dtype if dtype is None else dtype)
    out = lax_shape_ops.full_like(x, 0)
    for c in np.asarray(coeffs, dt):
        out = out * x + c
    return out


def elementwise_while(cond_fun, body_fun, init):
    """Run `state = body_fun(state)` for each element while `cond_fun(state)` (a boolean array)
    holds for it, and return the final state. `init` is a tuple of arrays, broadcast here to
    one shape (with the condition's); each keeps its initial dtype (Python scalars take the
    default types), strongly typed."""
    active = cond_fun(init)
    shape = np.broadcast_shapes(dtype_functions.shape(active), *(dtype_functions.shape(v) for v in init))
    dtypes = [dtype_functions.result_type(v) for v in init]
    init = tuple(lax_conversions.convert_element_type(manipulation.broadcast_to(v, shape), dt)
                 for v, dt in zip(init, dtypes))

    def body(carry):
        active, state = carry
        new = tuple(lax.select(active, lax_conversions.convert_element_type(
                        manipulation.broadcast_to(n, shape), dt), o)
                    for n, o, dt in zip(body_fun(state), state, dtypes))
        return active & cond_fun(new), new

    active = manipulation.broadcast_to(active, shape)
    return lax_control_flow.while_loop(lambda carry: reductions.any(carry[0]), body, (active, init))[1]
