"""Special functions (jax.scipy.special).

The gamma family lives in `_gamma`, x log y and the entropies in `_xlogy`, the normal
distribution function in `_normal`, the incomplete gamma and beta functions, Bessel functions
and zeta in `_incomplete`, and the later additions in modules named by topic (`_bessel`,
`_boxcox`, `_combinatorics`, `_exp_integrals`, `_faddeeva`, `_hypergeometric`, `_legendre`,
`_loggamma`, `_owens_t`, `_spence`, `_trig_integrals`); this module adds the erf family, the logistic pair and
the log-sum-exp family (softmax and log_softmax with SciPy's signature), and is the public
face of all of them."""
from __future__ import annotations

import numpy as np

from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, dtype_functions, reductions, ufuncs
from gpuarr.numpy.arguments import canonicalize_axes
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy._bessel import bessel_jn
from gpuarr.scipy._boxcox import boxcox, boxcox1p
from gpuarr.scipy._combinatorics import bernoulli, comb, factorial, poch
from gpuarr.scipy._exp_integrals import exp1, expi, expn
from gpuarr.scipy._faddeeva import dawsn, erfcx, wofz
from gpuarr.scipy._gamma import (
    beta,
    betaln,
    digamma,
    gamma,
    gammaln,
    gammasgn,
    multigammaln,
    polygamma,
)
from gpuarr.scipy._hypergeometric import hyp1f1, hyp2f1
from gpuarr.scipy._incomplete import betainc, gammainc, gammaincc, i0, i0e, i1, i1e, zeta
from gpuarr.scipy._legendre import sph_harm_y
from gpuarr.scipy._loggamma import loggamma
from gpuarr.scipy._normal import log_ndtr, ndtr, ndtri
from gpuarr.scipy._owens_t import owens_t
from gpuarr.scipy._spence import spence
from gpuarr.scipy._trig_integrals import fresnel, sici
from gpuarr.scipy._xlogy import entr, kl_div, rel_entr, xlog1py, xlogy

__all__ = [
    "beta", "betainc", "betaln", "digamma", "entr", "erf", "erfc", "erfinv", "expit", "gamma",
    "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1", "i1e", "kl_div",
    "log_ndtr", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "rel_entr",
    "xlog1py", "xlogy", "zeta", "log_softmax", "softmax",
    "bernoulli", "bessel_jn", "boxcox", "boxcox1p", "comb", "dawsn", "erfcx", "exp1", "expi",
    "expn", "factorial", "fresnel", "hyp1f1", "hyp2f1", "loggamma", "owens_t", "poch", "sici",
    "spence", "sph_harm_y", "wofz",
]


def softmax(x, /, *, axis: int | tuple[int, ...] | None = None):
    """exp(x) normalised to sum to 1 over `axis` (all axes by default), as
    jax.scipy.special.softmax: jax.nn.softmax with SciPy's signature."""
    # gpuarr.nn imports this module (for logsumexp), so its functions are imported on use.
    from gpuarr.nn import functions
    return functions.softmax(x, axis=axis)


def log_softmax(x, /, *, axis: int | tuple[int, ...] | None = None):
    """The log of softmax over `axis` (all axes by default), computed stably, as
    jax.scipy.special.log_softmax: jax.nn.log_softmax with SciPy's signature."""
    from gpuarr.nn import functions
    return functions.log_softmax(x, axis=axis)


def erf(x):
    """The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt (jax.scipy.special.erf)."""
    (x,) = promote_args_inexact("erf", x)
    return lax_special.erf(x)


def erfc(x):
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1
    (jax.scipy.special.erfc)."""
    (x,) = promote_args_inexact("erfc", x)
    return lax_special.erfc(x)


def erfinv(x):
    """The inverse of erf on [-1, 1]: +-inf at +-1 and NaN outside
    (jax.scipy.special.erfinv)."""
    (x,) = promote_args_inexact("erfinv", x)
    return lax_special.erf_inv(x)


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x)) (jax.scipy.special.expit)."""
    (x,) = promote_args_inexact("expit", x)
    return lax.logistic(x)


@custom_jvp
def logit(x):
    """The inverse of expit: log(x / (1 - x)), with JAX's derivative 1 / (x (1 - x))
    (jax.scipy.special.logit)."""
    (x,) = promote_args_inexact("logit", x)
    return lax.log(lax.div(x, lax.sub(const(x, 1), x)))  # strongly typed unless a 0-d weak x


logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(const(x, 1), x))))


def _reduction_axes(axis, ndim):
    """Sorted axes for a reduction: out-of-range (any axis of a 0-d array) and duplicate axes
    are JAX's ValueErrors."""
    if ndim == 0 and axis is not None:
        for a in (axis,) if isinstance(axis, int) else tuple(axis):
            raise ValueError(f"axis {a} is out of bounds for array of dimension 0")
        return ()
    return tuple(sorted(canonicalize_axes(axis, ndim)))


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """log(sum(b * exp(a))) over `axis`, computed stably by shifting with the (not
    differentiated) max; with `return_sign` also the sign of the sum, and without it a
    negative sum gives NaN, as jax.scipy.special.logsumexp."""
    # JAX's formula step by step, so values, NaNs and the printed program are JAX's.
    if where is not None:
        a = ufuncs.where(where, a, 0)
    if b is not None:
        a, b = promote_args_inexact("logsumexp", a, b)
        a = ufuncs.where(b != 0, a, -np.inf)
    else:
        (a,) = promote_args_inexact("logsumexp", a)
    axes = _reduction_axes(axis, a.ndim)
    amax = reductions.max(a.real, axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(lax.select(ufuncs.isfinite(amax), amax, lax_shape_ops.full_like(amax, 0)))
    amax_with_dims = amax if keepdims else lax_shape_ops.expand_dims(amax, axes)
    exp_a = lax.exp(lax.sub(a, amax_with_dims.astype(a.dtype)))
    if b is not None:
        exp_a = lax.mul(exp_a, b)
    sumexp = exp_a.sum(axis=axes, keepdims=keepdims, where=where)
    sign = lax.sign(sumexp)
    if return_sign or not dtype_functions.iscomplexobj(a):
        sumexp = abs(sumexp)
    out = lax.add(lax.log(sumexp), amax.astype(sumexp.dtype))
    if return_sign:
        return out, sign
    if b is not None and not dtype_functions.iscomplexobj(out):
        out = ufuncs.where(sign < 0, creation.asarray(np.nan, out.dtype), out)
    return out
