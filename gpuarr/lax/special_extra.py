"""More special functions: the regularized incomplete gamma functions (igamma, igammac) and
the derivative of igamma in a (igamma_grad_a), the exponentially scaled modified Bessel
functions of orders 0 and 1 (bessel_i0e, bessel_i1e), the Hurwitz zeta function (zeta) and the
regularized incomplete beta function (betainc).

Like gpuarr.lax.special, each NumPy implementation runs in float64 and rounds to the operand's
dtype. The methods: igamma by its power series where x < a + 1 and by the continued fraction of
igammac elsewhere (Lentz's method); igamma_grad_a as JAX, by the series and XLA's form of the
continued fraction differentiated term by term in a; the Bessel functions by their power series
for |x| <= 20 and their asymptotic expansions beyond; zeta by Euler-Maclaurin summation
(Cephes' scheme); betainc by its continued fraction, using I_x(a, b) = 1 - I_{1-x}(b, a) past
the mean. Domain edges give the values JAX gives (NaN outside the domain).
"""
from __future__ import annotations

import numpy as np

from gpuarr import narrow_types
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval
from gpuarr.impls import impl_rules, narrow_rules
from gpuarr.interpreters.ad import defjvp
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax.arguments import _broadcast_shapes, _check_kind, _check_same_dtypes, _coerce_scalars
from gpuarr.lax.lax import (
    _const,
    abs,
    add,
    binop,
    broadcast_batch_rule,
    exp,
    gt,
    log,
    log1p,
    mul,
    neg,
    reciprocal,
    select_n,
    sign,
    sub,
    unop,
)
from gpuarr.lax.shape_ops import full_like
from gpuarr.lax.special import _digamma64, _in_f64, _lgamma64, digamma, lgamma

_ITERS = 2000
_TINY = 1e-300
_EPS = 1e-16


# ---------------------------------------------------------------- incomplete gamma


def _log_prefactor(a, x):
    return -x + a * np.log(x) - _lgamma64(a)


def _lower_series(a, x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))."""
    term = np.ones_like(x)
    total = np.ones_like(x)
    for n in range(1, _ITERS):
        term = term * x / (a + n)
        total = total + term
        if np.all(term <= total * _EPS):
            break
    return np.exp(_log_prefactor(a, x) - np.log(a)) * total


def _upper_fraction(a, x):
    """Q(a, x) = 1 - P(a, x) from its continued fraction (modified Lentz)."""
    b = x + 1 - a
    c = np.full_like(x, 1 / _TINY)
    d = 1 / np.where(np.abs(b) < _TINY, _TINY, b)
    h = d.copy()
    for i in range(1, _ITERS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1) < _EPS):
            break
    return np.exp(_log_prefactor(a, x)) * h


def regularized_gamma(a, x, upper):
    """P(a, x) (Q(a, x) with `upper`) for float64 arrays, on the host: the series below
    x = a + 1, the continued fraction above (the lower and upper incomplete gamma ratios)."""
    out = np.full(x.shape, np.nan)
    ok = (a >= 0) & (x >= 0) & np.isfinite(a)
    zero_a = ok & (a == 0)
    out[zero_a & (x > 0)] = 0.0 if upper else 1.0
    ok &= a > 0
    out[ok & (x == 0)] = 1.0 if upper else 0.0
    out[ok & np.isinf(x)] = 0.0 if upper else 1.0
    ok &= (x > 0) & np.isfinite(x)
    series = ok & (x < a + 1)
    frac = ok & ~series
    if series.any():
        p = _lower_series(a[series], x[series])
        out[series] = 1 - p if upper else p
    if frac.any():
        q = _upper_fraction(a[frac], x[frac])
        out[frac] = q if upper else 1 - q
    return out


def _igamma64(a, x):
    return regularized_gamma(a, x, upper=False)


def _igammac64(a, x):
    return regularized_gamma(a, x, upper=True)


igamma_p = binop("igamma", _in_f64(_igamma64), "float")
igammac_p = binop("igammac", _in_f64(_igammac64), "float")


# ---------------------------------------------------------------- d/da of the incomplete gamma

# JAX's igamma_grad_a and random_gamma_grad (ported from XLA's math library): P's series and
# Q's continued fraction differentiated term by term in a. They stop once both the sum and its
# derivative have converged to float64 precision (JAX stops on the derivative alone, at the
# operand's precision).

_SERIES_ITERS = 20000  # the series needs about 9 sqrt(a) terms near x = a
_F64_EPS = float(np.finfo(np.float64).eps)


def _series_da(a, x, live):
    """S = sum_n x^n / ((a + 1) ... (a + n)), so that P = x^a e^-x S / Gamma(a + 1), and dS/da,
    for the flat arrays a, x at the indices `live` (elsewhere the first term: S = 1, dS/da = 0)."""
    r, c, s = a.copy(), np.ones_like(x), np.ones_like(x)
    dc, ds = np.zeros_like(x), np.zeros_like(x)
    for _ in range(_SERIES_ITERS):
        if not live.size:
            break
        xl, rl = x[live], r[live] + 1
        dcl = dc[live] * (xl / rl) - c[live] * xl / (rl * rl)
        cl = c[live] * (xl / rl)
        r[live], c[live], dc[live] = rl, cl, dcl
        s[live] += cl
        ds[live] += dcl
        busy = (np.abs(cl) > _F64_EPS * np.abs(s[live])) | (np.abs(dcl) > _F64_EPS * np.abs(ds[live]))
        live = live[busy]
    return s, ds


def _fraction_da(a, x, live):
    """F, Q's continued fraction (Q = x^a e^-x F / Gamma(a); the convergents p_k / q_k by XLA's
    three-term recurrence), and dF/da, for the flat arrays a, x at the indices `live` (elsewhere
    the first convergent)."""
    y, z, c = 1 - a, x + 2 - a, np.zeros_like(x)
    pkm2, qkm2, pkm1, qkm1 = np.ones_like(x), x.copy(), x + 1, (x + 2 - a) * x
    dpkm2, dqkm2, dpkm1, dqkm1 = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x), -x
    f = pkm1 / qkm1
    df = (dpkm1 - f * dqkm1) / qkm1
    for _ in range(_ITERS):
        if not live.size:
            break
        i = live
        c[i] += 1
        y[i] += 1
        z[i] += 2
        ci, zi, yc = c[i], z[i], y[i] * c[i]
        pk = pkm1[i] * zi - pkm2[i] * yc
        qk = qkm1[i] * zi - qkm2[i] * yc
        dpk = dpkm1[i] * zi - pkm1[i] - dpkm2[i] * yc + pkm2[i] * ci
        dqk = dqkm1[i] * zi - qkm1[i] - dqkm2[i] * yc + qkm2[i] * ci
        nonzero = qk != 0
        safe_qk = np.where(nonzero, qk, 1.0)
        fi = np.where(nonzero, pk / safe_qk, f[i])
        dfi = np.where(nonzero, (dpk - fi * dqk) / safe_qk, df[i])
        busy = ~nonzero | (np.abs(fi - f[i]) > _F64_EPS * np.abs(fi)) | (
            np.abs(dfi - df[i]) > _F64_EPS * np.abs(dfi))
        f[i], df[i] = fi, dfi
        # The convergents grow without bound: rescale them (and their derivatives) together.
        scale = np.where(np.abs(pk) > 1 / _F64_EPS, _F64_EPS, 1.0)
        pkm2[i], pkm1[i], qkm2[i], qkm1[i] = pkm1[i] * scale, pk * scale, qkm1[i] * scale, qk * scale
        dpkm2[i], dpkm1[i] = dpkm1[i] * scale, dpk * scale
        dqkm2[i], dqkm1[i] = dqkm1[i] * scale, dqk * scale
        live = i[busy]
    return f, df


def _igamma_da64(a, x, sample, log_max):
    """dP(a, x)/da, or with `sample` dx/da = -(dP/da) / (dP/dx) at a Gamma(a) sample x, for
    float64 arrays. Where x^a e^-x / Gamma(a) underflows in JAX's working precision (its log is
    below -log_max), JAX keeps the first term of the series or fraction; so does this."""
    shape = x.shape
    a, x = a.ravel(), x.ravel()
    nan = np.isnan(a) | np.isnan(x) | np.isinf(a) | np.isinf(x) | (x < 0) | (a <= 0)
    zero = ~nan & (x == 0)
    ok = ~nan & ~zero
    a_ok, x_ok = np.where(ok, a, 1.0), np.where(ok, x, 1.0)
    log_ax = _log_prefactor(a_ok, x_ok)
    enabled = ok & (log_ax >= -log_max)
    use_fraction = (x_ok > 1) & (x_ok > a_ok)
    s, ds = _series_da(a_ok, x_ok, np.flatnonzero(enabled & ~use_fraction))
    f, df = _fraction_da(a_ok, x_ok, np.flatnonzero(enabled & use_fraction))
    # d log(x^a e^-x / Gamma(a + 1)) / da for the series, d log(x^a e^-x / Gamma(a)) / da for F.
    series_da = s * (np.log(x_ok) - _digamma64(a_ok + 1)) + ds
    fraction_da = f * (np.log(x_ok) - _digamma64(a_ok)) + df
    if sample:  # the prefactors cancel against the density x^(a - 1) e^-x / Gamma(a)
        out = np.where(use_fraction, fraction_da * x_ok, -series_da * x_ok / a_ok)
    else:
        ax = np.exp(log_ax)
        out = np.where(use_fraction, -ax * fraction_da, ax * series_da / a_ok)
    out = np.where(zero, 0.0, out)
    return np.where(nan, np.nan, out).reshape(shape)


def _igamma_grad_a_host(a, x, sample=False):
    """The derivatives in the operands' dtype, computed in float64 with the underflow cut-off of
    JAX's working precision (float32 for the narrower floats, which it upcasts)."""
    wide = np.asarray(a).dtype == np.float64
    log_max = float(np.log(np.finfo(np.float64 if wide else np.float32).max))
    kernel = _in_f64(lambda a, x: _igamma_da64(a, x, sample, log_max))
    return kernel(a, x)


igamma_grad_a_p = binop("igamma_grad_a", _igamma_grad_a_host, "float")


def _igamma_density(a, x):
    # d/dx P(a, x) = exp(-x) x^(a-1) / Gamma(a), in JAX's order of operations
    return exp(sub(add(neg(x), mul(sub(a, full_like(a, 1)), log(x))), lgamma(a)))


def _igamma_grad_a_da(g, a, x):
    raise NotImplementedError("Differentiation rule for 'igamma_grad_a' with respect to a not "
                              "implemented (it is differentiable in x).")


# JAX differentiates igamma_grad_a in neither operand; in x, d/dx dP/da = d/da dP/dx, which
# is the density times (log x - digamma(a)).
defjvp(igamma_grad_a_p, _igamma_grad_a_da,
       lambda g, a, x: mul(g, mul(_igamma_density(a, x), sub(log(x), digamma(a)))))
defjvp(igamma_p, lambda g, a, x: mul(g, igamma_grad_a(a, x)),
       lambda g, a, x: mul(g, _igamma_density(a, x)))
defjvp(igammac_p, lambda g, a, x: neg(mul(g, igamma_grad_a(a, x))),
       lambda g, a, x: neg(mul(g, _igamma_density(a, x))))


# ---------------------------------------------------------------- Bessel i0e, i1e


def _bessel_series(x, order):
    """I_order(x) e^-x for 0 <= x <= 20 from the power series."""
    q = x * x / 4
    term = np.ones_like(x) if order == 0 else x / 2
    total = term.copy()
    for k in range(1, 80):
        term = term * q / (k * (k + order))
        total = total + term
    return total * np.exp(-x)


def _bessel_asymptotic(x, order):
    """I_order(x) e^-x for x > 20 from the asymptotic expansion."""
    mu = 4.0 * order * order
    term = np.ones_like(x)
    total = term.copy()
    for k in range(1, 30):
        term = term * -(mu - (2 * k - 1) ** 2) / (k * 8 * x)
        total = total + term
    return total / np.sqrt(2 * np.pi * x)


def _bessel_e(order):
    def kernel(x):
        ax = np.abs(x)
        out = np.where(np.isnan(x), np.nan, 0.0)
        small = ax <= 20
        big = (ax > 20) & np.isfinite(ax)
        out[small] = _bessel_series(ax[small], order)
        out[big] = _bessel_asymptotic(ax[big], order)
        return out if order == 0 else np.sign(x) * out
    kernel.__name__ = f"bessel_i{order}e"
    return kernel


bessel_i0e_p = unop("bessel_i0e", _in_f64(_bessel_e(0)), "float")
bessel_i1e_p = unop("bessel_i1e", _in_f64(_bessel_e(1)), "float")
defjvp(bessel_i0e_p, lambda g, y, x: mul(g, sub(bessel_i1e(x), mul(sign(x), y))), with_ans=True)


def _bessel_i1e_jvp(g, y, x):
    eps = _const(x, np.finfo(get_aval(x).dtype).eps)
    not_tiny = gt(abs(x), eps)
    safe_x = select_n(not_tiny, full_like(x, eps), x)
    dy = sub(bessel_i0e(safe_x), mul(y, add(sign(safe_x), reciprocal(safe_x))))
    return mul(g, select_n(not_tiny, full_like(x, 0.5), dy))


defjvp(bessel_i1e_p, _bessel_i1e_jvp, with_ans=True)


# ---------------------------------------------------------------- Hurwitz zeta

# B_2j / (2j)! as 1 / _ZETA_A[j - 1] (Cephes' table).
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta64(x, q):
    out = np.full(x.shape, np.nan)
    out[x == 1] = np.inf
    ok = (x > 1) & np.isfinite(q)
    bad_q = (q <= 0) & ((q == np.floor(q)) | (x != np.floor(x)))
    ok &= ~bad_q
    x, q = x[ok], q[ok]
    n = np.maximum(9, np.ceil(10 - q)).astype(np.int64)
    s = np.zeros_like(x)
    for k in range(int(n.max()) if n.size else 0):
        s = s + np.where(k < n, np.power(q + k, -x), 0.0)
    w = q + n
    b = np.power(w, -x)
    s = s + w * b / (x - 1) + 0.5 * b
    a = np.ones_like(x)
    k = 0.0
    for coeff in _ZETA_A:
        a = a * (x + k)
        b = b / w
        s = s + a * b / coeff
        k += 1
        a = a * (x + k)
        b = b / w
        k += 1
    out[ok] = s
    return out


zeta_p = binop("zeta", _in_f64(_zeta64), "float")
# XLA expands these in float32 for the narrow floats and rounds once (see narrow_types.py).
for _p in (zeta_p, bessel_i0e_p):
    narrow_rules[_p] = narrow_types.in_float32(impl_rules[_p])


def _zeta_dx(g, x, q):
    raise NotImplementedError("Differentiation rule for 'zeta' with respect to x not "
                              "implemented (it is differentiable in q).")


defjvp(zeta_p, _zeta_dx, lambda g, x, q: mul(g, mul(neg(x), zeta(add(x, _const(x, 1)), q))))


# ---------------------------------------------------------------- incomplete beta


def _beta_fraction(a, b, x):
    """The continued fraction of I_x(a, b) (modified Lentz), for x below the mean."""
    qab, qap, qam = a + b, a + 1, a - 1
    c = np.ones_like(x)
    d = 1 - qab * x / qap
    d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
    h = d.copy()
    for m in range(1, _ITERS):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
        c = 1 + aa / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        h = h * d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
        c = 1 + aa / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1) < _EPS):
            break
    log_front = (_lgamma64(a + b) - _lgamma64(a) - _lgamma64(b) + a * np.log(x)
                 + b * np.log1p(-x))
    return np.exp(log_front) * h / a


def _betainc64(a, b, x):
    out = np.full(x.shape, np.nan)
    ok = (a >= 0) & (b >= 0) & (x >= 0) & (x <= 1) & ~((a == 0) & (b == 0))
    out[ok & (a == 0)] = 1.0
    out[ok & (b == 0) & (a > 0)] = 0.0
    ok &= (a > 0) & (b > 0)
    out[ok & (x == 0)] = 0.0
    out[ok & (x == 1)] = 1.0
    ok &= (x > 0) & (x < 1)
    direct = ok & (x < (a + 1) / (a + b + 2))
    flipped = ok & ~direct
    if direct.any():
        out[direct] = _beta_fraction(a[direct], b[direct], x[direct])
    if flipped.any():
        out[flipped] = 1 - _beta_fraction(b[flipped], a[flipped], 1 - x[flipped])
    return out


def _betainc_abstract(a, b, x):
    for v in (a, b, x):
        _check_kind("betainc", "float", v)
    _check_same_dtypes("betainc", a, b, x)
    shape = _broadcast_shapes("betainc", _broadcast_shapes("betainc", a.shape, b.shape), x.shape)
    return [ShapedArray(shape, x.dtype, a.weak_type and b.weak_type and x.weak_type)]


regularized_incomplete_beta_p = Primitive("regularized_incomplete_beta")
impl_rules[regularized_incomplete_beta_p] = _in_f64(_betainc64)
abstract_eval_rules[regularized_incomplete_beta_p] = _betainc_abstract
batch_rules[regularized_incomplete_beta_p] = lambda axis_size, vals, dims: broadcast_batch_rule(
    regularized_incomplete_beta_p, axis_size, vals, dims)


def _betainc_dab(g, a, b, x):
    raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_dx(g, a, b, x):
    one = _const(x, 1)
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    dens = exp(sub(add(mul(sub(a, one), log(x)), mul(sub(b, one), log1p(neg(x)))), log_beta))
    return mul(g, dens)


defjvp(regularized_incomplete_beta_p, _betainc_dab, _betainc_dab, _betainc_dx)


# ---------------------------------------------------------------- user-facing functions


def _bind(prim, *args):
    # Python scalars become weakly typed 0-d arrays (with the operands' dtype, when there are
    # array operands).
    return prim.bind(*_coerce_scalars(prim.name, *args))


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a)
    (lax.igamma); a and x are floating arrays of one dtype."""
    return _bind(igamma_p, a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (lax.igammac)."""
    return _bind(igammac_p, a, x)


def igamma_grad_a(a, x):
    """The derivative dP(a, x)/da of the regularized lower incomplete gamma function
    (lax.igamma_grad_a)."""
    return _bind(igamma_grad_a_p, a, x)


def bessel_i0e(x):
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)
    (lax.bessel_i0e)."""
    return _bind(bessel_i0e_p, x)


def bessel_i1e(x):
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)
    (lax.bessel_i1e)."""
    return _bind(bessel_i1e_p, x)


def zeta(x, q):
    """The Hurwitz zeta function sum_k (q + k)^-x, for x > 1 (lax.zeta)."""
    return _bind(zeta_p, x, q)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (lax.betainc); differentiable in
    x only, as in JAX."""
    return _bind(regularized_incomplete_beta_p, a, b, x)
