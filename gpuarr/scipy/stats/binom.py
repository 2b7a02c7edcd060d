"""The binomial distribution with `n` trials of success probability `p`
(jax.scipy.stats.binom)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import gammaln, xlog1py, xlogy


def logpmf(k, n, p, loc=0):
    """log C(n, y) + y log p + (n - y) log(1 - p), y = k - loc, with the binomial
    coefficient through gammaln; -inf unless loc <= k < loc + n + 1. k need not be an
    integer, as in JAX."""
    k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
    y = lax.sub(k, loc)
    # Python 1s (weak), not const(k, 1): weak array arguments give weak results, as in JAX.
    comb_term = lax.sub(gammaln(n + 1), lax.add(gammaln(y + 1), gammaln(n - y + 1)))
    log_linear_term = lax.add(xlogy(y, p), xlog1py(lax.sub(n, y), lax.neg(p)))
    log_probs = lax.add(comb_term, log_linear_term)
    # A certain outcome (n = 0, or p at 0 or 1 on the right k) is exactly log 1, free of
    # the rounding of the gammaln terms.
    zero = const(y, 0)
    certain = ((y == zero) & (n == zero)) | (log_linear_term == zero)
    log_probs = ufuncs.where(certain, 0.0, log_probs)
    return ufuncs.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k, n, p, loc=0):
    """The probability mass, exp(logpmf(k, n, p, loc))."""
    return lax.exp(logpmf(k, n, p, loc))
