"""jnp reductions with axis/keepdims/where over dtypes and shapes (empty, 0-d, negative axes):
values against NumPy in float64, result dtypes against jax.numpy, NaN variants, quantiles,
average, gradients, vmap and error classes."""
import warnings

import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr
import gpuarr.numpy as jnp

RNG = np.random.default_rng(1)
AXES = [None, 0, -1, (-1, -3)]


def data(dtype, shape=(3, 4, 5)):
    if np.dtype(dtype) == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(0, 4, shape).astype(dtype)
    return RNG.normal(size=shape).astype(dtype)


def close(out, want, dtype=None):
    out = np.asarray(out)
    want = np.asarray(want)
    assert out.shape == want.shape, (out.shape, want.shape)
    if out.dtype.kind in "biu":
        np.testing.assert_array_equal(out, want)
    else:
        tol = 2e-3 if out.dtype.itemsize == 2 else 1e-5
        np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol, equal_nan=True)


PLAIN = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "ptp",
         "count_nonzero", "median", "amax", "amin"]


@pytest.mark.parametrize("name", PLAIN)
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float32])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(name, dtype, axis, keepdims):
    if dtype == np.bool_ and name in ("ptp", "median", "var", "std", "mean", "prod", "sum"):
        dtype = np.int8
    x = data(dtype)
    if name == "count_nonzero" and keepdims and axis is None:
        keepdims = False
    out = getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
    want = getattr(np, name)(x.astype(np.float64) if x.dtype.kind == "f" else x, axis=axis,
                             keepdims=keepdims)
    close(out, want)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "ptp",
                                  "count_nonzero", "median", "all", "any", "nansum", "nanmean",
                                  "nanmax", "nanvar", "nanmedian"])
def test_result_dtypes_match_jax(name):
    jax = pytest.importorskip("jax")
    for dtype in (np.bool_, np.int8, np.uint16, np.int32, np.float16, np.float32):
        x = data(dtype, (2, 3))
        try:
            want = jax.eval_shape(lambda v: getattr(jax.numpy, name)(v, axis=1), x)
        except (TypeError, ValueError) as e:
            with pytest.raises(type(e)):
                getattr(jnp, name)(x, axis=1)
            continue
        got = getattr(jnp, name)(x, axis=1)
        assert (got.dtype, got.shape) == (want.dtype, want.shape), (name, dtype)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "all", "any"])
def test_empty_and_zero_d_inputs(name):
    e = np.zeros((0, 3), np.float32)
    if name in ("max", "min"):
        with pytest.raises(ValueError, match="identity"):
            getattr(jnp, name)(e, axis=0)
        close(getattr(jnp, name)(e, axis=1), getattr(np, name)(e, axis=1))
    else:
        with np.errstate(invalid="ignore"):
            close(getattr(jnp, name)(e, axis=0), getattr(np, name)(e, axis=0))
    s = np.float32(2.5)
    close(getattr(jnp, name)(s), getattr(np, name)(s))


def test_where_initial_and_dtype_arguments():
    x = data(np.float32)
    mask = RNG.integers(0, 2, x.shape).astype(bool)
    close(jnp.sum(x, axis=1, where=mask), np.sum(x, axis=1, where=mask))
    close(jnp.max(x, axis=0, where=mask, initial=-10.0), np.max(x, axis=0, where=mask, initial=-10))
    close(jnp.mean(x, axis=(0, 1), where=mask), np.mean(x, axis=(0, 1), where=mask))
    close(jnp.var(x, axis=2, ddof=1, where=mask), np.var(x.astype(np.float64), axis=2, ddof=1,
                                                         where=mask))
    close(jnp.std(x, axis=-1, ddof=1), np.std(x.astype(np.float64), axis=-1, ddof=1))
    assert jnp.sum(np.arange(5, dtype=np.int8), dtype=np.int16).dtype == np.int16


NAN = ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanmedian"]


@pytest.mark.parametrize("name", NAN)
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_nan_variants(name, axis, keepdims):
    x = data(np.float32)
    x[0, 1, 2] = np.nan
    x[1, :, 3] = np.nan  # an all-NaN slice along axis 1
    with warnings.catch_warnings():  # NumPy warns about the all-NaN slice
        warnings.simplefilter("ignore")
        want = getattr(np, name)(x.astype(np.float64), axis=axis, keepdims=keepdims)
    close(getattr(jnp, name)(x, axis=axis, keepdims=keepdims), want)


@pytest.mark.parametrize("name", ["quantile", "nanquantile", "percentile", "nanpercentile"])
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_quantiles(name, method, axis):
    x = data(np.float32)
    x[0, 1, 2] = np.nan
    q = np.array([0.0, 0.3, 0.5, 1.0], np.float32)
    if "percentile" in name:
        q = q * 100
    out = getattr(jnp, name)(x, q, axis=axis, method=method, keepdims=True)
    assert out.dtype == np.float32
    if method == "nearest":  # JAX breaks ties toward the lower neighbour, NumPy to even
        jax = pytest.importorskip("jax")
        want = np.asarray(getattr(jax.numpy, name)(x, q, axis=axis, method=method, keepdims=True))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(np, name)(x.astype(np.float64), q.astype(np.float64), axis=axis,
                                     method=method, keepdims=True)
    close(out, want)


def test_quantile_values_against_numpy_and_errors():
    x = data(np.float64, (4, 7))
    with gpuarr.enable_x64():
        for method in ("linear", "lower", "higher", "midpoint"):
            close(jnp.quantile(x, 0.37, axis=1, method=method),
                  np.quantile(x, 0.37, axis=1, method=method))
        close(jnp.median(x, axis=0), np.median(x, axis=0))
        close(jnp.percentile(x, np.array([10.0, 90.0])), np.percentile(x, [10, 90]))
    with pytest.raises(ValueError, match="method"):
        jnp.quantile(x, 0.5, method="bogus")
    with pytest.raises(TypeError):
        jnp.quantile([1.0, 2.0], 0.5)


def test_average():
    x = data(np.float32, (3, 4))
    w = np.abs(data(np.float32, (4,))) + 0.1
    close(jnp.average(x), np.average(x))
    close(jnp.average(x, axis=1, weights=w), np.average(x.astype(np.float64), axis=1, weights=w))
    avg, total = jnp.average(x, axis=1, weights=w, returned=True)
    wavg, wtotal = np.average(x.astype(np.float64), axis=1, weights=w, returned=True)
    close(avg, wavg)
    close(total, wtotal)
    w2 = np.abs(data(np.float32, (3, 4)))
    close(jnp.average(x, weights=w2), np.average(x.astype(np.float64), weights=w2))
    with pytest.raises(ValueError, match="Axis must be specified"):
        jnp.average(x, weights=w)
    with pytest.raises(ValueError, match="Length of weights"):
        jnp.average(x, axis=0, weights=w)


def test_errors_name_the_problem():
    x = data(np.float32)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.sum(x, axis=3)
    with pytest.raises(ValueError, match="duplicate value in .axis.: "):
        jnp.mean(x, axis=(1, -2))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.sum([1, 2, 3])  # SPEC S8
    assert int(jnp.sum(jnp.array([1, 2, 3]))) == 6
    with pytest.raises(ValueError, match="empty"):
        jnp.argmax(np.zeros((0,), np.float32))


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "prod", "max", "nansum",
                                  "nanmean", "median", "ptp"])
def test_gradients(name):
    x = RNG.normal(size=(3, 4))
    check_grads_x64(lambda v: getattr(jnp, name)(v, axis=1), (x,), order=1, rtol=1e-4)


@pytest.mark.parametrize("name", ["sum", "mean", "std", "nanmax", "median", "count_nonzero"])
def test_vmap_and_jit_match_loop(name):
    x = data(np.float32, (4, 3, 5))
    fn = lambda v: getattr(jnp, name)(v, axis=-1)
    out = gpuarr.vmap(fn)(x)
    loop = np.stack([np.asarray(fn(x[i])) for i in range(4)])
    np.testing.assert_allclose(out, loop, rtol=1e-6)
    np.testing.assert_allclose(gpuarr.jit(fn)(x), fn(x), rtol=1e-6)


@pytest.mark.parametrize("fn", ["quantile", "nanquantile", "percentile", "nanpercentile"])
def test_quantiles_of_a_vector_q_under_jit(fn):
    x = np.random.default_rng(5).normal(size=(4, 7)).astype(np.float32)
    q = np.array([0.1, 0.5, 0.9]) * (100 if "percentile" in fn else 1)
    out = gpuarr.jit(lambda x: getattr(jnp, fn)(x, q, axis=1))(x)
    want = getattr(np, fn)(x.astype(np.float64), q, axis=1)
    assert out.shape == want.shape == (3, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
