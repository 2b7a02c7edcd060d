"""The right-skewed Gumbel (extreme value, maximum) distribution
(jax.scipy.stats.gumbel_r). Every function but ppf is NaN for scale <= 0."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import xlogy
from gpuarr.scipy.stats._location_scale import standardize


def _nan_unless_positive(scale, value):
    return ufuncs.where(scale > const(scale, 0), value, np.nan)


def logpdf(x, loc=0, scale=1):
    """-log scale - (z + exp(-z)), z = (x - loc) / scale."""
    x, loc, scale = promote_args_inexact("gumbel_r.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    val = lax.add(xlogy(-1, scale), lax.neg(lax.add(z, lax.exp(lax.neg(z)))))
    return _nan_unless_positive(scale, val)


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """log cdf = -exp(-z)."""
    x, loc, scale = promote_args_inexact("gumbel_r.logcdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return _nan_unless_positive(scale, lax.neg(lax.exp(lax.neg(z))))


def cdf(x, loc=0, scale=1):
    """The distribution function exp(-exp(-z))."""
    return lax.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """The quantile function loc - scale log(-log p); NaN for p outside (0, 1)."""
    p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
    ok = (p > const(p, 0)) & (p < const(p, 1))
    val = lax.sub(loc, lax.mul(scale, lax.log(xlogy(-1, p))))
    return ufuncs.where(ok, val, np.nan)


def sf(x, loc=0, scale=1):
    """The survival function 1 - exp(-exp(-z))."""
    x, loc, scale = promote_args_inexact("gumbel_r.sf", x, loc, scale)
    neg_z = lax.div(lax.sub(loc, x), scale)
    val = lax.sub(const(x, 1), lax.exp(lax.neg(lax.exp(neg_z))))
    return _nan_unless_positive(scale, val)


def logsf(x, loc=0, scale=1):
    """log sf = log(1 - exp(-exp(-z))), by log1mexp so the upper tail keeps its accuracy."""
    x, loc, scale = promote_args_inexact("gumbel_r.logsf", x, loc, scale)
    # gpuarr.nn imports gpuarr.scipy, so its log1mexp is looked up on first use.
    from gpuarr.nn.functions import log1mexp
    neg_z = lax.div(lax.sub(loc, x), scale)
    return _nan_unless_positive(scale, log1mexp(lax.exp(neg_z)))
