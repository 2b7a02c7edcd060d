"""Reductions checked call by call against JAX: quantile dtypes, `initial`, `out`, `where`, ddof."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

X = [[1.0, 2.0, np.nan, 0.5], [4.0, 5.0, 6.0, -1.5], [7.5, -2.0, 3.25, 9.0]]
INT_MASK = [[1, 0, 1, 1], [1, 1, 0, 1], [0, 1, 1, 1]]


def _run(np_mod, call):
    try:
        return call(np_mod), None
    except Exception as e:  # the error is what is compared
        return None, e


def check(call, rtol=1e-6):
    """call(jax-like module, numpy-like module) gives the same result or error in both."""
    got, got_err = _run((gpuarr, gnp), lambda m: call(*m))
    want, want_err = _run((jax, jnp), lambda m: call(*m))
    if want_err is not None:
        assert got_err is not None, f"expected {type(want_err).__name__}: {want_err}, got {got}"
        assert type(got_err).__name__ == type(want_err).__name__
        assert str(got_err).split("\n")[0] == str(want_err).split("\n")[0]
        return
    assert got_err is None, f"JAX returned {want}, gpuarr raised {got_err!r}"
    assert got.shape == want.shape
    assert np.dtype(got.dtype) == np.dtype(want.dtype)
    assert got.weak_type == want.weak_type
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=rtol, equal_nan=True)


# ---------------------------------------------------------------- quantile dtypes

QUANTILES = ["quantile", "nanquantile", "percentile", "nanpercentile"]
DATA = [1.0, 2.0, 3.0, 4.5, 7.1, 2.5]


@pytest.mark.parametrize("name", QUANTILES)
@pytest.mark.parametrize("a_dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("q", ["f32", "f32vec", "py"])
@pytest.mark.parametrize("method", ["linear", "lower", "midpoint", "nearest"])
def test_half_data_keeps_its_dtype(name, a_dt, q, method):
    qv = {"f32": (0.3, "float32"), "f32vec": ([0.1, 0.55, 0.9], "float32"), "py": (0.3, None)}[q]
    if name.endswith("percentile"):
        qv = (np.multiply(qv[0], 100).tolist(), qv[1])

    def call(_, m):
        qq = qv[0] if qv[1] is None else m.array(qv[0], qv[1])
        return getattr(m, name)(m.array(DATA, a_dt), qq, method=method)
    check(call, rtol=1e-2)


@pytest.mark.parametrize("name", QUANTILES)
@pytest.mark.parametrize("a_dt", ["float32", "int32"])
def test_half_q_sets_the_precision(name, a_dt):
    q = [0.3, 0.7] if name.endswith("quantile") else [30.0, 70.0]
    # Positions in float16 are coarser than float32's: the results show it.
    check(lambda _, m: getattr(m, name)(m.array(DATA, a_dt), m.array(q, "float16")), rtol=2e-3)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("q", [[0, 1], 1, True, [True]])
@pytest.mark.parametrize("method", ["linear", "inverted_cdf"])
def test_integer_or_bool_q_raises(name, q, method):
    check(lambda _, m: getattr(m, name)(m.array(X), m.asarray(q), method=method))


@pytest.mark.parametrize("name", QUANTILES)
def test_inverted_cdf_needs_q_of_the_data_dtype(name):
    check(lambda _, m: getattr(m, name)(m.array(DATA, "float16"), m.array(0.5, "float32"),
                                        method="inverted_cdf"))
    check(lambda _, m: getattr(m, name)(m.array(DATA, "float32"), 0.5, method="inverted_cdf"))


def test_quantile_half_q_under_jit():
    check(lambda j, m: j.jit(lambda a, q: m.nanquantile(a, q, axis=1))(
        m.array(X, "float16"), m.array([0.25, 0.5], "float32")), rtol=1e-2)


# ---------------------------------------------------------------- initial

INITIAL_FNS = ["sum", "prod", "max", "min", "nansum", "nanprod", "nanmax", "nanmin"]


@pytest.mark.parametrize("name", INITIAL_FNS)
@pytest.mark.parametrize("axis", [None, 1])
def test_traced_initial(name, axis):
    check(lambda j, m: j.jit(lambda x, y: getattr(m, name)(x, axis=axis, initial=y))(
        m.array(X), m.array(0.5, "float32")))


@pytest.mark.parametrize("name", INITIAL_FNS)
@pytest.mark.parametrize("jit", [False, True])
def test_non_scalar_initial_raises(name, jit):
    def call(j, m):
        f = lambda x, y: getattr(m, name)(x, initial=y)  # noqa: E731
        return (j.jit(f) if jit else f)(m.array(X), m.array([0.5, 1.0], "float32"))
    check(call)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_initial_on_bools_and_ints(name):
    check(lambda j, m: j.jit(lambda x, y: getattr(m, name)(x, initial=y))(
        m.array([[True, False], [False, False]]), True))
    check(lambda j, m: j.jit(lambda x, y: getattr(m, name)(x, axis=0, initial=y))(
        m.array([[1, 5], [-3, 2]], "int8"), m.array(2, "int8")))


# ---------------------------------------------------------------- out

OUT_FNS = ["sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std",
           "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "ptp",
           "argmax", "argmin", "median", "nanmedian"]


@pytest.mark.parametrize("name", OUT_FNS)
def test_out_raises(name):
    check(lambda _, m: getattr(m, name)(m.array(X), out=m.array(X)))


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_overwrite_input_raises(name):
    check(lambda _, m: getattr(m, name)(m.array(X), overwrite_input=True))


# ---------------------------------------------------------------- where

WHERE_FNS = ["sum", "prod", "max", "min", "all", "any", "mean", "var", "std", "nansum", "nanprod",
             "nanmax", "nanmin", "nanmean", "nanvar", "nanstd"]


@pytest.mark.parametrize("name", WHERE_FNS)
@pytest.mark.parametrize("mask_dt", ["int32", "float32"])
def test_non_bool_where_raises(name, mask_dt):
    check(lambda _, m: getattr(m, name)(m.array(X), where=m.array(INT_MASK, mask_dt)))


@pytest.mark.parametrize("name", ["sum", "max", "nanmin", "nanprod"])
def test_non_bool_where_raises_with_initial(name):
    check(lambda _, m: getattr(m, name)(m.array(X), where=m.array(INT_MASK), initial=0.0))


@pytest.mark.parametrize("name", ["sum", "max", "mean", "nanvar"])
def test_bool_where_still_works(name):
    check(lambda _, m: getattr(m, name)(m.array(X), axis=1, where=m.array(INT_MASK, bool),
                                        **({"initial": -5.0} if name == "max" else {})))


# ---------------------------------------------------------------- ddof

@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("axis", [None, 1])
@pytest.mark.parametrize("ddof", [1.5, 1, 2.75])
def test_float_ddof(name, axis, ddof):
    check(lambda _, m: getattr(m, name)(m.array(X), axis=axis, ddof=ddof), rtol=1e-5)


@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
def test_traced_float_ddof(name):
    check(lambda j, m: j.jit(lambda x, d: getattr(m, name)(x, axis=1, ddof=d))(m.array(X), 1.5),
          rtol=1e-5)
