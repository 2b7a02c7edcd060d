"""The Bernoulli distribution with success probability `p` (jax.scipy.stats.bernoulli)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import selection, ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import xlog1py, xlogy


def logpmf(k, p, loc=0):
    """k log p + (1 - k) log(1 - p) for k - loc in [0, 1] (xlogy makes p = 0 or 1 exact),
    -inf outside."""
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    zero, one = const(k, 0), const(k, 1)
    x = lax.sub(k, loc)
    log_probs = xlogy(x, p) + xlog1py(lax.sub(one, x), -p)
    return ufuncs.where((x < zero) | (x > one), -np.inf, log_probs)


def pmf(k, p, loc=0):
    """The probability mass, exp(logpmf(k, p, loc))."""
    return ufuncs.exp(logpmf(k, p, loc))


def cdf(k, p):
    """0 for k < 0, 1 - p for 0 <= k < 1, 1 from 1 on; NaN for p outside [0, 1]."""
    k, p = promote_args_inexact("bernoulli.cdf", k, p)
    zero, one = const(k, 0), const(k, 1)
    conds = [ufuncs.isnan(k) | ufuncs.isnan(p) | (p < zero) | (p > one), k < zero,
             (k >= zero) & (k < one), k >= one]
    return selection.select(conds, [np.nan, zero, one - p, one])


def ppf(q, p):
    """The quantile function: 0 for q <= 1 - p, 1 above; NaN for q or p outside [0, 1]."""
    q, p = promote_args_inexact("bernoulli.ppf", q, p)
    zero, one = const(q, 0), const(q, 1)
    bad = ufuncs.isnan(q) | ufuncs.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
    return ufuncs.where(bad, np.nan, ufuncs.where(q <= one - p, zero, one))
