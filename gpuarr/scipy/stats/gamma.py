"""The gamma distribution with shape `a` (jax.scipy.stats.gamma): densities, and the
distribution functions through the regularized incomplete gamma functions."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import gammainc, gammaincc, gammaln, xlogy


def logpdf(x, a, loc=0, scale=1):
    """The log density (a - 1) log y - y - gammaln(a) - log(scale), y = (x - loc) / scale,
    and -inf below loc; xlogy makes y = 0 with a = 1 give -log(scale)."""
    x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
    ok = lax.ge(x, loc)
    one = const(x, 1)
    # y = 1 off the support keeps log(y) finite in the branch that is not used.
    y = ufuncs.where(ok, lax.div(lax.sub(x, loc), scale), one)
    log_linear_term = lax.sub(xlogy(lax.sub(a, one), y), y)
    shape_terms = lax.add(gammaln(a), lax.log(scale))
    return ufuncs.where(ok, lax.sub(log_linear_term, shape_terms), -np.inf)


def pdf(x, a, loc=0, scale=1):
    """The density, exp(logpdf(x, a, loc, scale))."""
    return lax.exp(logpdf(x, a, loc, scale))


def _standardized(name, x, a, loc, scale):
    x, a, loc, scale = promote_args_inexact(name, x, a, loc, scale)
    return lax.max(lax.div(lax.sub(x, loc), scale), const(x, 0)), a


def cdf(x, a, loc=0, scale=1):
    """P(X <= x): the regularized lower incomplete gamma function at y = (x - loc) / scale,
    clipped at 0 below the support."""
    y, a = _standardized("gamma.cdf", x, a, loc, scale)
    return gammainc(a, y)


def logcdf(x, a, loc=0, scale=1):
    """log cdf(x, a, loc, scale)."""
    return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """P(X > x) = 1 - cdf, from the upper incomplete gamma function (accurate in the tail)."""
    x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
    y = lax.div(lax.sub(x, loc), scale)
    # Below the support sf is 1 whatever `a` is (gammaincc(0, 0) would be NaN).
    return ufuncs.where(lax.lt(y, const(y, 0)), 1, gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    """log sf(x, a, loc, scale)."""
    return lax.log(sf(x, a, loc, scale))
