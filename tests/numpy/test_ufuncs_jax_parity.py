"""Elementwise functions of gpuarr.numpy (round, sign, signbit, sin, sinc, sinh, spacing, sqrt,
square, tan, tanh, true_divide, trunc, where, subtract, maximum, minimum, power, pow) against
JAX itself: the same call through gpuarr and JAX must give the same values, shape, dtype and
weak type, or the same exception."""
import ml_dtypes
import numpy as np
import pytest
from jax_compare import outcome, same_results

import gpuarr
import gpuarr.numpy as jnp

jax = pytest.importorskip("jax")
rjnp = pytest.importorskip("jax.numpy")

NAN, INF = np.nan, np.inf


def _as_float(a):
    return a.astype(np.float32) if a.dtype in (ml_dtypes.bfloat16, np.float16) else a


def check(fn, *args, jit=False, message=True):
    """fn(np_module, *arrays) through gpuarr and through JAX; `message=False` compares only the
    exception class."""
    got = outcome(gpuarr, lambda *xs: fn(jnp, *xs), args, jit)
    want = outcome(jax, lambda *xs: fn(rjnp, *xs), args, jit)
    for g, w in same_results(got, want, message):
        tol = 1e-2 if w.dtype in (ml_dtypes.bfloat16, np.float16) else 1e-5
        g, w = _as_float(g), _as_float(w)
        # Real and imaginary parts separately: NaN + 0j and 0 + NaNj are different values.
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(g), part(w), rtol=tol, atol=tol, equal_nan=True)


def arr(dtype, shape=(2, 3), seed=0, positive=False):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        v = rng.integers(0, 2, n).astype(bool)
    elif np.dtype(dtype).kind in "iu":
        v = rng.integers(1 if positive else (0 if np.dtype(dtype).kind == "u" else -4), 6, n)
    elif np.dtype(dtype).kind == "c":
        v = rng.standard_normal(n) * 2 + 1j * rng.standard_normal(n)
    else:
        v = np.round(rng.standard_normal(n) * 2, 2)
        v = np.abs(v) + 0.5 if positive else v
    return v.astype(dtype).reshape(shape)


DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, ml_dtypes.bfloat16, np.float32,
          np.complex64]
SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, INF, -INF, NAN, 1e-8, -3.0, 100.0], np.float32)


# ---------------------------------------------------------------- unary functions

UNARY = ["sign", "signbit", "sin", "sinc", "sinh", "spacing", "sqrt", "square", "tan", "tanh",
         "trunc", "round"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unary_dtypes(name, dtype):
    check(lambda m, x: getattr(m, name)(x), arr(dtype))


@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values_and_scalars(name):
    check(lambda m, x: getattr(m, name)(x), SPECIAL)
    check(lambda m, x: getattr(m, name)(x), SPECIAL.astype(np.float16))
    check(lambda m, x: getattr(m, name)(x), np.zeros((2, 0), np.float32))
    for value in [3, 2.5, True, 1 + 2j]:
        check(lambda m: getattr(m, name)(value))


@pytest.mark.parametrize("name", ["sin", "sign", "round", "square"])
def test_unary_jit(name):
    check(lambda m, x: getattr(m, name)(x), SPECIAL, jit=True)
    check(lambda m, x: getattr(m, name)(x), arr(np.int8), jit=True)


def test_sign_of_complex_infinities():
    # x / |x| part by part: an infinite part gives NaN.
    x = np.array([3 + 4j, 0j, -1j, complex(INF, 1), complex(NAN, 0), complex(1, INF),
                  complex(INF, INF), complex(-INF, 0)], np.complex64)
    check(lambda m, x: m.sign(x), x)
    check(lambda m, x: m.sign(x), x, jit=True)
    check(lambda m: m.sign(complex(INF, 1)))


def test_sign_of_complex_has_zero_derivative():
    x = np.array([3 + 4j, -1j], np.complex64)
    t = np.array([1 + 1j, 2 - 1j], np.complex64)
    for mod in (gpuarr, jax):
        _, tangent = mod.jvp(mod.numpy.sign, (mod.numpy.asarray(x),), (mod.numpy.asarray(t),))
        np.testing.assert_array_equal(np.asarray(tangent), np.zeros(2, np.complex64))


def test_spacing_rejects_complex():
    check(lambda m: m.spacing(1j))
    check(lambda m, x: m.spacing(x), arr(np.complex64))


@pytest.mark.parametrize("name", ["trunc", "floor", "ceil"])
def test_integer_rounding_of_python_bool_is_an_array(name):
    check(lambda m: getattr(m, name)(True))
    assert isinstance(getattr(jnp, name)(True), gpuarr.Array)


# ---------------------------------------------------------------- round

ROUND = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, 0.125, 1234.5678, NAN, INF], np.float32)


@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2, 40, 400, -400, np.int32(2)], ids=str)
def test_round_decimals(decimals):
    check(lambda m, x: m.round(x, decimals), ROUND)
    check(lambda m, x: m.round(x, decimals), np.array([1.25 + 2.5j, -0.5 - 1.5j], np.complex64))
    check(lambda m, x: m.round(x, decimals=decimals), np.array([1234, -1255, 15], np.int32))


def test_round_weak_scalar_stays_weak():
    for decimals in [0, 2, -1, 3]:
        check(lambda m: m.round(2.675, decimals))
        check(lambda m: m.round(2.675, decimals), jit=True)


@pytest.mark.parametrize("decimals", [1.5, None, "a"], ids=str)
def test_round_decimals_must_be_an_integer(decimals):
    check(lambda m, x: m.round(x, decimals), ROUND)


def test_round_decimals_array_is_not_hashable():
    # JAX's message names its own array class: compare the class only.
    check(lambda m, x: m.round(x, x), ROUND, message=False)


def test_round_rejects_out():
    check(lambda m, x: m.round(x, out=x), ROUND)
    check(lambda m, x: m.round(x, 0, x), ROUND)


# ---------------------------------------------------------------- binary functions

BINARY = ["true_divide", "subtract", "maximum", "minimum", "power"]  # pow: see its tests
PAIRS = [(np.int8, np.uint8), (np.int32, np.float16), (ml_dtypes.bfloat16, np.float16),
         (np.float32, np.complex64), (np.bool_, np.int8), (np.bool_, np.float32),
         (np.uint8, np.bool_), (np.complex64, np.bool_)]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(np.dtype(d).name for d in p))
def test_binary_dtype_pairs(name, pair):
    a, b = pair
    check(lambda m, x, y: getattr(m, name)(x, y), arr(a, seed=1), arr(b, seed=2, positive=True))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.complex64],
                         ids=lambda d: np.dtype(d).name)
def test_binary_python_scalars(name, dtype):
    x = arr(dtype, positive=True)
    for s in [2, 2.5, True, 1j]:
        check(lambda m, x: getattr(m, name)(x, s), x)
        check(lambda m, x: getattr(m, name)(s, x), x)


@pytest.mark.parametrize("name", BINARY)
def test_binary_shapes_and_errors(name):
    f = getattr
    check(lambda m, x, y: f(m, name)(x, y), arr(np.float32, (3, 1)), arr(np.float32, (1, 4), 1))
    check(lambda m, x, y: f(m, name)(x, y), arr(np.float32, ()), arr(np.float32, (3,), 1))
    check(lambda m, x, y: f(m, name)(x, y), arr(np.float32, (0, 3)), arr(np.float32, (3,), 1))
    check(lambda m, x, y: f(m, name)(x, y), arr(np.float32, (2, 3)), arr(np.float32, (4,), 1))
    check(lambda m, x, y: f(m, name)(x, y), SPECIAL, SPECIAL[::-1].copy())
    check(lambda m, x, y: f(m, name)(x, y), SPECIAL, SPECIAL[::-1].copy(), jit=True)
    check(lambda m, x: f(m, name)(x), SPECIAL)
    check(lambda m, x: f(m, name)(x, [1, 2]), SPECIAL)
    check(lambda m, x: f(m, name)(x, None), SPECIAL)


@pytest.mark.parametrize("name", ["subtract", "maximum", "minimum"])
def test_ufunc_keywords(name):
    x = arr(np.float32)
    check(lambda m, x: getattr(m, name)(x, x, out=None), x)
    check(lambda m, x: getattr(m, name)(x, x, out=x), x)
    check(lambda m, x: getattr(m, name)(x, x, where=True), x)


def test_true_divide_and_subtract_specials():
    check(lambda m, x, y: m.true_divide(x, y), np.array([1, -1, 0, 7], np.int32),
          np.array([0, 0, 0, 2], np.int32))
    check(lambda m, x, y: m.true_divide(x, y), np.array([1.0, -1.0, 0.0], np.float32),
          np.array([0.0, -0.0, 0.0], np.float32))
    check(lambda m, x, y: m.subtract(x, y), np.array([True]), np.array([False]))
    check(lambda m, x, y: m.subtract(x, y), np.array([0, 1], np.uint8), np.array([1, 255], np.uint8))
    check(lambda m, x: m.subtract.reduce(x, axis=-1), arr(np.int32, (3, 4)))
    check(lambda m, x: m.subtract.accumulate(x), arr(np.float32, (4,)))


# ---------------------------------------------------------------- maximum / minimum

COMPLEX_X = np.array([complex(NAN, 0), complex(0, NAN), 1 + 1j, 1 + 2j, complex(NAN, NAN), 2 + 0j,
                      complex(INF, 1), complex(1, NAN)], np.complex64)
COMPLEX_Y = np.array([1 + 1j, 1 + 1j, complex(NAN, 0), complex(0, NAN), 2 + 2j, complex(NAN, 5),
                      complex(INF, NAN), 1 + 0j], np.complex64)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@pytest.mark.parametrize("jit", [False, True])
def test_maximum_minimum_complex_nan(name, jit):
    # Complex operands are ordered by real part, then imaginary part; NaN parts compare false.
    f = getattr
    check(lambda m, x, y: f(m, name)(x, y), COMPLEX_X, COMPLEX_Y, jit=jit)
    check(lambda m, x, y: f(m, name)(y, x), COMPLEX_X, COMPLEX_Y, jit=jit)
    check(lambda m, x: f(m, name)(x, 1j), COMPLEX_X, jit=jit)
    check(lambda m, x: f(m, name)(x, complex(NAN, 0)), arr(np.complex64), jit=jit)
    check(lambda m, x, y: f(m, name)(x, y), COMPLEX_X[:, None], COMPLEX_Y[None, :3], jit=jit)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_complex_methods_and_reals(name):
    f = getattr
    check(lambda m, x: f(m, name).accumulate(x), COMPLEX_X)
    check(lambda m, x, y: f(m, name).outer(x, y), COMPLEX_X[:4], COMPLEX_Y[:3])
    check(lambda m, x, y: f(m, name)(x, y),
          np.array([1 + 1j, 1 + 2j, 2 + 0j, 1 - 1j], np.complex64),
          np.array([1 + 2j, 1 + 1j, 1 + 5j, 1 + 1j], np.complex64))
    for dtype in [np.float32, np.float16, ml_dtypes.bfloat16]:
        check(lambda m, x, y: f(m, name)(x, y), np.array([1.0, NAN, 0.0, -0.0], dtype),
              np.array([NAN, 2.0, -0.0, 0.0], dtype))
    check(lambda m: f(m, name)(1j, 2))


# ---------------------------------------------------------------- power

@pytest.mark.parametrize("name, jit", [("power", False), ("power", True), ("pow", False)])
def test_power_python_scalar_with_bool(name, jit):
    # An integer base meeting a boolean exponent array takes JAX's integer loop, whose constants
    # are strongly typed: the result is not weak.
    f = getattr
    for base in [2, -1, 0, True, 2.5, 1j]:
        check(lambda m, x: f(m, name)(base, x), np.array([True, False, True]), jit=jit)
        check(lambda m, x: f(m, name)(base, x), np.array(True), jit=jit)
    for exponent in [True, False, 2, 2.5]:
        check(lambda m, x: f(m, name)(x, exponent), np.array([True, False, True]), jit=jit)
    check(lambda m, x: f(m, name)(x, x), np.array([True, False]), jit=jit)
    check(lambda m: f(m, name)(2, True), jit=jit)
    check(lambda m: f(m, name)(True, 2), jit=jit)
    check(lambda m: f(m, name)(True, 2.5), jit=jit)


HUGE = [2 ** 31, 2 ** 40, 2 ** 40 + 1, 2 ** 62 + 3, 2 ** 64, np.int64(2 ** 40), 100, 300]


@pytest.mark.parametrize("exponent", HUGE, ids=repr)
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.int16],
                         ids=lambda d: np.dtype(d).name)
def test_power_huge_static_exponent(exponent, dtype):
    # Exact modular results, as JAX's exponentiation by squaring on the Python integer.
    x = np.array([1, 3, -1, 0, 2, 5, -3, 127]).astype(dtype)
    check(lambda m, x: m.power(x, exponent), x)


@pytest.mark.parametrize("name", ["power", "pow"])
def test_power_huge_exponent_jit_and_floats(name):
    x = np.array([1, 3, -1, 0, 2, -3], np.int32)
    check(lambda m, x: getattr(m, name)(x, 2 ** 40), x, jit=True)
    check(lambda m, x: getattr(m, name)(x, 2 ** 40 + 1), x, jit=True)
    check(lambda m, x: getattr(m, name)(x, 2 ** 40), np.array([True, False]))
    check(lambda m, x: getattr(m, name)(x, 2 ** 40), np.array([1.0, 0.5, 2.0], np.float32))
    check(lambda m, x: getattr(m, name)(x, -(2 ** 40)), np.array([1.0, 0.5, 2.0], np.float32))


def test_power_negative_static_exponent_of_integers_raises():
    # The message is lax.integer_pow's; compare the class.
    for exponent in [-1, -(2 ** 40)]:
        check(lambda m, x: m.power(x, exponent), np.array([1, 3], np.int32), message=False)
    check(lambda m: m.power(2, -2), message=False)


@pytest.mark.parametrize("jit", [False, True])
def test_power_integer_exponent_arrays(jit):
    # JAX's integer loop looks at the low 6 bits of the exponent only: negative and large
    # exponents give the same (wrapped) values.
    x = np.array([2, -2, 0, 3, 1, -1, 3, 3, -3, 0], np.int32)
    y = np.array([3, 3, 0, -1, -5, -3, 100, 64, 65, -1], np.int32)
    check(lambda m, x, y: m.power(x, y), x, y, jit=jit)
    check(lambda m, x, y: m.power(x, y), x.astype(np.int8), y.astype(np.int8), jit=jit)
    check(lambda m, x, y: m.power(x, y), np.array([0, 2], np.uint8), np.array([0, 9], np.uint8),
          jit=jit)
    check(lambda m, x: m.power(x, x), np.array(3, np.int32), jit=jit)


def test_power_concrete_scalar_array_exponent():
    # Outside jit, a 0-d integer array exponent is a static power: the base keeps its dtype.
    check(lambda m, x, y: m.power(x, y), np.array([2, 3, 5], np.int8), np.array(2, np.int32))
    check(lambda m, x, y: m.power(x, y), np.array([2, 3, 5], np.int8), np.array(2, np.int32),
          jit=True)
    check(lambda m, x, y: m.power(x, y), np.array([2.0, 3.0], np.float16), np.array(2, np.int32))
    check(lambda m, x, y: m.power(x, y), np.array([2, 3, 5], np.int8), np.array(True))
    check(lambda m, x: m.power(x, np.bool_(True)), np.array([2, 3], np.int32))
    check(lambda m, x: m.power(x, np.int32(2)), np.array([2, 3], np.int8))


def test_power_float_and_complex_bases():
    check(lambda m, x, y: m.power(x, y), np.array([0.0, -8.0, 2.0, INF, 0.0, -0.0], np.float32),
          np.array([0.0, 1.0 / 3, NAN, -1.0, -1.0, -1.0], np.float32))
    check(lambda m, x, y: m.power(x, y), np.array([1 + 1j, 0j], np.complex64),
          np.array([2, 0], np.int32))
    check(lambda m, x: m.power(x, 3), arr(ml_dtypes.bfloat16))
    check(lambda m, x: m.power(x, -2), np.array([-2.0, 0.0, NAN], np.float32))


def test_pow_is_its_own_function():
    check(lambda m, x: m.pow(x), arr(np.float32))
    check(lambda m, x: m.pow(x1=x, x2=x), arr(np.float32))


# ---------------------------------------------------------------- where

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_where_dtypes(dtype):
    check(lambda m, c, x, y: m.where(c, x, y), arr(np.bool_), arr(dtype, seed=1),
          arr(dtype, seed=2))
    check(lambda m, c, x, y: m.where(c, x, y), arr(dtype, seed=5), arr(np.float32, seed=1),
          arr(np.float32, seed=2))
    check(lambda m, x: m.where(x, size=4), arr(dtype, seed=4))


def test_where_scalars_and_broadcasting():
    c = arr(np.bool_)
    for s1, s2 in [(1, 2), (1.0, 2), (True, False), (1j, 2)]:
        check(lambda m, c: m.where(c, s1, s2), c)
    check(lambda m, c, x: m.where(c, x, 2.5), c, arr(np.float16))
    check(lambda m, c, x: m.where(c, True, x), c, arr(np.int8))
    check(lambda m, c, x, y: m.where(c, x, y), arr(np.bool_, (3, 1)), arr(np.float32, (1, 4)),
          arr(np.float32, ()))
    check(lambda m, c, x, y: m.where(c, x, y), arr(np.bool_, (3, 1)), arr(np.float32, (1, 4)),
          arr(np.float32, ()), jit=True)
    check(lambda m, c, x, y: m.where(c, x, y), np.array([0.0, NAN, -0.0, 1.0], np.float32),
          arr(np.float32, (4,)), arr(np.float32, (4,), 1))
    check(lambda m, c, x, y: m.where(c, x, y), arr(np.bool_, (2,)), arr(np.float32, (3,)),
          arr(np.float32, ()))


def test_where_one_argument():
    check(lambda m, x: m.where(x), arr(np.float32, (3, 4)))
    check(lambda m, x: m.where(x, size=20, fill_value=-1), arr(np.float32, (3, 4)))
    check(lambda m, x: m.where(x, size=2), arr(np.float32, (3, 4)), jit=True)
    check(lambda m: m.where([1, 0, 2]))


def test_where_bad_arguments():
    c, x = arr(np.bool_), arr(np.float32)
    check(lambda m, c, x: m.where(c, x, x, size=3), c, x)
    check(lambda m, c, x: m.where(c, x, x, fill_value=3), c, x)
    check(lambda m, c, x: m.where(c, x), c, x)
    check(lambda m, c, x: m.where(c, None, x), c, x)
    check(lambda m, c, x: m.where(c, x, None), c, x)
    check(lambda m, c, x: m.where(c, x, x, x), c, x)
    check(lambda m: m.where())
