"""XLA's complex sqrt, acos, acosh, asinh and atanh, in NumPy.

XLA expands these into real arithmetic (StableHLO's CHLO decompositions, after
functional_algorithms' versions of Hull et al.'s algorithms) rather than calling C99's
csqrt/cacos/...; the special values differ from NumPy's (which follow C99 Annex G): the sign
of a zero imaginary part is not read by sqrt (`sqrt(-1 - 0j)` is `+1j`), acos/acosh/asinh/
atanh give NaN + NaN j or other values where an input part is NaN, and so on
(docs/arithmetic.md lists them). Each function here follows XLA's expansion step by step on
the real and imaginary parts, in the parts' own float type, so the special values are XLA's
and the finite ones agree to the rounding of log1p/atan2. lax.py registers them as the
complex impls of sqrt_p, acos_p, acosh_p, asinh_p and atanh_p; kernels keep complex values
of these on the host, so every platform computes them here.
"""
from __future__ import annotations

import numpy as np


def _parts(z):
    z = np.asarray(z)
    ft = z.real.dtype.type
    return z.real, z.imag, ft


def _compose(re, im, dtype):
    out = np.empty(np.shape(re), dtype)
    out.real, out.imag = re, im
    return out


def _hypot(x, y, ft):
    """sqrt(x**2 + y**2) as XLA's expansion computes it (max * sqrt(1 + (min / max)**2))."""
    mx = np.maximum(np.abs(x), np.abs(y))
    mn = np.minimum(np.abs(x), np.abs(y))
    r = np.square(mn / mx)
    sqa = np.sqrt(ft(1) + r)
    h2 = np.where((sqa == 1) & (r > 0), mx + mx * r / ft(2), mx * sqa)
    return np.where(mx == mn, mx * ft(np.sqrt(2)), h2)


def sqrt(z):
    """Complex square root: u = sqrt((|z| + |x|) / 2) and |y| / (2u), with rescaled forms
    where u under- or overflows; the real part is u for x >= 0, the sign of y (y < 0 alone,
    so -0.0 counts as positive) goes to the imaginary part."""
    x, y, ft = _parts(z)
    with np.errstate(all="ignore"):
        ax, ay = np.abs(x), np.abs(y)
        sq_ax, sq_ay = np.sqrt(ax), np.sqrt(ay)
        one, two = ft(1), ft(2)
        # XLA multiplies by the reciprocal of a constant divisor and folds constant factors.
        sq_2 = ft(np.sqrt(2))
        sq_12 = ft(np.sqrt(1 + np.sqrt(2)))
        inv_sq_2 = one / sq_2
        u_general = np.sqrt(_hypot(ax, ay, ft) / two + ax / two)
        ay_div_u_general = ay / (u_general * two)
        eq, lt = ax == ay, ax < ay
        r = np.where(eq, one, np.where(lt, ax / ay, ay / ax))
        sq_r = np.where(eq, one, np.where(lt, sq_ax / sq_ay, sq_ay / sq_ax))
        h = _hypot(one, r, ft)
        u_eq = sq_ax * (sq_12 * inv_sq_2)
        ay_div_eq = sq_ay * (one / (sq_12 * sq_2))
        sq_1h = np.sqrt(one + h)
        u_gt = sq_ax * (sq_1h * inv_sq_2)
        ay_div_u_gt = sq_ay * sq_r / (sq_1h * sq_2)
        sq_rh = np.sqrt(r + h)
        u_lt = sq_ay * (sq_rh * inv_sq_2)
        ay_div_u_lt = sq_ay / (sq_rh * sq_2)
        rescale = (u_general == 0) | (u_general == np.inf)
        gt = ax > ay
        u = np.where(eq, u_eq, np.where(rescale, np.where(gt, u_gt, u_lt), u_general))
        ay_div_u = np.where(eq, ay_div_eq, np.where(
            rescale, np.where(gt, ay_div_u_gt, ay_div_u_lt), ay_div_u_general))
        re = np.where(x >= 0, u, ay_div_u)
        neg_y = y < 0
        im = np.where(x < 0, np.where(neg_y, -u, u), np.where(neg_y, -ay_div_u, ay_div_u))
    return _compose(re, im, np.asarray(z).dtype)


def _asin_acos_kernel(signed_x, signed_y, ft):
    """w = sqrt(a**2 - x**2) + i log(a + sqrt(a**2 - 1)), a = (|z + 1| + |z - 1|) / 2, with
    Hull et al.'s approximation regions: asin, acos, asinh and acosh are built from it."""
    x, y = np.abs(signed_x), np.abs(signed_y)
    zero, half, one = ft(0), ft(0.5), ft(1)
    fi = np.finfo(ft)
    safe_min = ft(np.sqrt(fi.tiny)) * ft(4)
    safe_max = ft(np.sqrt(fi.max)) / ft(8)
    safe_max_opt = np.where(x < safe_max * ft(1e12), safe_max * ft(1e-6), safe_max * ft(1e2))
    xp1, xm1 = x + one, x - one
    r, s = _hypot(xp1, y, ft), _hypot(xm1, y, ft)
    a = half * (r + s)
    ap1 = a + one
    rpxp1, spxm1, smxm1 = r + xp1, s + xm1, s - xm1
    yy = y * y
    half_yy = half * yy
    half_apx = half * (a + x)
    real = np.where(np.maximum(x, y) >= safe_max, y, np.where(
        x <= one, np.sqrt(half_apx * (yy / rpxp1 + smxm1)),
        y * np.sqrt(half_apx / rpxp1 + half_apx / spxm1)))
    x_ge_1_or_not = np.where(x >= one, half_yy / rpxp1 + half * spxm1, np.where(
        a <= ft(1.5), half_yy / rpxp1 + half_yy / smxm1, a - one))
    tiny_y = (y < safe_min) & (x < one)
    am1 = np.where(tiny_y, -((xp1 * xm1) / ap1), x_ge_1_or_not)
    big_y = y >= safe_max_opt
    mx = np.where(big_y, y, x)
    sq = np.sqrt(am1 * ap1)
    xoy = np.where(big_y & (y != np.inf), x / y, zero)
    imag = np.where(
        mx >= np.where(big_y, safe_max_opt, safe_max),
        ft(np.log(2)) + np.log(mx) + half * np.log1p(xoy * xoy),
        np.where(tiny_y, y / sq, np.log1p(am1 + sq)))
    return real, imag


def acos(z):
    """Complex arccos: atan2(w.real, x) - i sign(y) w.imag (y < 0 alone counts negative)."""
    x, y, ft = _parts(z)
    with np.errstate(all="ignore"):
        w_re, w_im = _asin_acos_kernel(x, y, ft)
        re = np.arctan2(w_re, x)
        im = np.where(y < 0, w_im, -w_im)
    return _compose(re, im, np.asarray(z).dtype)


def acosh(z):
    """Complex arccosh: w.imag + i sign(y) atan2(w.real, x)."""
    x, y, ft = _parts(z)
    with np.errstate(all="ignore"):
        w_re, w_im = _asin_acos_kernel(x, y, ft)
        im = np.arctan2(w_re, x)
        im = np.where(y < 0, -im, im)
    return _compose(w_im, im, np.asarray(z).dtype)


def asinh(z):
    """Complex arcsinh: sign(x) w.imag + i atan2(y, w.real), w the kernel at i z."""
    x, y, ft = _parts(z)
    with np.errstate(all="ignore"):
        w_re, w_im = _asin_acos_kernel(-y, x, ft)
        re = np.where(x < 0, -w_im, w_im)
        im = np.arctan2(y, w_re)
    return _compose(re, im, np.asarray(z).dtype)


def atanh(z):
    """Complex arctanh: sign(x) log1p(4 |x| / ((1 - |x|)**2 + y**2)) / 4 + i atan2(2y,
    (1 - |x|)(1 + |x|) - y**2) / 2, with the large-argument forms past 1 / eps**2."""
    x, y, ft = _parts(z)
    one, zero = ft(1), ft(0)
    # The smallest x with x + 1 == x (rounded up), and its square: XLA's thresholds.
    inv_negeps = np.nextafter(ft(1 / np.finfo(ft).epsneg), ft(np.inf))
    safe_max = inv_negeps * inv_negeps
    with np.errstate(all="ignore"):
        ax, ay = np.abs(x), np.abs(y)
        naxm1 = one - ax
        y2 = y * y
        sx = np.where(x >= 0, one, -one)
        sy = np.where(y >= 0, one, -one)
        in_safe_region = (ax < safe_max) & (ay < safe_max)
        arg23 = ax / (naxm1 * naxm1 + y2)
        arg4 = one / ax
        arg5 = np.where(np.isinf(x) | np.isinf(y), zero, one / (ax / y + y / ax) / y)
        arg = np.where(in_safe_region, arg23, np.where(ay * inv_negeps < ax, arg4, arg5))
        re = sx * np.log1p(arg * ft(4)) * ft(0.25)
        im = np.where(in_safe_region, np.arctan2(y + y, naxm1 * (one + ax) - y2),
                      sy * ft(np.pi)) * ft(0.5)
    return _compose(re, im, np.asarray(z).dtype)
