"""Elementwise jax.numpy functions that JAX wraps in jits (trunc, remainder, hypot, sinc, ...):
gpuarr prints the same programs as JAX (the same nested jits, custom_jvp calls and primitives)
and its eager calls give JAX's values, dtypes, weak types and errors."""
import ml_dtypes
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from tests.jax_compare import outcome, same_results

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

F = np.array([[-2.5, -0.0, 0.0], [0.75, 3.0, 1e-30]], np.float32)
SPECIAL = np.array([np.nan, -np.inf, np.inf, -1.5, 0.0, -0.0, 2.0, 1e-30], np.float32)
I = np.array([[-7, -1, 0], [3, 5, 8]], np.int32)
U8 = np.array([0, 1, 7, 200], np.uint8)
B = np.array([[True, False, True], [False, True, False]])
C = np.array([[1 + 2j, -3 - 0.5j, 0j], [-1 + 0j, 2.5j, -4 + 1j]], np.complex64)
F16 = np.array([-3.5, -0.0, 0.5, 65504, np.inf, 6e-8], np.float16)
BF16 = np.array([-3.5, 0.0, 0.5, 1e30, -np.inf, np.nan], ml_dtypes.bfloat16)
ROW = np.array([-2.0, 3.0, 0.5], np.float32)

UNARY = ["arccosh", "acosh", "around", "frexp", "i0", "iscomplex", "isreal", "modf",
         "nan_to_num", "signbit", "sinc", "spacing", "trunc", "log10", "log2"]
BINARY = ["copysign", "divmod", "floor_divide", "fmax", "fmin", "heaviside", "hypot", "mod",
          "remainder", "logaddexp2"]


def _printed(name, args, kwargs=None):
    """(gpuarr's printed program, JAX's) of jnp.`name`(*args, **kwargs)."""
    kwargs = kwargs or {}
    want = jax.make_jaxpr(lambda *a: getattr(jnp, name)(*a, **kwargs))(*args)
    got = gpuarr.make_jaxpr(lambda *a: getattr(gnp, name)(*a, **kwargs))(*args)
    return str(got), want.pretty_print(use_color=False)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("arg", [F, I, 2.5], ids=["f32", "i32", "weak"])
def test_unary_programs(name, arg):
    got, want = _printed(name, (arg,))
    assert got == want


@pytest.mark.parametrize("name", ["arccosh", "iscomplex", "isreal", "log10", "log2",
                                  "nan_to_num", "sinc"])
def test_complex_programs(name):
    got, want = _printed(name, (C,))
    assert got == want


@pytest.mark.parametrize("name", ["signbit", "trunc", "nan_to_num", "spacing", "frexp"])
@pytest.mark.parametrize("arg", [B, F16], ids=["bool", "f16"])
def test_other_dtype_programs(name, arg):
    got, want = _printed(name, (arg,))
    assert got == want


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("args", [(F, F), (I, I), (F, 2), (3, 2.5), (U8, U8)],
                         ids=["f32", "i32", "f32-weak", "weak", "u8"])
def test_binary_programs(name, args):
    if name in ("copysign", "hypot", "heaviside", "logaddexp2") and args[0] is U8:
        args = (I, ROW)  # an integer array with a float row: promotion and broadcasting
    got, want = _printed(name, args)
    assert got == want


@pytest.mark.parametrize("name,args", [("fmax", (C, C)), ("fmin", (C, C)),
                                       ("logaddexp2", (C, C)), ("divmod", (B, B)),
                                       ("floor_divide", (B, I)), ("remainder", (I, F))])
def test_mixed_binary_programs(name, args):
    got, want = _printed(name, args)
    assert got == want


@pytest.mark.parametrize("name", ["hypot", "floor_divide", "divmod", "remainder", "fmax"])
def test_weak_array_binary_programs(name):
    # A boolean array with a Python scalar promotes to a weakly typed array: JAX's Python
    # constants keep it weak, and its jnp operators make weak comparisons strong.
    got, want = _printed(name, (B, 3))
    assert got == want
    got, want = _printed(name, (2.5, B))
    assert got == want


@pytest.mark.parametrize("name", ["frexp", "spacing", "sinc", "nan_to_num"])
def test_weak_array_unary_programs(name):
    want = jax.make_jaxpr(lambda b: getattr(jnp, name)(b * 1.5))(B)
    got = gpuarr.make_jaxpr(lambda b: getattr(gnp, name)(b * 1.5))(B)
    assert str(got) == want.pretty_print(use_color=False)


@pytest.mark.parametrize("kwargs", [dict(nan=1.0, posinf=2, neginf=-3.0), dict(posinf=9.0)])
def test_nan_to_num_keyword_programs(kwargs):
    # Every argument of JAX's nan_to_num is traced: the keyword values are jit arguments.
    got, want = _printed("nan_to_num", (F,), kwargs)
    assert got == want


def test_around_decimals_program():
    got, want = _printed("around", (F,), dict(decimals=2))
    assert got == want


def test_remainder_operator_program():
    # x % y and x // y are jnp.remainder and jnp.floor_divide, so they print their jits.
    want = jax.make_jaxpr(lambda x, y: (x % y, x // y))(I, I).pretty_print(use_color=False)
    assert str(gpuarr.make_jaxpr(lambda x, y: (x % y, x // y))(I, I)) == want


def _check(name, args, kwargs=None, tol=1e-6):
    kwargs = kwargs or {}
    got = outcome(gpuarr, lambda *a: getattr(gnp, name)(*a, **kwargs), args, arrays_only=True)
    want = outcome(jax, lambda *a: getattr(jnp, name)(*a, **kwargs), args, arrays_only=True)
    for g, w in same_results(got, want):
        if g.dtype.kind in "fc" or g.dtype == ml_dtypes.bfloat16:
            np.testing.assert_allclose(g.astype(np.complex128 if g.dtype.kind == "c" else
                                                np.float64),
                                       w.astype(np.complex128 if w.dtype.kind == "c" else
                                                np.float64), rtol=tol, atol=0)
        else:
            np.testing.assert_array_equal(g, w)


UNARY_VALUES = [SPECIAL, F, I, B, F16, BF16, 2.5, 3, True, np.float32(-0.0), np.zeros((0, 2))]


@pytest.mark.parametrize("name", ["trunc", "signbit", "spacing", "modf", "frexp", "sinc",
                                  "nan_to_num", "log10", "log2", "around", "iscomplex",
                                  "isreal"])
def test_unary_values(name):
    for arg in UNARY_VALUES:
        _check(name, (arg,), tol=1e-2 if getattr(arg, "dtype", None) in (np.float16,
                                                                       ml_dtypes.bfloat16) else 1e-6)


@pytest.mark.parametrize("name", ["arccosh", "acosh", "i0"])
def test_unary_values_transcendental(name):
    for arg in (np.array([1.0, 1.5, 3.0, 0.5, np.inf, np.nan, -2.0], np.float32),
                np.array([2, 1, 7], np.int32), 2.5, np.float16(1.25)):
        _check(name, (arg,), tol=1e-2 if np.ndim(arg) == 0 and not isinstance(arg, float)
               else 2e-6)


def test_complex_values():
    for name in ("arccosh", "log10", "log2", "nan_to_num", "iscomplex", "isreal", "sinc"):
        _check(name, (C,), tol=2e-6)
    c = np.array([np.nan + 1j, complex(np.inf, -np.inf), 1 + 0j], np.complex64)
    _check("nan_to_num", (c,), dict(nan=1.0, posinf=5.0, neginf=-5.0))
    _check("logaddexp2", (C, C[::-1]), tol=2e-6)


def test_nan_to_num_keywords():
    _check("nan_to_num", (SPECIAL,), dict(nan=7, posinf=1e3, neginf=-1e3))
    _check("nan_to_num", (SPECIAL,), dict(copy=False, nan=np.float32(2)))
    _check("nan_to_num", (I,), dict(nan=1.0))
    _check("nan_to_num", (2.5,), dict(posinf=1.0))


BINARY_VALUES = [(SPECIAL, SPECIAL[::-1]), (F, ROW), (I, I[::-1] + 1), (I, np.int32(0)),
                 (I, 3), (U8, np.uint8(3)), (B, B), (F16, np.float16(-1.5)), (7, -2),
                 (-7.5, 2), (I, ROW), (np.zeros((0, 3), np.float32), ROW), (B, 2.5), (3, B)]


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "mod", "divmod", "copysign",
                                  "fmax", "fmin", "heaviside", "hypot", "logaddexp2"])
def test_binary_values(name):
    for x1, x2 in BINARY_VALUES:
        if name in ("floor_divide", "remainder", "mod", "divmod") and (
                np.ndim(x1) and np.asarray(x1).dtype == np.float32 and x1 is not F):
            continue  # NaN and inf through division: compared below without them
        tol = 1e-2 if getattr(x1, "dtype", None) == np.float16 else 2e-6
        _check(name, (x1, x2), tol=tol)


def test_float_division_values():
    x = np.array([-7.5, 7.5, -0.0, 3.0, 1.0, -1.0], np.float32)
    y = np.array([2.0, -2.0, 3.0, 0.0, -0.0, np.inf], np.float32)
    for name in ("floor_divide", "remainder", "divmod"):
        _check(name, (x, y))


@pytest.mark.parametrize("name,args,kwargs", [
    ("trunc", (C,), {}), ("modf", (C,), {}), ("modf", (F,), dict(out=F)),
    ("signbit", (C,), {}), ("spacing", (C,), {}), ("frexp", (C,), {}), ("i0", (C,), {}),
    ("copysign", (C, C), {}), ("hypot", (C, F), {}), ("floor_divide", (C, C), {}),
    ("divmod", (C, C), {}), ("remainder", (C, C), {}), ("heaviside", (C, F), {}),
    ("around", (F,), dict(decimals=[1])), ("trunc", ([1.0],), {}), ("sinc", ([1.0],), {}),
    ("remainder", ([1], 2), {}), ("fmax", ([1], 2), {}), ("nan_to_num", ([1.0],), {}),
    ("signbit", (np.zeros(2, ml_dtypes.float8_e4m3fn),), {}),
    ("acosh", ([1.0],), {}), ("hypot", (F, np.ones((2,), np.float32)), {}),
])
def test_errors(name, args, kwargs):
    got = outcome(gpuarr, lambda *a: getattr(gnp, name)(*a, **kwargs), args, arrays_only=True)
    want = outcome(jax, lambda *a: getattr(jnp, name)(*a, **kwargs), args, arrays_only=True)
    same_results(got, want)


def test_custom_jvp_derivatives():
    # sinc's Maclaurin JVP keeps every derivative at 0 finite; i0's is 0 at 0; frexp's mantissa
    # derivative is 2**-exponent; logaddexp2's weights each tangent by 2**(x - out).
    for x in (0.0, 0.5):
        g, j = gpuarr.grad(gnp.sinc), jax.grad(jnp.sinc)
        for _ in range(3):
            np.testing.assert_allclose(float(g(x)), float(j(x)), rtol=1e-5, atol=1e-6)
            g, j = gpuarr.grad(g), jax.grad(j)
    for x in (0.0, -1.5, 4.0):
        np.testing.assert_allclose(float(gpuarr.grad(gnp.i0)(x)), float(jax.grad(jnp.i0)(x)),
                                   rtol=1e-5)
    x, t = np.array([0.3, 5.0, -12.0], np.float32), np.ones(3, np.float32)
    np.testing.assert_allclose(gpuarr.jvp(lambda v: gnp.frexp(v)[0], (x,), (t,))[1],
                               jax.jvp(lambda v: jnp.frexp(v)[0], (x,), (t,))[1])
    for a, b in ((1.0, 2.0), (np.inf, 0.0), (3.0, 3.0)):
        np.testing.assert_allclose(gpuarr.grad(gnp.logaddexp2, (0, 1))(a, b),
                                   jax.grad(jnp.logaddexp2, (0, 1))(a, b), rtol=1e-6)
