"""The Cauchy distribution (jax.scipy.stats.cauchy)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.stats._location_scale import standardize


def logpdf(x, loc=0, scale=1):
    """The log density -log(pi scale) - log1p(z^2), z = (x - loc) / scale."""
    x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    normalize_term = lax.log(lax.mul(const(x, np.pi), scale))
    return lax.neg(lax.add(normalize_term, lax.log1p(lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The distribution function 1/2 + arctan(z) / pi."""
    x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return lax.add(const(x, 0.5), lax.mul(lax.div(const(x, 1.), const(x, np.pi)), ufuncs.arctan(z)))


def logcdf(x, loc=0, scale=1):
    """log cdf."""
    return lax.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The survival function, as cdf of the reflected point."""
    x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """log sf, as logcdf of the reflected point."""
    x, loc, scale = promote_args_inexact("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    """The quantile function tan(pi q - pi / 2) * scale + loc."""
    q, loc, scale = promote_args_inexact("cauchy.ppf", q, loc, scale)
    unscaled = lax.tan(lax.sub(lax.mul(const(q, np.pi), q), const(q, np.pi / 2)))
    return lax.add(lax.mul(unscaled, scale), loc)


def isf(q, loc=0, scale=1):
    """The inverse survival function tan(pi / 2 - pi q) * scale + loc."""
    q, loc, scale = promote_args_inexact("cauchy.isf", q, loc, scale)
    unscaled = lax.tan(lax.sub(const(q, np.pi / 2), lax.mul(const(q, np.pi), q)))
    return lax.add(lax.mul(unscaled, scale), loc)
