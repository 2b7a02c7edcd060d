"""The exponential distribution with rate 1 / scale from loc (jax.scipy.stats.expon)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import promote_args_inexact
from gpuarr.scipy.stats._location_scale import standardize


def logpdf(x, loc=0, scale=1):
    """-(x - loc) / scale - log(scale) for x >= loc, -inf below."""
    x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
    log_probs = lax.neg(lax.add(standardize(x, loc, scale), lax.log(scale)))
    return ufuncs.where(x < loc, -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """1 - exp(-(x - loc) / scale) by expm1, so small arguments keep their precision."""
    x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
    neg_scaled_x = lax.div(lax.sub(loc, x), scale)
    return ufuncs.where(x < loc, lax_shape_ops.full_like(neg_scaled_x, 0), lax.neg(lax.expm1(neg_scaled_x)))


def logcdf(x, loc=0, scale=1):
    """log cdf, as log1p(-sf)."""
    return lax.log1p(lax.neg(sf(x, loc, scale)))


def logsf(x, loc=0, scale=1):
    """log sf: -(x - loc) / scale, and 0 below loc."""
    x, loc, scale = promote_args_inexact("expon.sf", x, loc, scale)
    neg_scaled_x = lax.div(lax.sub(loc, x), scale)
    return ufuncs.where(x < loc, lax_shape_ops.full_like(neg_scaled_x, 0), neg_scaled_x)


def sf(x, loc=0, scale=1):
    """The survival function exp(logsf(x, loc, scale))."""
    return lax.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The quantile function loc - scale * log1p(-q), NaN for q outside [0, 1]."""
    q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
    return ufuncs.where(ufuncs.isnan(q) | (q < 0) | (q > 1), np.nan,
                        lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))))
