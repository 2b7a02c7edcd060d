"""jnp array creation: values, shapes and dtypes against NumPy (and jax.numpy for dtypes),
the float-to-int saturating cast of SPEC S16, gradients through diag/tril, jit and errors."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp


def same(out, want, dtype=None):
    out = np.asarray(out)
    want = np.asarray(want)
    assert out.shape == want.shape, (out.shape, want.shape)
    if dtype is not None:
        assert out.dtype == dtype, (out.dtype, dtype)
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=1e-6,
                               atol=1e-6)


def test_unsafe_cast_saturates_spec_s16():
    out = jnp.arange(254.0, 258.0).astype("uint8")
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [254, 255, 255, 255])
    out = jnp.array([-1e10, -129.0, 127.9, 1e10, np.nan], dtype=np.float32).astype(np.int8)
    np.testing.assert_array_equal(out, [-128, -128, 127, 127, 0])
    out = gpuarr.jit(lambda x: x.astype(np.int32))(jnp.array([3e9, -3e9, 1.5], np.float32))
    np.testing.assert_array_equal(out, [2**31 - 1, -(2**31), 1])


@pytest.mark.parametrize("fn,args", [
    ("logspace", (0, 3, 7)), ("logspace", (0.5, 2.0, 5, False, 2.0)),
    ("geomspace", (1, 1000, 4)), ("geomspace", (-1, -1000, 4)), ("geomspace", (2, 5, 6, False)),
    ("linspace", (0, 1, 5)), ("linspace", (-2, 3, 7, False)),
])
def test_spaces(fn, args):
    out = getattr(jnp, fn)(*args)
    same(out, getattr(np, fn)(*args).astype(np.float32), np.float32)


def test_geomspace_with_array_bounds_and_axis():
    lo, hi = np.array([1.0, 2.0]), np.array([10.0, 20.0])
    same(jnp.geomspace(lo, hi, 4, axis=1), np.geomspace(lo, hi, 4, axis=1))


@pytest.mark.parametrize("k", [-2, 0, 1, 5])
def test_triangles_and_diagonals(k):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    same(jnp.tri(3, 4, k), np.tri(3, 4, k), np.float32)
    same(jnp.tri(3, k=k, dtype=np.int32), np.tri(3, k=k), np.int32)
    same(jnp.tril(x, k), np.tril(x, k), np.float32)
    same(jnp.triu(x, k), np.triu(x, k), np.float32)
    for axes in [(0, 1), (1, 2), (2, 0), (-1, -2)]:
        same(jnp.diagonal(x, k, *axes), np.diagonal(x, k, *axes))
    v = np.arange(3, dtype=np.int32)
    same(jnp.diag(v, k), np.diag(v, k), np.int32)
    same(jnp.diag(x[0], k), np.diag(x[0], k))
    same(jnp.diagflat(x[0], k), np.diagflat(x[0], k))


def test_diag_errors():
    with pytest.raises(ValueError, match="1d or 2d"):
        jnp.diag(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="two dimensions"):
        jnp.diagonal(np.zeros(3))
    with pytest.raises(ValueError, match="must be at least 2D"):
        jnp.tril(np.zeros(3))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    for args in [(np.arange(3),), (np.arange(3), np.arange(4.0)),
                 (np.arange(2), np.arange(3), np.arange(4))]:
        outs = jnp.meshgrid(*args, indexing=indexing, sparse=sparse)
        wants = np.meshgrid(*args, indexing=indexing, sparse=sparse)
        for o, w in zip(outs, wants, strict=True):
            same(o, w)
    with pytest.raises(ValueError, match="1D"):
        jnp.meshgrid(np.zeros((2, 2)))


def test_indices_vander_fromfunction():
    same(jnp.indices((2, 3)), np.indices((2, 3)), np.int32)
    for o, w in zip(jnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        same(o, w)
    same(jnp.vander(np.arange(4.0)), np.vander(np.arange(4.0)))
    same(jnp.vander(np.arange(4), 3, True), np.vander(np.arange(4), 3, True))
    same(jnp.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=np.int32),
         np.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=np.int32))
    same(jnp.frombuffer(np.arange(3, dtype=np.float32).tobytes(), dtype=np.float32), np.arange(3))
    with pytest.raises(NotImplementedError):
        jnp.fromiter(iter([1, 2]))


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("shape", [(), (0,), 3, (2, 3)])
def test_fills_and_like(fn, shape):
    out = getattr(jnp, fn)(shape)
    assert out.dtype == np.float32 and out.shape == np.zeros(shape).shape
    like = getattr(jnp, fn + "_like")(np.zeros(shape, np.int8))
    assert like.dtype == np.int8 and like.shape == np.zeros(shape).shape
    with pytest.raises(TypeError, match="must have every element be nonnegative, got \\(2, -1\\)"):
        getattr(jnp, fn)((2, -1))


def test_creation_dtypes_match_jax():
    jax = pytest.importorskip("jax")
    cases = [("tri", (3,)), ("eye", (2, 3)), ("indices", ((2, 2),)), ("logspace", (0, 1, 3)),
             ("geomspace", (1, 2, 3)), ("arange", (5,)), ("arange", (0.0, 1.0, 0.25)),
             ("linspace", (0, 1, 3)), ("identity", (2,)), ("full", ((2,), 3)),
             ("full", ((2,), 3.0)), ("vander", (np.arange(3),))]
    for name, args in cases:
        want = jax.eval_shape(lambda: getattr(jax.numpy, name)(*args))
        got = getattr(jnp, name)(*args)
        assert (got.dtype, got.shape) == (want.dtype, want.shape), name


def test_gradients_and_jit_through_diag_and_tril():
    x = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    g = gpuarr.grad(lambda m: jnp.sum(jnp.diagonal(m, 1) ** 2) + jnp.sum(jnp.tril(m)))(x)
    want = np.tril(np.ones((3, 3))) + 2 * np.diag(np.diag(x, 1), 1)
    same(g, want)
    same(gpuarr.jit(lambda v: jnp.diag(v, -1))(np.arange(3.0)), np.diag(np.arange(3.0), -1))
    out = gpuarr.vmap(lambda m: jnp.diagonal(m))(np.arange(18.0).reshape(2, 3, 3))
    same(out, np.stack([np.diagonal(m) for m in np.arange(18.0).reshape(2, 3, 3)]))
