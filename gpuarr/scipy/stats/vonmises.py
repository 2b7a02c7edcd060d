"""The von Mises distribution on the circle with concentration `kappa`
(jax.scipy.stats.vonmises)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.lax import special_extra as lax_special_extra
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact


def logpdf(x, kappa):
    """kappa (cos x - 1) - log(2 pi i0e(kappa)): the usual kappa cos x - log(2 pi I0(kappa))
    with the exponentially scaled Bessel function, so large kappa does not overflow; NaN
    for kappa <= 0."""
    x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
    val = kappa * (ufuncs.cos(x) - 1) - ufuncs.log(2 * np.pi * lax_special_extra.bessel_i0e(kappa))
    return ufuncs.where(kappa > const(kappa, 0), val, np.nan)


def pdf(x, kappa):
    """The density, exp(logpdf(x, kappa))."""
    return lax.exp(logpdf(x, kappa))
