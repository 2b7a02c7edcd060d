"""The jax.scipy.special functions in gpuarr.scipy's topic modules (_boxcox, _combinatorics,
_loggamma, _faddeeva, _exp_integrals, _trig_integrals, _spence, _owens_t, _hypergeometric,
_bessel, _legendre): values against JAX in float32 and float64 (special points included) and
against SciPy in float64, dtypes and weak types as in JAX, jit and vmap, derivatives against
JAX's rules and finite differences, and argument errors."""
import contextlib
import functools
import inspect

import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr
from gpuarr.scipy import special as gspecial
from gpuarr.scipy._bessel import bessel_jn
from gpuarr.scipy._boxcox import boxcox, boxcox1p
from gpuarr.scipy._combinatorics import bernoulli, comb, factorial, poch
from gpuarr.scipy._exp_integrals import exp1, expi, expn
from gpuarr.scipy._faddeeva import dawsn, erfcx, wofz
from gpuarr.scipy._hypergeometric import hyp1f1, hyp2f1
from gpuarr.scipy._legendre import sph_harm_y
from gpuarr.scipy._loggamma import loggamma
from gpuarr.scipy._owens_t import owens_t
from gpuarr.scipy._spence import spence
from gpuarr.scipy._trig_integrals import fresnel, sici

jax = pytest.importorskip("jax")
jsp = pytest.importorskip("jax.scipy.special")
sp = pytest.importorskip("scipy.special")
mpmath = pytest.importorskip("mpmath")

nan, inf = np.nan, np.inf
_RNG = np.random.default_rng(7)


def _u(lo, hi, n=12):
    return _RNG.uniform(lo, hi, n)


# name -> (gpuarr function, float64 arguments on which SciPy is the float64 reference, extra
# arguments with special points, compared with JAX only). JAX's function has the same name.
_A1, _B1, _X1 = _u(-3, 5), _u(0.1, 6), _u(-10, 10)
_A2, _B2, _C2, _X2 = _u(-3, 5), _u(0.1, 6), _u(0.5, 6), _u(-1, 0.85)
CASES = {
    "boxcox": (boxcox, (_u(0.1, 5), np.r_[_u(-2, 2, 10), 0, 1e-9]),
               (np.array([0., -1, inf, nan, 2, 2]), np.array([0.5, 0.5, 1, 1, nan, -inf]))),
    "boxcox1p": (boxcox1p, (_u(-0.9, 4), np.r_[_u(-2, 2, 10), 0, 1e-9]),
                 (np.array([-1., -2, inf, nan, 1e-8, 1]), np.array([0.5, 0.5, 1, 1, 0, -inf]))),
    "comb": (comb, (np.array([5, 10, 4.5, 7, 3, 0, 20, 6, 2.5, 8, 30, 1]),
                    np.array([2, 3, 1.5, 0, 4, 0, 10, 6, 3, 2.2, 15, 0.5])),
             (np.array([5., -1, 3, nan, 5, inf]), np.array([-1., 0, 3.5, 1, nan, 2]))),
    "factorial": (factorial, (np.array([0, 1, 3, 4.5, 10, 0.5, 20, 2.2, 7, 15, 30, 0.1]),),
                  (np.array([-1., -0.5, nan, inf, 171, 200]),)),
    "poch": (poch, (_u(0.5, 5), np.r_[_u(-0.4, 3, 11), 0]),
             (np.array([-1., 0, -2.5, nan, 2, 1]), np.array([2., 2, 2, 1, nan, 0]))),
    "loggamma": (loggamma, (np.r_[_u(0.01, 30, 11), 1e-5],),
                 (np.array([0., -0., -1, -1.5, inf, -inf, nan, 1e30]),)),
    "dawsn": (dawsn, (np.r_[_u(-10, 10, 9), 3.3, 6.3, 40],),
              (np.array([0., -0., inf, -inf, nan, 3.25, 6.25, 1e30, -1e-30]),)),
    "erfcx": (erfcx, (np.r_[_u(-5, 10, 9), 12, 27, 100],),
              (np.array([0., inf, -inf, nan, 9.5, 26.7, -30, 1e30, 1e-30]),)),
    "wofz": (wofz, (_u(-6, 6) + 1j * _u(-3, 6),),
             (np.array([0, inf, -inf, nan, 1j * inf, 30 + 0.1j, -30 - 2j, 1e-3j, -2]),)),
    "exp1": (exp1, (np.r_[_u(0.01, 1, 6), _u(1, 60, 6)],),
             (np.array([0., -0., inf, -inf, nan, -1, 700, 1e-3]),)),
    "expi": (expi, (np.r_[_u(-20, -0.1, 4), [0.5, 1.9, 3, 6, 12, 20, 40, 80]],),
             (np.array([0., -0., inf, -inf, nan, 700, -700, 1e-3, -1e-3]),)),
    "expn": (expn, (np.array([0, 1, 2, 3, 4, 5, 6, 1, 2, 3, 10, 5000]),
                    np.array([0.3, 0.7, 0.05, 1, 2, 7.5, 20, 0.01, 30, 3, 0.5, 2])),
             (np.array([0, 1, 2, 3, -1, 2, 2, 1, 0, 6000, 2.5, -1, 1, 3]),
              np.array([0., 0, 0, 0, 2, -1, inf, nan, 1, 3, 0.5, 0.5, 1e-3, 1e-3]))),
    "sici": (sici, (np.r_[_u(-30, 30, 10), 4.5, 9e8],),
             (np.array([0., -0., inf, -inf, nan, 4, 8, 1e9, 1e-30, 1e10, -3e9]),)),
    "fresnel": (fresnel, (np.r_[_u(-10, 10, 10), 1.6, -1.5],),
                (np.array([0., -0., inf, -inf, nan, 36974, 4e4, -1e5, 1e-30]),)),
    "spence": (spence, (np.r_[_u(0.02, 10, 10), 0.5, 1.5],),
               (np.array([0., -0., inf, -inf, nan, 1, 2, -1, 1e-30]),)),
    "owens_t": (owens_t, (_u(-3, 3), _u(-3, 3)),
                (np.array([0., 1, 1, inf, nan, 2, -1, 0.3, 1, 0]),
                 np.array([0., 1, 0, 2, 1.5, inf, -1, nan, -inf, -3]))),
    "hyp1f1": (hyp1f1, (np.r_[_A1, 2, 1.5], np.r_[_B1, 3, 2.5], np.r_[_X1, 120, 105]),
               (np.array([0., 1, 1, 1, 0, 2, 0.5, 1.5]), np.array([0., 1, 0, 2, 1, 2, 1.5, 2.5]),
                np.array([1., 1, 1, 150, 2, -2, nan, -110]))),
    "hyp2f1": (hyp2f1, (np.r_[_A2, -3, 1, 2.5], np.r_[_B2, 1.5, 1, 1.5], np.r_[_C2, 2, 3, 5],
                        np.r_[_X2, 0.5, 0.95, 0.97]),
               (np.array([1., 1, 1, 1, 0.5, 2.5, 1, 1, -2, 1]),
                np.array([1., 1, 1, 2, 1.5, 1.5, 0.5, 2, 0.5, 1]),
                np.array([2., 0, -2, 3, 3, 4, 2, 5, 1, 4]),
                np.array([0., 0.5, 0.5, 1, 1, 0.99, 1.5, 0.3, 0.5, 0.95]))),
}
IDS = list(CASES)


@contextlib.contextmanager
def _x64(dtype):
    """The x64 setting for `dtype`, in gpuarr and JAX alike."""
    with gpuarr.enable_x64(dtype == np.float64), jax.enable_x64(dtype == np.float64):
        yield


def _cast(args, dtype):
    complex_dtype = np.complex64 if dtype == np.float32 else np.complex128
    return tuple(a.astype(complex_dtype if np.iscomplexobj(a) else dtype) for a in args)


def _tuple(out):
    return out if isinstance(out, tuple) else (out,)


@functools.cache
def _jax_values(name, dtype):
    """JAX's values on both argument sets, concatenated (one compilation per dtype)."""
    args = tuple(np.concatenate([a, b]) for a, b in zip(CASES[name][1], CASES[name][2]))
    args = _cast(args, dtype)
    with _x64(dtype):
        return args, tuple(np.asarray(o) for o in _tuple(jax.jit(getattr(jsp, name))(*args)))


def _assert_matches(got, want, rtol, atol=0.0):
    """Same dtype and shape, NaN and infinities in the same places, finite values close."""
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=rtol, atol=atol)


# Relative tolerance against JAX in float32 (ours and XLA's elementary functions differ in the
# last bits, which loops and cancellation amplify).
F32_RTOL = {"hyp1f1": 1e-4, "hyp2f1": 1e-4, "spence": 2e-6, "loggamma": 2e-6, "poch": 1e-5,
            "comb": 1e-5, "factorial": 1e-5, "expi": 2e-6, "expn": 2e-6, "exp1": 2e-6,
            "sici": 2e-6, "owens_t": 2e-6, "erfcx": 2e-6, "boxcox": 2e-6, "boxcox1p": 2e-6}
# float64 against JAX where the float64 path has code or special points of its own; SciPy is
# the float64 reference for every function below.
F64_VS_JAX = ["poch", "loggamma", "dawsn", "erfcx", "wofz", "sici", "fresnel", "spence", "hyp1f1"]
# (Not owens_t: once JAX has run it without x64, its float64 runs reuse float32 copies of the
# quadrature weights, 4e-9 off.)


@pytest.mark.parametrize("name,dtype", [(name, np.float32) for name in IDS]
                         + [(name, np.float64) for name in F64_VS_JAX],
                         ids=[f"{n}-f32" for n in IDS] + [f"{n}-f64" for n in F64_VS_JAX])
def test_values_match_jax(name, dtype):
    args, want = _jax_values(name, dtype)
    with _x64(dtype):
        got = _tuple(CASES[name][0](*args))
    rtol = F32_RTOL.get(name, 1e-6) if dtype == np.float32 else 1e-9
    for g, w in zip(got, want, strict=True):
        _assert_matches(g, w, rtol, atol=1e-30 if dtype == np.float64 else 1e-37)


# SciPy's float64 values: JAX's algorithms are Cephes' (or as accurate) except where noted.
SCIPY_RTOL = {"hyp1f1": 1e-7,  # JAX's Taylor series cancels near x = -10
              "hyp2f1": 1e-11, "comb": 1e-12, "factorial": 1e-12, "poch": 1e-12,
              "loggamma": 1e-13,
              "owens_t": 5e-14,  # JAX's 13-point quadrature, not SciPy's 18 regions
              "wofz": 2e-13,  # Weideman's N = 32 approximation: ~1e-13 relative
              "fresnel": 1e-13, "spence": 1e-13, "boxcox": 1e-13, "boxcox1p": 1e-13}


@pytest.mark.parametrize("name", IDS)
def test_float64_values_match_scipy(name):
    fn, args = CASES[name][0], CASES[name][1]
    with gpuarr.enable_x64():
        got = _tuple(fn(*args))
    ref = getattr(sp, name)(*args)
    for g, r in zip(got, _tuple(ref), strict=True):
        assert np.asarray(g).dtype == (np.complex128 if np.iscomplexobj(r) else np.float64)
        np.testing.assert_allclose(np.asarray(g), r, rtol=SCIPY_RTOL.get(name, 1e-14), atol=1e-300)


def test_where_jax_is_inaccurate():
    # Like JAX: sici keeps only the leading asymptotic terms beyond 1e9 (~1e-9 relative), and
    # hyp1f1's asymptotic series is for large positive x only (JAX documents x > 0).
    with gpuarr.enable_x64():
        x = np.array([1e10, -3e9])
        for g, r in zip(sici(x), sp.sici(x)):
            np.testing.assert_allclose(g, r.real, rtol=1e-8)
    # Like JAX, erfc(x)'s subnormal float32 values flush to zero (erfcx(9.4) = 0), as XLA's
    # arithmetic does (docs/arithmetic.md). Unlike JAX, which sums zeta(2j) without its tail
    # in bernoulli (2.5e-6 off in B_4).
    jsp = pytest.importorskip("jax.scipy.special")
    x = np.float32([9.2, 9.3, 9.4])
    np.testing.assert_array_equal(np.asarray(erfcx(x)), np.asarray(jsp.erfcx(x)))
    np.testing.assert_allclose(bernoulli(4)[4], -1 / 30, rtol=1e-7)


def test_where_jax_and_scipy_differ():
    # JAX's conventions, kept: E_n(0) = 1/n (SciPy: 1/(n - 1)), Ei(0) = NaN (SciPy: -inf),
    # 1F1(0; 0; x) = 1 (SciPy: NaN), Ci(-x) = Ci(x) (SciPy adds i pi), spence(x < 0) = NaN.
    np.testing.assert_array_equal(expn(np.float32([2, 3, 4]), 0.0), np.float32([1 / 2, 1 / 3, 1 / 4]))
    assert np.isnan(expi(0.0)) and hyp1f1(0.0, 0.0, 3.0) == 1.0
    assert sici(-2.0)[1] == sici(2.0)[1] and np.isnan(spence(-0.5))


def test_tiny_arguments_do_not_stall_the_continued_fraction():
    # Each element runs only the loop of its own branch: 1e-30 next to x > 1 does not keep the
    # continued fraction going (JAX's vectorized loops would run it for every element).
    with gpuarr.enable_x64():
        x = np.array([1e-30, 1e-12, 3.0])
        np.testing.assert_allclose(exp1(x), sp.exp1(x), rtol=1e-14)
        np.testing.assert_allclose(expi(-x), sp.expi(-x), rtol=1e-14)
        np.testing.assert_allclose(expn(3, x), sp.expn(3, x), rtol=1e-14)


def test_complex_loggamma_matches_scipy_and_jax():
    z = np.array([1j, -1.5 + 0j, -2.5 + 1e-3j, 3 + 4j, -1 + 0j, nan, 1e5 + 1j, -20.5 + 1j,
                  0.2 - 3j, -0.5 - 0.5j])
    with gpuarr.enable_x64():
        np.testing.assert_allclose(loggamma(z), sp.loggamma(z), rtol=1e-12, atol=1e-12)
    want = np.asarray(jsp.loggamma(z.astype(np.complex64)))
    got = loggamma(z.astype(np.complex64))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-5)


def test_bernoulli_matches_jax_and_exact_values():
    for n in (1, 30):
        got = bernoulli(n)
        want = np.asarray(jax.jit(jsp.bernoulli, static_argnums=0)(n))
        assert got.dtype == want.dtype == np.float32 and got.shape == (n + 1,)
        np.testing.assert_allclose(got, want, rtol=3e-6, atol=1e-7)  # JAX: B_4 2.5e-6 off
    assert bernoulli(0).shape == (1,) and bernoulli(2).shape == (3,)
    exact = np.array([float(mpmath.bernoulli(k)) for k in range(41)])  # B_1 = -1/2
    with gpuarr.enable_x64():
        got = bernoulli(40)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, exact, rtol=1e-14, atol=1e-300)
    with pytest.raises(ValueError, match="non-negative"):
        bernoulli(-1)
    with pytest.raises(TypeError):
        bernoulli(2.0)


def test_bessel_jn_matches_jax_and_scipy():
    z = np.array([1.5, 4.0, 7.3, 12.0, 20.0])
    with gpuarr.enable_x64():
        got = bessel_jn(z, v=4)
        assert got.shape == (5, 5) and got.dtype == np.float64
        np.testing.assert_allclose(got, sp.jv(np.arange(5)[:, None], z), rtol=1e-12, atol=1e-14)
        assert bessel_jn(z.reshape(5, 1), v=2, n_iter=60).shape == (3, 5, 1)
    # float32 and JAX's limits alike: NaN where the recurrence overflows (small z) and at 0.
    z32 = np.float32([0.0, 0.5, 5.0, 9.5, 15.0])
    want = np.asarray(jsp.bessel_jn(z32, v=3))
    _assert_matches(bessel_jn(z32, v=3), want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(gpuarr.vmap(lambda t: bessel_jn(t, v=3), out_axes=1)(z32[2:]),
                               want[:, 2:], rtol=2e-6)
    np.testing.assert_allclose(gpuarr.jit(bessel_jn, static_argnames="v")(z32[2:], v=3),
                               want[:, 2:], rtol=2e-6)
    # Derivatives through the recurrence, in float64 (JAX's float32 one is off at 7.5).
    with gpuarr.enable_x64(), jax.enable_x64():
        gz = gpuarr.grad(lambda t: bessel_jn(t, v=2)[1])(7.5)
        jz = jax.grad(lambda t: jsp.bessel_jn(t, v=2)[1])(7.5)
    np.testing.assert_allclose(gz, jz, rtol=1e-10)
    np.testing.assert_allclose(gz, sp.jvp(1, 7.5), rtol=1e-10)
    with pytest.raises(ValueError, match="complex input not supported"):
        bessel_jn(np.complex128(1.0), v=1)
    with pytest.raises(TypeError):
        bessel_jn(1.0, v=1.5)


def test_sph_harm_y_matches_jax_and_scipy():
    n = np.array([0, 1, 2, 3, 4, 5, 3, 2, 6])
    m = np.array([0, -1, 2, -3, 1, 0, 2, -2, 5])
    theta, phi = np.linspace(0.1, 3.0, 9), np.linspace(0.2, 6, 9)
    with gpuarr.enable_x64():
        got = sph_harm_y(n, m, theta, phi)
        assert got.dtype == np.complex128
        np.testing.assert_allclose(got, sp.sph_harm_y(n, m, theta, phi), rtol=1e-12, atol=1e-14)
        # A scalar theta, and n_max below max(n): degrees are clipped to n_max, as in JAX.
        clipped = np.minimum(n, 4)
        valid = abs(m) <= clipped  # (|m| is clipped too, which gives nothing meaningful)
        got = np.asarray(sph_harm_y(n, m, 0.5, phi, n_max=4))
        np.testing.assert_allclose(got[valid], sp.sph_harm_y(clipped, m, 0.5, phi)[valid],
                                   rtol=1e-12, atol=1e-14)
        # Derivatives in theta and phi (through the recurrences) against finite differences.
        check_grads_x64(lambda t, p: sph_harm_y(n[:6], m[:6], t, p).real, (theta[:6], phi[:6]),
                    order=1, rtol=1e-5, atol=1e-7, eps=1e-6)
        check_grads_x64(lambda t, p: sph_harm_y(n[:6], m[:6], t, p).imag, (theta[:6], phi[:6]),
                    order=1, rtol=1e-5, atol=1e-7, eps=1e-6)
    args = (n.astype(np.int32), m.astype(np.int32), theta.astype(np.float32),
            phi.astype(np.float32))
    want = np.asarray(jsp.sph_harm_y(*args))
    got = sph_harm_y(*args)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gpuarr.jit(sph_harm_y, static_argnames="n_max")(*args, n_max=6),
                               want, rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="diff_n"):
        sph_harm_y(*args, diff_n=1)


# ---------------------------------------------------------------- types, jit and vmap

# One-argument forms with JAX's counterparts, for dtype and weak-type checks.
UNARY = {
    "boxcox": lambda m, v: m.boxcox(v, v), "boxcox1p": lambda m, v: m.boxcox1p(v, v),
    "comb": lambda m, v: m.comb(v, v), "factorial": lambda m, v: m.factorial(v),
    "poch": lambda m, v: m.poch(v, v), "loggamma": lambda m, v: m.loggamma(v),
    "dawsn": lambda m, v: m.dawsn(v), "erfcx": lambda m, v: m.erfcx(v),
    "wofz": lambda m, v: m.wofz(v), "exp1": lambda m, v: m.exp1(v),
    "expi": lambda m, v: m.expi(v), "expn": lambda m, v: m.expn(2, v),
    "sici": lambda m, v: m.sici(v), "fresnel": lambda m, v: m.fresnel(v),
    "spence": lambda m, v: m.spence(v), "owens_t": lambda m, v: m.owens_t(v, v),
    "hyp1f1": lambda m, v: m.hyp1f1(v, v, v), "hyp2f1": lambda m, v: m.hyp2f1(v, v, v, 0.25),
}


class _Ours:
    """Our functions under JAX's names."""
    boxcox, boxcox1p, comb, factorial, poch, loggamma = (
        staticmethod(f) for f in (boxcox, boxcox1p, comb, factorial, poch, loggamma))
    dawsn, erfcx, wofz, exp1, expi, expn = (
        staticmethod(f) for f in (dawsn, erfcx, wofz, exp1, expi, expn))
    sici, fresnel, spence, owens_t, hyp1f1, hyp2f1 = (
        staticmethod(f) for f in (sici, fresnel, spence, owens_t, hyp1f1, hyp2f1))


def _kind(out):
    return [(str(o.dtype), o.shape, bool(o.weak_type)) for o in _tuple(out)]


def _jax_kind(name, v, x64):
    """(dtype, shape, weak type) of each output of JAX 0.10.2's function on a Python float, an
    int32 array or a float16 scalar, as observed there; None where it raises TypeError."""
    default = "float64" if x64 else "float32"
    scalar, ints = isinstance(v, float), isinstance(v, np.ndarray)
    shape = (2,) if ints else ()
    if name == "spence" and not scalar:
        return None  # integers and float16 are rejected
    if name == "wofz":
        dtype = ("complex128" if x64 else "complex64") if scalar else "complex64"
    elif name == "owens_t":  # its float64 weights promote whatever comes in
        dtype = default
    elif name == "hyp2f1" and ints:  # its Python float x joins int32 in the default type
        dtype = default
    else:
        dtype = default if scalar else "float32" if ints else "float16"
    # Only functions with no typed constant keep a Python scalar weak.
    weak = scalar and name in ("boxcox", "boxcox1p", "comb", "factorial", "loggamma")
    return [(dtype, shape, weak)] * (2 if name in ("sici", "fresnel") else 1)


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_dtypes_and_weak_types_match_jax(x64):
    with gpuarr.enable_x64(x64):
        for name, call in UNARY.items():
            for v in (1.5, np.array([1, 2], np.int32), np.float16(0.75)):
                want = _jax_kind(name, v, x64)
                if want is None:
                    with pytest.raises(TypeError, match="is not supported"):
                        call(_Ours, v)
                else:
                    assert _kind(call(_Ours, v)) == want, (name, v)


def test_dtypes_and_weak_types_spot_checks_against_jax():
    # The table above, checked live on functions whose JAX versions compile quickly.
    for name in ("boxcox", "spence"):
        for v in (1.5, np.array([1, 2], np.int32)):
            try:
                want = _kind(jax.jit(functools.partial(UNARY[name], jsp))(v))
            except TypeError:
                want = None
            assert want == _jax_kind(name, v, False), (name, v)


@pytest.mark.parametrize("name", IDS)
def test_jit_and_vmap_match_eager(name):
    fn, args = CASES[name][0], _cast(CASES[name][1], np.float32)
    eager = _tuple(fn(*args))
    jitted = _tuple(gpuarr.jit(fn)(*args))
    mapped = _tuple(gpuarr.vmap(fn)(*args))
    # vmap over the first argument only, the others broadcast from outside.
    partial = _tuple(gpuarr.vmap(lambda a: fn(a, *(x[3] for x in args[1:])))(args[0]))
    for e, j, v, p, i in zip(eager, jitted, mapped, partial, range(9)):
        assert np.asarray(j).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-6, atol=1e-30)
        np.testing.assert_allclose(np.asarray(v), np.asarray(e), rtol=1e-6, atol=1e-30)
        one = _tuple(fn(*(x[3:4] if k == 0 else x[3] for k, x in enumerate(args))))[i]
        np.testing.assert_allclose(np.asarray(p)[3], np.asarray(one)[0], rtol=1e-6)


def test_signatures_match_jax():
    ours = {"bernoulli": bernoulli, "bessel_jn": bessel_jn, "sph_harm_y": sph_harm_y,
            **{name: CASES[name][0] for name in CASES}}
    for name, fn in ours.items():
        want = [(p.name, p.kind, p.default)
                for p in inspect.signature(getattr(jsp, name)).parameters.values()]
        assert [(p.name, p.kind, p.default)
                for p in inspect.signature(fn).parameters.values()] == want, name


def test_exported_from_special_where_present():
    ours = {"bernoulli": bernoulli, "bessel_jn": bessel_jn, "sph_harm_y": sph_harm_y,
            **{name: CASES[name][0] for name in CASES}}
    for name, fn in ours.items():
        exported = getattr(gspecial, name, None)
        if exported is not None:
            assert exported is fn, name


# ---------------------------------------------------------------- derivatives

# (name, argnums, float64 points): gradients against JAX's, one vmapped call each. The others
# (dawsn, erfcx, wofz, expi, exp1, expn, sici, fresnel, spence, hyp2f1, ...) are checked
# against their closed forms and finite differences below, which costs far less than compiling
# JAX's.
GRAD_CASES = [
    ("factorial", (0,), (np.array([0.5, 3, 4.5, 7, 1.2]),)),
    ("poch", (0, 1), (_u(0.5, 4, 5), _u(-0.4, 2, 5))),
    ("loggamma", (0,), (_u(0.1, 20, 5),)),
    ("owens_t", (0, 1), (_u(-2, 2, 5), _u(-2, 2, 5))),
    ("hyp1f1", (0, 1, 2), (_A1[:5], _B1[:5], np.clip(_X1[:5], -4, 4))),
]


@pytest.mark.parametrize("name,argnums,args", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_jax(name, argnums, args):
    with gpuarr.enable_x64(), jax.enable_x64():
        got = gpuarr.vmap(gpuarr.grad(CASES[name][0], argnums))(*args)
        want = jax.jit(jax.vmap(jax.grad(getattr(jsp, name), argnums)))(*args)
    rtol = 1e-7 if name == "hyp1f1" else 1e-9  # JAX's digamma-weighted series cancel
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.float64
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-12)


def test_derivatives_follow_the_closed_forms():
    # JAX's rules, which are the exact derivatives: Ei' = exp(x)/x, E1' = -exp(-x)/x, D' = 1 - 2xD,
    # erfcx' = 2x erfcx - 2/sqrt(pi), Si' = sin(x)/x, Ci' = cos(x)/x, S' = sin(pi x^2/2),
    # C' = cos(pi x^2/2), w'(z) = -2z w(z) + 2i/sqrt(pi).
    x = np.array([-6, -1.5, 0.3, 2.5, 7.0, 40.0])
    pos = np.abs(x)
    with gpuarr.enable_x64():
        def derivative(fn, v):
            return np.asarray(gpuarr.vmap(gpuarr.grad(fn))(v))
        np.testing.assert_allclose(derivative(expi, x), np.exp(x) / x, rtol=1e-13)
        np.testing.assert_allclose(derivative(exp1, pos), -np.exp(-pos) / pos, rtol=1e-13)
        n = np.array([1, 2, 3, 4, 5, 6.0])
        np.testing.assert_allclose(gpuarr.vmap(gpuarr.grad(expn, 1))(n, pos),
                                   -sp.expn(n - 1, pos), rtol=1e-13)  # E_n' = -E_{n-1}
        np.testing.assert_allclose(derivative(dawsn, x), 1 - 2 * x * sp.dawsn(x), rtol=1e-12,
                                   atol=1e-15)
        np.testing.assert_allclose(derivative(erfcx, x),
                                   2 * x * sp.erfcx(x) - 2 / np.sqrt(np.pi), rtol=1e-10, atol=1e-15)
        t = np.ones_like(x)
        si_dot, ci_dot = gpuarr.jvp(sici, (x,), (t,))[1]
        np.testing.assert_allclose(si_dot, np.sin(x) / x, rtol=1e-13)
        np.testing.assert_allclose(ci_dot, np.cos(x) / x, rtol=1e-13)
        s_dot, c_dot = gpuarr.jvp(fresnel, (x,), (t,))[1]
        np.testing.assert_allclose(s_dot, np.sin(np.pi * x ** 2 / 2), rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(c_dot, np.cos(np.pi * x ** 2 / 2), rtol=1e-10, atol=1e-13)
        z = np.array([0.5 + 1j, -2 - 0.3j, 3 + 0.1j])
        tz = np.array([1 + 0j, 1j, 0.5 - 0.5j])
        want = (-2 * z * sp.wofz(z) + 2j / np.sqrt(np.pi)) * tz
        np.testing.assert_allclose(gpuarr.jvp(wofz, (z,), (tz,))[1], want, rtol=1e-11)
        # erfcx(z) = w(iz) for complex z, so erfcx'(z) = i w'(iz).
        want = 1j * (-2 * 1j * z * sp.wofz(1j * z) + 2j / np.sqrt(np.pi)) * tz
        np.testing.assert_allclose(gpuarr.jvp(erfcx, (z,), (tz,))[1], want, rtol=1e-11)
        # Owen's T: dT/dh = -exp(-h^2/2) erf(ah/sqrt 2) / (2 sqrt(2 pi)) and
        # dT/da = exp(-(1 + a^2) h^2 / 2) / (2 pi (1 + a^2)).
        h, a = np.array([-1.5, 0.2, 0.9, 2.5]), np.array([0.4, -2.0, 1.0, 3.5])
        dh, da = gpuarr.vmap(gpuarr.grad(owens_t, (0, 1)))(h, a)
        np.testing.assert_allclose(dh, -np.exp(-h * h / 2) * sp.erf(a * h / np.sqrt(2))
                                   / (2 * np.sqrt(2 * np.pi)), rtol=1e-13)
        np.testing.assert_allclose(da, np.exp(-(1 + a * a) * h * h / 2) / (2 * np.pi * (1 + a * a)),
                                   rtol=1e-13)
        # spence' = log(x) / (1 - x), through its formula (JAX's is NaN on (1, 2]).
        v = np.array([0.3, 0.8, 1.2, 1.7, 2.0, 4.0])
        np.testing.assert_allclose(derivative(spence, v), np.log(v) / (1 - v), rtol=1e-12)
    # expn has no derivative in n (JAX's nondiff argument gives 0).
    assert gpuarr.grad(expn, 0)(2.0, 1.0) == 0.0


@pytest.mark.parametrize("fn,args", [
    (dawsn, (np.array([-3.0, 0.7, 5.0]),)), (erfcx, (np.array([-1.0, 2.0, 30.0]),)),
    (expi, (np.array([-3.0, 0.7, 5.0]),)), (lambda x: expn(3, x), (np.array([0.4, 1.5, 6.0]),)),
    (lambda x: sici(x)[0] + sici(x)[1], (np.array([0.6, 5.0, 11.0]),)),
    (lambda x: fresnel(x)[0] * fresnel(x)[1], (np.array([-0.6, 1.7, 3.0]),)),
    (spence, (np.array([0.3, 0.8, 1.7, 4.0]),)),
    (boxcox, (np.array([0.5, 1.7, 3.0]), np.array([-1.2, 0.3, 2.0]))),
    (boxcox1p, (np.array([-0.5, 1.7, 3.0]), np.array([-1.2, 0.3, 2.0]))),
    (comb, (np.array([5.0, 7.5, 10.0]), np.array([2.0, 3.0, 4.5]))),
    (owens_t, (np.array([-1.0, 0.4, 2.0]), np.array([0.5, -1.7, 3.0]))),
    (poch, (np.array([1.5, 2.5, 4.0]), np.array([0.5, 1.0, 2.2]))),
    (hyp1f1, (np.array([0.7, 1.5]), np.array([1.2, 2.5]), np.array([-1.0, 2.0]))),
    (hyp2f1, (np.array([0.7, 1.5, -0.6]), np.array([1.2, 0.5, 2.0]), np.array([2.5, 3.0, 1.5]),
              np.array([-0.4, 0.5, 0.3]))),
], ids=["dawsn", "erfcx", "expi", "expn", "sici", "fresnel", "spence", "boxcox", "boxcox1p",
        "comb", "owens_t", "poch", "hyp1f1", "hyp2f1"])
def test_gradients_match_finite_differences(fn, args):
    check_grads_x64(fn, args, order=1, rtol=1e-5, atol=1e-7, eps=1e-6)


# ---------------------------------------------------------------- errors


def test_argument_errors_follow_jax():
    z = np.complex64(1 + 1j)
    for fn, message in ((dawsn, "dawsn does not support complex"),
                        (expi, "expi does not support complex"),
                        (exp1, "exp1 does not support complex"),
                        (lambda v: expn(1, v), "expn does not support complex"),
                        (lambda v: poch(v, v), "jnp.poch does not support complex"),
                        (lambda v: hyp1f1(v, v, v), "hyp1f1 does not support complex"),
                        (sici, "Argument `x` to sici must be real-valued")):
        with pytest.raises(ValueError, match=message):
            fn(z)
    with pytest.raises(NotImplementedError, match="complex-valued inputs"):
        fresnel(z)
    with pytest.raises(NotImplementedError, match="exact=True"):
        factorial(3, exact=True)
    with pytest.raises(TypeError, match=r"x.dtype=int32 is not supported"):
        spence(np.int32(2))
    with pytest.raises(TypeError, match=r"x.dtype=float16 is not supported"):
        spence(np.float16(2))
    with pytest.raises(TypeError):
        comb([1.0], 2.0)  # lists are not arrays
