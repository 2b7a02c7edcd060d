"""Special functions and bit-level elementwise primitives: erf, erfc, erf_inv, lgamma, digamma,
polygamma, clamp, population_count, clz, bitcast_convert_type.

The NumPy implementations are vectorised and computed in float64 (then cast back), so float32
results are correctly rounded in practice; no SciPy is needed. The methods: erf and erfc from
Cody-style rational approximations (Cephes' coefficients), a few vector polynomials each;
erf_inv from Winitzki's closed form refined by Halley steps on erf (erfc in the tails);
lgamma from the Lanczos (g=7, n=9) approximation with the reflection formula; digamma and
polygamma from the recurrence up to x >= 12 followed by their asymptotic (Bernoulli) series.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from gpuarr import dtypes, narrow_types
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval, weak_type_rules
from gpuarr.impls import impl_rules, narrow_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero, defjvp, defjvp_zero
from gpuarr.interpreters.batching import batch_rules, not_mapped
from gpuarr.lax.arguments import _check_kind, _check_same_dtypes, _coerce_scalars, _never_weak
from gpuarr.lax.conversions import convert_element_type
from gpuarr.lax.lax import (
    _const,
    add,
    binop,
    broadcast_batch_rule,
    div,
    eq,
    exp,
    ge,
    le,
    mul,
    neg,
    select_n,
    square,
    unop,
)
from gpuarr.lax.shape_ops import broadcast_in_dim
from gpuarr.lax.subnormal_operands import following_xla

_SQRT_PI = math.sqrt(math.pi)


def _in_f64(fn):
    """Run a float64 kernel on float inputs of one width (several are broadcast together and
    copied) and cast the result back to that width."""
    def impl(*args):
        dt = np.asarray(args[0]).dtype
        with np.errstate(all="ignore"):
            arrs = [np.asarray(a, np.float64) for a in args]
            if len(arrs) > 1:
                arrs = [np.array(a) for a in np.broadcast_arrays(*arrs)]
            return np.asarray(fn(*arrs)).astype(dt)
    impl.__name__ = fn.__name__
    return impl


# ---------------------------------------------------------------- erf family


# Rational approximations of Cody's form with the coefficients of the Cephes library (Moshier):
# erf(x) = x T(x^2)/U(x^2) for |x| < 1 and erfc(x) = exp(-x^2) P(x)/Q(x) for 1 <= x < 8,
# exp(-x^2) R(x)/S(x) beyond; relative error below 1e-13 in double. Leading coefficients first;
# the denominators' leading 1 is implicit.
_ERF_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
          7.00332514112805075473E3, 5.55923013010394962768E4)
_ERF_U = (3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
          2.26290000613890934246E4, 4.92673942608635921086E4)
_ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q = (1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
           9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
           1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
           6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC_S = (2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
           1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)


def _poly(x, coeffs, monic=False):
    """Horner's rule; `monic` prepends the implicit leading 1."""
    acc = np.ones_like(x) if monic else np.full_like(x, coeffs[0])
    for c in coeffs[(0 if monic else 1):]:
        acc *= x
        acc += c
    return acc


def _exp_minus_square(x):
    # exp(-x^2) with x = m + f, m a multiple of 1/128 (so m*m is exact): exp(-m^2) exp(-(2mf + f^2))
    # keeps the relative error of x^2's rounding out of the result in the tail.
    m = np.round(x * 128) / 128
    f = x - m
    return np.exp(-m * m) * np.exp(-(2 * m * f + f * f))


def _erf_small(x):  # |x| < 1
    z = x * x
    return x * _poly(z, _ERF_T) / _poly(z, _ERF_U, monic=True)


def _erfc_large(a):  # a = |x| >= 1
    a = np.minimum(a, 40.0)  # erfc underflows to 0 from 26.6 on; keeps inf out of the split
    out = np.empty(a.shape)
    near = a < 8
    for mask, p, q in ((near, _ERFC_P, _ERFC_Q), (~near, _ERFC_R, _ERFC_S)):
        v = a[mask]
        out[mask] = _exp_minus_square(v) * _poly(v, p) / _poly(v, q, monic=True)
    return out


def _split(x, small_fn, large_fn):
    """Evaluate small_fn where |x| < 1 and large_fn(|x|) elsewhere, each on its own subset."""
    x = np.asarray(x, np.float64)
    out = np.empty(x.shape)
    small = np.abs(x) < 1
    out[small] = small_fn(x[small])
    big = ~small
    out[big] = large_fn(x[big])
    return out


def _erf64(x):
    return _split(x, _erf_small, lambda v: np.sign(v) * (1 - _erfc_large(np.abs(v))))


def _erfc_signed(v):  # |v| >= 1: erfc(-a) = 2 - erfc(a)
    e = _erfc_large(np.abs(v))
    return np.where(v > 0, e, 2 - e)


def _erfc64(x):
    return _split(x, lambda v: 1 - _erf_small(v), _erfc_signed)


def _erf_inv64(y):
    # Winitzki's approximation (relative error < 2e-3), then two Halley steps.
    a = 0.147
    y = np.asarray(y, np.float64)
    ln = np.log1p(-y * y)
    b = 2 / (math.pi * a) + ln / 2
    x = np.sign(y) * np.sqrt(np.sqrt(b * b - ln / a) - b)
    tail = np.abs(y) > 0.5
    ay = np.abs(y)
    for _ in range(2):  # Halley's method triples the correct digits per step
        ax = np.abs(x)
        deriv = 2 / _SQRT_PI * np.exp(-ax * ax)
        # In the tails solve erfc(|x|) = 1 - |y| (exact by Sterbenz) to keep relative accuracy.
        f = np.empty(ax.shape)
        f[tail] = (1 - ay[tail]) - _erfc64(ax[tail])
        f[~tail] = _erf64(ax[~tail]) - ay[~tail]
        u = f / deriv
        ax = ax - u / (1 + ax * u)
        x = np.sign(y) * ax
    x = np.where(ay == 1, np.sign(y) * np.inf, x)
    return np.where((ay > 1) | np.isnan(y), np.nan, x)


erf_p = unop("erf", _in_f64(_erf64), "float")
defjvp(erf_p, lambda g, x: mul(_const(x, 2 / _SQRT_PI), mul(g, exp(neg(square(x))))))
erfc_p = unop("erfc", _in_f64(_erfc64), "float")
defjvp(erfc_p, lambda g, x: mul(_const(x, -2 / _SQRT_PI), mul(g, exp(neg(square(x))))))
erf_inv_p = unop("erf_inv", following_xla("erf_inv", _in_f64(_erf_inv64)), "float")
defjvp(erf_inv_p, lambda g, ans, x: mul(_const(x, _SQRT_PI / 2), mul(g, exp(square(ans)))),
       with_ans=True)

# ---------------------------------------------------------------- gamma family

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_pos(x):
    """log|Gamma(x)| for x >= 0.5 (Lanczos)."""
    z = x - 1
    series = np.full(z.shape, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * np.log(t) - t + np.log(series)


def _lgamma64(x):
    reflect = x < 0.5
    pos = _lgamma_pos(np.where(reflect, 1 - x, x))
    # log|Gamma(x)| = log(pi / |sin(pi x)|) - log|Gamma(1 - x)|; poles at non-positive integers.
    sin_pix = np.abs(np.sin(math.pi * (x - np.floor(x))))
    refl = np.log(math.pi / sin_pix) - pos
    out = np.where(reflect, refl, pos)
    out = np.where(reflect & (x == np.floor(x)), np.inf, out)
    return np.where(np.isinf(x), np.inf, out)


# Bernoulli numbers B_2k, k = 1..10, for the asymptotic series of digamma and polygamma.
_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
        -174611 / 330)
_SHIFT = 12.0


def _digamma64(x):
    reflect = x < 0.5
    z = np.where(reflect, 1 - x, x)
    acc = np.zeros_like(z)
    for _ in range(int(_SHIFT)):
        low = z < _SHIFT
        acc = acc - np.where(low, 1 / z, 0.0)
        z = np.where(low, z + 1, z)
    inv2 = 1 / (z * z)
    series = np.zeros_like(z)
    power = inv2
    for k, b in enumerate(_B2K, start=1):
        series = series + b / (2 * k) * power
        power = power * inv2
    out = acc + np.log(z) - 0.5 / z - series
    # psi(x) = psi(1 - x) - pi / tan(pi x); poles (non-positive integers) give NaN as in JAX.
    frac = x - np.floor(x)
    refl = out - math.pi / np.tan(math.pi * frac)
    out = np.where(reflect, refl, out)
    out = np.where(reflect & (frac == 0), np.nan, out)
    return np.where(x == np.inf, np.inf, out)


def _polygamma64(m, x):
    """psi^(m)(x) for integer-valued m >= 0; poles (non-positive integer x) give inf for odd m."""
    m = np.asarray(m, np.float64)
    mi = np.where((m >= 1) & (m == np.floor(m)), m, 1.0)
    fact = np.vectorize(math.gamma, otypes=[np.float64])(mi + 1)  # m!
    sign = np.where(mi % 2 == 1, 1.0, -1.0)  # (-1)^(m+1)
    z = np.array(x, np.float64, copy=True)
    acc = np.zeros(np.broadcast_shapes(z.shape, mi.shape))
    # psi^(m)(x) = psi^(m)(x + 1) + (-1)^(m+1) m! / x^(m+1): shift every x up past _SHIFT.
    finite = z[np.isfinite(z)]
    lowest = float(finite.min()) if finite.size else _SHIFT
    for _ in range(int(min(max(_SHIFT, _SHIFT - np.floor(lowest)), 1e5))):
        low = z < _SHIFT
        acc = acc + np.where(low, fact / z ** (mi + 1), 0.0)
        z = np.where(low, z + 1, z)
    # (m-1)!/z^m + m!/(2 z^(m+1)) + sum_k B_2k (2k+m-1)!/((2k)! z^(2k+m))
    series = fact / mi / z ** mi + fact / (2 * z ** (mi + 1))
    for k, b in enumerate(_B2K, start=1):
        coef = np.exp(np.vectorize(math.lgamma, otypes=[np.float64])(2 * k + mi)
                      - math.lgamma(2 * k + 1))
        series = series + b * coef / z ** (2 * k + mi)
    out = sign * (acc + series)
    out = np.where(m == 0, _digamma64(np.broadcast_to(x, out.shape).astype(np.float64)), out)
    pole = (m >= 1) & (x <= 0) & (x == np.floor(x))
    out = np.where(pole, np.where(mi % 2 == 1, np.inf, np.nan), out)
    return np.where((m < 0) | (m != np.floor(m)), np.nan, out)


lgamma_p = unop("lgamma", _in_f64(_lgamma64), "float")
digamma_p = unop("digamma", _in_f64(_digamma64), "float")


def _polygamma_impl(m, x):
    with np.errstate(all="ignore"):
        return _polygamma64(m, np.asarray(x, np.float64)).astype(x.dtype)


polygamma_p = binop("polygamma", _polygamma_impl, "float")
defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))
defjvp(digamma_p, lambda g, x: mul(g, polygamma(_const(x, 1), x)))
defjvp(polygamma_p, None,
       lambda g, m, x: mul(g, polygamma(add(m, _const(m, 1)), x)))


# ---------------------------------------------------------------- clamp


def _clamp_abstract(lo, x, hi):
    _check_kind("clamp", "any", x)
    _check_same_dtypes("clamp", lo, x, hi)
    for name, bound in (("min", lo), ("max", hi)):
        if bound.shape and bound.shape != x.shape:
            raise TypeError(f"lax.clamp requires {name} to be a scalar or have the operand's shape "
                            f"{x.shape}, got {name} of shape {bound.shape}.")
    return [x.update(weak_type=x.weak_type and lo.weak_type and hi.weak_type)]


def _clamp_batch(axis_size, vals, dims):
    x_val, x_dim = vals[1], dims[1]
    x = batching.move_to(x_val, x_dim, 0, axis_size)
    shape = get_aval(x).shape
    out = []
    for v, d in zip(vals, dims):
        if d is not_mapped and not get_aval(v).shape:
            out.append(v)  # scalar bounds stay scalars
            continue
        v = batching.move_to(v, d, 0, axis_size)
        vshape = get_aval(v).shape
        out.append(v if vshape == shape else broadcast_in_dim(v, shape, (0,) if len(vshape) == 1
                                                              else tuple(range(len(vshape)))))
    return clamp_p.bind(*out), 0


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    shape = get_aval(out).shape
    if all(type(t) is Zero for t in tangents):
        return out, Zero.from_primal(out)
    # which: 0 below lo (tangent of lo), 1 above hi (of hi), 2 inside (of x).
    above_lo = convert_element_type(ge(x, lo), np.int32)
    inside = add(above_lo, convert_element_type(le(x, hi), np.int32))
    which = select_n(eq(inside, np.int32(2)), above_lo, np.int32(2))
    ts = []
    for t in tangents:
        t = ad.instantiate(t) if type(t) is Zero else t
        ts.append(t if get_aval(t).shape == shape else broadcast_in_dim(t, shape, ()))
    return out, select_n(which, ts[0], ts[2], ts[1])


clamp_p = Primitive("clamp")
impl_rules[clamp_p] = lambda lo, x, hi: np.clip(x, lo, hi).astype(x.dtype)
abstract_eval_rules[clamp_p] = _clamp_abstract
weak_type_rules[clamp_p] = lambda lo, x, hi: all(getattr(a, "weak_type", False) for a in (lo, x, hi))
batch_rules[clamp_p] = _clamp_batch
ad.jvp_rules[clamp_p] = _clamp_jvp


# ---------------------------------------------------------------- bit operations


def _popcount_impl(x):
    u = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(u).astype(x.dtype)
    bits = np.unpackbits(u.view(np.uint8).reshape(u.shape + (x.dtype.itemsize,)), axis=-1)
    return bits.sum(axis=-1).astype(x.dtype)


def _clz_impl(x):
    nbits = x.dtype.itemsize * 8
    v = x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
    length = np.zeros(x.shape, np.int64)  # bit length, by binary search over shifts
    for s in (32, 16, 8, 4, 2, 1):
        if s < nbits:
            big = v >= (np.uint64(1) << np.uint64(s))
            length += big * s
            v = np.where(big, v >> np.uint64(s), v)
    length += v > 0
    return (nbits - length).astype(x.dtype)


population_count_p = unop("population_count", _popcount_impl, "int")
defjvp_zero(population_count_p)
clz_p = unop("clz", _clz_impl, "int")
defjvp_zero(clz_p)
# int2/int4/uint2/uint4: counted in the type's own width, as XLA does (see narrow_types.py).
narrow_rules[population_count_p] = partial(narrow_types.population_count, _popcount_impl)
narrow_rules[clz_p] = partial(narrow_types.clz, _clz_impl)
# XLA expands these in float32 for the narrow floats and rounds once (see narrow_types.py).
for _p in (lgamma_p, digamma_p, polygamma_p, erf_inv_p):
    narrow_rules[_p] = narrow_types.in_float32(impl_rules[_p])


def _bitcast_shape(aval, new_dtype):
    # Widths in bits, as JAX counts them: int4 is 4 bits wide (ml_dtypes stores it in a byte).
    old, new = dtypes.itemsize_bits(aval.dtype), dtypes.itemsize_bits(new_dtype)
    if old == new:
        return aval.shape
    if old > new:
        return aval.shape + (old // new,)
    dim_size = aval.shape[-1] if aval.shape else 1
    if dim_size * old != new:
        raise ValueError(f"Attempting to convert array of shape {aval.shape} from {aval.dtype} of "
                         f"size {old} bits to {np.dtype(new_dtype)} of size {new}, bits but "
                         f"{dim_size} * {old} != {new}")
    return aval.shape[:-1]


def _bitcast_impl(x, new_dtype):
    x = np.asarray(x)
    if x.dtype in narrow_types.NARROW or np.dtype(new_dtype) in narrow_types.NARROW:
        return narrow_types.bitcast(x, new_dtype)
    x = x if x.flags.c_contiguous else x.copy()
    shape = _bitcast_shape(ShapedArray(x.shape, x.dtype), new_dtype)
    return x.view(new_dtype).reshape(shape)


def _bitcast_batch(axis_size, vals, dims, new_dtype):
    (x,), (d,) = vals, dims
    x = batching.move_to(x, d, 0, axis_size)
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), 0


bitcast_convert_type_p = Primitive("bitcast_convert_type")
impl_rules[bitcast_convert_type_p] = _bitcast_impl
abstract_eval_rules[bitcast_convert_type_p] = lambda x, new_dtype: [
    ShapedArray(_bitcast_shape(x, new_dtype), new_dtype)]
weak_type_rules[bitcast_convert_type_p] = _never_weak
batch_rules[bitcast_convert_type_p] = _bitcast_batch
defjvp_zero(bitcast_convert_type_p)

# ---------------------------------------------------------------- public wrappers



def _checked(prim, name=None):
    """A wrapper that validates like abstract evaluation before binding, so eager calls raise
    the same TypeError as traced ones (the eager trace runs only the NumPy implementation)."""
    rule = abstract_eval_rules[prim]

    def f(*args, **params):
        # Python scalars become weakly typed 0-d arrays, as lax does for jax.lax.erf(1.0).
        args = [_coerce_scalars(prim.name, a)[0] for a in args]
        rule(*map(get_aval, args), **params)
        return prim.bind(*args, **params)
    f.__name__ = name or prim.name
    return f


def _checked_unary(prim):
    """`_checked` for a one-operand op, with JAX's signature `f(x)` (and no argument list to
    build on each call)."""
    rule, name = abstract_eval_rules[prim], prim.name

    def f(x):
        x = _coerce_scalars(name, x)[0]
        rule(get_aval(x))
        return prim.bind(x)
    f.__name__ = name
    return f


erf, erfc, erf_inv, lgamma, digamma = map(_checked_unary,
                                          (erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p))
population_count, clz = map(_checked_unary, (population_count_p, clz_p))
erf.__doc__ = "The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt (lax.erf)."
erfc.__doc__ = "The complementary error function 1 - erf(x), accurate in the tails (lax.erfc)."
erf_inv.__doc__ = "The inverse of erf on (-1, 1); +-inf at +-1 and NaN outside (lax.erf_inv)."
lgamma.__doc__ = "The log of the absolute value of the gamma function (lax.lgamma)."
digamma.__doc__ = "The logarithmic derivative of the gamma function, psi(x) (lax.digamma)."
population_count.__doc__ = "The number of set bits of each integer (lax.population_count)."
clz.__doc__ = "The number of leading zero bits of each integer (lax.clz)."


def polygamma(m, x):
    """The m-th derivative of digamma, psi^(m)(x), for integer-valued m >= 0 (lax.polygamma)."""
    m, x = _coerce_scalars("polygamma", m, x)
    return _checked(polygamma_p)(m, x)


def clamp(min, x, max):
    """Elementwise min(max(x, min), max); `min`/`max` are scalars or have x's shape (lax.clamp)."""
    min, x, max = _coerce_scalars("clamp", min, x, max)
    return _checked(clamp_p)(min, x, max)


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits as `new_dtype`; a narrower type adds a trailing axis, a wider one
    consumes it (lax.bitcast_convert_type)."""
    return _checked(bitcast_convert_type_p)(operand, new_dtype=dtypes.canonicalize_dtype(new_dtype))


_ = (div, broadcast_batch_rule)
