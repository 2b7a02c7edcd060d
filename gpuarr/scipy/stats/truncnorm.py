"""The normal distribution truncated to [a, b] in standard units, i.e. to
[loc + a scale, loc + b scale] (jax.scipy.stats.truncnorm). Every function is NaN for
a >= b."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import creation, manipulation, selection, ufuncs
from gpuarr.scipy._arguments import promote_args_inexact
from gpuarr.scipy.special import log_ndtr, logsumexp, ndtr
from gpuarr.scipy.stats import norm


def _log_diff(x, y):
    """log(exp(x) - exp(y)), NaN where y > x."""
    return logsumexp(creation.array([x, y]), b=creation.array([creation.ones_like(x),
                                                               -creation.ones_like(y)]), axis=0)


def _log_gauss_mass(a, b):
    """log(ndtr(b) - ndtr(a)) for a <= b, the standard normal mass of [a, b]. Intervals in
    one tail are reflected into the lower tail and use log_ndtr, which keeps them accurate far
    out; intervals around 0 use log1p of the two tail masses left out."""
    a, b = manipulation.broadcast_arrays(creation.array(a), creation.array(b))
    case_left = b <= 0
    case_right = a > 0
    case_central = ~(case_left | case_right)
    a_tail = ufuncs.where(case_right, -b, a)
    b_tail = ufuncs.where(case_right, -a, b)
    mass_tail = _log_diff(log_ndtr(b_tail), log_ndtr(a_tail))
    mass_central = ufuncs.log1p(-ndtr(a) - ndtr(-b))
    return ufuncs.where(case_central, mass_central, mass_tail)


def logpdf(x, a, b, loc=0, scale=1):
    """The normal log density less the log mass of [a, b]; -inf outside the interval."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logpdf", x, a, b, loc, scale)
    val = lax.sub(norm.logpdf(x, loc, scale), _log_gauss_mass(a, b))
    y = lax.div(lax.sub(x, loc), scale)
    val = ufuncs.where((y < a) | (y > b), -np.inf, val)
    return ufuncs.where(a >= b, np.nan, val)


def pdf(x, a, b, loc=0, scale=1):
    """The density, exp(logpdf(x, a, b, loc, scale))."""
    return lax.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """log P(X <= x): the log mass of [a, y] less that of [a, b], y = (x - loc) / scale.
    Near the top (log cdf > -0.1) it is log1p(-sf) instead, which keeps its accuracy there;
    0 from b on and -inf up to a."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = manipulation.broadcast_arrays(x, a, b)
    y = lax.div(lax.sub(x, loc), scale)
    lgm_ab = _log_gauss_mass(a, b)
    log_cdf = _log_gauss_mass(a, y) - lgm_ab
    log_sf = _log_gauss_mass(y, b) - lgm_ab
    log_cdf = selection.select([y >= b, y <= a, log_cdf > -0.1, y > a],
                               [0, -np.inf, ufuncs.log1p(-ufuncs.exp(log_sf)), log_cdf])
    return ufuncs.where(a >= b, np.nan, log_cdf)


def cdf(x, a, b, loc=0, scale=1):
    """The distribution function, exp(logcdf(x, a, b, loc, scale))."""
    return lax.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """log P(X > x), as the log cdf of the reflected distribution at -x."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
    """The survival function, exp(logsf(x, a, b, loc, scale))."""
    return lax.exp(logsf(x, a, b, loc, scale))
