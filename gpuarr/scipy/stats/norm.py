"""The normal distribution (jax.scipy.stats.norm)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import creation
from gpuarr.scipy import special
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.stats._location_scale import standardize


def logpdf(x, loc=0, scale=1):
    """The log density -((x - loc) / scale)^2 / 2 - log(sqrt(2 pi) scale)."""
    x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
    scale_sqrd = lax.square(scale)
    log_normalizer = lax.log(lax.mul(const(x, 2 * np.pi), scale_sqrd))
    quadratic = lax.div(lax.square(lax.sub(x, loc)), scale_sqrd)
    return lax.div(lax.add(log_normalizer, quadratic), const(x, -2))


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The distribution function ndtr((x - loc) / scale)."""
    x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
    return special.ndtr(standardize(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log cdf, by log_ndtr, so it stays finite far into the lower tail."""
    x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
    return special.log_ndtr(standardize(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The survival function 1 - cdf, computed as cdf of the reflected point so the upper
    tail keeps its relative accuracy."""
    x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    """log sf, as logcdf of the reflected point."""
    x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
    """The quantile function ndtri(q) * scale + loc, in the default float type as in JAX
    (`q` must be float32 or float64)."""
    return creation.asarray(special.ndtri(q) * scale + loc, float)


def isf(q, loc=0, scale=1):
    """The inverse survival function ppf(1 - q)."""
    return ppf(lax.sub(const(q, 1), q), loc, scale)
