"""The chi-squared distribution with `df` degrees of freedom (jax.scipy.stats.chi2): the gamma
distribution with shape df / 2 and twice the scale."""
from __future__ import annotations

from gpuarr.lax import lax
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.stats import gamma


def _as_gamma(name, x, df, loc, scale):
    x, df, loc, scale = promote_args_inexact(name, x, df, loc, scale)
    return x, lax.div(df, const(df, 2)), loc, lax.mul(scale, const(scale, 2))


def logpdf(x, df, loc=0, scale=1):
    """The log density of chi2(df) at x (gamma.logpdf with a = df / 2, scale doubled)."""
    return gamma.logpdf(*_as_gamma("chi2.logpdf", x, df, loc, scale))


def pdf(x, df, loc=0, scale=1):
    """The density of chi2(df) at x."""
    return gamma.pdf(*_as_gamma("chi2.pdf", x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    """P(X <= x) for chi2(df)."""
    return gamma.cdf(*_as_gamma("chi2.cdf", x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """log cdf(x, df, loc, scale)."""
    return gamma.logcdf(*_as_gamma("chi2.logcdf", x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """P(X > x) for chi2(df)."""
    return gamma.sf(*_as_gamma("chi2.sf", x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """log sf(x, df, loc, scale)."""
    return gamma.logsf(*_as_gamma("chi2.logsf", x, df, loc, scale))
