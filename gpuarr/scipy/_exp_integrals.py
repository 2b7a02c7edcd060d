"""Exponential integrals of jax.scipy.special: expi, exp1 and expn.

Ported from Cephes' ei.c (rational approximations of Ei on (0, 2] and, as exp(x)/x times a
rational function of 1/x, on (2, 4], (4, 8], ..., (32, 64] and beyond) and expn.c (the power
series for x <= 1, the continued fraction for x > 1, and an asymptotic expansion for
n >= 5000), as JAX does; the constants are Cephes'. Each element takes one branch, chosen as
`jnp.piecewise` would (the last condition that holds wins); the series and the continued
fraction run as per-element loops fed only their own elements (others get a harmless
stand-in), so one tiny x cannot keep a continued fraction going. Derivatives are JAX's:
Ei'(x) = exp(x) / x and dE_n/dx = -E_{n-1}(x) (none in n)."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import creation, dtype_functions, functional, manipulation, ufuncs
from gpuarr.scipy._arguments import const, promote_args_inexact
from gpuarr.scipy._gamma import gammaln
from gpuarr.scipy._series import elementwise_while, polyval

# Ei(x) = x A(x) / B(x) + euler_gamma + log(x) on (0, 2].
_EI_A = (-5.350447357812542947283e0, 2.185049168816613393830e2, -4.176572384826693777058e3,
         5.541176756393557601232e4, -3.313381331178144034309e5, 1.592627163384945414220e6)
_EI_B = (1.0, -5.250547959112862969197e1, 1.259616186786790571525e3,
         -1.756549581973534652631e4, 1.493062117002725991967e5, -7.294949239640527645655e5,
         1.592627163384945429726e6)
# Ei(x) = exp(x) / x (1 + A(1/x) / (x B(1/x))) on (2, 4], (4, 8], ..., (32, 64], (64, inf).
_EI_LARGE = (
    ((1.981808503259689673238e-2, -1.271645625984917501326e0, -2.088160335681228318920e0,
      2.755544509187936721172e0, -4.409507048701600257171e-1, 4.665623805935891391017e-2,
      -1.545042679673485262580e-3, 7.059980605299617478514e-5),
     (1.0, 1.476498670914921440652e0, 5.629177174822436244827e-1, 1.699017897879307263248e-1,
      2.291647179034212017463e-2, 4.450150439728752875043e-3, 1.727439612206521482874e-4,
      3.953167195549672482304e-5)),
    ((-1.373215375871208729803e0, -7.084559133740838761406e-1, 1.580806855547941010501e0,
      -2.601500427425622944234e-1, 2.994674694113713763365e-2, -1.038086040188744005513e-3,
      4.371064420753005429514e-5, 2.141783679522602903795e-6),
     (1.0, 8.585231423622028380768e-1, 4.483285822873995129957e-1, 7.687932158124475434091e-2,
      2.449868241021887685904e-2, 8.832165941927796567926e-4, 4.590952299511353531215e-4,
      -4.729848351866523044863e-6, 2.665195537390710170105e-6)),
    ((-2.106934601691916512584e0, 1.732733869664688041885e0, -2.423619178935841904839e-1,
      2.322724180937565842585e-2, 2.372880440493179832059e-4, -8.343219561192552752335e-5,
      1.363408795605250394881e-5, -3.655412321999253963714e-7, 1.464941733975961318456e-8,
      6.176407863710360207074e-10),
     (1.0, -2.298062239901678075778e-1, 1.105077041474037862347e-1, -1.566542966630792353556e-2,
      2.761106850817352773874e-3, -2.089148012284048449115e-4, 1.708528938807675304186e-5,
      -4.459311796356686423199e-7, 1.394634930353847498145e-8, 6.150865933977338354138e-10)),
    ((-2.458119367674020323359e-1, -1.483382253322077687183e-1, 7.248291795735551591813e-2,
      -1.348315687380940523823e-2, 1.342775069788636972294e-3, -7.942465637159712264564e-5,
      2.644179518984235952241e-6, -4.239473659313765177195e-8),
     (1.0, -1.044225908443871106315e-1, -2.676453128101402655055e-1, 9.695000254621984627876e-2,
      -1.601745692712991078208e-2, 1.496414899205908021882e-3, -8.462452563778485013756e-5,
      2.728938403476726394024e-6, -4.239462431819542051337e-8)),
    ((1.212561118105456670844e-1, -5.823133179043894485122e-1, 2.348887314557016779211e-1,
      -3.040034318113248237280e-2, 1.510082146865190661777e-3, -2.523137095499571377122e-5),
     (1.0, -1.002252150365854016662e0, 2.928709694872224144953e-1, -3.337004338674007801307e-2,
      1.560544881127388842819e-3, -2.523137093603234562648e-5)),
    ((-7.657847078286127362028e-1, 6.886192415566705051750e-1, -2.132598113545206124553e-1,
      3.346107552384193813594e-2, -3.076541477344756050249e-3, 1.747119316454907477380e-4,
      -6.103711682274170530369e-6, 1.218032765428652199087e-7, -1.086076102793290233007e-9),
     (1.0, -1.888802868662308731041e0, 1.066691687211408896850e0, -2.751915982306380647738e-1,
      3.930852688233823569726e-2, -3.414684558602365085394e-3, 1.866844370703555398195e-4,
      -6.345146083130515357861e-6, 1.239754287483206878024e-7, -1.086076102793126632978e-9)),
)


def _check_real(x, name):
    if dtypes.is_complex(x.dtype):
        raise ValueError(f"{name} does not support complex-valued inputs.")


def _branch_index(conds, default):
    """The branch jnp.piecewise takes: the last condition that holds, else `default`."""
    index = creation.full(dtype_functions.shape(conds[0]), default, dtype=np.int32)
    for i, cond in enumerate(conds):
        index = ufuncs.where(cond, np.int32(i), index)
    return index


# ---------------------------------------------------------------- expi


def expi(x):
    """The exponential integral Ei(x) = integral_-inf^x exp(t) / t dt, -E1(-x) for x < 0;
    real input only (jax.scipy.special.expi)."""
    (x,) = promote_args_inexact("expi", x)
    _check_real(x, "expi")
    return _expi(x)


@custom_jvp
def _expi(x):
    return functional.piecewise(x, [x < 0], [lambda v: -exp1(-v), _expi_positive])


_expi.defjvps(lambda x_dot, ans, x: ufuncs.exp(x) / x * x_dot)


def _expi_small(x):
    return x * (polyval(_EI_A, x) / polyval(_EI_B, x)) + np.euler_gamma + ufuncs.log(x)


def _expi_large(a, b):
    def ei(x):
        w = const(x, 1.0) / x
        f = w * (polyval(a, w) / polyval(b, w)) + const(x, 1.0)
        return ufuncs.exp(x) * w * f
    return ei


def _expi_positive(x):
    # (0, 2], (2, 4], ..., (32, 64], and the last approximation for everything else.
    conds = [(const(x, 0) < x) & (x <= const(x, 2))] + [
        (const(x, 2 ** i) < x) & (x <= const(x, 2 ** (i + 1))) for i in range(1, 6)]
    return functional.piecewise(x, conds, [_expi_small] + [_expi_large(a, b) for a, b in _EI_LARGE])


# ---------------------------------------------------------------- expn, exp1


def exp1(x):
    """The exponential integral E1(x) = integral_x^inf exp(-t) / t dt, real input only
    (jax.scipy.special.exp1)."""
    (x,) = promote_args_inexact("exp1", x)
    _check_real(x, "exp1")
    return expn(1, x)


def expn(n, x):
    """The generalized exponential integral E_n(x) = integral_1^inf exp(-x t) / t^n dt. As in
    JAX: NaN for n < 0 or x < 0 unless a later case applies (x > 1 takes the continued
    fraction whatever n is), inf at x = 0 for n < 2, 1 / n at x = 0 for n >= 2 (Cephes and
    SciPy have 1 / (n - 1)); no derivative in n (jax.scipy.special.expn)."""
    n, x = promote_args_inexact("expn", n, x)
    _check_real(x, "expn")
    return _expn(*manipulation.broadcast_arrays(n, x))


@custom_jvp
def _expn(n, x):
    zero, one = const(x, 0), const(x, 1)
    index = _branch_index([
        (n < 0) | (x < zero),
        (x == zero) & (n < 2),
        (x == zero) & (n >= 2),
        (n == 0) & (x >= zero),
        n >= 5000,
        x > one,
    ], default=6)
    # The loops see their own elements only; the rest get x = 1/2 or 2 and n = 1.
    series_x = ufuncs.where(index == 6, x, const(x, 0.5))
    fraction_x = ufuncs.where(index == 5, x, const(x, 2.0))
    series_n = ufuncs.where(index == 6, n, one)
    fraction_n = ufuncs.where(index == 5, n, one)
    n1 = ufuncs.where(n == 1, n + n, n)  # keeps the unused 1 / n from dividing by zero
    return lax.select_n(
        index,
        lax_shape_ops.full_like(x, np.nan),
        lax_shape_ops.full_like(x, np.inf),
        (one / n1).astype(x.dtype),
        ufuncs.exp(-x) / x,
        _expn_large_n(x, n),
        _expn_fraction(fraction_x, fraction_n),
        _expn_series(series_x, series_n),
    )


@_expn.defjvp
def _expn_jvp(primals, tangents):
    (n, x), (_, x_dot) = primals, tangents
    return _expn(n, x), lax.mul(lax.neg(x_dot), _expn(lax.sub(n, const(n, 1)), x))


def _expn_series(x, n):
    # For 0 < x <= 1: E_n(x) = (-x)^(n-1) psi(n) / (n-1)! - sum_k (-x)^k / ((k - n + 1) k!),
    # the k = n - 1 term left out of the sum (Cephes' expn.c).
    eps = dtypes.finfo(x.dtype).eps
    zero, one = const(x, 0.0), const(x, 1.0)
    psi0 = -np.euler_gamma - ufuncs.log(x)
    _, psi = elementwise_while(lambda s: s[0] < n, lambda s: (s[0] + one, s[1] + one / s[0]),
                               (creation.ones_like(n), psi0))
    n1 = ufuncs.where(n == 1, one + one, n)
    z = -x

    def body(state):
        xk, yk, pk, ans, _ = state
        xk = xk + one
        yk = yk * z / xk
        pk = pk + one
        ans = ans + ufuncs.where(pk != zero, yk / pk, zero)
        return xk, yk, pk, ans, ufuncs.where(ans != zero, abs(yk / ans), one)

    init = (zero, one, one - n, ufuncs.where(n == 1, zero, one / (one - n1)), const(x, np.inf))
    ans = elementwise_while(lambda s: (x > zero) & (s[4] > eps), body, init)[3]
    return z ** (n - 1) * psi / ufuncs.exp(gammaln(n)) - ans


def _expn_fraction(x, n):
    # For x > 1: the continued fraction of exp(x) E_n(x) by its convergents p_k / q_k,
    # rescaled whenever they grow past 2^57 (Cephes' expn.c).
    big = const(x, 1.44115188075855872e17)
    eps = dtypes.finfo(x.dtype).eps
    zero, one = const(x, 0.0), const(x, 1.0)

    def body(state):
        k, pkm2, qkm2, pkm1, qkm1, ans, _, r = state
        k = k + 1
        odd = k % 2 == 1
        yk = ufuncs.where(odd, one, x)
        xk = ufuncs.where(odd, n + (k - 1) / 2, k / 2)
        pk = pkm1 * yk + pkm2 * xk
        qk = qkm1 * yk + qkm2 * xk
        nonzero = qk != zero
        r = ufuncs.where(nonzero, pk / qk, r)
        t = ufuncs.where(nonzero, abs((ans - r) / r), one)
        ans = ufuncs.where(nonzero, r, ans)
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        rescale = abs(pk) > big
        pkm2, pkm1, qkm2, qkm1 = (ufuncs.where(rescale, v / big, v) for v in (pkm2, pkm1, qkm2, qkm1))
        return k, pkm2, qkm2, pkm1, qkm1, ans, t, r

    init = (creation.ones_like(n), one, x, one, x + n, one / (x + n), const(x, np.inf), zero)
    ans = elementwise_while(lambda s: (x > zero) & (s[6] > eps), body, init)[5]
    return ans * ufuncs.exp(-x)


def _expn_large_n(x, n):
    # n >= 5000: E_n(x) ~ exp(-x) / (x + n) (1 + n / (x + n)^2 + ...).
    one = const(x, 1.0)
    xk = x + n
    yk = one / (xk * xk)
    ans = yk * n * (const(x, 6) * x * x - const(x, 8) * n * x + n * n)
    ans = yk * (ans + n * (n - const(x, 2) * x))
    ans = yk * (ans + n)
    return (ans + one) * ufuncs.exp(-x) / xk
