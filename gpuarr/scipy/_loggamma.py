"""loggamma of jax.scipy.special: the principal branch of log Gamma, real and complex.

Real input is lgamma where x > 0 and NaN elsewhere. Complex input uses the Lanczos
approximation (g = 7, nine coefficients: GSL's lanczos_7_c, as JAX) with the reflection
formula for Re(z) < 1/2, after shifting z right by n steps with
loggamma(z) = loggamma(z + n) - sum_k log(z + k), which puts the single branch cut on the
negative real axis as in SciPy."""
from __future__ import annotations

import numpy as np

from gpuarr import lax
from gpuarr import numpy as jnp
from gpuarr.jit_api import jit as _jit
from gpuarr.scipy._arguments import promote_args_inexact

_LANCZOS_G = 7.0
_LANCZOS_COEFFS = (
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7,
)


def loggamma(x):
    """The principal branch of log Gamma(x): lgamma for real x > 0 and NaN for real x <= 0;
    complex input gives complex output, with the branch cut on the negative real axis and
    NaN at the poles (jax.scipy.special.loggamma)."""
    (x,) = promote_args_inexact("loggamma", x)
    if jnp.issubdtype(x.dtype, np.complexfloating):
        return _complex_loggamma_scipy(x)
    res = lax.lgamma(x)
    return jnp.where(x > 0, res, jnp.nan)


def _complex_loggamma(z):
    """Lanczos log Gamma for complex z, reflected for Re(z) < 1/2 (whose branch cuts are
    those of log sin, not SciPy's)."""
    reflect = jnp.real(z) < 0.5
    zz = jnp.where(reflect, 1.0 - z, z) - 1.0
    coeffs = jnp.asarray(_LANCZOS_COEFFS, dtype=z.dtype)
    ks = lax.expand_dims(jnp.arange(1, 9, dtype=z.dtype), tuple(range(zz.ndim)))
    ag = coeffs[0] + jnp.sum(lax.expand_dims(coeffs[1:], tuple(range(zz.ndim)))
                             / (lax.expand_dims(zz, (zz.ndim,)) + ks), axis=-1)
    t = zz + _LANCZOS_G + 0.5
    lanczos = (jnp.asarray(0.5 * np.log(2.0 * np.pi), dtype=z.dtype)
               + (zz + 0.5) * jnp.log(t) - t + jnp.log(ag))
    # A harmless z outside the reflected branch keeps NaN out of its (unselected) gradient.
    z_safe = jnp.where(reflect, z, jnp.full_like(z, 0.5))
    reflected = (jnp.log(jnp.asarray(np.pi, dtype=z.dtype)) - jnp.log(jnp.sin(np.pi * z_safe))
                 - lanczos)
    return jnp.where(reflect, reflected, lanczos)


@_jit
def _complex_loggamma_scipy(z):
    """loggamma(z + n) - sum_{k<n} log(z + k) with n = max(0, ceil(1/2 - Re z)), so the
    Lanczos formula is only used right of Re = 1/2; NaN at the poles and for NaN input."""
    is_nan = jnp.isnan(z)
    pole = (jnp.imag(z) == 0) & (jnp.real(z) == jnp.floor(jnp.real(z))) & (jnp.real(z) <= 0)
    nan_val = jnp.array(complex(np.nan, np.nan), dtype=z.dtype)
    bad = pole | is_nan
    z_safe = jnp.where(bad, jnp.ones_like(z), z)
    n = jnp.maximum(0, jnp.ceil(0.5 - jnp.real(z_safe)).astype(int))

    def cond_fun(state):
        return jnp.any(state[0] < n)

    def body_fun(state):
        k, sum_log = state
        shifting = k < n
        zk = jnp.where(shifting, z_safe + k, jnp.ones_like(z_safe))
        return k + 1, sum_log + jnp.where(shifting, jnp.log(zk), jnp.zeros_like(sum_log))

    _, sum_log = lax.while_loop(cond_fun, body_fun, (0, jnp.zeros_like(z_safe)))
    res = _complex_loggamma(z_safe + n) - sum_log
    return jnp.where(bad, nan_val, res)
