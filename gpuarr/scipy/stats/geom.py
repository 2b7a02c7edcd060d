"""The geometric distribution: the trial of the first success, probability `p` each
(jax.scipy.stats.geom)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.special import xlog1py


def logpmf(k, p, loc=0):
    """(x - 1) log(1 - p) + log p at x = k - loc >= 1 (xlog1py makes x = 1, p = 1 exact);
    -inf for x <= 0."""
    k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
    zero, one = const(k, 0), const(k, 1)
    x = lax.sub(k, loc)
    log_probs = xlog1py(lax.sub(x, one), lax.neg(p)) + lax.log(p)
    return ufuncs.where(x <= zero, -np.inf, log_probs)


def pmf(k, p, loc=0):
    """The probability mass, exp(logpmf(k, p, loc))."""
    return ufuncs.exp(logpmf(k, p, loc))
