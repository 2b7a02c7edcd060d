"""The Dirichlet distribution on the probability simplex (jax.scipy.stats.dirichlet)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import manipulation, reductions, ufuncs
from gpuarr.numpy.arguments import ensure_array, promote_dtypes_inexact
from gpuarr.scipy._arguments import const
from gpuarr.scipy.special import gammaln, xlogy


def _on_simplex(x):
    """Whether each column x[:, ...] is positive and sums to 1 (within 1e-6)."""
    return reductions.all(x > 0, axis=0) & (abs(reductions.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x, alpha):
    """sum_i (alpha_i - 1) log x_i - (sum_i gammaln(alpha_i) - gammaln(sum_i alpha_i)) for
    x on the simplex, -inf off it. The components run along x's first axis (the others are
    batch axes); `x` may leave out its last component, which is then 1 - sum of the rest.
    `alpha` must be one-dimensional."""
    x, alpha = (ensure_array(a) for a in promote_dtypes_inexact(x, alpha))
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one entry"
                         f" fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    one = const(x, 1)
    if x.shape[0] != alpha.shape[0]:
        x = manipulation.concatenate([x, lax.sub(one, x.sum(0, keepdims=True))], axis=0)
    normalize_term = reductions.sum(gammaln(alpha)) - gammaln(reductions.sum(alpha))
    if x.ndim > 1:  # alpha runs along x's first axis
        alpha = lax_shape_ops.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
    log_probs = lax.sub(reductions.sum(xlogy(lax.sub(alpha, one), x), axis=0), normalize_term)
    return ufuncs.where(_on_simplex(x), log_probs, -np.inf)


def pdf(x, alpha):
    """The density, exp(logpdf(x, alpha))."""
    return lax.exp(logpdf(x, alpha))
