"""The Box-Cox power transforms of jax.scipy.special: boxcox and boxcox1p."""
from __future__ import annotations

from gpuarr.numpy import creation, ufuncs
from gpuarr.scipy._arguments import promote_args_inexact


def _power_transform(log, x, lmbda):
    # expm1(lmbda log x) / lmbda stays accurate for small lmbda; lmbda == 0 is the log itself.
    # The steps are in JAX's order, so the traced program is JAX's.
    lmbda_is_zero = lmbda == 0
    safe_lmbda = ufuncs.where(lmbda_is_zero, creation.ones_like(lmbda), lmbda)
    log_x = log(x)
    return ufuncs.where(lmbda_is_zero, log_x, ufuncs.expm1(safe_lmbda * log_x) / safe_lmbda)


def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) where lmbda == 0; NaN for x < 0
    (jax.scipy.special.boxcox)."""
    x, lmbda = promote_args_inexact("boxcox", x, lmbda)
    return _power_transform(ufuncs.log, x, lmbda)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x, ((1 + x)^lmbda - 1) / lmbda, log1p(x) where
    lmbda == 0; NaN for x < -1 (jax.scipy.special.boxcox1p)."""
    x, lmbda = promote_args_inexact("boxcox1p", x, lmbda)
    return _power_transform(ufuncs.log1p, x, lmbda)
