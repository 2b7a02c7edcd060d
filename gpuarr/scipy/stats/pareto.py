"""The Pareto distribution with shape `b` on [loc + scale, inf) (jax.scipy.stats.pareto)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.stats._location_scale import standardize


def _below_support(x, loc, scale):
    return x < lax.add(loc, scale)


def logpdf(x, b, loc=0, scale=1):
    """log b - log scale - (b + 1) log y, y = (x - loc) / scale; -inf below loc + scale."""
    x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
    y = standardize(x, loc, scale)
    normalize_term = lax.log(lax.div(scale, b))
    log_probs = lax.neg(lax.add(normalize_term, lax.mul(lax.add(b, const(x, 1)), lax.log(y))))
    return ufuncs.where(_below_support(x, loc, scale), -np.inf, log_probs)


def pdf(x, b, loc=0, scale=1):
    """The density, exp(logpdf(x, b, loc, scale))."""
    return lax.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """1 - y^-b, y = (x - loc) / scale; 0 below loc + scale."""
    x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
    y = standardize(x, loc, scale)
    p = lax.sub(const(x, 1), lax.pow(y, lax.neg(b)))
    return ufuncs.where(_below_support(x, loc, scale), const(x, 0), p)


def logcdf(x, b, loc=0, scale=1):
    """log1p(-y^-b); -inf below loc + scale."""
    x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
    y = standardize(x, loc, scale)
    val = lax.log1p(lax.neg(lax.pow(y, lax.neg(b))))
    return ufuncs.where(_below_support(x, loc, scale), -np.inf, val)


def logsf(x, b, loc=0, scale=1):
    """-b log y; 0 below loc + scale."""
    x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
    y = standardize(x, loc, scale)
    val = lax.neg(lax.mul(b, lax.log(y)))
    return ufuncs.where(_below_support(x, loc, scale), const(x, 0), val)


def sf(x, b, loc=0, scale=1):
    """The survival function y^-b, as exp(logsf(x, b, loc, scale))."""
    return lax.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    """The quantile function loc + scale (1 - q)^(-1/b); NaN for q outside [0, 1]."""
    q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
    one = const(q, 1)
    val = lax.add(loc, lax.mul(scale, lax.pow(lax.sub(one, q), lax.neg(lax.div(one, b)))))
    return ufuncs.where(ufuncs.isnan(q) | (q < 0) | (q > 1), np.nan, val)
