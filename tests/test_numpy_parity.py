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
FNAN = np.array([[np.nan, 1.0, np.inf, 2.0], [3.0, np.nan, 1.0, 0.5]], np.float32)
CNAN = np.array([complex(np.nan, 1), complex(1, np.nan), complex(np.inf, 0), 1 + 1j], np.complex64)

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
    np_case("matmul", F32, F32), np_case("matmul", ZERO_D, F32),
    np_case("matmul", arr("int32", (3,)), 2), np_case("unique", ZERO_D, axis=0),
    np_case("vdot", arr("float32", (3,)), arr("float32", (2,))),
    # Quantiles: complex input, unsupported arguments, bad methods and q of rank 2.
    np_case("quantile", C64, 0.5), np_case("percentile", C64, 50.0),
    np_case("quantile", F32, 0.5, overwrite_input=True),
    np_case("nanpercentile", F32, 50.0, out=np.zeros(())),
    np_case("nanquantile", I32, 0.3, method="bad"),
    np_case("quantile", F32, np.array([[0.1, 0.9]], np.float32)),
    # Shapes and axes.
    np_case("reshape", F32, (4,)), np_case("reshape", F32, (6,), order="X"),
    np_case("reshape", F32, (2, 3.0)), np_case("ravel", F32, order="K"),
    np_case("ravel", F32, order="X"), np_case("transpose", F32, (0,)),
    np_case("permute_dims", F32, (1, -2)), np_case("squeeze", ZERO_D, axis=0),
    np_case("squeeze", arr("float32", (1, 3)), axis=(0, 0)), np_case("moveaxis", 2.0, 0, 0),
    np_case("moveaxis", F32, (0,), (1, 0)), np_case("swapaxes", F32, 0, 2),
    np_case("swapaxes", ZERO_D, 0, 0), np_case("rollaxis", F32, 0, 3),
    np_case("stack", [F32, ZERO_D]), np_case("stack", [[1, 2], [3, 4]]),
    np_case("concatenate", [[1, 2], [3, 4]]), np_case("hstack", [[1, 2], [3, 4]]),
    np_case("vstack", [[1, 2], [3, 4]]), np_case("trace", F32, axis1=0, axis2=0),
    np_case("trace", arr("float32", (3,))), np_case("tril", arr("float32", (3,))),
    np_case("triu", ZERO_D), np_case("tril", F32, 1.0),
    np_case("sort", F32, kind="stable"), np_case("sort", F32, order="x"),
    np_case("unique", F32, axis=2), np_case("matrix_transpose", arr("bool", (3,))),
    np_case("fmod", C64, F32), np_case("fmod", arr("int32", (3,)), 1 + 2j),
    np_case("std", [1, 2]), np_case("ones_like", [1, 2]),
    np_case("zeros_like", [1.5]),
    # Indexing.
    np_case("take", F32, 1.0), np_case("take", ZERO_D, 0, axis=0),
    np_case("take_along_axis", F32, np.array([[0.0]]), 1),
    np_case("take_along_axis", F32, np.array([0]), 1),
    np_case("put_along_axis", F32, np.array([0]), 5.0, 1, inplace=False),
    np_case("pad", F32, 1, mode="bad"), np_case("pad", F32, -1), np_case("pad", F32, 1.5),
    np_case("pad", F32, ((1, 2, 3),)), np_case("pad", F32, ((1,), (2,))),
    np_case("pad", arr("float32", (0,)), 1, mode="wrap"),
    np_case("pad", F32, 1, mode="reflect", constant_values=1),
    # Creation.
    np_case("arange", True), np_case("arange", 5, dtype="bool"), np_case("arange", 2 + 0j),
    np_case("arange", arr("int32", (3,))), np_case("linspace", 0, 1, 3.0),
    np_case("eye", -1), np_case("eye", 2.5), np_case("eye", 3, 2.5), np_case("identity", -1),
    np_case("tri", -1), np_case("full", 2.5, 1), np_case("ones", (2, 2.0)),
    np_case("hamming", -1), np_case("kaiser", -1, 1.0),
    np_case("meshgrid", arr("float32", (2,)), arr("float32", (3,)), copy=False),
    np_case("ix_", [1, 2]),
    np_case("ix_", arr("bool", (3,))),
    np_case("lexsort", (arr("float32", (3,)), arr("int32", (4,)))),
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
    # q outside [0, 1] reads the end values; percentiles keep a's type; inverted_cdf is strong.
    np_case("quantile", F32, 1.5), np_case("nanquantile", F32, -0.1),
    np_case("nanpercentile", arr("float16", (2, 3)), 50.0),
    np_case("percentile", arr("bfloat16", (2, 3)), 50.0),
    np_case("quantile", I32, 0.3, method="inverted_cdf"),
    # The nan-reductions drop complex NaNs; nanvar keeps the NaN an infinite mean leaves.
    np_case("nansum", CNAN), np_case("nanmean", CNAN), np_case("nanmax", CNAN),
    np_case("nanmin", CNAN), np_case("nanvar", CNAN), np_case("nanstd", FNAN, axis=1),
    np_case("nanvar", FNAN),
    # linspace without intervals has a NaN step; put_along_axis with axis=None flattens.
    np_case("linspace", 0, 1, 1, retstep=True), np_case("linspace", 0, 1, 0, retstep=True),
    np_case("put_along_axis", F32, np.array([0, 4]), 5.0, None, inplace=False),
    np_case("select", B, F32),
    # Complex infinities and NaNs; an integer fmod by zero gives 0.
    np_case("isfinite", CNAN), np_case("isinf", CNAN), np_case("fmod", I32, B),
    np_case("fmod", arr("uint8", (2, 3)), np.zeros((2, 3), np.uint8)),
    # unique of a Python scalar is weakly typed.
    np_case("unique", 2), np_case("unique", 1.5),
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
        np_case("quantile", F32, [0.25, 0.75], axis=1, keepdims=True),
        np_case("percentile", I32, 30.0, method="nearest"), np_case("nanmedian", FNAN, axis=0),
        np_case("ptp", I32, axis=1), np_case("nanargmax", FNAN, axis=1),
        np_case("reshape", F32, (-1, 2)), np_case("reshape", F32, (3, 2), order="F"),
        np_case("moveaxis", arr("float32", (2, 3, 4)), (0, 1), (2, 0)),
        np_case("swapaxes", F32, -1, 0), np_case("squeeze", arr("float32", (1, 3, 1)), axis=2),
        np_case("stack", [F32, I32], axis=-1), np_case("concatenate", [F32, B], axis=None),
        np_case("pad", F32, ((1, 0), (0, 2)), mode="reflect"),
        np_case("pad", I32, 1, mode="mean"), np_case("repeat", F32, 2, axis=0),
        np_case("roll", F32, (1, 2), axis=(0, 1)), np_case("tile", F32, (2, 1)),
        np_case("take", F32, [0, 5], mode="clip"), np_case("where", B, 1.5, I32),
        np_case("tril", F32, -1), np_case("triu", arr("float32", (2, 3, 4)), 1),
        np_case("trace", arr("float32", (2, 3, 4)), 1, 0, 2),
        np_case("arange", 1, 5, 0.5), np_case("arange", np.int8(5)),
        np_case("linspace", 0, 10, 5, dtype="int32"), np_case("eye", 3, k=1, dtype="int32"),
        np_case("full", (2,), 1 + 2j), np_case("zeros_like", I32, dtype="float16"),
        np_case("sort", arr("bfloat16", (2, 3)), descending=True),
    ]
    return cases


@pytest.mark.parametrize("name,args,kwargs", _sample())
def test_sample_matches_jax(name, args, kwargs):
    _np_check(name, args, kwargs)
