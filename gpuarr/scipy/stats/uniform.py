"""The uniform distribution on [loc, loc + scale] (jax.scipy.stats.uniform)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import creation, selection, ufuncs
from gpuarr.scipy._arguments import promote_args_inexact


def logpdf(x, loc=0, scale=1):
    """-log(scale) inside [loc, loc + scale] and -inf outside."""
    x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
    outside = (x > lax.add(loc, scale)) | (x < loc)
    return ufuncs.where(outside, -np.inf, lax.neg(lax.log(scale)))


def pdf(x, loc=0, scale=1):
    """The density, exp(logpdf(x, loc, scale))."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """0 below loc, 1 above loc + scale and (x - loc) / scale between."""
    x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
    zero, one = creation.array(0, x.dtype), creation.array(1, x.dtype)
    upper = lax.add(loc, scale)
    conds = [x < loc, x > upper, (x >= loc) & (x <= upper)]
    return selection.select(conds, [zero, one, lax.div(lax.sub(x, loc), scale)])


def ppf(q, loc=0, scale=1):
    """The quantile function loc + scale * q, NaN for q outside [0, 1]."""
    q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
    return ufuncs.where(ufuncs.isnan(q) | (q < 0) | (q > 1), np.nan, lax.add(loc, lax.mul(scale, q)))
