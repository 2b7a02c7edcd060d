"""The derivative of Gamma samples with respect to the shape parameter.

A sample x of Gamma(a) is a function of `a` through the inverse CDF at a fixed uniform level,
so dx/da = -(dP(a, x)/da) / (dP(a, x)/dx) with P the regularised lower incomplete gamma
function (implicit reparameterisation; JAX's `random_gamma_grad`). The rejection sampler itself
is not differentiable (it is a while loop), so gpuarr.random.rejection wraps the samples in a
`custom_jvp` whose tangent rule calls `random_gamma_grad`: this formula evaluated on the host in
float64, with dP/da a central difference of P computed from its series (x < a + 1) or its
continued fraction (x >= a + 1).
"""
from __future__ import annotations

import math

import numpy as np

from gpuarr.api import ShapeDtypeStruct
from gpuarr.callbacks import pure_callback
from gpuarr.lax.special_extra import regularized_gamma

_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _dsample_da(a, x):
    """dx/da for Gamma(a) samples x, in float64 on the host."""
    dtype = np.result_type(a, x)
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    a, x = a.ravel(), x.ravel()
    pos = x > 0
    grad = np.zeros_like(x)
    ap, xp = a[pos], x[pos]
    if ap.size:
        h = 1e-5 * np.maximum(ap, 1e-3)
        dp_da = (regularized_gamma(ap + h, xp, False) - regularized_gamma(ap - h, xp, False)) / (2 * h)
        density = np.exp((ap - 1) * np.log(xp) - xp - _lgamma(ap).astype(np.float64))
        grad[pos] = -dp_da / density
    return grad.reshape(np.shape(x)).astype(dtype)


def _host_grad(a, x):
    shape = np.broadcast_shapes(np.shape(a), np.shape(x))
    return _dsample_da(a, x).reshape(shape)


def random_gamma_grad(a, x):
    """dx/da at Gamma(a) samples `x` (JAX's lax.random_gamma_grad), evaluated on the host."""
    aval = ShapeDtypeStruct(np.broadcast_shapes(np.shape(a), np.shape(x)), x.dtype)
    return pure_callback(_host_grad, aval, a, x, vmap_method="broadcast_all")
