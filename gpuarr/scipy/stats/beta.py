"""The beta distribution on [loc, loc + scale] (jax.scipy.stats.beta). Only the densities:
the distribution functions need the regularized incomplete beta function, which gpuarr.lax
does not provide yet."""
from __future__ import annotations

import numpy as np

from gpuarr import lax
from gpuarr import numpy as jnp
from gpuarr.scipy._util import const, promote_args_inexact
from gpuarr.scipy.special import betaln, xlog1py, xlogy


def logpdf(x, a, b, loc=0, scale=1):
    """The log density (a - 1) log y + (b - 1) log(1 - y) - betaln(a, b) - log(scale),
    y = (x - loc) / scale; -inf outside the support and NaN for non-positive a, b or scale."""
    x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
    one = const(x, 1)
    y = lax.div(lax.sub(x, loc), scale)
    log_linear_term = lax.add(xlogy(lax.sub(a, one), y), xlog1py(lax.sub(b, one), lax.neg(y)))
    log_probs = lax.sub(lax.sub(log_linear_term, betaln(a, b)), lax.log(scale))
    outside = (x > lax.add(loc, scale)) | (x < loc)
    result = jnp.where(outside, -np.inf, log_probs)
    zero = const(a, 0)
    return jnp.where((a <= zero) | (b <= zero) | (scale <= zero), np.nan, result)


def pdf(x, a, b, loc=0, scale=1):
    """The density, exp(logpdf(x, a, b, loc, scale))."""
    return lax.exp(logpdf(x, a, b, loc, scale))
