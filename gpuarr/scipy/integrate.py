"""Numerical integration of sampled data (jax.scipy.integrate): the trapezoidal rule."""
from __future__ import annotations

from gpuarr.jit_api import jit
from gpuarr.numpy import calculus

__all__ = ["trapezoid"]

# One compiled program per argument signature, as JAX's jitted trapezoid.
_trapezoid = jit(calculus.trapezoid, static_argnames=("axis",))


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """Integral of `y` along `axis` by the composite trapezoidal rule
    (jax.scipy.integrate.trapezoid): sample points `x` when given, else equal spacing `dx`."""
    return _trapezoid(y, x, dx, axis=axis)
