"""The exponential distribution with rate 1 / scale from loc (jax.scipy.stats.expon)."""
from __future__ import annotations

import numpy as np

from gpuarr import lax
from gpuarr import numpy as jnp
from gpuarr.scipy._arguments import promote_args_inexact
from gpuarr.scipy.stats._location_scale import standardize


def logpdf(x, loc=0, scale=1):
    """-(x - loc) / scale - log(scale) for x >= loc, -inf below."""
    x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
    log_probs = lax.neg(lax.add(standardize(x, loc, scale), lax.log(scale)))
    return jnp.where(x < loc, -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """1 - exp(-(x - loc) / scale) by expm1, so small arguments keep their precision."""
    x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
    neg_scaled_x = lax.div(lax.sub(loc, x), scale)
    return jnp.where(x < loc, lax.full_like(neg_scaled_x, 0), lax.neg(lax.expm1(neg_scaled_x)))


def logcdf(x, loc=0, scale=1):
    """log cdf, as log1p(-sf)."""
    return lax.log1p(lax.neg(sf(x, loc, scale)))


def logsf(x, loc=0, scale=1):
    """log sf: -(x - loc) / scale, and 0 below loc."""
    x, loc, scale = promote_args_inexact("expon.sf", x, loc, scale)
    neg_scaled_x = lax.div(lax.sub(loc, x), scale)
    return jnp.where(x < loc, lax.full_like(neg_scaled_x, 0), neg_scaled_x)


def sf(x, loc=0, scale=1):
    """The survival function exp(logsf(x, loc, scale))."""
    return lax.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    """The quantile function loc - scale * log1p(-q), NaN for q outside [0, 1]."""
    q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan,
                     lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))))
