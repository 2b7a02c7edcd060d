"""The beta-binomial distribution: `n` trials whose success probability is Beta(a, b)
distributed (jax.scipy.stats.betabinom)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import betaln


def logpmf(k, n, a, b, loc=0):
    """log C(n, y) + betaln(y + a, n - y + b) - betaln(a, b) at y = floor(k) - loc, the
    binomial coefficient written as -log1p(n) - betaln(n - y + 1, y + 1); -inf outside
    0 <= y <= n and NaN for n < 0 or non-positive a, b."""
    k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
    y = lax.sub(lax.floor(k), loc)
    one, zero = const(y, 1), const(y, 0)
    combiln = lax.neg(lax.add(lax.log1p(n), betaln(lax.add(lax.sub(n, y), one), lax.add(y, one))))
    beta_lns = lax.sub(betaln(lax.add(y, a), lax.add(lax.sub(n, y), b)), betaln(a, b))
    log_probs = lax.add(combiln, beta_lns)
    log_probs = ufuncs.where((y == zero) & (n == zero), 0.0, log_probs)
    # As in JAX the lower bound compares y with -loc (not 0), so a positive loc lets y dip
    # below zero before the mass becomes -inf.
    outside = (y < lax.neg(loc)) | (y > n) | (lax.add(y, a) <= zero)
    log_probs = ufuncs.where(outside, -np.inf, log_probs)
    return ufuncs.where((n < zero) | (a <= zero) | (b <= zero), np.nan, log_probs)


def pmf(k, n, a, b, loc=0):
    """The probability mass, exp(logpmf(k, n, a, b, loc))."""
    return lax.exp(logpmf(k, n, a, b, loc))
