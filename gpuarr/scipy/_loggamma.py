"""loggamma of jax.scipy.special: the principal branch of log Gamma, real and complex.

Real input is lgamma where x > 0 and NaN elsewhere. Complex input uses the Lanczos
approximation (g = 7, nine coefficients: GSL's lanczos_7_c, as JAX) with the reflection
formula for Re(z) < 1/2, after shifting z right by n steps with
loggamma(z) = loggamma(z + n) - sum_k log(z + k), which puts the single branch cut on the
negative real axis as in SciPy."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.jit_api import jit as _jit
from gpuarr.lax import control_flow as lax_control_flow
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, reductions, ufuncs
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
    if dtypes.numpy_issubdtype(x.dtype, np.complexfloating):
        return _complex_loggamma_scipy(x)
    res = lax_special.lgamma(x)
    return ufuncs.where(x > 0, res, np.nan)


def _complex_loggamma(z):
    """Lanczos log Gamma for complex z, reflected for Re(z) < 1/2 (whose branch cuts are
    those of log sin, not SciPy's)."""
    reflect = ufuncs.real(z) < 0.5
    zz = ufuncs.where(reflect, 1.0 - z, z) - 1.0
    coeffs = creation.asarray(_LANCZOS_COEFFS, dtype=z.dtype)
    ks = lax_shape_ops.expand_dims(creation.arange(1, 9, dtype=z.dtype), tuple(range(zz.ndim)))
    ag = coeffs[0] + reductions.sum(lax_shape_ops.expand_dims(coeffs[1:], tuple(range(zz.ndim)))
                                    / (lax_shape_ops.expand_dims(zz, (zz.ndim,)) + ks), axis=-1)
    t = zz + _LANCZOS_G + 0.5
    lanczos = (creation.asarray(0.5 * np.log(2.0 * np.pi), dtype=z.dtype)
               + (zz + 0.5) * ufuncs.log(t) - t + ufuncs.log(ag))
    # A harmless z outside the reflected branch keeps NaN out of its (unselected) gradient.
    z_safe = ufuncs.where(reflect, z, creation.full_like(z, 0.5))
    reflected = (ufuncs.log(creation.asarray(np.pi, dtype=z.dtype)) - ufuncs.log(ufuncs.sin(np.pi * z_safe))
                 - lanczos)
    return ufuncs.where(reflect, reflected, lanczos)


@_jit
def _complex_loggamma_scipy(z):
    """loggamma(z + n) - sum_{k<n} log(z + k) with n = max(0, ceil(1/2 - Re z)), so the
    Lanczos formula is only used right of Re = 1/2; NaN at the poles and for NaN input."""
    is_nan = ufuncs.isnan(z)
    pole = (ufuncs.imag(z) == 0) & (ufuncs.real(z) == ufuncs.floor(ufuncs.real(z))) & (ufuncs.real(z) <= 0)
    nan_val = creation.array(complex(np.nan, np.nan), dtype=z.dtype)
    bad = pole | is_nan
    z_safe = ufuncs.where(bad, creation.ones_like(z), z)
    n = ufuncs.maximum(0, ufuncs.ceil(0.5 - ufuncs.real(z_safe)).astype(int))

    def cond_fun(state):
        return reductions.any(state[0] < n)

    def body_fun(state):
        k, sum_log = state
        shifting = k < n
        zk = ufuncs.where(shifting, z_safe + k, creation.ones_like(z_safe))
        return k + 1, sum_log + ufuncs.where(shifting, ufuncs.log(zk), creation.zeros_like(sum_log))

    _, sum_log = lax_control_flow.while_loop(cond_fun, body_fun, (0, creation.zeros_like(z_safe)))
    res = _complex_loggamma(z_safe + n) - sum_log
    return ufuncs.where(bad, nan_val, res)
