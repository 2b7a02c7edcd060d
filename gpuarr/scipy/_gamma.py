"""The gamma family of jax.scipy.special: gammaln, gammasgn, gamma, digamma, polygamma,
betaln, beta, multigammaln. Real inputs, except gamma, which also takes complex input as
JAX's does."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.jit_api import jit
from gpuarr.lax import lax
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, manipulation, reductions, selection, ufuncs
from gpuarr.scipy._arguments import concrete_int, const, promote_args_inexact, require_real


def gammaln(x):
    """log|Gamma(x)|, the log of the absolute value of the gamma function
    (jax.scipy.special.gammaln); integer inputs become the default float type."""
    (x,) = promote_args_inexact("gammaln", x)
    return lax_special.lgamma(x)  # complex input is a TypeError there, as in JAX


@jit
def gammasgn(x):
    """The sign of the gamma function: 1 or -1, with -1 at -0.0 and NaN at negative integers,
    -inf and NaN (jax.scipy.special.gammasgn)."""
    (x,) = promote_args_inexact("gammasgn", x)
    require_real(x, "gammasgn")
    typ = x.dtype.type  # NumPy scalars: the sign is never weakly typed, as in JAX
    floor_x = lax.floor(x)
    negative = x < 0
    return selection.select(
        [(negative & (x == floor_x)) | ufuncs.isnan(x),
         (negative & (floor_x % 2 != 0)) | ((x == 0) & ufuncs.signbit(x))],
        [typ(np.nan), typ(-1.0)], typ(1.0))


def gamma(x):
    """The gamma function, as gammasgn(x) * exp(gammaln(x)) like JAX (so it overflows where
    the float type does and is NaN at negative integers); complex input is exp of the
    Lanczos log gamma, NaN at the poles (jax.scipy.special.gamma)."""
    (x,) = promote_args_inexact("gamma", x)
    if dtypes.numpy_issubdtype(x.dtype, np.complexfloating):
        return _complex_gamma(x)
    return gammasgn(x) * lax.exp(lax_special.lgamma(x))


def _complex_gamma(z):
    from gpuarr.scipy._loggamma import _complex_loggamma
    # JAX's steps (including its repeated `real`), so the traced program is JAX's.
    is_nan = ufuncs.isnan(z)
    is_pole = (ufuncs.imag(z) == 0) & (ufuncs.real(z) == ufuncs.floor(ufuncs.real(z))) & (ufuncs.real(z) <= 0)
    nan_val = creation.array(complex(np.nan, np.nan), dtype=z.dtype)
    # Poles and NaNs go through loggamma as 1, so the unselected branch keeps NaN out of
    # the gradient.
    bad = is_pole | is_nan
    safe = ufuncs.where(bad, creation.ones_like(z), z)
    return ufuncs.where(bad, nan_val, ufuncs.exp(_complex_loggamma(safe)))


def digamma(x):
    """The digamma function psi(x), the derivative of gammaln (jax.scipy.special.digamma)."""
    (x,) = promote_args_inexact("digamma", x)
    return lax_special.digamma(x)


def polygamma(n, x):
    """The n-th derivative of digamma at x; `n` must have an integer dtype (a float `n` is a
    ValueError, as in JAX) and is promoted with `x` (jax.scipy.special.polygamma)."""
    n_dtype = dtypes.dtype(n, canonicalize=True)
    if not dtypes.numpy_issubdtype(n_dtype, np.integer):
        raise ValueError("Argument `n` to polygamma must be of integer type. "
                         f"Got dtype {n_dtype}.")
    n, x = promote_args_inexact("polygamma", n, x)
    return lax_special.polygamma(n, require_real(x, "polygamma"))


def _algdiv(a, b):
    # log(Gamma(b) / Gamma(a + b)) for a <= b, b >= 8 (CDFLIB's algdiv, as JAX's betaln): a
    # Stirling-series difference, accurate where lgamma(b) - lgamma(a + b) cancels. The steps
    # are JAX's, except x = 1 / (1 + h) as in CDFLIB's a <= b branch; JAX's h / (1 + h) costs
    # it up to ~3e-7 relative error for b just above 8.
    c0, c1, c2, c3, c4, c5 = (
        0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03,
        -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02)
    h = a / b
    c = h / (1 + h)
    x = 1 / (1 + h)
    d = b + (a - 0.5)
    x2 = x * x
    s3 = 1.0 + (x + x2)
    s5 = 1.0 + (x + x2 * s3)
    s7 = 1.0 + (x + x2 * s5)
    s9 = 1.0 + (x + x2 * s7)
    s11 = 1.0 + (x + x2 * s9)
    t = (1.0 / b) ** 2
    w = ((((c5 * s11 * t + c4 * s9) * t + c3 * s7) * t + c2 * s5) * t + c1 * s3) * t + c0
    w = w * (c / b)
    u = d * lax.log1p(a / b)
    v = a * (lax.log(b) - 1.0)
    return ufuncs.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
    """log|B(a, b)|, the log of the beta function; for max(a, b) >= 8 it uses a series for
    the lgamma difference, which stays accurate for large arguments
    (jax.scipy.special.betaln)."""
    a, b = promote_args_inexact("betaln", a, b)
    a, b = ufuncs.minimum(a, b), ufuncs.maximum(a, b)
    small_b = lax_special.lgamma(a) + (lax_special.lgamma(b) - lax_special.lgamma(a + b))
    large_b = lax_special.lgamma(a) + _algdiv(a, b)
    return ufuncs.where(b < 8, small_b, large_b)


def beta(a, b):
    """The beta function Gamma(a) Gamma(b) / Gamma(a + b), with its sign from gammasgn
    (jax.scipy.special.beta)."""
    a, b = promote_args_inexact("beta", a, b)
    require_real(a, "beta")
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * lax.exp(betaln(a, b))


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension `d` (a concrete Python int):
    d(d-1)/4 log(pi) + sum_j gammaln(a - j/2) for j < d (jax.scipy.special.multigammaln)."""
    d = concrete_int(d, "\nThe d argument of multigammaln must be concrete.")
    a, d_ = promote_args_inexact("multigammaln", a, d)
    constant = lax.mul(lax.mul(lax.mul(const(a, 0.25), d_), lax.sub(d_, const(a, 1))),
                       lax.log(const(a, np.pi)))
    b = lax.div(creation.arange(d, dtype=d_.dtype), const(a, 2))
    res = reductions.sum(gammaln(manipulation.expand_dims(a, -1)
                                 - manipulation.expand_dims(b, tuple(range(a.ndim)))), axis=-1)
    return res + constant
