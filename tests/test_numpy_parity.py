"""gpuarr.numpy against jax.numpy, call by call: each case runs in both libraries and must
give the same exception class and message, or the same shape, dtype, weak type and values.
The first tables hold cases where the two once differed; the last is a sample of cases that
always agreed, across dtypes, Python scalars and keyword arguments."""
import numpy as np
import pytest

import gpuarr.lax as glax
import gpuarr.numpy as gnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jlax = pytest.importorskip("jax.lax")
ml_dtypes = pytest.importorskip("ml_dtypes")

_TOL = {"float16": 2e-3, "bfloat16": 2e-2}


def arr(dtype, shape):
    """A small array of `dtype` with negative, zero and positive entries where it can hold them."""
    n = int(np.prod(shape))
    v = np.resize(np.array([1.0, -2.0, 3.0, 0.0, 2.0, -1.0]), n).reshape(shape)
    if dtype == "bool":
        return v > 0
    if dtype.startswith("u"):
        v = np.abs(v)
    if dtype in ("float16", "bfloat16", "float32"):
        v = v * 0.75
    if dtype == "complex64":
        v = v * 0.75 + 0.5j * v[::-1] if n else v
    return np.asarray(v).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


def _outcome(fn, args, kwargs):
    try:
        return None, fn(*args, **kwargs)
    except Exception as e:  # the class and message are what is compared
        return e, None


def _same_value(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _same_value(g, w)
        return
    if not hasattr(want, "dtype"):
        assert type(got) is type(want) and got == want
        return
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert bool(getattr(got, "weak_type", False)) == bool(getattr(want, "weak_type", False))
    g, w = np.asarray(got), np.asarray(want)
    if w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        t = _TOL.get(str(w.dtype), 1e-6)
        wide = np.complex128 if w.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(g.astype(wide), w.astype(wide), rtol=t, atol=t)


def same_as_jax(ours, theirs, *args, **kwargs):
    """`ours(*args, **kwargs)` raises what `theirs` raises or returns what it returns."""
    want_err, want = _outcome(theirs, args, kwargs)
    got_err, got = _outcome(ours, args, kwargs)
    if want_err is not None:
        assert got_err is not None, f"JAX raised {want_err!r}, gpuarr returned {got!r}"
        assert type(got_err).__name__ == type(want_err).__name__, (got_err, want_err)
        assert str(got_err) == str(want_err)
        return
    assert got_err is None, f"gpuarr raised {got_err!r}"
    _same_value(got, want)


def np_case(name, *args, **kwargs):
    return pytest.param(name, args, kwargs, id=f"{name}-{len(args)}-{sorted(kwargs)}")


def _np_check(name, args, kwargs):
    same_as_jax(getattr(gnp, name), getattr(jnp, name), *args, **kwargs)


F32, I32, B = arr("float32", (2, 3)), arr("int32", (2, 3)), arr("bool", (2, 3))
C64 = arr("complex64", (2, 3))
ZERO_D = np.float32(0.75)

# ---------------------------------------------------------------- errors

ERROR_CASES = [
    # Dtype errors carry the primitive's name, the operand's position and JAX's type list.
    np_case("bitwise_and", F32, F32), np_case("bitwise_or", B, arr("float16", (2, 3))),
    np_case("left_shift", F32, F32), np_case("right_shift", arr("bfloat16", (3,)), 1),
    np_case("floor", C64), np_case("cbrt", C64), np_case("nextafter", I32, I32),
    np_case("invert", F32), np_case("bitwise_count", F32), np_case("logical_not", F32),
    # Lists are not arrays; aliases name themselves.
    np_case("acos", [0.5]), np_case("acosh", [1.5]), np_case("asin", [0.5]),
    np_case("asinh", [1.0]), np_case("atan", [1.0]), np_case("atanh", [0.5]),
    np_case("bitwise_not", [1]), np_case("bitwise_invert", [1]), np_case("radians", [1.0]),
    np_case("exp", [1.0]), np_case("sum", [1, 2]), np_case("sort", [3, 1]),
    np_case("add", [1], 2), np_case("isclose", [1.0], F32),
    # Axis errors.
    np_case("amin", ZERO_D, axis=(0, 1)), np_case("any", ZERO_D, axis=(-1, 0)),
    np_case("sum", ZERO_D, axis=(1,)),
    np_case("argsort", ZERO_D), np_case("sort", np.int32(1)), np_case("sort", ZERO_D, axis=0),
    np_case("cumsum", F32, axis=(0, 1)), np_case("cumprod", I32, axis=(0, 1)),
    np_case("diff", F32, axis=(0, 1)), np_case("diff", F32, n=(1,)),
    np_case("argmax", F32, axis=(0,)),
    # Other messages.
    np_case("around", B), np_case("round", np.bool_(True)),
    np_case("argmin", C64), np_case("argmax", C64), np_case("argmin", C64, axis=0),
    np_case("diag", ZERO_D), np_case("diag", arr("int8", (2, 0, 3))),
    np_case("cov", arr("float32", (2, 0, 3))), np_case("corrcoef", arr("int32", (2, 2, 2))),
    np_case("diag_indices_from", arr("bool", (3,))), np_case("diag_indices_from", F32),
    np_case("dot", F32, F32), np_case("dot", arr("float32", (3,)), arr("float32", (2,))),
    np_case("matmul", F32, F32),
    np_case("vdot", arr("float32", (3,)), arr("float32", (2,))),
]


@pytest.mark.parametrize("name,args,kwargs", ERROR_CASES)
def test_errors_match_jax(name, args, kwargs):
    _np_check(name, args, kwargs)


F_ = arr("float32", (2,))
LAX_ERROR_CASES = [
    ("sin", (I32,)), ("exp", (I32,)), ("sqrt", (I32,)), ("floor", (C64,)), ("round", (I32,)),
    ("neg", (B,)), ("sign", (B,)), ("abs", (B,)), ("population_count", (F32,)),
    ("clz", (F32,)), ("cbrt", (C64,)),
    ("add", (B, B)), ("sub", (B, B)), ("mul", (B, B)), ("div", (B, B)), ("rem", (B, B)),
    ("pow", (I32, I32)), ("nextafter", (I32, I32)), ("shift_left", (F32, F32)),
    ("bitwise_and", (F32, F32)), ("bitwise_xor", (F32, F32)),
]


@pytest.mark.parametrize("name,args", LAX_ERROR_CASES, ids=[c[0] for c in LAX_ERROR_CASES])
def test_lax_dtype_errors_match_jax(name, args):
    same_as_jax(getattr(glax, name), getattr(jlax, name), *args)


# ---------------------------------------------------------------- values, dtypes, weak types

FIXED_VALUE_CASES = [
    # angle computes 0-d floats, integers and booleans in the strong default float type.
    np_case("angle", np.float16(2)), np_case("angle", ml_dtypes.bfloat16(-1)),
    np_case("angle", np.float16(-2), deg=True), np_case("angle", 2.0), np_case("angle", -3),
    np_case("angle", np.int8(-3)), np_case("angle", arr("float16", (3,))),
    np_case("angle", arr("int8", (3,))), np_case("angle", 1 + 2j), np_case("angle", C64),
    # diff with n=0 returns its input, even a 0-d one.
    np_case("diff", ZERO_D, n=0), np_case("diff", np.int32(1), n=0), np_case("diff", F32, n=0),
]


@pytest.mark.parametrize("name,args,kwargs", FIXED_VALUE_CASES)
def test_fixed_values_match_jax(name, args, kwargs):
    _np_check(name, args, kwargs)


def _sample():
    """A representative table of calls on which the libraries agree."""
    dts = ["bool", "uint8", "int32", "bfloat16", "float32", "complex64"]
    cases = []
    for dt in dts:
        x = arr(dt, (2, 3))
        cases += [np_case("negative", x), np_case("sqrt", x), np_case("add", x, 2),
                  np_case("maximum", x, arr(dt, (3,))),
                  np_case("mean", x, axis=(0, 1), keepdims=True)]
    for s in (2, 1.5, True, 1 + 2j):
        cases += [np_case("exp", s), np_case("add", s, s), np_case("multiply", F32, s)]
    e = arr("float32", (2, 0, 3))
    cases += [
        np_case("sum", e, axis=1), np_case("max", e, axis=0), np_case("prod", I32, dtype="int8"),
        np_case("sum", B, dtype="float16", axis=1), np_case("var", F32, ddof=1),
        np_case("std", I32, axis=0, keepdims=True), np_case("median", F32, axis=-1),
        np_case("min", F32, where=np.array([True, False, True]), initial=2.0),
        np_case("argmax", I32, axis=-1, keepdims=True), np_case("count_nonzero", F32, axis=0),
        np_case("searchsorted", np.arange(5.0, dtype=np.float32), F32, side="right"),
        np_case("clip", F32, -0.5, 1.0), np_case("round", F32, decimals=1),
        np_case("nan_to_num", np.array([np.nan, np.inf, 1], np.float32), nan=2.0),
        np_case("unique", I32), np_case("isin", I32, np.array([1, 3], np.int32)),
        np_case("cross", arr("float32", (3,)), arr("float32", (3,))),
        np_case("dot", F32, arr("float32", (3, 2))), np_case("outer", F_, F_),
        np_case("trapezoid", F32, axis=0), np_case("polyval", F_, F32),
        np_case("flip", F32, axis=(0, 1)), np_case("diagonal", F32, offset=1),
        np_case("cumulative_sum", I32, axis=1, include_initial=True),
    ]
    return cases


@pytest.mark.parametrize("name,args,kwargs", _sample())
def test_sample_matches_jax(name, args, kwargs):
    _np_check(name, args, kwargs)
