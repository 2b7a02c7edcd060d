"""gpuarr.numpy against jax.numpy, call by call: each case runs in both libraries and must
give the same exception class and message, or the same shape, dtype, weak type and values.
The first tables hold cases where the two once differed; then a sample of cases that always
agreed, across dtypes, Python scalars and keyword arguments; then take's clip mode,
searchsorted's side check, the cumulative functions' static axis, nonzero and its family,
Array.__index__, ones_like/full_like/empty_like dtypes, hsplit/dsplit and string arguments;
then the identity-like functions, creation dtypes, shaped objects, nonzero's fill values and
unsupported `out=` arguments (values, dtypes, weak types, result types, exception classes and
messages)."""
import operator
import re

import numpy as np
import pytest

import gpuarr
import gpuarr.lax as glax
import gpuarr.numpy as gjnp
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

# --------------------- take, searchsorted, cumulative functions, nonzero, *_like dtypes, splits and strings

rjnp = pytest.importorskip("jax.numpy")


def _message(e):
    """The message, less what names a source location or differs in wording only in the advice
    lines each library appends to a concretization error."""
    lines = []
    for line in str(e).split("\n"):
        if not line or line.startswith(("See https://", "Mark the argument static")):
            continue
        lines.append(re.sub(r" at \S+:\d+ for jit\.", ".", line))
    return "\n".join(lines)


def _describe(out):
    if isinstance(out, (tuple, list)):
        return [type(out).__name__] + [_describe(o) for o in out]
    if hasattr(out, "dtype") and hasattr(out, "shape"):
        return ("array", np.asarray(out), out.dtype, out.shape, out.weak_type)
    return ("python", type(out).__name__, out)


def _run(jx, jnp, fn):
    try:
        return ("value", _describe(fn(jx, jnp)))
    except Exception as e:  # the exception itself is what is compared
        return ("raised", type(e).__name__, _message(e))


def _same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and got[0] == want[0] and len(got) == len(want), (got, want)
        for g, w in zip(got[1:], want[1:]):
            _same(g, w)
    elif want[0] == "array":
        assert got[0] == "array", (got, want)
        assert (got[2], got[3], got[4]) == (want[2], want[3], want[4]), (got, want)
        np.testing.assert_array_equal(got[1], want[1])
    else:
        assert got == want


def check(fn):
    got, want = _run(gpuarr, gjnp, fn), _run(jax, rjnp, fn)
    assert got[0] == want[0], (got, want)
    if want[0] == "raised":
        assert got[1:] == want[1:]
    else:
        _same(got[1], want[1])


# ---------------------------------------------------------------- take, mode='clip'

X5 = np.arange(5.0, dtype=np.float32)
X34 = np.arange(12, dtype=np.int32).reshape(3, 4)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.int64])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_clip_clamps_raw_indices(dtype, axis):
    # JAX clamps to [0, n - 1]: -1 gives the first entry, not the last.
    idx = np.array([[-1, 2], [9, 0]]).astype(dtype)
    check(lambda jx, jnp: jnp.take(jnp.asarray(X34), jnp.asarray(idx), axis=axis, mode="clip"))


@pytest.mark.parametrize("mode", ["clip", "wrap", "fill", None])
@pytest.mark.parametrize("indices", [[-1, 7], [-10, -3, 2], -2, True, [True, False], [1.0], [],
                                     np.zeros(0, bool), np.zeros(0, np.float32)], ids=str)
def test_take_modes(mode, indices):
    check(lambda jx, jnp: jnp.take(jnp.asarray(X5), jnp.asarray(indices), mode=mode))


@pytest.mark.parametrize("mode", ["clip", "wrap", "fill", "raise", "foo"])
@pytest.mark.parametrize("indices", [[-1], [1.0], np.zeros((2, 0), np.int32)], ids=str)
def test_take_empty_axis(mode, indices):
    check(lambda jx, jnp: jnp.take(jnp.zeros((0, 3)), jnp.asarray(indices), axis=0, mode=mode))


def test_take_clip_method_and_jit():
    idx = np.array([-1, 7], np.int32)
    check(lambda jx, jnp: jnp.asarray(X5).take(jnp.asarray(idx), mode="clip"))
    check(lambda jx, jnp: jx.jit(lambda a, i: jnp.take(a, i, mode="clip"))(X5, idx))
    check(lambda jx, jnp: jnp.take(jnp.asarray(X5), jnp.asarray(idx), mode="clip",
                                   fill_value=7.0))


# ---------------------------------------------------------------- searchsorted's side

@pytest.mark.parametrize("side", ["middle", 3, None, "LEFT", "left", "right"])
def test_searchsorted_side(side):
    check(lambda jx, jnp: jnp.searchsorted(jnp.asarray(X5), 2.0, side=side))
    check(lambda jx, jnp: jnp.asarray(X5).searchsorted(jnp.asarray([2.0, 9.0]), side=side))


# ---------------------------------------------------------------- cumulative functions' axis

@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
@pytest.mark.parametrize("axis", [[0], np.array([0]), np.array(1), (0,), np.int64(1), 1.0, 5, -1,
                                  None], ids=repr)
def test_cumulative_static_axis(name, axis):
    # JAX's jit hashes its static axis first: lists and arrays are refused as unhashable.
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones((2, 3)), axis=axis))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative_static_axis_method_and_jit(name):
    check(lambda jx, jnp: getattr(jnp.ones((2, 3)), name)(axis=[0]))
    check(lambda jx, jnp: jx.jit(lambda a: getattr(jnp, name)(a, axis=[0]))(jnp.ones((2, 3))))
    check(lambda jx, jnp: getattr(jnp, name)([1, 2], axis=[0]))  # the axis comes first


def test_cumulative_array_axis_is_unhashable():
    for mod in (gjnp, rjnp):
        with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
            mod.cumsum(mod.ones((2, 3)), axis=mod.asarray(0))
    check(lambda jx, jnp: jnp.add.accumulate(jnp.ones((2, 3)), axis=[0]))


# ---------------------------------------------------------------- nonzero and its family

INTS = np.array([[0, 1, 2], [3, 0, 0]], np.int32)
FLOATS = np.array([0.0, 1.0, 0.0, 2.0, 3.0], np.float32)


@pytest.mark.parametrize("a", [np.int32(1), 1, 0.0, True, np.array(True)], ids=repr)
def test_nonzero_0d(a):
    check(lambda jx, jnp: jnp.nonzero(a))
    check(lambda jx, jnp: jnp.asarray(a).nonzero())
    check(lambda jx, jnp: jnp.argwhere(a))
    check(lambda jx, jnp: jnp.flatnonzero(a))


@pytest.mark.parametrize("size", [-1, -3, 0, 2, 7])
@pytest.mark.parametrize("name", ["nonzero", "flatnonzero", "argwhere"])
@pytest.mark.parametrize("a", [FLOATS, INTS, np.zeros((0, 2)), np.zeros(3), np.array(5)], ids=str)
def test_nonzero_size(name, a, size):
    check(lambda jx, jnp: getattr(jnp, name)(a, size=size, fill_value=-1))


# (A tuple of the wrong length is refused too, with another message than JAX's internal one.)
@pytest.mark.parametrize("fill_value", [(7, 8), [7, 8], np.array([7]), 1.5, np.float32(2)],
                         ids=str)
@pytest.mark.parametrize("size", [0, 5])
def test_nonzero_fill_value(fill_value, size):
    check(lambda jx, jnp: jnp.nonzero(INTS, size=size, fill_value=fill_value))


@pytest.mark.parametrize("name", ["nonzero", "flatnonzero", "argwhere"])
def test_nonzero_under_jit_needs_size(name):
    check(lambda jx, jnp: jx.jit(getattr(jnp, name))(FLOATS))
    check(lambda jx, jnp: jx.jit(lambda a: getattr(jnp, name)(a, size=4))(FLOATS))


def test_nonzero_traced_size_and_0d_argwhere():
    check(lambda jx, jnp: jx.jit(lambda s: jnp.nonzero(jnp.arange(3), size=s))(2))
    check(lambda jx, jnp: jx.jit(jnp.argwhere)(np.int32(1)))
    check(lambda jx, jnp: jx.jit(lambda a: a.nonzero())(FLOATS))
    check(lambda jx, jnp: jnp.nonzero(FLOATS, size=1.5))
    check(lambda jx, jnp: jnp.argwhere(np.float32(2), size=3, fill_value=0.5))
    check(lambda jx, jnp: jnp.flatnonzero([1, 0]))


# ---------------------------------------------------------------- Array.__index__

INDEXABLE = {
    "bool": np.array(True), "bool1d": np.array([True]), "int0d": np.array(3, np.int32),
    "uint8": np.array(200, np.uint8), "int8neg": np.array(-5, np.int8),
    "int1d": np.array([3], np.int32), "int2d": np.array([[3, 4]], np.int32),
    "float": np.array(3.0, np.float32), "float1d": np.array([3.0], np.float32),
    "complex": np.array(3j, np.complex64), "empty": np.zeros((0,), np.int32),
}


@pytest.mark.parametrize("name", list(INDEXABLE))
def test_index(name):
    x = INDEXABLE[name]
    check(lambda jx, jnp: operator.index(jnp.asarray(x)))
    check(lambda jx, jnp: list(range(jnp.asarray(x))))
    check(lambda jx, jnp: [10, 11, 12, 13, 14][jnp.asarray(x)])


def test_index_under_transformations():
    check(lambda jx, jnp: jx.grad(lambda x: x * operator.index(jnp.asarray(2)))(1.0))
    for jx in (gpuarr, jax):  # the tracer's own message is worded differently
        with pytest.raises(jx.errors.TracerIntegerConversionError):
            jx.jit(lambda a: operator.index(a))(np.int32(3))


# ---------------------------------------------------------------- *_like dtypes

@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
@pytest.mark.parametrize("dtype", ["foo", object, str, "U3", "int8", None], ids=str)
def test_like_dtypes(name, dtype):
    args = (2,) if name == "full_like" else ()
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones(3), *args, dtype=dtype))
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones(3), *args, dtype=dtype, shape=(2, 1)))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_lists(name):
    args = (2,) if name == "full_like" else ()
    check(lambda jx, jnp: getattr(jnp, name)([1, 2], *args))
    check(lambda jx, jnp: getattr(jnp, name)(np.int8(3), *args))


def test_full_like_fill_values():
    check(lambda jx, jnp: jnp.full_like(jnp.ones(2), [1, 2]))
    check(lambda jx, jnp: jnp.full_like(jnp.ones((2, 3)), jnp.arange(3.0)))
    check(lambda jx, jnp: jnp.full_like(jnp.ones(3), 2, dtype="uint8"))


# ---------------------------------------------------------------- hsplit and dsplit

@pytest.mark.parametrize("name", ["hsplit", "dsplit", "vsplit", "split", "array_split"])
@pytest.mark.parametrize("shape", [(), (4,), (4, 4), (4, 4, 4), (3, 3, 3)], ids=str)
@pytest.mark.parametrize("ios", [2, [1, 3]], ids=str)
def test_splits_by_rank(name, shape, ios):
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones(shape), ios))


@pytest.mark.parametrize("name", ["hsplit", "dsplit", "vsplit", "split", "array_split"])
def test_split_errors_name_the_function(name):
    check(lambda jx, jnp: getattr(jnp, name)([[[1, 2]]], 2))
    check(lambda jx, jnp: getattr(jnp, name)("ab", 2))
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones((4, 4, 4)), [1.5]))
    check(lambda jx, jnp: jx.jit(lambda s: getattr(jnp, name)(jnp.ones((4, 4, 4)), s))(2))
    check(lambda jx, jnp: jx.jit(lambda s: getattr(jnp, name)(jnp.ones((4, 4, 4)), s))(
        np.array([1, 2])))


# ---------------------------------------------------------------- string arguments

ONE_ARG = ["unique", "unique_all", "unique_counts", "unique_inverse", "unique_values", "nonzero",
           "argwhere"]
TWO_ARGS = ["setdiff1d", "setxor1d", "union1d", "intersect1d"]


@pytest.mark.parametrize("name", ONE_ARG)
@pytest.mark.parametrize("arg", ["a", "hello", b"a", [1, 2]], ids=str)
def test_string_argument(name, arg):
    check(lambda jx, jnp: getattr(jnp, name)(arg))


@pytest.mark.parametrize("name", TWO_ARGS)
@pytest.mark.parametrize("args", [("a", X5), (X5, "b"), ([1], X5), (X5, [1]), ([1], "b"),
                                  ("a", [1]), ("a", "b")], ids=str)
def test_string_arguments(name, args):
    check(lambda jx, jnp: getattr(jnp, name)(*args))


def test_string_index_arguments():
    check(lambda jx, jnp: jnp.unravel_index("a", (2, 3)))
    check(lambda jx, jnp: jnp.unravel_index([1], (2, 3)))
    check(lambda jx, jnp: jnp.ravel_multi_index(("a",), (2,)))
    check(lambda jx, jnp: jnp.ravel_multi_index(([1],), (2,)))
    check(lambda jx, jnp: jnp.ravel_multi_index((np.int32(1), "a"), (2, 2)))

# ---------------------------- identity-like functions, creation dtypes, shaped objects and unsupported out=

jjnp = pytest.importorskip("jax.numpy")

X = np.array([1.5, -2.0], np.float32)
INTS_2X2 = np.array([[0, 1], [2, 0]], np.int32)

VALUES = {  # name -> fn(api, jnp)
    "positive_bool": lambda api, jnp: jnp.positive(True),
    "positive_numpy": lambda api, jnp: jnp.positive(X),
    "positive_numpy_0d": lambda api, jnp: jnp.positive(np.array(3.5)),
    "real_numpy": lambda api, jnp: jnp.real(X),
    "real_bool": lambda api, jnp: jnp.real(True),
    "real_int": lambda api, jnp: jnp.real(3),
    "conj_numpy": lambda api, jnp: jnp.conj(X),
    "ones_like_shape_dtype_struct": lambda api, jnp: jnp.ones_like(
        api.ShapeDtypeStruct((2, 3), jnp.float16)),
    "zeros_like_shape_dtype_struct_dtype": lambda api, jnp: jnp.zeros_like(
        api.ShapeDtypeStruct((2, 3), jnp.float16), dtype=jnp.int8),
    "full_like_shape_dtype_struct": lambda api, jnp: jnp.full_like(
        api.ShapeDtypeStruct((4,), jnp.int32), 7),
    "nonzero_float_fill": lambda api, jnp: jnp.nonzero(INTS_2X2, size=4, fill_value=2.5),
    "nonzero_fill_per_axis": lambda api, jnp: jnp.nonzero(INTS_2X2, size=3, fill_value=(7, 8)),
    "nonzero_float32_fill_jit": lambda api, jnp: api.jit(
        lambda a: jnp.nonzero(a, size=3, fill_value=np.float32(-1)))(INTS_2X2),
    "ones_bfloat16": lambda api, jnp: jnp.ones(2, "bfloat16"),
}

ERRORS = {
    "modf_out": lambda api, jnp: jnp.modf(X, out=X),
    "modf_out_positional": lambda api, jnp: jnp.modf(X, X),
    "outer_out": lambda api, jnp: jnp.outer(X, X, out=X),
    "cumsum_out": lambda api, jnp: jnp.cumsum(X, out=X),
    "nancumprod_out": lambda api, jnp: jnp.nancumprod(X, out=X),
    "nanargmax_out": lambda api, jnp: jnp.nanargmax(X, out=X),
    "partition_float_kth": lambda api, jnp: jnp.partition(X, 1.0),
    "partition_axis_none": lambda api, jnp: jnp.partition(X, 1, axis=None),
    "partition_bool": lambda api, jnp: jnp.partition(X > 0, 1),
    "argpartition_complex": lambda api, jnp: jnp.argpartition(X.astype(np.complex64), 1),
    "ones_object": lambda api, jnp: jnp.ones((2,), dtype=object),
    "ones_str": lambda api, jnp: jnp.ones((2,), dtype=str),
    "zeros_datetime": lambda api, jnp: jnp.zeros(2, "datetime64"),
    "zeros_void": lambda api, jnp: jnp.zeros(2, np.void),
    "ones_unknown_dtype": lambda api, jnp: jnp.ones(2, "foo"),
    "nonzero_float_size": lambda api, jnp: jnp.nonzero(INTS_2X2, size=2.0),
}


def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_types_and_weak_types_match_jax(name):
    got = _leaves(VALUES[name](gpuarr, gjnp))
    want = _leaves(VALUES[name](jax, jjnp))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, gpuarr.Array), type(g)
        assert (g.shape, g.dtype, g.weak_type) == (w.shape, w.dtype, w.weak_type)
        np.testing.assert_array_equal(np.asarray(g, np.float64), np.asarray(w, np.float64))


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_identity_and_out_errors_match_jax(name):
    with pytest.raises(Exception) as want:
        ERRORS[name](jax, jjnp)
    with pytest.raises(Exception) as got:
        ERRORS[name](gpuarr, gjnp)
    assert type(got.value) is want.type
    assert str(got.value) == str(want.value)


_XS = np.arange(6, dtype=np.float32)
POLYFIT = {  # name -> (x, y)
    "complex": (_XS.astype(np.complex64), (2 * _XS + 1j * _XS ** 2).astype(np.complex64)),
    "float16_x_float32_y": (_XS.astype(np.float16), _XS ** 2),
    "float32_x_int_y": (_XS, np.arange(6, dtype=np.int32)),
}
POLYFIT_ERRORS = {
    "int": (np.arange(6, dtype=np.int32), np.arange(6, dtype=np.int32)),
    "bool": (_XS > 2, _XS),
    "float16": (_XS.astype(np.float16), _XS.astype(np.float16)),
    "bfloat16": (_XS.astype(jjnp.bfloat16), _XS.astype(jjnp.bfloat16)),
}


@pytest.mark.parametrize("name", sorted(POLYFIT))
def test_polyfit_types_match_jax(name):
    x, y = POLYFIT[name]
    got, want = gjnp.polyfit(x, y, 2), jjnp.polyfit(x, y, 2)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 5e-3 if x.dtype == np.float16 else 2e-4  # the fit's matrix is float16 in both
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=tol, rtol=tol)


@pytest.mark.parametrize("name", sorted(POLYFIT_ERRORS))
def test_polyfit_errors_match_jax(name):
    x, y = POLYFIT_ERRORS[name]
    with pytest.raises(Exception) as want:
        jjnp.polyfit(x, y, 1)
    with pytest.raises(Exception) as got:
        gjnp.polyfit(x, y, 1)
    assert type(got.value) is want.type and str(got.value) == str(want.value)


def test_complex_least_squares_matches_jax():
    rng = np.random.default_rng(0)
    a = (rng.normal(size=(6, 3)) + 1j * rng.normal(size=(6, 3))).astype(np.complex64)
    b = (rng.normal(size=(6, 2)) + 1j * rng.normal(size=(6, 2))).astype(np.complex64)
    for g, w in zip(gjnp.linalg.lstsq(a, b), jjnp.linalg.lstsq(a, b)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=1e-5, rtol=1e-5)
