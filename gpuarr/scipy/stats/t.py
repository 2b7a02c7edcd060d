"""Student's t distribution with `df` degrees of freedom (jax.scipy.stats.t)."""
from __future__ import annotations

import numpy as np

from gpuarr.lax import lax
from gpuarr.lax import special as lax_special
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy.stats._location_scale import standardize


def logpdf(x, df, loc=0, scale=1):
    """The log density lgamma((df + 1) / 2) - lgamma(df / 2) - log(pi df scale^2) / 2
    - (df + 1) / 2 log1p(z^2 / df), z = (x - loc) / scale."""
    x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
    two = const(x, 2)
    z = standardize(x, loc, scale)
    df_over_two = lax.div(df, two)
    df_plus_one_over_two = lax.add(df_over_two, const(x, 0.5))
    normalize_const = lax.mul(lax.mul(scale, scale), const(x, np.pi))
    normalize_term = lax.sub(
        lax.add(lax_special.lgamma(df_over_two), lax.div(lax.log(lax.mul(normalize_const, df)), two)),
        lax_special.lgamma(df_plus_one_over_two))
    quadratic = lax.div(lax.mul(z, z), df)
    return lax.neg(lax.add(normalize_term, lax.mul(df_plus_one_over_two, lax.log1p(quadratic))))


def pdf(x, df, loc=0, scale=1):
    """The density, exp(logpdf(x, df, loc, scale))."""
    return lax.exp(logpdf(x, df, loc, scale))
