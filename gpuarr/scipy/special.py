"""Special functions (jax.scipy.special): logsumexp, erf, expit, logit."""
from __future__ import annotations

import numpy as np

from gpuarr import lax
from gpuarr import numpy as jnp

__all__ = ["erf", "expit", "logit", "logsumexp"]


def erf(x):
    """The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt."""
    x = jnp.asarray(x)
    (x,) = _promote_inexact(x)
    return lax.erf(x)


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = _promote_inexact(jnp.asarray(x))
    return lax.logistic(x)


def logit(x):
    """The inverse of expit: log(x / (1 - x))."""
    (x,) = _promote_inexact(jnp.asarray(x))
    return lax.log(lax.div(x, lax.sub(lax.full_like(x, 1), x)))


def _promote_inexact(*xs):
    out = []
    for x in xs:
        if not jnp.issubdtype(x.dtype, np.inexact):
            x = lax.convert_element_type(x, jnp.result_type(float))
        out.append(x)
    return out


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
    """log(sum(b * exp(a))) over `axis`, computed stably by shifting with the (not
    differentiated) max; with `return_sign` also the sign of the sum, and without it a
    negative sum gives NaN, as jax.scipy.special.logsumexp."""
    a = jnp.asarray(a)
    (a,) = _promote_inexact(a)
    ndim = a.ndim
    axes = tuple(range(ndim)) if axis is None else tuple(
        sorted(x % ndim for x in ((axis,) if isinstance(axis, int) else axis))) if ndim else ()
    kept = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
    masked = a if where is None else jnp.where(where, a, -np.inf)
    amax = lax.reshape(lax.reduce_max(masked, axes), kept) if axes else masked
    amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, lax.full_like(amax, 0)))
    exp_a = lax.exp(lax.sub(a, amax))
    if b is not None:
        exp_a = exp_a * jnp.asarray(b)
    sumexp = jnp.sum(exp_a, axis=axes, keepdims=True, where=where)
    sign = lax.sign(sumexp)
    if b is not None or return_sign:
        sumexp = lax.abs(sumexp)
    out = lax.add(lax.log(sumexp), amax.astype(sumexp.dtype))
    if not keepdims:
        out = lax.reshape(out, tuple(s for i, s in enumerate(a.shape) if i not in axes))
        sign = lax.reshape(sign, out.shape)
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < 0, jnp.asarray(np.nan, out.dtype), out)
    return out
