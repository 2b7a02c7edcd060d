"""The standard normal distribution function and its relatives: ndtr, ndtri, log_ndtr.

As in JAX these take float32 or float64 only (integers are a TypeError, not promoted), and
constants carry the input's dtype, so results are never weakly typed."""
from __future__ import annotations

import functools

import numpy as np

from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, polynomial, ufuncs
from gpuarr.scipy._arguments import require_float32_or_64


def ndtr(x):
    """The standard normal CDF, integral_-inf^x exp(-t^2 / 2) dt / sqrt(2 pi), from erf near
    0 and erfc in the tails (jax.scipy.special.ndtr); float32 or float64 input only."""
    return _ndtr(require_float32_or_64(x, "ndtr"))


def _ndtr(x):
    dtype = x.dtype.type
    half_sqrt_2 = dtype(0.5) * np.sqrt(2., dtype=dtype)
    w = x * half_sqrt_2
    z = lax.abs(w)
    # erfc keeps relative accuracy for large |w|, where 1 + erf(w) would cancel.
    y = lax.select(lax.lt(z, half_sqrt_2), dtype(1.) + lax_special.erf(w),
                   lax.select(lax.gt(w, dtype(0.)), dtype(2.) - lax_special.erfc(z), lax_special.erfc(z)))
    return dtype(0.5) * y


# Cephes' rational approximations of ndtri (Moshier), leading coefficients first: P0/Q0 for
# p > exp(-2), then P1/Q1 and P2/Q2 in the tail split at z = sqrt(-2 log p) = 8.
_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
       1.39312609387279679503E1, -1.23916583867381258016E0)
_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
       -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
       1.59056225126211695515E1, -1.18331621121330003142E0)
_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
       4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
       -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
       1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
       -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
       1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
       3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
       2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
       2.89247864745380683936E-6, 6.79019408009981274425E-9)


def ndtri(p):
    """The inverse of ndtr: the x with ndtr(x) = p, -inf at p = 0 and inf at p = 1, from
    Cephes' piecewise rational approximations (jax.scipy.special.ndtri); float32 or float64
    input only."""
    in_dtype = lax_extras.dtype(p)  # a TypeError for lists, as in JAX
    if in_dtype not in (np.float32, np.float64):
        raise TypeError(
            f"x.dtype={in_dtype} is not supported, see docstring for supported types.")
    p = creation.asarray(p)
    dtype = p.dtype.type
    shape = np.shape(p)
    p0, q0, p1, q1, p2, q2 = (np.array(c, dtype) for c in (_P0, _Q0, _P1, _Q1, _P2, _Q2))
    maybe_complement_p = ufuncs.where(p > dtype(-np.expm1(-2.)), dtype(1.) - p, p)
    # Any value other than 0 keeps NaN out of the branches not taken at p = 0 or 1.
    sanitized = ufuncs.where(maybe_complement_p == dtype(0.), creation.full(shape, dtype(0.5)),
                             maybe_complement_p)
    # Centre, p > exp(-2): x / sqrt(2 pi) = w + w^3 P0(w^2) / Q0(w^2).
    w = sanitized - dtype(0.5)
    ww = lax.square(w)
    x_for_big_p = w + w * ww * (polynomial.polyval(p0, ww) / polynomial.polyval(q0, ww))
    x_for_big_p = x_for_big_p * -dtype(np.sqrt(2. * np.pi))
    # Tails: x = z - log(z) / z - P(1/z) / Q(1/z) / z with z = sqrt(-2 log p).
    z = lax.sqrt(dtype(-2.) * lax.log(sanitized))
    first_term = z - lax.log(z) / z
    second_term_small_p = polynomial.polyval(p2, 1 / z) / polynomial.polyval(q2, 1 / z) / z
    second_term_otherwise = polynomial.polyval(p1, 1 / z) / polynomial.polyval(q1, 1 / z) / z
    x_small_p = first_term - second_term_small_p
    x_otherwise = first_term - second_term_otherwise
    x = ufuncs.where(sanitized > dtype(np.exp(-2.)), x_for_big_p,
                     ufuncs.where(z >= dtype(8.0), x_small_p, x_otherwise))
    x = ufuncs.where(p > dtype(1. - np.exp(-2.)), x, -x)
    inf = creation.full(shape, dtype(np.inf))
    return ufuncs.where(p == dtype(0.0), -inf, ufuncs.where(p == dtype(1.0), inf, x))


# Where log_ndtr switches method, per dtype: below `lower` ndtr underflows, so an asymptotic
# series gives log ndtr directly; above `upper` log(ndtr(x)) rounds to 0 and -ndtr(-x), the
# first term of log(1 - ndtr(-x)), keeps the tiny value. The bounds are JAX's.
_LOG_NDTR_BOUNDS = {np.dtype(np.float64): (-20.0, 8.0), np.dtype(np.float32): (-10.0, 5.0)}


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def log_ndtr(x, series_order=3):
    """log(ndtr(x)), accurate far into both tails: an asymptotic series of depth
    `series_order` (a Python int in [0, 30]) below -20 (float64) or -10 (float32), and
    -ndtr(-x) above 8 or 5 (jax.scipy.special.log_ndtr); float32 or float64 input only."""
    if not isinstance(series_order, int):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0:
        raise ValueError("series_order must be non-negative.")
    if series_order > 30:
        raise ValueError("series_order must be <= 30.")
    x = creation.asarray(x)
    if x.dtype not in _LOG_NDTR_BOUNDS:
        raise TypeError(f"x.dtype={x.dtype} is not supported.")
    lower, upper = (np.asarray(b, x.dtype) for b in _LOG_NDTR_BOUNDS[x.dtype])
    above = lax.gt(x, upper)
    # Clamping each branch's argument to its own range keeps the unused branches finite, so
    # their zero cotangents do not turn into NaN (0 * inf) in the gradient.
    ndtr_res = _ndtr(ufuncs.where(above, -x, lax.max(x, lower)))
    return ufuncs.where(above, -ndtr_res,
                        ufuncs.where(lax.gt(x, lower), lax.log(ndtr_res),
                                     _log_ndtr_lower(lax.min(x, lower), series_order)))


@log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
    # d log ndtr(x) = pdf(x) / ndtr(x) dx, formed in log space so the tails do not overflow.
    (x,), (t,) = primals, tangents
    ans = log_ndtr(x, series_order)
    return ans, lax.mul(t, lax.exp(lax.sub(_norm_logpdf(x), ans)))


def _norm_logpdf(x):
    dtype = x.dtype.type
    return lax.sub(lax.mul(dtype(-0.5), lax.square(x)), dtype(np.log(np.sqrt(2 * np.pi))))


def _log_ndtr_lower(x, series_order):
    # ndtr(x) = exp(-x^2 / 2) / (-x sqrt(2 pi)) * (1 + sum_n (-1)^n (2n-1)!! / x^(2n)) for x << -1.
    dtype = x.dtype.type
    x_2 = lax.square(x)
    log_scale = -dtype(0.5) * x_2 - lax.log(-x) - dtype(0.5 * np.log(2. * np.pi))
    return log_scale + lax.log(_log_ndtr_series(x, series_order, dtype))


def _log_ndtr_series(x, series_order, dtype):
    if series_order <= 0:
        return np.array(1, dtype)
    x_2 = lax.square(x)
    even_sum = creation.zeros_like(x)
    odd_sum = creation.zeros_like(x)
    x_2n = x_2
    for n in range(1, series_order + 1):
        y = np.array(np.prod(np.arange(2 * n - 1, 1, -2)), dtype) / x_2n
        if n % 2:
            odd_sum = odd_sum + y
        else:
            even_sum = even_sum + y
        x_2n = x_2n * x_2
    return dtype(1.) + even_sum - odd_sum
