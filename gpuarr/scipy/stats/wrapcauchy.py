"""The wrapped Cauchy distribution on [0, 2 pi] with shape `c` in (0, 1)
(jax.scipy.stats.wrapcauchy)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact


def logpdf(x, c):
    """log(1 - c^2) - log(2 pi) - log(1 + c^2 - 2 c cos x) on [0, 2 pi], -inf outside it;
    NaN unless 0 < c < 1."""
    x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
    val = ufuncs.log(1 - c * c) - ufuncs.log(2 * np.pi) - ufuncs.log(1 + c * c - 2 * c * ufuncs.cos(x))
    inside = (x >= const(x, 0)) & (x <= const(x, np.pi * 2))
    ok = (c > const(c, 0)) & (c < const(c, 1))
    return ufuncs.where(ok, ufuncs.where(inside, val, -np.inf), np.nan)


def pdf(x, c):
    """The density, exp(logpdf(x, c))."""
    return lax.exp(logpdf(x, c))
