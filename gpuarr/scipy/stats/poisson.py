"""The Poisson distribution with mean `mu` (jax.scipy.stats.poisson): the mass function and
the distribution function (an upper incomplete gamma function)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import gammaincc, gammaln, xlogy
from gpuarr.scipy.stats._poisson_entropy import entropy  # noqa: F401


def logpmf(k, mu, loc=0):
    """k log mu - gammaln(k + 1) - mu for k - loc a non-negative integer, -inf otherwise."""
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    x = lax.sub(k, loc)
    log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
    return ufuncs.where((x < const(k, 0)) | (ufuncs.round(k) != k), -np.inf, log_probs)


def pmf(k, mu, loc=0):
    """The probability mass, exp(logpmf(k, mu, loc))."""
    return ufuncs.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """P(K <= k) = Q(floor(k - loc) + 1, mu), the regularized upper incomplete gamma
    function; 0 below loc."""
    k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
    x = lax.sub(k, loc)
    p = gammaincc(lax.add(lax.floor(x), const(x, 1)), mu)
    return ufuncs.where(x < const(x, 0), const(x, 0), p)
