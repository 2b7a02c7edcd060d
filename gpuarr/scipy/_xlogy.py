"""x log y and the entropies built on it: xlogy, xlog1py, entr, rel_entr, kl_div.

The custom JVPs are JAX's: the derivative of x log y is log(y) dx + (x / y) dy everywhere, so
gradients at x = 0 follow the formula rather than the `where` that defines the value."""
from __future__ import annotations

import numpy as np

from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact, require_real


@custom_jvp
def xlogy(x, y):
    """x * log(y), defined as 0 where x == 0 (unless y is NaN), so xlogy(0, 0) = 0; its
    derivative is JAX's log(y) dx + x / y dy (jax.scipy.special.xlogy)."""
    x, y = promote_args_inexact("xlogy", x, y)
    # 0 * log(0) is 0 by definition; a NaN y still gives NaN, as in SciPy.
    return ufuncs.where((x != 0) | ufuncs.isnan(y), lax.mul(x, lax.log(y)), lax_shape_ops.full_like(x, 0))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    out = xlogy(x, y)
    return out, (x_dot * lax.log(y) + y_dot * x / y).astype(out.dtype)


@custom_jvp
def xlog1py(x, y):
    """x * log1p(y), defined as 0 where x == 0 (unless y is NaN), so xlog1py(0, -1) = 0; its
    derivative is log1p(y) dx + x / (1 + y) dy (jax.scipy.special.xlog1py)."""
    x, y = promote_args_inexact("xlog1py", x, y)
    return ufuncs.where((x != 0) | ufuncs.isnan(y), lax.mul(x, lax.log1p(y)), lax_shape_ops.full_like(x, 0))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    out = xlog1py(x, y)
    return out, (x_dot * lax.log1p(y) + y_dot * x / (1 + y)).astype(out.dtype)


@custom_jvp
def _xlogx(x):
    return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
    # d(x log x) = (log x + 1) dx; through xlogy it would count x / x = 1 as 0 / 0 at x = 0.
    (x,), (x_dot,) = primals, tangents
    return _xlogx(x), x_dot * (lax.log(x) + 1)


def entr(x):
    """The elementwise entropy -x log x: 0 at x = 0 and -inf for x < 0
    (jax.scipy.special.entr)."""
    (x,) = promote_args_inexact("entr", x)
    require_real(x, "entr")
    return lax.select(lax.lt(x, const(x, 0)), lax_shape_ops.full_like(x, -np.inf), lax.neg(_xlogx(x)))


def rel_entr(p, q):
    """The relative entropy p log(p / q) for p, q > 0, 0 where p == 0 and q >= 0, and inf
    otherwise (jax.scipy.special.rel_entr)."""
    p, q = promote_args_inexact("rel_entr", p, q)
    require_real(p, "rel_entr")
    zero = const(p, 0.0)
    both_positive = lax.bitwise_and(lax.gt(p, zero), lax.gt(q, zero))
    one_zero = lax.bitwise_and(lax.eq(p, zero), lax.ge(q, zero))
    # Ones in the masked-out places keep NaN out of the unused branch and its gradient.
    safe_p = ufuncs.where(both_positive, p, 1)
    safe_q = ufuncs.where(both_positive, q, 1)
    log_val = lax.sub(_xlogx(safe_p), xlogy(safe_p, safe_q))
    return ufuncs.where(both_positive, log_val, ufuncs.where(one_zero, zero, np.inf))


def kl_div(p, q):
    """The elementwise Kullback-Leibler divergence rel_entr(p, q) - p + q
    (jax.scipy.special.kl_div)."""
    p, q = promote_args_inexact("kl_div", p, q)
    require_real(p, "kl_div")
    return rel_entr(p, q) - p + q
