"""The generalized normal distribution with shape `beta`, density proportional to
exp(-|x|^beta) (jax.scipy.stats.gennorm)."""
from __future__ import annotations

from gpuarr.lax import lax
from gpuarr.lax import special as lax_special
from gpuarr.lax import special_extra as lax_special_extra
from gpuarr.scipy._arguments import promote_args_inexact


def logpdf(x, beta):
    """log(beta / 2) - lgamma(1 / beta) - |x|^beta."""
    x, beta = promote_args_inexact("gennorm.logpdf", x, beta)
    return lax.log(0.5 * beta) - lax_special.lgamma(1 / beta) - lax.abs(x) ** beta


def cdf(x, beta):
    """(1 + sign(x) P(1 / beta, |x|^beta)) / 2, P the regularized lower incomplete gamma
    function."""
    x, beta = promote_args_inexact("gennorm.cdf", x, beta)
    return 0.5 * (1 + lax.sign(x) * lax_special_extra.igamma(1 / beta, lax.abs(x) ** beta))


def pdf(x, beta):
    """The density, exp(logpdf(x, beta))."""
    return lax.exp(logpdf(x, beta))
