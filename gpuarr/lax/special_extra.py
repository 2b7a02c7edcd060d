"""More special functions: the regularized incomplete gamma functions (igamma, igammac), the
exponentially scaled modified Bessel functions of orders 0 and 1 (bessel_i0e, bessel_i1e), the
Hurwitz zeta function (zeta) and the regularized incomplete beta function (betainc).

Like gpuarr.lax.special, each NumPy implementation runs in float64 and rounds to the operand's
dtype. The methods: igamma by its power series where x < a + 1 and by the continued fraction of
igammac elsewhere (Lentz's method); the Bessel functions by their power series for |x| <= 20 and
their asymptotic expansions beyond; zeta by Euler-Maclaurin summation (Cephes' scheme); betainc
by its continued fraction, using I_x(a, b) = 1 - I_{1-x}(b, a) past the mean. Domain edges give
the values JAX gives (NaN outside the domain).
"""
from __future__ import annotations

import numpy as np

from gpuarr.backends.numpy_backend import impl_rules
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval
from gpuarr.interpreters.ad import defjvp
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax.lax import (
    _broadcast_shapes,
    _check_kind,
    _check_same_dtypes,
    _coerce_scalars,
    _const,
    abs,
    add,
    binop,
    broadcast_batch_rule,
    div,
    exp,
    full_like,
    gt,
    log,
    log1p,
    mul,
    neg,
    select_n,
    sign,
    sub,
    unop,
)
from gpuarr.lax.special import _in_f64, _lgamma64, lgamma

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


def _igamma_grad_a64(a, x):
    """dP(a, x)/da by a central difference of the float64 P."""
    dt = np.result_type(a, x)
    a, x = (np.array(v, np.float64) for v in np.broadcast_arrays(a, x))
    h = 1e-6 * np.maximum(np.abs(a), 1.0)
    with np.errstate(all="ignore"):
        g = (_igamma64(a + h, x) - _igamma64(np.maximum(a - h, 0.0), x)) / (a + h - np.maximum(a - h, 0.0))
    return g.astype(dt)


igamma_p = binop("igamma", _in_f64(_igamma64), "float")
igammac_p = binop("igammac", _in_f64(_igammac64), "float")


def _igamma_density(a, x):
    # d/dx P(a, x) = exp(-x) x^(a-1) / Gamma(a)
    return exp(sub(sub(mul(sub(a, _const(a, 1)), log(x)), x), lgamma(a)))


def _igamma_da(g, a, x):
    from gpuarr.api import ShapeDtypeStruct
    from gpuarr.callbacks import pure_callback
    shape = _broadcast_shapes("igamma", get_aval(a).shape, get_aval(x).shape)
    d = pure_callback(_igamma_grad_a64, ShapeDtypeStruct(shape, get_aval(x).dtype), a, x,
                      vmap_method="broadcast_all")
    return mul(g, d)


defjvp(igamma_p, _igamma_da, lambda g, a, x: mul(g, _igamma_density(a, x)))
defjvp(igammac_p, lambda g, a, x: neg(_igamma_da(g, a, x)),
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
    dy = sub(bessel_i0e(safe_x), mul(y, add(sign(safe_x), div(_const(x, 1), safe_x))))
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


def random_gamma_grad(a, x):
    """dx/da at samples x of Gamma(a) (lax.random_gamma_grad): the derivative of a gamma sample
    with respect to its shape parameter, by implicit differentiation of the CDF."""
    from gpuarr.random.gamma_grad import random_gamma_grad as impl
    return impl(a, x)

