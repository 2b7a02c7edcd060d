"""QR with column pivoting (LAPACK's geqp3): lax.linalg.qr(pivoting=True), scipy.linalg.qr and
qr_multiply with pivoting, against JAX, eagerly, under jit and vmap, with the JVP checked by
finite differences."""
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from helpers import rand
from jax._src.lax import linalg as jax_linalg

import gpuarr
import gpuarr.numpy as gnp
import gpuarr.scipy.linalg as gsl
from gpuarr.lax import linalg


@pytest.fixture(autouse=True, scope="module")
def _x64():
    """Double precision in gpuarr and JAX for this module, restored afterwards."""
    old, old_ref = gpuarr.config.enable_x64, bool(jax.config.jax_enable_x64)
    gpuarr.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    yield
    gpuarr.config.update("jax_enable_x64", old)
    jax.config.update("jax_enable_x64", old_ref)

SHAPES = [(5, 3), (3, 5), (2, 4, 4)]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _check(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if np.issubdtype(want.dtype, np.integer):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=_tol(dtype), atol=_tol(dtype))


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_qr_pivoting_matches_jax(shape, dtype, full_matrices):
    x = rand(shape, dtype)
    got = linalg.qr(gnp.asarray(x), pivoting=True, full_matrices=full_matrices)
    want = jax.lax.linalg.qr(jnp.asarray(x), pivoting=True, full_matrices=full_matrices)
    assert len(got) == 3
    for g, w in zip(got, want):
        _check(g, w, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_geqp3_matches_jax_with_fixed_columns(dtype):
    x = rand((6, 5), dtype, seed=1)
    for jpvt in (np.zeros(5, np.int32), np.array([0, 1, 0, 1, 0], np.int32)):
        got = linalg._geqp3(gnp.asarray(x), gnp.asarray(jpvt))
        want = jax_linalg.geqp3(jnp.asarray(x), jnp.asarray(jpvt))
        for g, w in zip(got, want):
            _check(g, w, dtype)


def test_rank_deficient_reconstructs_with_non_increasing_diagonal():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 2)) @ rng.standard_normal((2, 6))  # rank 2
    q, r, p = (np.asarray(v) for v in linalg.qr(gnp.asarray(x), pivoting=True))
    np.testing.assert_allclose(q @ r, x[:, p], atol=1e-12)
    np.testing.assert_allclose(q.T @ q, np.eye(7), atol=1e-12)
    d = np.abs(np.diag(r))
    assert np.all(d[1:] <= d[:-1] * (1 + 1e-12))
    assert d[2:].max() < 1e-12 * d[0]
    # Past the rank, the remaining norms are rounding noise and so is their order.
    want = np.asarray(jax.lax.linalg.qr(jnp.asarray(x), pivoting=True)[2])
    np.testing.assert_array_equal(p[:2], want[:2])


def test_empty_matrices_match_jax():
    for shape in [(0, 3), (3, 0)]:
        x = np.zeros(shape, np.float32)
        got = linalg.qr(gnp.asarray(x), pivoting=True)
        want = jax.lax.linalg.qr(jnp.asarray(x), pivoting=True)
        for g, w in zip(got, want):
            _check(g, w, np.float32)


@pytest.mark.parametrize("mode", ["full", "economic", "r"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_scipy_qr_pivoting_modes(mode, shape):
    x = rand(shape, np.float64, seed=3)
    got = gsl.qr(gnp.asarray(x), mode=mode, pivoting=True)
    want = jsl.qr(jnp.asarray(x), mode=mode, pivoting=True)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _check(g, w, np.float64)


@pytest.mark.parametrize("conjugate", [False, True])
@pytest.mark.parametrize("mode", ["left", "right"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_qr_multiply_pivoting(shape, mode, conjugate):
    a = rand(shape, np.complex128, seed=4)
    m, n = shape
    c = rand((min(m, n), 2) if mode == "left" else (2, m), np.complex128, seed=5)
    got = gsl.qr_multiply(gnp.asarray(a), gnp.asarray(c), mode=mode, pivoting=True,
                          conjugate=conjugate)
    want = jsl.qr_multiply(jnp.asarray(a), jnp.asarray(c), mode=mode, pivoting=True,
                           conjugate=conjugate)
    assert len(got) == 3
    for g, w in zip(got, want):
        _check(g, w, np.complex128)


def test_jit_and_vmap():
    x = rand((3, 5, 4), np.float32, seed=6)
    want = jax.lax.linalg.qr(jnp.asarray(x), pivoting=True)
    fn = lambda m: linalg.qr(m, pivoting=True)  # noqa: E731
    for got in (gpuarr.jit(fn)(gnp.asarray(x)), gpuarr.vmap(fn)(gnp.asarray(x)),
                gpuarr.jit(gpuarr.vmap(fn, in_axes=1))(gnp.asarray(x.swapaxes(0, 1)))):
        for g, w in zip(got, want):
            _check(g, w, np.float32)
    c = rand((3, 2, 5), np.float32, seed=7)
    got = gpuarr.vmap(lambda a, b: gsl.qr_multiply(a, b, pivoting=True))(gnp.asarray(x), gnp.asarray(c))
    want = jax.vmap(lambda a, b: jsl.qr_multiply(a, b, pivoting=True))(jnp.asarray(x), jnp.asarray(c))
    for g, w in zip(got, want):
        _check(g, w, np.float32)


def test_geqp3_is_not_differentiable():
    x = gnp.asarray(rand((4, 3), np.float64))
    jpvt = gnp.zeros(3, np.int32)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'geqp3'"):
        gpuarr.jvp(lambda m: linalg._geqp3(m, jpvt)[0], (x,), (x,))


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_qr_pivoting_jvp_by_finite_differences(shape):
    x = rand(shape, np.float64, seed=8)
    dx = rand(shape, np.float64, seed=9)
    fn = lambda m: linalg.qr(m, pivoting=True)[:2]  # noqa: E731
    _, (dq, dr) = gpuarr.jvp(fn, (gnp.asarray(x),), (gnp.asarray(dx),))
    eps = 1e-6
    (q1, r1), (q0, r0) = fn(gnp.asarray(x + eps * dx)), fn(gnp.asarray(x - eps * dx))
    np.testing.assert_allclose(np.asarray(dq), (np.asarray(q1) - np.asarray(q0)) / (2 * eps),
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(dr), (np.asarray(r1) - np.asarray(r0)) / (2 * eps),
                               atol=1e-6)
    if shape[0] >= shape[1]:  # JAX's wide-matrix rule uses the unpermuted columns for R2
        _, (jdq, jdr) = jax.jvp(lambda m: jax.lax.linalg.qr(m, pivoting=True)[:2],
                                (jnp.asarray(x),), (jnp.asarray(dx),))
        np.testing.assert_allclose(np.asarray(dq), np.asarray(jdq), atol=1e-10)
        np.testing.assert_allclose(np.asarray(dr), np.asarray(jdr), atol=1e-10)


@pytest.mark.slow
def test_grad_under_jit_matches_jax():
    x = rand((5, 3), np.float64, seed=10)
    loss = lambda qr_fn: lambda m: (qr_fn(m, pivoting=True)[1] ** 2).sum()  # noqa: E731
    got = gpuarr.jit(gpuarr.grad(loss(linalg.qr)))(gnp.asarray(x))
    want = jax.grad(loss(jax.lax.linalg.qr))(jnp.asarray(x))
    _check(got, want, np.float64)
