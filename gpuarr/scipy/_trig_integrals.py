"""Integrals of trigonometric functions in jax.scipy.special: sici (the sine and cosine
integrals) and fresnel (the Fresnel integrals).

Both follow Cephes as SciPy and JAX do. sici: rational approximations in x^2 for |x| <= 4,
the auxiliary functions f and g (rational in 1/x^2, one fit for (4, 8) and one beyond) up to
1e9, and the leading terms of the asymptotic series past that. fresnel: rational series for
x^2 < 2.5625, the auxiliary functions up to x = 36974 and the leading asymptotic terms beyond,
with the float32 coefficients of Cephes' fresnlf for float32 (and, upcast, for 16-bit floats).
The constants are Cephes'. Derivatives are exact: Si' = sinc, Ci' = cos(x) / x,
S' = sin(pi x^2 / 2) and C' = cos(pi x^2 / 2)."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.jit_api import jit as _jit
from gpuarr.numpy import creation, polynomial, selection, ufuncs
from gpuarr.scipy._arguments import promote_args_inexact

# Si(x) = x SN(x^2) / SD(x^2) and Ci(x) = euler_gamma + log(x) + x^2 CN(x^2) / CD(x^2), |x| <= 4.
_SI_N = (-8.39167827910303881427E-11, 4.62591714427012837309E-8, -9.75759303843632795789E-6,
         9.76945438170435310816E-4, -4.13470316229406538752E-2, 1.00000000000000000302E0)
_SI_D = (2.03269266195951942049E-12, 1.27997891179943299903E-9, 4.41827842801218905784E-7,
         9.96412122043875552487E-5, 1.42085239326149893930E-2, 9.99999999999999996984E-1)
_CI_N = (2.02524002389102268789E-11, -1.35249504915790756375E-8, 3.59325051419993077021E-6,
         -4.74007206873407909465E-4, 2.89159652607555242092E-2, -1.00000000000000000080E0)
_CI_D = (4.07746040061880559506E-12, 3.06780997581887812692E-9, 1.23210355685883423679E-6,
         3.17442024775032769882E-4, 5.10028056236446052392E-2, 4.00000000000000000080E0)
# The auxiliary functions on (4, 8): f = FN4(z) / (x FD4(z)), g = z GN4(z) / GD4(z), z = 1/x^2.
_FN4 = (4.23612862892216586994E0, 5.45937717161812843388E0, 1.62083287701538329132E0,
        1.67006611831323023771E-1, 6.81020132472518137426E-3, 1.08936580650328664411E-4,
        5.48900223421373614008E-7)
_FD4 = (1, 8.16496634205391016773E0, 7.30828822505564552187E0, 1.86792257950184183883E0,
        1.78792052963149907262E-1, 7.01710668322789753610E-3, 1.10034357153915731354E-4,
        5.48900252756255700982E-7)
_GN4 = (8.71001698973114191777E-2, 6.11379109952219284151E-1, 3.97180296392337498885E-1,
        7.48527737628469092119E-2, 5.38868681462177273157E-3, 1.61999794598934024525E-4,
        1.97963874140963632189E-6, 7.82579040744090311069E-9)
_GD4 = (1, 1.64402202413355338886E0, 6.66296701268987968381E-1, 9.88771761277688796203E-2,
        6.22396345441768420760E-3, 1.73221081474177119497E-4, 2.02659182086343991969E-6,
        7.82579218933534490868E-9)
# ... and on [8, 1e9].
_FN8 = (4.55880873470465315206E-1, 7.13715274100146711374E-1, 1.60300158222319456320E-1,
        1.16064229408124407915E-2, 3.49556442447859055605E-4, 4.86215430826454749482E-6,
        3.20092790091004902806E-8, 9.41779576128512936592E-11, 9.70507110881952024631E-14)
_FD8 = (1.0, 9.17463611873684053703E-1, 1.78685545332074536321E-1, 1.22253594771971293032E-2,
        3.58696481881851580297E-4, 4.92435064317881464393E-6, 3.21956939101046018377E-8,
        9.43720590350276732376E-11, 9.70507110881952025725E-14)
_GN8 = (6.97359953443276214934E-1, 3.30410979305632063225E-1, 3.84878767649974295920E-2,
        1.71718239052347903558E-3, 3.48941165502279436777E-5, 3.47131167084116673800E-7,
        1.70404452782044526189E-9, 3.85945925430276600453E-12, 3.14040098946363334640E-15)
_GD8 = (1.0, 1.68548898811011640017E0, 4.87852258695304967486E-1, 4.67913194259625806320E-2,
        1.90284426674399523638E-3, 3.68475504442561108162E-5, 3.57043223443740838771E-7,
        1.72693748966316146736E-9, 3.87830166023954706752E-12, 3.14040098946363335242E-15)

# Fresnel, double precision: S = x^3 SN(x^4) / SD(x^4) and C = x CN(x^4) / CD(x^4) for
# x^2 < 2.5625; f = 1 - u FN(u) / FD(u) and g = t GN(u) / GD(u) (t = 1 / (pi x^2), u = t^2)
# up to x = 36974.
_FRESNEL_F64 = dict(
    sn=(-2.99181919401019853726e3, 7.08840045257738576863e5, -6.29741486205862506537e7,
        2.54890880573376359104e9, -4.42979518059697779103e10, 3.18016297876567817986e11),
    sd=(1.00000000000000000000e0, 2.81376268889994315696e2, 4.55847810806532581675e4,
        5.17343888770096400730e6, 4.19320245898111231129e8, 2.24411795645340920940e10,
        6.07366389490084639049e11),
    cn=(-4.98843114573573548651e-8, 9.50428062829859605134e-6, -6.45191435683965050962e-4,
        1.88843319396703850064e-2, -2.05525900955013891793e-1, 9.99999999999999998822e-1),
    cd=(3.99982968972495980367e-12, 9.15439215774657478799e-10, 1.25001862479598821474e-7,
        1.22262789024179030997e-5, 8.68029542941784300606e-4, 4.12142090722199792936e-2,
        1.00000000000000000118e0),
    fn=(4.21543555043677546506e-1, 1.43407919780758885261e-1, 1.15220955073585758835e-2,
        3.45017939782574027900e-4, 4.63613749287867322088e-6, 3.05568983790257605827e-8,
        1.02304514164907233465e-10, 1.72010743268161828879e-13, 1.34283276233062758925e-16,
        3.76329711269987889006e-20),
    fd=(1.00000000000000000000e0, 7.51586398353378947175e-1, 1.16888925859191382142e-1,
        6.44051526508858611005e-3, 1.55934409164153020873e-4, 1.84627567348930545870e-6,
        1.12699224763999035261e-8, 3.60140029589371370404e-11, 5.88754533621578410010e-14,
        4.52001434074129701496e-17, 1.25443237090011264384e-20),
    gn=(5.04442073643383265887e-1, 1.97102833525523411709e-1, 1.87648584092575249293e-2,
        6.84079380915393090172e-4, 1.15138826111884280931e-5, 9.82852443688422223854e-8,
        4.45344415861750144738e-10, 1.08268041139020870318e-12, 1.37555460633261799868e-15,
        8.36354435630677421531e-19, 1.86958710162783235106e-22),
    gd=(1.00000000000000000000e0, 1.47495759925128324529e0, 3.37748989120019970451e-1,
        2.53603741420338795122e-2, 8.14679107184306179049e-4, 1.27545075667729118702e-5,
        1.04314589657571990585e-7, 4.60680728146520428211e-10, 1.10273215066240270757e-12,
        1.38796531259578871258e-15, 8.39158816283118707363e-19, 1.86958710162783236342e-22),
)
# Single precision (Cephes' fresnlf): polynomials only, and 1/2 beyond x = 36974.
_FRESNEL_F32 = dict(
    sn=(1.647629463788700e-9, -1.522754752581096e-7, 8.424748808502400e-6,
        -3.120693124703272e-4, 7.244727626597022e-3, -9.228055941124598e-2,
        5.235987735681432e-1),
    cn=(1.416802502367354e-8, -1.157231412229871e-6, 5.387223446683264e-5,
        -1.604381798862293e-3, 2.818489036795073e-2, -2.467398198317899e-1,
        9.999999760004487e-1),
    fn=(-1.903009855649792e12, 1.355942388050252e11, -4.158143148511033e9,
        7.343848463587323e7, -8.732356681548485e5, 8.560515466275470e3,
        -1.032877601091159e2, 2.999401847870011e0),
    gn=(-1.860843997624650e11, 1.278350673393208e10, -3.779387713202229e8,
        6.492611570598858e6, -7.787789623358162e4, 8.602931494734327e2,
        -1.493439396592284e1, 9.999841934744914e-1),
)


# ---------------------------------------------------------------- sici


@custom_jvp
@_jit
def sici(x):
    """The sine and cosine integrals (Si(x), Ci(x)), Si = integral_0^x sin(t) / t dt and
    Ci = euler_gamma + log(x) + integral_0^x (cos(t) - 1) / t dt; Si is odd, Ci(x) is
    Ci(|x|) for x < 0 (NaN at -inf); real input only (jax.scipy.special.sici)."""
    (x,) = promote_args_inexact("sici", x)
    if dtypes.is_complex(x.dtype):
        raise ValueError(f"Argument `x` to sici must be real-valued. Got dtype {x.dtype}.")
    x_abs = ufuncs.abs(x)
    si_series, ci_series = _sici_series(x_abs)
    si_auxiliary, ci_auxiliary = _sici_auxiliary(x_abs)
    si_asymptotic, ci_asymptotic = _sici_asymptotic(x_abs)
    cond1 = x_abs <= 4
    cond2 = (x_abs > 4) & (x_abs <= 1e9)
    si = selection.select([cond1, cond2], [si_series, si_auxiliary], si_asymptotic)
    ci = selection.select([cond1, cond2], [ci_series, ci_auxiliary], ci_asymptotic)
    return ufuncs.sign(x) * si, ufuncs.where(ufuncs.isneginf(x), np.nan, ci)


@sici.defjvp
@_jit
def sici_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return sici(x), (ufuncs.sinc(x / np.pi) * x_dot, ufuncs.cos(x) / x * x_dot)


def _sici_series(x):
    def si_series(x):
        t = x * x
        return (x * polynomial.polyval(np.array(_SI_N, x.dtype), t)) / polynomial.polyval(
            np.array(_SI_D, x.dtype), t)

    def ci_series(x):
        t = x * x
        return (np.euler_gamma + ufuncs.log(x) + t * polynomial.polyval(np.array(_CI_N, x.dtype), t)
                / polynomial.polyval(np.array(_CI_D, x.dtype), t))

    return ufuncs.where(x == 0, 0.0, si_series(x)), ufuncs.where(x == 0, -np.inf, ci_series(x))


def _sici_auxiliary(x):
    # Si = pi/2 - f cos(x) - g sin(x) and Ci = f sin(x) - g cos(x).
    s, c = ufuncs.sin(x), ufuncs.cos(x)
    z = 1.0 / (x * x)
    fn4, fd4, gn4, gd4, fn8, fd8, gn8, gd8 = (np.array(k, x.dtype) for k in (
        _FN4, _FD4, _GN4, _GD4, _FN8, _FD8, _GN8, _GD8))
    f4 = polynomial.polyval(fn4, z) / (x * polynomial.polyval(fd4, z))
    g4 = z * polynomial.polyval(gn4, z) / polynomial.polyval(gd4, z)
    f8 = polynomial.polyval(fn8, z) / (x * polynomial.polyval(fd8, z))
    g8 = z * polynomial.polyval(gn8, z) / polynomial.polyval(gd8, z)
    below_8 = x < 8.0
    f = ufuncs.where(below_8, f4, f8)
    g = ufuncs.where(below_8, g4, g8)
    return (np.pi / 2) - f * c - g * s, f * s - g * c


def _sici_asymptotic(x):
    si = (np.pi / 2) - ufuncs.cos(x) / x
    ci = ufuncs.sin(x) / x
    return ufuncs.where(ufuncs.isposinf(x), np.pi / 2, si), ufuncs.where(ufuncs.isposinf(x), 0.0, ci)


# ---------------------------------------------------------------- fresnel


@custom_jvp
def fresnel(x):
    """The Fresnel integrals (S(x), C(x)), S = integral_0^x sin(pi t^2 / 2) dt and
    C = integral_0^x cos(pi t^2 / 2) dt; real input only. Accurate on [-10, 10] as Cephes
    is; 16-bit floats are computed in float32 (jax.scipy.special.fresnel)."""
    (xxa,) = promote_args_inexact("fresnel", x)
    original_dtype = xxa.dtype
    if dtypes.is_complex(xxa.dtype):
        raise NotImplementedError("Support for complex-valued inputs is not implemented yet.")
    if xxa.dtype in (np.float32, np.float16, dtypes.bfloat16):
        xxa = xxa.astype(np.float32)
        k = {name: creation.array(c, dtype=np.float32) for name, c in _FRESNEL_F32.items()}
        # Unused: JAX's program builds these four empty arrays in single precision too.
        k.update((name, creation.empty(0)) for name in ("cd", "sd", "fd", "gd"))
    elif xxa.dtype == np.float64:
        k = {name: creation.array(c, dtype=np.float64) for name, c in _FRESNEL_F64.items()}
    else:
        raise NotImplementedError(f"Support for {xxa.dtype} dtype is not implemented yet.")
    single = xxa.dtype == np.float32
    x = ufuncs.abs(xxa)
    x2 = x * x
    t = x2 * x2
    if single:
        s_small = x * x2 * polynomial.polyval(k["sn"], t)
        c_small = x * polynomial.polyval(k["cn"], t)
    else:
        s_small = x * x2 * polynomial.polyval(k["sn"], t) / polynomial.polyval(k["sd"], t)
        c_small = x * polynomial.polyval(k["cn"], t) / polynomial.polyval(k["cd"], t)

    sinpi, cospi = sincospisquaredhalf(x)
    if single:
        s_large = c_large = 0.5
    else:
        c_large = 0.5 + 1 / (np.pi * x) * sinpi
        s_large = 0.5 - 1 / (np.pi * x) * cospi

    t = np.pi * x2
    u = 1.0 / (t * t)
    t = 1.0 / t
    if single:
        f = 1.0 - u * polynomial.polyval(k["fn"], u)
        g = t * polynomial.polyval(k["gn"], u)
    else:
        f = 1.0 - u * polynomial.polyval(k["fn"], u) / polynomial.polyval(k["fd"], u)
        g = t * polynomial.polyval(k["gn"], u) / polynomial.polyval(k["gd"], u)
    t = np.pi * x
    c_other = 0.5 + (f * sinpi - g * cospi) / t
    s_other = 0.5 - (f * cospi + g * sinpi) / t

    is_inf = ufuncs.isinf(xxa)
    small = x2 < 2.5625
    large = x > 36974.0
    s = ufuncs.where(is_inf, 0.5, ufuncs.where(small, s_small, ufuncs.where(large, s_large, s_other)))
    c = ufuncs.where(is_inf, 0.5, ufuncs.where(small, c_small, ufuncs.where(large, c_large, c_other)))
    negative = xxa < 0.0
    s = ufuncs.where(negative, -s, s)
    c = ufuncs.where(negative, -c, c)
    if original_dtype != xxa.dtype:
        s = s.astype(original_dtype)
        c = c.astype(original_dtype)
    return s, c


@_jit
def sincospisquaredhalf(x):
    """sin and cos of pi x^2 / 2 with the argument reduced exactly: for s = x mod 2,
    x^2 / 2 = s (x - s/2) (mod 2), as SciPy's sinpi and cospi."""
    x = ufuncs.abs(x)
    s = ufuncs.fmod(x, 2.0)
    r = ufuncs.fmod(s * (x - s / 2), 2.0)
    sinpi = ufuncs.where(r < 0.5, ufuncs.sin(np.pi * r),
                         ufuncs.where(r > 1.5, ufuncs.sin(np.pi * (r - 2.0)), -ufuncs.sin(np.pi * (r - 1.0))))
    cospi = ufuncs.where(r == 0.5, 0.0,
                         ufuncs.where(r < 1.0, -ufuncs.sin(np.pi * (r - 0.5)), ufuncs.sin(np.pi * (r - 1.5))))
    return sinpi, cospi


def _fresnel_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    sinpi, cospi = sincospisquaredhalf(x)
    return fresnel(x), (sinpi * x_dot, cospi * x_dot)


fresnel.defjvp(_fresnel_jvp)
