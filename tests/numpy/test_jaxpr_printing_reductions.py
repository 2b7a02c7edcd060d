"""Printed programs of the reductions JAX writes as jits (var, std, ptp, the nan-reductions,
quantile, median) and of all / any, compared with JAX's, plus eager results and errors of the
same calls."""
import numpy as np
import pytest

import gpuarr
from tests.jax_compare import outcome, same_results

jax = pytest.importorskip("jax")

X = np.linspace(-0.9, 1.7, 6, dtype=np.float32).reshape(2, 3)
XNAN = X.copy()
XNAN[0, 1] = np.nan
ALLNAN = X.copy()
ALLNAN[1, :] = np.nan
X3 = np.linspace(-1.0, 2.0, 24, dtype=np.float32).reshape(2, 3, 4)
I = np.array([[3, -1, 0], [2, 5, -4]], np.int32)
B = X > 0
C = (X + 0.5j * X[::-1]).astype(np.complex64)
H = X.astype(np.float16)
W = np.array([[True, False, True], [True, True, False]])
Q = np.array([0.1, 0.5, 0.9], np.float32)


TAKES_Q = ("quantile", "nanquantile", "percentile", "nanpercentile")


def _printed(name, args, kwargs):
    """(gpuarr's printed program, JAX's) for name(*args, **kwargs), the arrays traced; a
    second array of a function that takes no q is its `where` mask."""
    masked = len(args) == 2 and name not in TAKES_Q

    def build(api):
        fn = getattr(api.numpy, name)
        if masked:
            return lambda x, w: fn(x, where=w, **kwargs)
        return lambda *xs: fn(*xs, **kwargs)
    want = jax.make_jaxpr(build(jax))(*args).pretty_print(use_color=False)
    got = str(gpuarr.make_jaxpr(build(gpuarr))(*args))
    return got, want


PRINT_CASES = [
    ("var", (X,), {}), ("var", (X,), dict(axis=1, keepdims=True)), ("var", (I,), dict(axis=0)),
    ("var", (C,), {}), ("var", (H,), dict(axis=(0, 1))), ("var", (X, W), {}),
    ("var", (X,), dict(ddof=1, dtype=np.float32)), ("var", (X,), dict(correction=1.5)),
    ("var", (X, W), dict(axis=1, keepdims=True)),
    ("std", (X,), {}), ("std", (X,), dict(axis=-1, ddof=1)), ("std", (C,), dict(axis=0)),
    ("std", (X, W), {}),
    ("ptp", (X,), {}), ("ptp", (X,), dict(axis=1, keepdims=True)), ("ptp", (I,), dict(axis=0)),
    ("all", (X,), {}), ("all", (C,), dict(axis=1)), ("all", (I, W), {}),
    ("any", (B,), dict(keepdims=True)), ("any", (C,), {}),
    ("nansum", (X,), {}), ("nansum", (I,), dict(axis=0)), ("nansum", (X,), dict(dtype=np.float32)),
    ("nanprod", (X,), dict(axis=1, keepdims=True)), ("nanprod", (H,), {}),
    ("nanmax", (X,), {}), ("nanmax", (X,), dict(axis=1)), ("nanmax", (X, W), dict(initial=1.0)),
    ("nanmin", (X,), dict(axis=0, keepdims=True)), ("nanmin", (C,), {}), ("nanmin", (I,), {}),
    ("nanmean", (X,), {}), ("nanmean", (I,), dict(axis=1)), ("nanmean", (X, W), {}),
    ("nanvar", (X,), {}), ("nanvar", (X,), dict(axis=1, ddof=1)), ("nanvar", (C,), {}),
    ("nanstd", (X,), {}), ("nanstd", (X, W), dict(axis=0, keepdims=True)),
    ("median", (X,), {}), ("median", (X,), dict(axis=1, keepdims=True)), ("median", (I,), {}),
    ("median", (X3,), dict(axis=(0, 2))), ("median", (X3,), dict(axis=(2, 0), keepdims=True)),
    ("quantile", (X, Q), dict(axis=1)), ("quantile", (X, Q), dict(axis=0, method="nearest")),
    ("quantile", (X, np.float32(0.3)), dict(method="lower", keepdims=True)),
    ("quantile", (X3, Q), dict(axis=(0, 2), method="higher", keepdims=True)),
    ("percentile", (X, np.float32(30.0)), dict(axis=1)), ("percentile", (X, 30), {}),
    # Booleans are summed as integers first, also when counting a `where` mask.
    ("sum", (B,), dict(dtype=np.float32)), ("mean", (X, W), dict(axis=0)),
]


@pytest.mark.parametrize("name,args,kwargs", PRINT_CASES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(PRINT_CASES)])
def test_printed_program_matches_jax(name, args, kwargs):
    got, want = _printed(name, args, kwargs)
    assert got == want


def test_nested_jits_print_as_jax():
    # std calls var's jit, nanstd nanvar's (which calls nanmean's, which calls nansum's),
    # median quantile's: each shows as a jit of its own.
    for name in ("std", "nanstd", "median", "nanvar"):
        got, want = _printed(name, (X,), {})
        assert got == want
        assert "jit[" in got


VALUE_CASES = [
    # Complex values are true where their real part is nonzero, as in JAX.
    ("all", (np.array([1j, 1], np.complex64),), {}),
    ("any", (np.array([1j, 0], np.complex64),), {}),
    ("all", (C,), dict(axis=1, keepdims=True)),
    ("any", (X,), dict(where=W)),
    ("var", (X,), dict(axis=1, where=W)), ("var", (I,), dict(ddof=1)), ("var", (C,), {}),
    ("var", (H,), dict(axis=0)), ("var", (2.0,), {}), ("var", (X,), dict(correction=1.5)),
    ("var", (X,), dict(axis=1, mean=np.mean(X, 1, keepdims=True))),
    ("std", (X,), dict(axis=0, ddof=2)), ("std", (B,), {}), ("std", (X,), dict(where=W)),
    ("ptp", (I,), dict(axis=0)), ("ptp", (np.uint8([3, 1, 2]),), {}), ("ptp", (3.0,), {}),
    ("nansum", (XNAN,), dict(axis=1)), ("nansum", (B,), {}), ("nansum", (XNAN,), dict(initial=2.0)),
    ("nanprod", (XNAN,), dict(where=W)), ("nanmax", (ALLNAN,), dict(axis=1)),
    ("nanmax", (ALLNAN,), dict(axis=1, initial=0.0)), ("nanmin", (ALLNAN,), dict(axis=1, where=W)),
    ("nanmin", (2.0,), {}), ("nanmean", (XNAN,), dict(axis=0)), ("nanmean", (I,), {}),
    ("nanvar", (XNAN,), dict(axis=1, ddof=1)), ("nanvar", (ALLNAN,), dict(axis=1)),
    ("nanstd", (XNAN,), dict(where=W, keepdims=True)),
    ("median", (XNAN,), dict(axis=1)), ("median", (np.float32(2),), dict(keepdims=True)),
    ("nanmedian", (XNAN,), dict(axis=1)), ("nanmedian", (ALLNAN,), dict(axis=1, keepdims=True)),
    ("nanmedian", (X3,), dict(axis=(0, 2))),
    ("quantile", (X, Q), dict(axis=1, method="linear")),
    ("quantile", (XNAN, Q), dict(axis=0, method="midpoint", keepdims=True)),
    ("quantile", (X, 0.4), dict(axis=1, method="inverted_cdf", weights=np.abs(X))),
    ("nanquantile", (XNAN, Q), dict(axis=1, method="nearest")),
    ("nanquantile", (ALLNAN, 0.3), dict(axis=1, method="inverted_cdf")),
    ("percentile", (X, 30.0), dict(axis=0)), ("nanpercentile", (XNAN, Q * 100), {}),
    # Errors, raised inside the jits as in JAX.
    ("var", ("abc",), {}), ("std", (X,), dict(dtype=np.int32)), ("ptp", ("abc",), {}),
    ("ptp", (X,), dict(out=np.zeros(()))), ("var", (X,), dict(out=np.zeros(()))),
    ("nanmax", (X,), dict(out=np.zeros(()))), ("nanstd", (X,), dict(where=I)),
    ("nanstd", (X,), dict(dtype=np.int32)), ("nansum", ([1.0, 2.0],), {}),
    ("var", (X,), dict(ddof=1, correction=1)),
    ("median", (np.float32(2),), dict(axis=0)), ("quantile", (np.float32(2), 0.5), dict(axis=(0,))),
    ("median", (X,), dict(overwrite_input=True)), ("quantile", (C, 0.5), {}),
    ("quantile", (X, 0.5), dict(method="bogus")), ("nanquantile", (X, np.array([[0.5]])), {}),
    ("quantile", (X, 1), {}), ("nanquantile", (X, np.array(True)), {}),
    ("quantile", (X, 0.5), dict(axis=(0, 0))), ("percentile", (X, [50.0]), {}),
    ("quantile", (X, 0.5), dict(weights=np.ones((2, 3), np.float32))),
    ("quantile", (X, 0.5), dict(method="inverted_cdf", weights=np.ones(2), axis=1)),
]


def _outcome(api, name, args, kwargs):
    """outcome() of name(*args, **kwargs) through `api`, only NumPy arrays converted."""
    fn = getattr(api.numpy, name)
    return outcome(api, lambda *xs: fn(*xs, **kwargs), args, arrays_only=True)


@pytest.mark.parametrize("name,args,kwargs", VALUE_CASES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(VALUE_CASES)])
def test_eager_results_match_jax(name, args, kwargs):
    got, want = _outcome(gpuarr, name, args, kwargs), _outcome(jax, name, args, kwargs)
    for g, w in same_results(got, want):
        tol = 2e-3 if g.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,args", [("median", (np.zeros((0, 3), np.float32),)),
                                       ("quantile", (np.zeros((0, 3), np.float32), 0.5))])
def test_empty_axis_is_a_type_error(name, args):
    # JAX's gather refuses the slice of an empty axis (a TypeError; the wording is lax's).
    got, want = _outcome(gpuarr, name, args, {}), _outcome(jax, name, args, {})
    same_results(got, want, message=False)


def test_jitted_calls_match_eager():
    # Under an outer jit the nested jits give the same values.
    for name, kwargs in [("var", dict(axis=1)), ("nanstd", {}), ("median", dict(axis=0)),
                         ("nanmax", dict(axis=1)), ("ptp", {})]:
        fn = getattr(gpuarr.numpy, name)
        eager = np.asarray(fn(XNAN, **kwargs))
        jitted = np.asarray(gpuarr.jit(lambda x, fn=fn, kw=kwargs: fn(x, **kw))(XNAN))
        np.testing.assert_array_equal(eager, jitted)
