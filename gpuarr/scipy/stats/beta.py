"""The beta distribution on [loc, loc + scale] (jax.scipy.stats.beta): densities, and the
distribution functions through the regularized incomplete beta function."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.lax import special as lax_special
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import betainc, betaln, xlog1py, xlogy


def logpdf(x, a, b, loc=0, scale=1):
    """The log density (a - 1) log y + (b - 1) log(1 - y) - betaln(a, b) - log(scale),
    y = (x - loc) / scale; -inf outside the support and NaN for non-positive a, b or scale."""
    x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
    one = const(x, 1)
    y = lax.div(lax.sub(x, loc), scale)
    log_linear_term = lax.add(xlogy(lax.sub(a, one), y), xlog1py(lax.sub(b, one), lax.neg(y)))
    log_probs = lax.sub(lax.sub(log_linear_term, betaln(a, b)), lax.log(scale))
    outside = (x > lax.add(loc, scale)) | (x < loc)
    result = ufuncs.where(outside, -np.inf, log_probs)
    zero = const(a, 0)
    return ufuncs.where((a <= zero) | (b <= zero) | (scale <= zero), np.nan, result)


def pdf(x, a, b, loc=0, scale=1):
    """The density, exp(logpdf(x, a, b, loc, scale))."""
    return lax.exp(logpdf(x, a, b, loc, scale))


def _standardized(name, x, a, b, loc, scale):
    x, a, b, loc, scale = promote_args_inexact(name, x, a, b, loc, scale)
    y = lax.div(lax.sub(x, loc), scale)
    return lax_special.clamp(const(x, 0), y, const(x, 1)), a, b


def cdf(x, a, b, loc=0, scale=1):
    """P(X <= x): the regularized incomplete beta function at y = (x - loc) / scale, clipped
    to [0, 1]."""
    y, a, b = _standardized("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, y)


def logcdf(x, a, b, loc=0, scale=1):
    """log cdf(x, a, b, loc, scale)."""
    return lax.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """P(X > x) = I_{1-y}(b, a), accurate where the cdf is near 1."""
    y, a, b = _standardized("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, lax.sub(const(y, 1), y))


def logsf(x, a, b, loc=0, scale=1):
    """log sf(x, a, b, loc, scale)."""
    return lax.log(sf(x, a, b, loc, scale))
