"""The Faddeeva function and its real relatives in jax.scipy.special: wofz, erfcx, dawsn.

wofz(z) = exp(-z^2) erfc(-iz) uses Weideman's (1994) N = 32 rational approximation in the
upper half plane, w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)) with
Z = (L + iz) / (L - iz), and w(-z) = 2 exp(-z^2) - w(z) below it. erfcx(x) = exp(x^2) erfc(x)
is computed directly until exp(x^2) would overflow and by its asymptotic series beyond;
Dawson's integral uses the rational approximations of Cody, Paciorek and Thacher (1970).
The constants are JAX's, so values agree with it to rounding."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.numpy import creation, polynomial, ufuncs
from gpuarr.numpy.arguments import _convert
from gpuarr.scipy._arguments import (
    broadcast_arrays,
    check_arraylike,
    const,
    ensure_array,
    promote_args_inexact,
)

_WOFZ_L = 4.7568284600108841
_WOFZ_C = (  # highest degree first
    -1.3034426067909105e-12, 3.7411838373738471e-12, 8.030427700497756e-12,
    -2.1543593557490879e-11, -5.5442449963237932e-11, 1.165824698850374e-10,
    4.1537441121999766e-10, -5.2310202114920615e-10, -3.2080151339721323e-09,
    8.1248864216535907e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
    -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07,
    4.4015317312832251e-06, 6.8210319443575151e-06, -2.1409619201999998e-05,
    -0.00013075449254579421, -0.00024532980270038237, 0.00039259136070109705,
    0.0045195411053493093, 0.019006155784845501, 0.057304403529837282, 0.14060716226893755,
    0.29544451071508743, 0.54601397206393376, 0.9019254893648001, 1.3455441692345449,
    1.8256696296324815, 2.2635372999002676, 2.5722534081245696,
)

# erfcx(x) ~ P(1/x^2) / (sqrt(pi) x) with P's coefficients (-1)^k (2k-1)!! / 2^k, highest
# degree (k = 8) first.
_ERFCX_ASYMPTOTIC = (7918.06640625, -1055.7421875, 162.421875, -29.53125, 6.5625, -1.875, .75,
                     -.5, 1.)

# Dawson's integral on [0, 3.25): x P(x^2) / Q(x^2).
_DAWSN_AN = (
    1.13681498971755972054e-11, 8.49262267667473811108e-10, 1.94434204175553054283e-8,
    9.53151741254484363489e-7, 3.07828309874913200438e-6, 3.52513368520288738649e-4,
    -8.50149846724410912031e-4, 4.22618223005546594270e-2, -9.17480371773452345351e-2,
    9.99999999999999994612e-1,
)
_DAWSN_AD = (
    2.40372073066762605484e-11, 1.48864681368493396752e-9, 5.21265281010541664570e-8,
    1.27258478273186970203e-6, 2.32490249820789513991e-5, 3.25524741826057911661e-4,
    3.48805814657162590916e-3, 2.79448531198828973716e-2, 1.58874241960120565368e-1,
    5.74918629489320327824e-1, 1.00000000000000000539e0,
)
# On [3.25, 6.25) and [6.25, inf): (1 + t P(t) / Q(t)) / (2x) with t = 1/x^2.
_DAWSN_BN = (
    5.08955156417900903354e-1, -2.44754418142697847934e-1, 9.41512335303534411857e-2,
    -2.18711255142039025206e-2, 3.66207612329569181322e-3, -4.23209114460388756528e-4,
    3.59641304793896631888e-5, -2.14640351719968974225e-6, 9.10010780076391431042e-8,
    -2.40274520828250956942e-9, 3.59233385440928410398e-11,
)
_DAWSN_BD = (
    1.00000000000000000000e0, -6.31839869873368190192e-1, 2.36706788228248691528e-1,
    -5.31806367003223277662e-2, 8.48041718586295374409e-3, -9.47996768486665330168e-4,
    7.81025592944552338085e-5, -4.55875153252442634831e-6, 1.89100358111421846170e-7,
    -4.91324691331920606875e-9, 7.18466403235734541950e-11,
)
_DAWSN_CN = (
    -5.90592860534773254987e-1, 6.29235242724368800674e-1, -1.72858975380388136411e-1,
    1.64837047825189632310e-2, -4.86827613020462700845e-4,
)
_DAWSN_CD = (
    1.00000000000000000000e0, -2.69820057197544900361e0, 1.73270799045947845857e0,
    -3.93708582281939493482e-1, 3.44278924041233391079e-2, -9.73655226040941223894e-4,
)


# ---------------------------------------------------------------- wofz


def wofz(z):
    """The Faddeeva function exp(-z^2) erfc(-iz); real input is promoted to complex
    (jax.scipy.special.wofz)."""
    (z,) = _promote_args_complex("wofz", z)
    return _wofz(z)


def _promote_args_complex(fun_name, *args):
    """JAX's helper of the same name: one conversion straight to the common complex dtype,
    weak types staying weak."""
    check_arraylike(fun_name, *args)
    dt, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    dt = dtypes.to_complex_dtype(dt)
    return broadcast_arrays(*(ensure_array(_convert(a, dt, weak)) for a in args))


def _complex_const(like, re, im):
    return lax_extras.complex(const(like, re), const(like, im))


def _wofz_upper(z):
    # Weideman's approximation, valid for Im(z) >= 0.
    re = lax_extras.real(z)
    L = _complex_const(re, _WOFZ_L, 0.)
    iz = lax_extras.complex(lax.neg(lax_extras.imag(z)), re)
    denom = L - iz
    Z = (L + iz) / denom
    p = polynomial.polyval(creation.asarray(np.array(_WOFZ_C), dtype=Z.dtype), Z)
    one_over_sqrtpi = _complex_const(re, 1. / np.sqrt(np.pi), 0.)
    return 2 * p / (denom * denom) + one_over_sqrtpi / denom


@custom_jvp
def _wofz(z):
    upper = lax.ge(lax_extras.imag(z), const(lax_extras.real(z), 0.))
    w_upper = _wofz_upper(lax.select(upper, z, lax.neg(z)))
    correction = 2 * lax.exp(lax.neg(z * z)) - w_upper
    return lax.select(upper, w_upper, correction)


# w'(z) = -2 z w(z) + 2i / sqrt(pi)
_wofz.defjvps(lambda g, ans, z: g * (lax.neg(2 * z * ans)
                                     + _complex_const(lax_extras.real(z), 0., 2. / np.sqrt(np.pi))))


# ---------------------------------------------------------------- erfcx


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x), finite for large positive
    x; complex input goes through wofz(ix) (jax.scipy.special.erfcx)."""
    (x,) = promote_args_inexact("erfcx", x)
    if dtypes.is_complex(x.dtype):
        return _wofz(lax_extras.complex(lax.neg(lax_extras.imag(x)), lax_extras.real(x)))
    return _erfcx(x)


@custom_jvp
def _erfcx(x):
    # The asymptotic series keeps enough terms for the float type: its first omitted term
    # at the switch point is far below the type's epsilon.
    if x.dtype == np.float64:
        return _erfcx_impl(x, nterms=9)
    if x.dtype == np.float32:
        return _erfcx_impl(x, nterms=5)
    return _erfcx_impl(x.astype(np.float32), nterms=5).astype(x.dtype)  # 16-bit floats


_erfcx.defjvps(lambda g, ans, x: g * (2 * x * ans - const(x, 2. / np.sqrt(np.pi))))


def _erfcx_impl(x, nterms):
    # The series takes over where exp(x^2) would overflow.
    large = x > const(x, np.sqrt(np.log(dtypes.finfo(x.dtype).max)))
    safe_x = lax.select(large, lax_shape_ops.full_like(x, 1.), x)
    direct = lax.exp(lax.square(safe_x)) * lax_special.erfc(safe_x)
    t = const(x, 1.) / lax.square(x)
    p = polynomial.polyval(np.array(_ERFCX_ASYMPTOTIC[-nterms:], dtype=x.dtype), t)
    asymptotic = p / (x * const(x, np.sqrt(np.pi)))
    return lax.select(large, asymptotic, direct)


# ---------------------------------------------------------------- dawsn


def dawsn(x):
    """Dawson's integral exp(-x^2) integral_0^x exp(t^2) dt, real input only; its derivative
    is 1 - 2 x dawsn(x) (jax.scipy.special.dawsn)."""
    (x,) = promote_args_inexact("dawsn", x)
    if dtypes.is_complex(x.dtype):
        raise ValueError("dawsn does not support complex-valued inputs.")
    return _dawsn(x)


@custom_jvp
def _dawsn(x):
    if x.dtype in (np.float32, np.float64):
        return _dawsn_impl(x)
    return _dawsn_impl(x.astype(np.float32)).astype(x.dtype)  # 16-bit floats


_dawsn.defjvps(lambda g, ans, x: g * (const(x, 1.) - const(x, 2.) * x * ans))


def _dawsn_impl(x):
    # The approximations are for |x|; dawsn is odd (and sign(0) * 0 is the right 0).
    sign = ufuncs.sign(x)
    ax = lax.abs(x)
    an, ad, bn, bd, cn, cd = (np.array(c, dtype=x.dtype) for c in (
        _DAWSN_AN, _DAWSN_AD, _DAWSN_BN, _DAWSN_BD, _DAWSN_CN, _DAWSN_CD))
    t = const(x, 1.) / lax.square(ax)
    # Each region sees 1 outside itself, so no polynomial overflows into an unused inf / inf.
    ax_r1 = lax.select(ax < const(x, 3.25), ax, lax_shape_ops.full_like(ax, 1.))
    ax2_r1 = lax.square(ax_r1)
    val_r1 = ax_r1 * polynomial.polyval(an, ax2_r1) / polynomial.polyval(ad, ax2_r1)
    in_r2 = (ax >= const(x, 3.25)) & (ax < const(x, 6.25))
    t_r2 = lax.select(in_r2, t, lax_shape_ops.full_like(t, 1.))
    in_r2 = (ax >= const(x, 3.25)) & (ax < const(x, 6.25))  # recomputed, as in JAX's program
    ax_r2 = lax.select(in_r2, ax, lax_shape_ops.full_like(ax, 1.))
    val_r2 = (const(x, 0.5) / ax_r2) * (
        const(x, 1.) + t_r2 * polynomial.polyval(bn, t_r2) / polynomial.polyval(bd, t_r2))
    t_r3 = lax.select(ax >= const(x, 6.25), t, lax_shape_ops.full_like(t, 1.))
    ax_r3 = lax.select(ax >= const(x, 6.25), ax, lax_shape_ops.full_like(ax, 1.))
    val_r3 = (const(x, 0.5) / ax_r3) * (
        const(x, 1.) + t_r3 * polynomial.polyval(cn, t_r3) / polynomial.polyval(cd, t_r3))
    result = lax.select(ax < const(x, 3.25), val_r1,
                        lax.select(ax < const(x, 6.25), val_r2, val_r3))
    return sign * result
