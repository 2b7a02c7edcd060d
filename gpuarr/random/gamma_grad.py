"""The derivative of Gamma samples with respect to the shape parameter.

A sample x of Gamma(a) is a function of `a` through the inverse CDF at a fixed uniform level,
so dx/da = -(dP(a, x)/da) / (dP(a, x)/dx) with P the regularised lower incomplete gamma
function (implicit reparameterisation; JAX's `random_gamma_grad`). The rejection sampler itself
is not differentiable (it is a while loop), so gpuarr.random.rejection wraps the samples in a
`custom_jvp` whose tangent rule calls `random_gamma_grad`: this formula evaluated on the host in
float64, with dP/da the central difference of P that lax.igamma's derivative in `a` uses.
"""
from __future__ import annotations

import numpy as np

from gpuarr.api import ShapeDtypeStruct
from gpuarr.callbacks import pure_callback
from gpuarr.lax.special import _lgamma64
from gpuarr.lax.special_extra import _igamma_grad_a64


def _dsample_da(a, x):
    """dx/da for Gamma(a) samples x, in float64 on the host."""
    dtype = np.result_type(a, x)
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    grad = np.zeros(x.shape)
    pos = x > 0
    ap, xp = a[pos], x[pos]
    if ap.size:
        density = np.exp((ap - 1) * np.log(xp) - xp - _lgamma64(ap))
        grad[pos] = -_igamma_grad_a64(ap, xp) / density
    return grad.astype(dtype)


def random_gamma_grad(a, x):
    """dx/da at Gamma(a) samples `x` (JAX's lax.random_gamma_grad), evaluated on the host."""
    aval = ShapeDtypeStruct(np.broadcast_shapes(np.shape(a), np.shape(x)), x.dtype)
    return pure_callback(_dsample_da, aval, a, x, vmap_method="broadcast_all")
