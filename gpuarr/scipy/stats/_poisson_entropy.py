"""The entropy of the Poisson distribution (jax.scipy.stats.poisson.entropy), kept apart
from the mass functions in `poisson`, which re-exports it."""
from __future__ import annotations

import numpy as np

from gpuarr.numpy import creation, manipulation, reductions, ufuncs
from gpuarr.numpy.arguments import check_arraylike, ensure_array, promote_dtypes_inexact
from gpuarr.scipy.special import entr, gammaln, xlogy


def entropy(mu, loc=0):
    """-sum_k p(k) log p(k) for Poisson(mu): summed directly over k < ceil(mu + 20) for
    mu < 10 and over k < ceil(mu + 10 sqrt(mu) + 20) for mu < 100, from the asymptotic
    series log(2 pi e mu) / 2 - 1 / (12 mu) beyond; 0 for mu = 0. `loc` shifts the
    distribution, which leaves the entropy alone, so it only broadcasts the result."""
    check_arraylike("poisson.entropy", mu, loc)
    mu, loc = (ensure_array(a) for a in promote_dtypes_inexact(mu, loc))
    result_shape = np.broadcast_shapes(mu.shape, loc.shape)
    mu_flat = manipulation.ravel(mu)
    result = ufuncs.where(
        mu_flat == 0, creation.zeros_like(mu_flat),
        ufuncs.where(mu_flat < 10, _direct_sum(mu_flat, 35, 20 + mu_flat),
                  ufuncs.where(mu_flat < 100, _direct_sum(mu_flat, 250,
                                                          mu_flat + 10 * ufuncs.sqrt(mu_flat) + 20),
                            _asymptotic(mu_flat))))
    return manipulation.broadcast_to(manipulation.reshape(result, mu.shape), result_shape)


def _direct_sum(mu, max_k, bound):
    """sum of entr(p(k)) over k < min(max_k, ceil(bound)), one column per value of mu."""
    k = creation.arange(max_k, dtype=mu.dtype)[:, None]
    probs = ufuncs.exp(xlogy(k, mu) - gammaln(k + 1) - mu)  # the Poisson mass at k >= 0
    mask = k < ufuncs.ceil(bound).astype(k.dtype)[None, :]
    return reductions.sum(entr(ufuncs.where(mask, probs, 0.0)), axis=0)


def _asymptotic(mu):
    return 0.5 * ufuncs.log(2 * np.pi * np.e * mu) - 1.0 / (12 * mu)
