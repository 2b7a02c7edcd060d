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

_ITERS = 2000  # enough terms for the series and the fraction up to a ~ 1e5
_TINY = 1e-300
_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _log_prefactor(a, x):
    return -x + a * np.log(x) - _lgamma(a).astype(np.float64)


def _lower_series(a, x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))."""
    term = np.ones_like(x)
    total = np.ones_like(x)
    for n in range(1, _ITERS):
        term = term * x / (a + n)
        total = total + term
        if np.all(term < total * 1e-17):
            break
    return np.exp(_log_prefactor(a, x) - np.log(a)) * total


def _upper_fraction(a, x):
    """Q(a, x) = 1 - P(a, x) by Lentz's method on its continued fraction."""
    b = x + 1 - a
    c = np.full_like(x, 1 / _TINY)
    d = 1 / np.where(np.abs(b) < _TINY, _TINY, b)
    h = d.copy()
    for i in range(1, _ITERS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1) < 1e-16):
            break
    return np.exp(_log_prefactor(a, x)) * h


def _regularized_lower_gamma(a, x):
    out = np.zeros_like(x)
    small = x < a + 1
    if small.any():
        out[small] = _lower_series(a[small], x[small])
    if (~small).any():
        out[~small] = 1 - _upper_fraction(a[~small], x[~small])
    return out


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
        dp_da = (_regularized_lower_gamma(ap + h, xp) - _regularized_lower_gamma(ap - h, xp)) / (2 * h)
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
