"""The Laplace (double exponential) distribution (jax.scipy.stats.laplace)."""
from __future__ import annotations

from gpuarr.lax import lax
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.stats._location_scale import standardize


def logpdf(x, loc=0, scale=1):
    """The log density -|x - loc| / scale - log(2 scale)."""
    x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
    linear_term = lax.div(lax.abs(lax.sub(x, loc)), scale)
    return lax.neg(lax.add(linear_term, lax.log(lax.mul(const(x, 2), scale))))


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """exp(z) / 2 for z = (x - loc) / scale <= 0 and 1 - exp(-z) / 2 above."""
    x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
    half, one = const(x, 0.5), const(x, 1)
    z = standardize(x, loc, scale)
    return lax.select(lax.le(z, const(x, 0)), lax.mul(half, lax.exp(z)),
                      lax.sub(one, lax.mul(half, lax.exp(lax.neg(z)))))
