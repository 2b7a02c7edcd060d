"""The multinomial distribution: counts `x` of `n` draws among categories of probabilities
`p` (jax.scipy.stats.multinomial)."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import lax
from gpuarr.numpy import reductions, ufuncs
from gpuarr.numpy.arguments import broadcast_arrays, check_arraylike, ensure_array, promote_dtypes_numeric
from gpuarr.scipy._arguments import promote_args_inexact
from gpuarr.scipy.special import gammaln, xlogy


def logpmf(x, n, p):
    """gammaln(n + 1) + sum_i (x_i log p_i - gammaln(x_i + 1)) over the last axis, -inf
    unless the counts add up to n. `x` and `n` must be integers. As in JAX the check sums
    all of `x` (not each last-axis row), so one call evaluates one outcome; vmap it for
    several."""
    (p,) = promote_args_inexact("multinomial.logpmf", p)
    check_arraylike("multinomial.logpmf", x, n)
    x, n = (ensure_array(a) for a in broadcast_arrays(*promote_dtypes_numeric(x, n)))
    if not dtypes.is_int(x.dtype):
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}")
    x = x.astype(p.dtype)
    n = n.astype(p.dtype)
    logprobs = gammaln(n + 1) + reductions.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return ufuncs.where(ufuncs.equal(reductions.sum(x), n), logprobs, -np.inf)


def pmf(x, n, p):
    """The probability mass, exp(logpmf(x, n, p))."""
    return lax.exp(logpmf(x, n, p))
