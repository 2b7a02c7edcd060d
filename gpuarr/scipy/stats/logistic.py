"""The logistic distribution (jax.scipy.stats.logistic)."""
from __future__ import annotations

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import expit, logit
from gpuarr.scipy.stats._location_scale import standardize


def logpdf(x, loc=0, scale=1):
    """The log density -2 logaddexp(z / 2, -z / 2) - log(scale), z = (x - loc) / scale: the
    symmetric form does not overflow for large |z|."""
    x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    two = const(z, 2)
    half_z = lax.div(z, two)
    return lax.sub(lax.mul(lax.neg(two), ufuncs.logaddexp(half_z, lax.neg(half_z))),
                   lax.log(scale))


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """The distribution function expit((x - loc) / scale)."""
    x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
    return expit(standardize(x, loc, scale))


def sf(x, loc=0, scale=1):
    """The survival function expit(-(x - loc) / scale)."""
    x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
    return expit(lax.neg(standardize(x, loc, scale)))


def ppf(x, loc=0, scale=1):
    """The quantile function logit(q) * scale + loc."""
    x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
    return lax.add(lax.mul(logit(x), scale), loc)


def isf(x, loc=0, scale=1):
    """The inverse survival function -logit(q) * scale + loc."""
    x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
    return lax.add(lax.mul(lax.neg(logit(x)), scale), loc)
