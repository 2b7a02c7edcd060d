"""Incomplete gamma and beta functions, Bessel functions of order 0 and 1, and Hurwitz's zeta
(jax.scipy.special): the lax primitives behind them, with JAX's argument promotion."""
from __future__ import annotations

import numpy as np

from gpuarr import lax
from gpuarr import numpy as jnp
from gpuarr.scipy._util import promote_args_inexact


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (jax.scipy.special.gammainc)."""
    a, x = promote_args_inexact("gammainc", a, x)
    return lax.igamma(a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
    (jax.scipy.special.gammaincc)."""
    a, x = promote_args_inexact("gammaincc", a, x)
    return lax.igammac(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (jax.scipy.special.betainc)."""
    a, b, x = promote_args_inexact("betainc", a, b, x)
    if jnp.issubdtype(x.dtype, np.complexfloating):
        raise ValueError("betainc does not support complex-valued inputs.")
    return lax.betainc(a, b, x)


def i0e(x):
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)
    (jax.scipy.special.i0e)."""
    (x,) = promote_args_inexact("i0e", x)
    return lax.bessel_i0e(x)


def i1e(x):
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)
    (jax.scipy.special.i1e)."""
    (x,) = promote_args_inexact("i1e", x)
    return lax.bessel_i1e(x)


def i0(x):
    """The modified Bessel function of order 0 (jax.scipy.special.i0)."""
    (x,) = promote_args_inexact("i0", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1(x):
    """The modified Bessel function of order 1 (jax.scipy.special.i1)."""
    (x,) = promote_args_inexact("i1", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


def zeta(x, q=None):
    """Hurwitz's zeta function sum_n (n + q)^-x; Riemann's for q = None
    (jax.scipy.special.zeta)."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                                  "compute the Hurwitz Zeta function (q=1 gives Riemann's).")
    x, q = promote_args_inexact("zeta", x, q)
    return lax.zeta(x, q)
