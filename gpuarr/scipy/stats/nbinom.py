"""The negative binomial distribution: failures before the `n`-th success, probability
`p` each (jax.scipy.stats.nbinom)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import gammaln, xlogy


def logpmf(k, n, p, loc=0):
    """log C(y + n - 1, n - 1) + n log p + y log(1 - p), y = k - loc, the coefficient
    through gammaln; -inf below loc."""
    k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
    one = const(k, 1)
    y = lax.sub(k, loc)
    comb_term = lax.sub(lax.sub(gammaln(lax.add(y, n)), gammaln(n)), gammaln(lax.add(y, one)))
    log_linear_term = lax.add(xlogy(n, p), xlogy(y, lax.sub(one, p)))
    return ufuncs.where(k < loc, -np.inf, lax.add(comb_term, log_linear_term))


def pmf(k, n, p, loc=0):
    """The probability mass, exp(logpmf(k, n, p, loc))."""
    return lax.exp(logpmf(k, n, p, loc))
