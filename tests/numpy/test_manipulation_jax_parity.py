"""jnp.pad, jnp.rot90 and jnp.permute_dims against JAX itself: the same call through gpuarr
and JAX must give the same values, shape, dtype and weak type, or the same exception."""
import numpy as np
import pytest
from jax_compare import outcome, same_results

import gpuarr
import gpuarr.numpy as jnp

jax = pytest.importorskip("jax")


def check(fn, *args, jit=False):
    got = outcome(gpuarr, lambda *xs: fn(gpuarr, *xs), args, jit)
    want = outcome(jax, lambda *xs: fn(jax, *xs), args, jit)
    for g, w in same_results(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, equal_nan=True)


# ---------------------------------------------------------------- reflect / symmetric

WIDTHS = [0, 1, 2, 3, 4, 5, 7, 11, (0, 6), (9, 1), (3, 0)]


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("reflect_type", ["even", "odd"])
@pytest.mark.parametrize("width", WIDTHS, ids=str)
def test_pad_reflect_wide(n, mode, reflect_type, width):
    x = np.arange(n, dtype=np.float32) ** 2 + 1
    check(lambda m, x: m.numpy.pad(x, width, mode=mode, reflect_type=reflect_type), x)


def test_pad_reflect_odd_example():
    out = jnp.pad(jnp.array([1., 2, 4]), 5, mode="reflect", reflect_type="odd")
    np.testing.assert_array_equal(out, [-6, -5, -4, -2, 0, 1, 2, 4, 6, 7, 8, 10, 12])


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("reflect_type", ["even", "odd"])
@pytest.mark.parametrize("width", [((1, 2), (3, 1)), ((5, 7), (0, 9)), 6], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("jit", [False, True])
def test_pad_reflect_2d(mode, reflect_type, width, dtype, jit):
    x = (np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5).astype(dtype)
    check(lambda m, x: m.numpy.pad(x, width, mode=mode, reflect_type=reflect_type), x, jit=jit)


@pytest.mark.parametrize("width", [1, 0])
def test_pad_bad_reflect_type(width):
    x = np.ones((2, 3), np.float32)
    check(lambda m, x: m.numpy.pad(x, width, mode="reflect", reflect_type="foo"), x)
    check(lambda m, x: m.numpy.pad(x, width, mode="symmetric", reflect_type="foo"), x, jit=True)


# ---------------------------------------------------------------- statistics

@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint8, np.int8, np.float32])
@pytest.mark.parametrize("mode", ["mean", "median", "maximum", "minimum"])
@pytest.mark.parametrize("x", [[False, False, True], [False, True, False], [1, 2, 2, 5], [3, 4]],
                         ids=str)
@pytest.mark.parametrize("stat_length", [None, 1, 2, (1, 3), -1], ids=str)
def test_pad_stats(dtype, mode, x, stat_length):
    kw = {} if stat_length is None else {"stat_length": stat_length}
    check(lambda m, x: m.numpy.pad(x, 2, mode=mode, **kw), np.array(x, dtype))


def test_pad_mean_bool_example():
    out = jnp.pad(jnp.array([False, False, True]), 2, mode="mean")
    np.testing.assert_array_equal(out, [True, True, False, False, True, True, True])


@pytest.mark.parametrize("shape", [(0,), (3, 0)])
@pytest.mark.parametrize("jit", [False, True])
def test_pad_mean_empty_axis_is_nan(shape, jit):
    check(lambda m, x: m.numpy.pad(x, 1, mode="mean"), np.zeros(shape, np.float32), jit=jit)


@pytest.mark.parametrize("mode", ["maximum", "edge", "wrap", "reflect"])
def test_pad_empty_axis_errors(mode):
    check(lambda m, x: m.numpy.pad(x, 1, mode=mode), np.zeros((3, 0), np.float32))
    check(lambda m, x: m.numpy.pad(x, ((1, 1), (0, 0)), mode=mode), np.zeros((3, 0), np.float32))


@pytest.mark.parametrize("stat_length", [0, ((1, 1), (0, 1))], ids=str)
@pytest.mark.parametrize("jit", [False, True])
def test_pad_stat_length_zero(stat_length, jit):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(lambda m, x: m.numpy.pad(x, ((1, 2), (0, 0)), mode="mean", stat_length=stat_length), x,
          jit=jit)


# ---------------------------------------------------------------- constant

@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
@pytest.mark.parametrize("c", [7.0, 3.5, [1, 2], [[1, 2], [3, 4]], [5], [1, 2, 3]], ids=str)
@pytest.mark.parametrize("jit", [False, True])
def test_pad_constant_values_array(dtype, c, jit):
    x = np.arange(6, dtype=np.float32).reshape(2, 3).astype(dtype)
    check(lambda m, x, c: m.numpy.pad(x, ((1, 2), (3, 1)), constant_values=c), x,
          np.array(c, np.float32), jit=jit)


def test_pad_traced_pad_width():
    x = np.arange(3, dtype=np.float32)
    check(lambda m, x, p: m.numpy.pad(x, p), x, np.array([1, 2], np.int32), jit=True)


# ---------------------------------------------------------------- callable mode

def _custom(row, pad_width, iaxis, kwargs):
    row = row.at[:pad_width[0]].set(kwargs.get("before", 0) + iaxis)
    return row.at[len(row) - pad_width[1]:].set(kwargs.get("after", 0))


@pytest.mark.parametrize("jit", [False, True])
def test_pad_callable_mode(jit):
    x2 = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda m, x: m.numpy.pad(x, 2, mode=lambda v, w, i, k: v), x2, jit=jit)
    check(lambda m, x: m.numpy.pad(x, ((1, 2), (2, 0)), mode=_custom, before=-10, after=10), x2,
          jit=jit)
    check(lambda m, x: m.numpy.pad(x, 2, mode=_custom), np.array([2, 3, 4], np.int32), jit=jit)


def test_pad_callable_mode_0d():
    check(lambda m, x: m.numpy.pad(x, 2, mode=_custom), np.float32(3))


# ---------------------------------------------------------------- rot90

X3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("k", [1.5, 0.5, 2.5, 2.0, 4.0, -1, 3, True], ids=str)
@pytest.mark.parametrize("jit", [False, True])
def test_rot90_k(k, jit):
    check(lambda m, x: m.numpy.rot90(x, k), X3, jit=jit)


@pytest.mark.parametrize("axes", [(0, 0), (0, 1, 2), (0,), (2, -1)], ids=str)
def test_rot90_axes(axes):
    check(lambda m, x: m.numpy.rot90(x, 1, axes), X3)


@pytest.mark.parametrize("x", [np.arange(3.0, dtype=np.float32), np.float32(2)], ids=["1d", "0d"])
def test_rot90_low_ndim(x):
    check(lambda m, x: m.numpy.rot90(x), x)


# ---------------------------------------------------------------- permute_dims

@pytest.mark.parametrize("value", [2.0, 2])
def test_permute_dims_scalar(value):
    check(lambda m: m.numpy.permute_dims(value, ()))


@pytest.mark.parametrize("axes", [(0.0, 1, 2), (2, 0, 1), (2, 0, -1), (np.int64(2), 0, 1)], ids=str)
@pytest.mark.parametrize("jit", [False, True])
def test_permute_dims_axes(axes, jit):
    check(lambda m, x: m.numpy.permute_dims(x, axes), X3, jit=jit)
