"""The gamma distribution with shape `a` (jax.scipy.stats.gamma). Only the densities: the
distribution functions need the regularized incomplete gamma function, which gpuarr.lax does
not provide yet."""
from __future__ import annotations

import numpy as np

from gpuarr import lax
from gpuarr import numpy as jnp
from gpuarr.scipy._util import const, promote_args_inexact
from gpuarr.scipy.special import gammaln, xlogy


def logpdf(x, a, loc=0, scale=1):
    """The log density (a - 1) log y - y - gammaln(a) - log(scale), y = (x - loc) / scale,
    and -inf below loc; xlogy makes y = 0 with a = 1 give -log(scale)."""
    x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
    ok = lax.ge(x, loc)
    one = const(x, 1)
    # y = 1 off the support keeps log(y) finite in the branch that is not used.
    y = jnp.where(ok, lax.div(lax.sub(x, loc), scale), one)
    log_linear_term = lax.sub(xlogy(lax.sub(a, one), y), y)
    shape_terms = lax.add(gammaln(a), lax.log(scale))
    return jnp.where(ok, lax.sub(log_linear_term, shape_terms), -np.inf)


def pdf(x, a, loc=0, scale=1):
    """The density, exp(logpdf(x, a, loc, scale))."""
    return lax.exp(logpdf(x, a, loc, scale))
