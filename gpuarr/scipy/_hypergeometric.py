"""The confluent and Gauss hypergeometric functions of jax.scipy.special: hyp1f1 and hyp2f1,
with JAX's methods (Pearson, Olver and Porter 2014, arXiv:1407.7786) and derivatives.

hyp1f1 sums its Taylor series for |x| < 100 and the asymptotic series
Gamma(b) / Gamma(a) exp(x) x^(a-b) sum_k (b-a)_k (1-a)_k / (k! x^k) beyond. hyp2f1 uses the
terminating sum when a or b is a non-positive integer, the Taylor series, or for x > 0.9 and
integer c - a - b the digamma form of the transformation to 1 - x (Abramowitz and Stegun
15.3.10-12); c - a - b <= -1 goes through Euler's transformation
(1 - x)^(c-a-b) 2F1(c-a, c-b; c; x), and the special cases are JAX's. Every series stops after
250 terms at most, when its terms fall below the float type's epsilon relative to the sum.
Derivatives in a, b (and c) are the term-by-term derivatives of the Taylor series (digamma
differences), and d/dx is a/b 1F1(a+1; b+1; x) or ab/c 2F1(a+1, b+1; c+1; x).

The loops run per element (`elementwise_while`), each fed only the elements that use it, so a
large |a| elsewhere cannot make a terminating sum run long."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import lax
from gpuarr.numpy import creation, dtype_functions, manipulation, ufuncs
from gpuarr.scipy._arguments import promote_args_inexact
from gpuarr.scipy._gamma import digamma, gamma
from gpuarr.scipy._series import elementwise_while

_MAX_TERMS = 250


def _sum_terms(serie, term, ratio, weight=None, needed=True):
    """serie + sum_{k>=1} weight(k) t_k, with t_1 = term and t_{k+1} = t_k ratio(k), stopping
    at k = 250 or once |t_k| / |sum| <= eps (so a zero first term, with a zero sum, stops at
    once); k is an int32 array. Elements where `needed` is False are left at their start."""
    eps = dtypes.finfo(dtype_functions.result_type(term)).eps

    def cond(state):
        serie, k, term = state
        return needed & (k < _MAX_TERMS) & (lax.abs(term) / lax.abs(serie) > eps)

    def body(state):
        serie, k, term = state
        serie = serie + (term if weight is None else term * weight(k))
        return serie, k + 1, term * ratio(k)

    one = creation.ones(dtype_functions.shape(term), np.int32)
    return elementwise_while(cond, body, (serie, one, term))[0]


# ---------------------------------------------------------------- hyp1f1


def hyp1f1(a, b, x):
    """The confluent hypergeometric function 1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k!,
    real input only; 1 where a == 0 (including a == b == 0, where SciPy differs), exp(x)
    where a == b and inf where b == 0. Large results lose accuracy, float32 ones first
    (jax.scipy.special.hyp1f1)."""
    a, b, x = promote_args_inexact("hyp1f1", a, b, x)
    if dtypes.is_complex(x.dtype):
        raise ValueError("hyp1f1 does not support complex-valued inputs.")
    return _hyp1f1(*manipulation.broadcast_arrays(a, b, x))


@custom_jvp
def _hyp1f1(a, b, x):
    use_series = lax.abs(x) < 100
    one = creation.ones_like(x)
    series = _sum_terms(one, a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1),
                        needed=use_series)
    asymptotic = _sum_terms(one, (b - a) * (1 - a) / x,
                            lambda k: (b - a + k) * (1 - a + k) / (k + 1) / x,
                            needed=~use_series)
    asymptotic = gamma(b) / gamma(a) * lax.exp(x) * x ** (a - b) * asymptotic
    result = ufuncs.where(use_series, series, asymptotic)
    index = (a == 0) * 1 + ((a == b) & (a != 0)) * 2 + ((b == 0) & (a != 0)) * 3
    return lax.select_n(index.astype(np.int32), result, one, ufuncs.exp(x),
                        creation.full_like(x, np.inf))


def _hyp1f1_da(a, b, x):
    zero = creation.zeros_like(x)
    return _sum_terms(zero, a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1),
                      weight=lambda k: digamma(a + k) - digamma(a))


def _hyp1f1_db(a, b, x):
    zero = creation.zeros_like(x)
    return _sum_terms(zero, a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1),
                      weight=lambda k: digamma(b) - digamma(b + k))


_hyp1f1.defjvps(
    lambda a_dot, out, a, b, x: _hyp1f1_da(a, b, x) * a_dot,
    lambda b_dot, out, a, b, x: _hyp1f1_db(a, b, x) * b_dot,
    lambda x_dot, out, a, b, x: a / b * _hyp1f1(a + 1, b + 1, x) * x_dot,
)


# ---------------------------------------------------------------- hyp2f1


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function 2F1(a, b; c; x) = sum_k (a)_k (b)_k / (c)_k x^k / k!
    for real arguments: 1 where x == 0 (or a or b is 0 with c != 0), inf where c is a
    non-positive integer, for x > 1, and at x == 1 unless c - a - b > 0 (Gauss's sum).
    Large results lose accuracy, float32 ones first (jax.scipy.special.hyp2f1)."""
    a, b, c, x = promote_args_inexact("hyp2f1", a, b, c, x)
    return _hyp2f1(*manipulation.broadcast_arrays(a, b, c, x))


@custom_jvp
def _hyp2f1(a, b, c, x):
    eps = dtypes.finfo(x.dtype).eps * 50
    d = c - a - b
    s = 1 - x
    ca, cb = c - a, c - b
    id_ = ufuncs.round(d)
    index = ufuncs.where((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 0,
            ufuncs.where((c == 0) | ((c < 0) & (c % 1 == 0)), 1,
            ufuncs.where((d <= -1) & ~((ufuncs.abs(d - id_) >= eps) & (s < 0)), 2,
            ufuncs.where((d <= 0) & (x == 1), 1,
            ufuncs.where((x < 1) & (b == c), 3,
            ufuncs.where((x < 1) & (a == c), 4,
            ufuncs.where(x > 1, 1,
            ufuncs.where(x == 1, 5, 6))))))))
    return lax.select_n(
        index.astype(np.int32),
        creation.ones_like(x),
        creation.full_like(x, np.inf),
        s ** d * _terminal_or_series(ca, cb, c, x, needed=index == 2),
        s ** (-a),
        s ** (-b),
        gamma(c) * gamma(d) / (gamma(ca) * gamma(cb)),
        _terminal_or_series(a, b, c, x, needed=index == 6),
    )


def _terminal_or_series(a, b, c, x, needed):
    # A non-positive integer a or b ends the series; near x = 1 with integer c - a - b the
    # digamma form of the 1 - x transformation converges where the series does not.
    eps = dtypes.finfo(x.dtype).eps * 50
    d = c - a - b
    neg_int_a = (a <= 0) & (ufuncs.abs(a - ufuncs.round(a)) < eps)
    neg_int_b = (b <= 0) & (ufuncs.abs(b - ufuncs.round(b)) < eps)
    terminates = neg_int_a | neg_int_b
    index = ufuncs.where((x > 0.9) & ~terminates,
                         ufuncs.where(ufuncs.abs(d - ufuncs.round(d)) >= eps, 0, 1),
                         ufuncs.where(terminates, 2, 0))
    return lax.select_n(index.astype(np.int32),
                        _hyp2f1_series(a, b, c, x, needed & (index == 0)),
                        _hyp2f1_digamma_transform(a, b, c, x, needed & (index == 1)),
                        _hyp2f1_terminal(a, b, c, x, needed & (index == 2)))


def _hyp2f1_terminal(a, b, c, x, needed):
    """The finite sum up to k = |a| (a a non-positive integer; b when it is the one with the
    larger magnitude still below |c| for a non-positive integer c)."""
    eps = dtypes.finfo(x.dtype).eps * 50
    swap = (b < a) & (ufuncs.abs(b - ufuncs.round(b)) < eps) & ~((c % 1 == 0) & (c <= 0) & (c > b))
    a, b = ufuncs.where(swap, b, a), ufuncs.where(swap, a, b)
    a = ufuncs.abs(a)

    def body(state):
        i, serie, term = state
        term = term * (-(a - i + 1) / (c + i - 1) * (b + i - 1) / i * x)
        return i + 1, serie + term, term

    one = creation.ones_like(x)
    return elementwise_while(lambda state: needed & (state[0] < a + 1), body,
                             (creation.ones_like(a), one, one))[1]


def _hyp2f1_series(a, b, c, x, needed):
    rtol = dtypes.finfo(x.dtype).eps

    def cond(state):
        serie, k, term = state
        return needed & (k < _MAX_TERMS) & (lax.abs(term) > rtol * lax.abs(serie))

    def body(state):
        serie, k, term = state
        return (serie + term, k + 1,
                term * ((a + k - 1) * (b + k - 1) / (c + k - 1) / k * x))

    return elementwise_while(cond, body, (creation.zeros_like(x), creation.ones_like(x),
                                          creation.ones_like(x)))[0]


def _hyp2f1_digamma_transform(a, b, c, x, needed):
    """2F1 near x = 1 for integer m = c - a - b: Abramowitz and Stegun 15.3.10-12, a series in
    s = 1 - x with digamma coefficients plus, for m != 0, a finite sum of |m| terms."""
    rtol = dtypes.finfo(x.dtype).eps
    d = c - a - b
    s = 1 - x
    rd = ufuncs.round(d)
    zero = creation.zeros_like(d)
    e = ufuncs.where(rd >= 0, d, -d)
    d1 = ufuncs.where(rd >= 0, d, zero)
    d2 = ufuncs.where(rd >= 0, zero, d)
    ard = ufuncs.where(rd >= 0, rd, -rd).astype(np.int32)
    ax = ufuncs.log(s)

    y = digamma(1.0) + digamma(1.0 + e) - digamma(a + d1) - digamma(b + d1) - ax
    y = y / gamma(e + 1.0)
    p = (a + d1) * (b + d1) * s / gamma(e + 2.0)

    def cond(state):
        _, q, t, y = state
        return needed & (t < _MAX_TERMS) & (ufuncs.abs(q) >= rtol * ufuncs.abs(y))

    def body(state):
        p, _, t, y = state
        r = (digamma(1.0 + t) + digamma(1.0 + t + e) - digamma(a + t + d1)
             - digamma(b + t + d1) - ax)
        q = p * r
        p = p * (s * (a + t + d1) / (t + 1.0))
        p = p * ((b + t + d1) / (t + 1.0 + e))
        return p, q, t + 1.0, y + q

    y = elementwise_while(cond, body, (p, y, creation.ones_like(x), y))[3]

    # The |m| - 1 extra terms of the finite sum (none where m == 0 or the element is unused).
    def finite_body(state):
        i, t, p, y1 = state
        p = p * (s * (a + t + d2) * (b + t + d2) / (1.0 - e + t))
        t = t + 1.0
        p = p / t
        return i + 1, t, p, y1 + p

    one = creation.ones_like(x)
    y1 = elementwise_while(lambda state: needed & (state[0] < ard), finite_body,
                           (creation.ones_like(ard), creation.zeros_like(x), one, one))[3]
    gamma_c = gamma(c)
    y1 = y1 * (gamma(e) * gamma_c / (gamma(a + d1) * gamma(b + d1)))
    y_m = y * (gamma_c / (gamma(a + d2) * gamma(b + d2)))
    y_m = ufuncs.where((ard & 1) != 0, -y_m, y_m)
    q = s ** rd
    with_sum = ufuncs.where(rd > 0, y_m * q + y1, y_m + y1 * q)
    return ufuncs.where(rd == 0, y * gamma_c / (gamma(a) * gamma(b)), with_sum)


def _hyp2f1_dparam(weight):
    def derivative(a, b, c, x):
        zero = creation.zeros_like(x)
        return _sum_terms(zero, a * b / c * x,
                          lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x,
                          weight=lambda k: weight(a, b, c, k))
    return derivative


_hyp2f1_da = _hyp2f1_dparam(lambda a, b, c, k: digamma(a + k) - digamma(a))
_hyp2f1_db = _hyp2f1_dparam(lambda a, b, c, k: digamma(b + k) - digamma(b))
_hyp2f1_dc = _hyp2f1_dparam(lambda a, b, c, k: digamma(c) - digamma(c + k))

_hyp2f1.defjvps(
    lambda a_dot, out, a, b, c, x: _hyp2f1_da(a, b, c, x) * a_dot,
    lambda b_dot, out, a, b, c, x: _hyp2f1_db(a, b, c, x) * b_dot,
    lambda c_dot, out, a, b, c, x: _hyp2f1_dc(a, b, c, x) * c_dot,
    lambda x_dot, out, a, b, c, x: a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x) * x_dot,
)
