"""Counting functions of jax.scipy.special: factorial, comb, poch (the Pochhammer symbol) and
the Bernoulli numbers, all in floating point through the gamma function (no exact integers,
as in JAX)."""
from __future__ import annotations

import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import lax
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, reductions, selection, ufuncs
from gpuarr.numpy.arguments import concrete_value
from gpuarr.scipy._arguments import promote_args_inexact
from gpuarr.scipy._gamma import digamma, gamma, gammaln


def factorial(n, exact: bool = False):
    """n! as Gamma(n + 1), and 0 for negative n; `exact=True` is not supported
    (jax.scipy.special.factorial)."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    (n,) = promote_args_inexact("factorial", n)
    return ufuncs.where(n < 0, 0, lax.exp(lax_special.lgamma(n + 1)))


def comb(N, k, *, repetition: bool = False):
    """The binomial coefficient N choose k from gammaln, 0 unless 0 <= k <= N; with
    `repetition`, the number of multisets, comb(N + k - 1, k) (jax.scipy.special.comb)."""
    N, k = promote_args_inexact("comb", N, k)
    if repetition:
        return ufuncs.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    valid = (k <= N) & (N >= 0) & (k >= 0)
    # Zeros where the result is 0 keep gammaln away from its poles (and NaN gradients).
    safe_N = ufuncs.where(valid, N, 0.0)
    safe_k = ufuncs.where(valid, k, 0.0)
    result = lax.exp(gammaln(safe_N + 1) - gammaln(safe_k + 1) - gammaln(safe_N + 1 - safe_k))
    return ufuncs.where(valid, result, 0.0)


@custom_jvp
def poch(z, m):
    """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z), 1 where m == 0; real input
    only. Its derivatives are JAX's: (psi(z + m) - psi(z)) (z)_m in z and psi(z + m) (z)_m
    in m (jax.scipy.special.poch)."""
    z, m = promote_args_inexact("poch", z, m)
    if dtypes.numpy_issubdtype(z.dtype, np.complexfloating):
        raise ValueError("jnp.poch does not support complex-valued inputs.")
    return ufuncs.where(m == 0., creation.array(1, dtype=z.dtype), gamma(z + m) / gamma(z))


poch.defjvps(
    lambda z_dot, out, z, m: (digamma(z + m) - digamma(z)) * poch(z, m) * z_dot,
    lambda m_dot, out, z, m: digamma(z + m) * poch(z, m) * m_dot,
)


def bernoulli(n: int):
    """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2) in the default float type; `n` must be a
    concrete non-negative integer (jax.scipy.special.bernoulli).

    B_2j = (-1)^(j+1) 2 (2j)! zeta(2j) / (2 pi)^(2j) as Chowla and Hartung write it, the
    factorial ratio a running product, as in JAX. zeta(2j) is summed over k < 50 as there, plus
    the Euler-Maclaurin estimate of the rest of the sum, which JAX leaves out (costing it
    2.5e-6 relative error in B_4 and 1e-8 in B_6)."""
    n = operator.index(concrete_value(n, "Argument n of bernoulli"))
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    b3 = creation.array([1, -1 / 2, 1 / 6])
    if n < 3:
        return b3[:n + 1]
    bn = creation.zeros(n + 1).at[:3].set(b3)
    m = creation.arange(4, n + 1, 2, dtype=bn.dtype)
    q1 = (1. / np.pi ** 2) * selection.cumprod(-(m - 1) * m / 4 / np.pi ** 2)
    k = creation.arange(2, _ZETA_TERMS, dtype=bn.dtype)
    q2 = reductions.sum(k[:, None] ** -m[None, :], axis=0) + _zeta_tail(m, float(_ZETA_TERMS))
    return bn.at[4::2].set(q1 * (1 + q2))


_ZETA_TERMS = 50


def _zeta_tail(m, big_k):
    # sum_{k >= K} k^-m by Euler-Maclaurin: K^(1-m) / (m - 1) + K^-m / 2 + B_2 m K^(-m-1) / 2!
    # + B_4 m (m+1) (m+2) K^(-m-3) / 4!; the next term is below 1e-15 of zeta(m) for m >= 4.
    return (big_k ** (1 - m) / (m - 1) + big_k ** -m / 2 + m * big_k ** (-m - 1) / 12
            - m * (m + 1) * (m + 2) * big_k ** (-m - 3) / 720)
