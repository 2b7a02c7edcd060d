"""The multivariate normal distribution (jax.scipy.stats.multivariate_normal)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.lax import linalg as lax_linalg
from gpuarr.numpy import creation, manipulation, ufuncs
from gpuarr.numpy.arguments import promote_dtypes_inexact
from gpuarr.numpy.einsum import einsum as _einsum


def logpdf(x, mean, cov, allow_singular=None):
    """The log density of N(mean, cov) at x, batched over leading dimensions. A scalar
    `mean` makes it univariate and a scalar `cov` means cov * I; otherwise `cov` must end in
    (n, n) and is factored by Cholesky, so it must be positive definite. `allow_singular`
    is not supported (NotImplementedError), as in JAX."""
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = (creation.asarray(a) for a in promote_dtypes_inexact(x, mean, cov))
    log_2pi = ufuncs.log(2 * np.pi)
    if not mean.shape:
        return -1 / 2 * ufuncs.square(x - mean) / cov - 1 / 2 * (log_2pi + ufuncs.log(cov))
    n = mean.shape[-1]
    if not cov.shape:
        y = x - mean
        return (-1 / 2 * _einsum("...i,...i->...", y, y) / cov
                - n / 2 * (log_2pi + ufuncs.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    L = lax_linalg.cholesky(cov)
    # y = L^-1 (x - mean), so |y|^2 is the Mahalanobis distance; log det cov = 2 sum log L_ii.
    # triangular_solve takes a stack of vectors, once both stacks have the same batch shape.
    diff = x - mean
    batch = np.broadcast_shapes(L.shape[:-2], diff.shape[:-1])
    y = lax_linalg.triangular_solve(manipulation.broadcast_to(L, batch + (n, n)),
                                    manipulation.broadcast_to(diff, batch + (n,)),
                                    lower=True, transpose_a=True)
    return (-1 / 2 * _einsum("...i,...i->...", y, y) - n / 2 * log_2pi
            - ufuncs.log(creation.diagonal(L, axis1=-1, axis2=-2)).sum(-1))


def pdf(x, mean, cov):
    """The density, exp(logpdf(x, mean, cov))."""
    return lax.exp(logpdf(x, mean, cov))
