"""The left-skewed Gumbel (extreme value, minimum) distribution
(jax.scipy.stats.gumbel_l). Every function but ppf is NaN for scale <= 0."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import xlog1py, xlogy
from gpuarr.scipy.stats._location_scale import standardize


def _nan_unless_positive(scale, value):
    return ufuncs.where(scale > const(scale, 0), value, np.nan)


def logpdf(x, loc=0, scale=1):
    """-log scale + z - exp(z), z = (x - loc) / scale."""
    x, loc, scale = promote_args_inexact("gumbel_l.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    val = lax.add(xlogy(-1, scale), lax.sub(z, lax.exp(z)))
    return _nan_unless_positive(scale, val)


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log cdf = log(1 - exp(-exp(z))), by expm1."""
    x, loc, scale = promote_args_inexact("gumbel_l.logcdf", x, loc, scale)
    z = standardize(x, loc, scale)
    val = lax.log(lax.neg(lax.expm1(lax.neg(lax.exp(z)))))
    return _nan_unless_positive(scale, val)


def cdf(x, loc=0, scale=1):
    """The distribution function 1 - exp(-exp(z)), as exp(logcdf)."""
    return lax.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """The quantile function loc + scale log(-log(1 - p)); NaN for p outside (0, 1)."""
    p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
    ok = (p > const(p, 0)) & (p < const(p, 1))
    val = lax.add(loc, lax.mul(scale, lax.log(xlog1py(-1, lax.neg(p)))))
    return ufuncs.where(ok, val, np.nan)


def sf(x, loc=0, scale=1):
    """The survival function exp(-exp(z)), as exp(logsf)."""
    return ufuncs.exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """log sf = -exp(z)."""
    x, loc, scale = promote_args_inexact("gumbel_l.logsf", x, loc, scale)
    z = standardize(x, loc, scale)
    return _nan_unless_positive(scale, lax.neg(lax.exp(z)))
