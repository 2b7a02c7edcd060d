"""The derivative of Gamma samples with respect to the shape parameter.

A sample x of Gamma(a) is a function of `a` through the inverse CDF at a fixed uniform level,
so dx/da = -(dP(a, x)/da) / (dP(a, x)/dx) with P the regularised lower incomplete gamma
function (implicit reparameterisation; JAX's `random_gamma_grad`). The rejection sampler itself
is not differentiable (it is a while loop), so gpuarr.random.rejection wraps the samples in a
`custom_jvp` whose tangent rule calls `random_gamma_grad`: evaluated on the host in float64 by
the series / continued fraction behind lax.igamma_grad_a, in the form where the density cancels
(JAX's SAMPLE_DERIVATIVE mode), so that neither underflows in the tails.
"""
from __future__ import annotations

import numpy as np

from gpuarr.api_util import ShapeDtypeStruct
from gpuarr.callbacks import pure_callback
from gpuarr.lax.special_extra import _igamma_grad_a_host


def _dsample_da(a, x):
    """dx/da for Gamma(a) samples x, on the host, in the dtype of x."""
    dtype = np.result_type(x)
    a, x = np.broadcast_arrays(np.asarray(a, dtype), np.asarray(x, dtype))
    return _igamma_grad_a_host(a, x, sample=True)


def random_gamma_grad(a, x):
    """dx/da at Gamma(a) samples `x` (JAX's lax.random_gamma_grad), evaluated on the host."""
    aval = ShapeDtypeStruct(np.broadcast_shapes(np.shape(a), np.shape(x)), x.dtype)
    return pure_callback(_dsample_da, aval, a, x, vmap_method="broadcast_all")
