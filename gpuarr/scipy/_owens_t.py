"""Owen's T function of jax.scipy.special, as JAX computes it: a 13-point Gauss-type
quadrature (Patefield and Tandy 2000, method T5) of
T(h, a) = 1/(2 pi) integral_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx for |a| <= 1, with
T(h, a) = (Phi(h) + Phi(ah)) / 2 - Phi(h) Phi(ah) - T(ah, 1/a) (in erf / erfc form) for
|a| > 1, and exact values at h = 0 and |a| = 1.

The nodes and weights are float64 NumPy constants, as in JAX, so with x64 enabled even
float32 or float16 input gives a float64 result there (and float16 gives float32 without)."""
from __future__ import annotations

import numpy as np

from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import lax
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, manipulation, products, ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact

# Nodes t_i and weights w_i for T(h, a) ~ a sum_i w_i exp(-h^2 (1 + a^2 t_i) / 2) / (1 + a^2 t_i),
# the substitution x^2 = a^2 t having absorbed 1 / (2 pi) and the Jacobian into the weights.
_QUAD_PTS = np.array([
    0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
    0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
    0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
    0.99178832974629704,
])
_QUAD_WTS = np.array([
    0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
    0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
    0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239, 0.0038862217010742058,
    0.0016793031084546090,
])


def owens_t(h, a):
    """Owen's T function T(h, a) = 1/(2 pi) integral_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx,
    even in h and odd in a; NaN if either is NaN (jax.scipy.special.owens_t)."""
    h, a = promote_args_inexact("owens_t", h, a)
    return _owens_t_impl(h, a)


def _quadrature(h, a):
    quad_pts = manipulation.expand_dims(_QUAD_PTS, tuple(range(a.ndim)))
    r = ufuncs.square(a)[..., None] * quad_pts
    integrand = ufuncs.exp(-0.5 * ufuncs.square(h)[..., None] * (1. + r)) / (1. + r)
    # jnp.dot, not @: the same contraction, printed as JAX prints integrand @ weights.
    return a * products.dot(integrand, _QUAD_WTS)


@custom_jvp
def _owens_t_impl(h, a):
    h = ufuncs.abs(h)
    abs_a = ufuncs.abs(a)
    root_2 = const(h, np.sqrt(2))
    h_normed = h / root_2
    # |a| > 1 goes through T(ah, 1/a).
    mod_a = ufuncs.where(abs_a <= 1., abs_a, ufuncs.reciprocal(abs_a))
    mod_h = ufuncs.where(abs_a <= 1., h, abs_a * h)
    result = _quadrature(mod_h, mod_a)
    result = ufuncs.where(mod_h == 0., ufuncs.arctan(mod_a) / (2 * np.pi), result)
    result = ufuncs.where(mod_a == 1.,
                          0.125 * lax_special.erfc(-mod_h / root_2) * lax_special.erfc(mod_h / root_2),
                       result)
    norm_h = lax_special.erfc(h_normed)
    norm_ah = lax_special.erfc(abs_a * h_normed)
    # erf products where both are small, erfc ones (no cancellation) where they are not.
    result = ufuncs.where(
        abs_a > 1.,
        ufuncs.where(abs_a * h <= 0.67,
                     0.25 - 0.25 * lax_special.erf(h_normed) * lax_special.erf(abs_a * h_normed) - result,
                     0.25 * (norm_h + norm_ah - norm_h * norm_ah) - result),
        result)
    result = lax.sign(a) * result
    return ufuncs.where(ufuncs.isnan(a) | ufuncs.isnan(h), creation.full_like(result, np.nan), result)


@_owens_t_impl.defjvp
def _owens_t_jvp(primals, tangents):
    (h, a), (dh, da) = primals, tangents
    result = _owens_t_impl(h, a)
    root_2 = const(h, np.sqrt(2))
    # dT/dh = -exp(-h^2/2) erf(ah / sqrt 2) / (2 sqrt(2 pi)); dT/da = exp(-(1 + a^2) h^2 / 2)
    # / (2 pi (1 + a^2)).
    dout_dh = (-lax.exp(-0.5 * lax.square(h)) * lax_special.erf(a * h / root_2)
               / (2. * const(h, np.sqrt(2. * np.pi))))
    dout_da = (lax.exp(-0.5 * (lax.square(a) + 1.) * lax.square(h))
               / (2. * np.pi * (lax.square(a) + 1.)))
    return result, (dout_dh * dh + dout_da * da).astype(result.dtype)
