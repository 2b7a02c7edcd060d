"""jnp's identity-like functions, creation dtypes, shaped objects, nonzero's fill values and
unsupported `out=` arguments, against JAX: values, dtypes, weak types, result types, and
exception classes and messages."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gjnp

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

X = np.array([1.5, -2.0], np.float32)
INTS = np.array([[0, 1], [2, 0]], np.int32)

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
    "nonzero_float_fill": lambda api, jnp: jnp.nonzero(INTS, size=4, fill_value=2.5),
    "nonzero_fill_per_axis": lambda api, jnp: jnp.nonzero(INTS, size=3, fill_value=(7, 8)),
    "nonzero_float32_fill_jit": lambda api, jnp: api.jit(
        lambda a: jnp.nonzero(a, size=3, fill_value=np.float32(-1)))(INTS),
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
    "nonzero_float_size": lambda api, jnp: jnp.nonzero(INTS, size=2.0),
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
def test_errors_match_jax(name):
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
