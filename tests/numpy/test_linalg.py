"""Linear algebra: gpuarr.lax.linalg primitives and gpuarr.numpy.linalg against numpy.linalg.

Values, shapes and dtypes are compared with NumPy in float64 (x64 enabled) and float32;
gradients with finite differences (gpuarr.test_util.check_grads); vmap with a Python loop.
"""
import numpy as np
import pytest
from helpers import allclose, check_grads_x64, rand
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.lax import linalg as lax_linalg

TOL = {np.float32: 2e-4, np.float64: 1e-10}
DTYPES = [np.float32, np.float64]


def tol(dtype, scale=1.0):
    return TOL[np.dtype(dtype).type] * scale


def spd(shape, dtype=np.float64, seed=0):
    """Well-conditioned symmetric positive-definite matrices."""
    a = rand(shape, np.float64, seed)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def sym(shape, dtype=np.float64, seed=0):
    a = rand(shape, np.float64, seed)
    return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)


@pytest.fixture(params=DTYPES, ids=["f32", "f64"])
def dtype(request):
    if request.param == np.float64:
        with gpuarr.enable_x64():
            yield np.float64
    else:
        yield np.float32


def check_dtype(x, dtype):
    assert np.dtype(x.dtype) == np.dtype(dtype), (x.dtype, dtype)


# ---------------------------------------------------------------- lax.linalg primitives

SHAPES = [(4, 4), (2, 3, 3), (2, 1, 5, 5)]


@pytest.mark.parametrize("shape", SHAPES)
def test_cholesky(dtype, shape):
    a = spd(shape, dtype)
    L = lax_linalg.cholesky(a)
    check_dtype(L, dtype)
    allclose(L, np.linalg.cholesky(a.astype(np.float64)), tol(dtype, 10))
    U = jnp.linalg.cholesky(a, upper=True)
    allclose(U, np.swapaxes(np.linalg.cholesky(a.astype(np.float64)), -1, -2), tol(dtype, 10))


def test_cholesky_failure_gives_nan():
    a = np.stack([spd((3, 3), np.float32), -np.eye(3, dtype=np.float32)])
    L = np.asarray(lax_linalg.cholesky(a))
    assert np.isfinite(L[0]).all() and np.isnan(L[1]).all()


def test_cholesky_reads_lower_triangle_without_symmetrize():
    a = spd((4, 4), np.float32)
    junk = a + np.triu(np.full((4, 4), 7.0, np.float32), 1)
    allclose(lax_linalg.cholesky(junk, symmetrize_input=False), np.linalg.cholesky(a), tol(np.float32))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 4)])
def test_lu(dtype, shape):
    a = rand(shape, dtype)
    lu, piv, perm = lax_linalg.lu(a)
    check_dtype(lu, dtype)
    assert piv.dtype == np.int32 and perm.dtype == np.int32
    *batch, m, n = shape
    k = min(m, n)
    assert piv.shape == tuple(batch) + (k,) and perm.shape == tuple(batch) + (m,)
    lu = np.asarray(lu).astype(np.float64)
    L = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    U = np.triu(lu[..., :k, :])
    pa = np.take_along_axis(a.astype(np.float64), np.asarray(perm)[..., None], axis=-2)
    allclose(L @ U, pa, tol(dtype, 10))
    # Partial pivoting keeps |L| <= 1.
    assert np.abs(L).max() <= 1 + 1e-6


def test_lu_matches_jax():
    jax = pytest.importorskip("jax")
    a = rand((3, 5, 5), np.float32, seed=3)
    lu, piv, perm = lax_linalg.lu(a)
    jlu, jpiv, jperm = jax.lax.linalg.lu(a)
    np.testing.assert_array_equal(np.asarray(piv), np.asarray(jpiv))
    np.testing.assert_array_equal(np.asarray(perm), np.asarray(jperm))
    np.testing.assert_allclose(np.asarray(lu), np.asarray(jlu), rtol=1e-4, atol=1e-5)


TRI_CASES = [dict(left_side=ls, lower=lo, transpose_a=tr, unit_diagonal=ud)
             for ls in (False, True) for lo in (False, True) for tr in (False, True)
             for ud in (False, True)]


@pytest.mark.parametrize("kw", TRI_CASES, ids=lambda kw: "-".join(k for k, v in kw.items() if v))
def test_triangular_solve(dtype, kw):
    a = rand((2, 4, 4), dtype, 1) + 4 * np.eye(4, dtype=dtype)
    b = rand((2, 4, 3) if kw["left_side"] else (2, 3, 4), dtype, 2)
    x = lax_linalg.triangular_solve(a, b, **kw)
    check_dtype(x, dtype)
    t = np.tril(a) if kw["lower"] else np.triu(a)
    t = t.astype(np.float64)
    if kw["unit_diagonal"]:
        t[..., np.arange(4), np.arange(4)] = 1
    op = np.swapaxes(t, -1, -2) if kw["transpose_a"] else t
    if kw["left_side"]:
        want = np.linalg.solve(op, b)
    else:
        want = np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    allclose(x, want, tol(dtype, 10))


def test_triangular_solve_vector_rhs():
    a = np.tril(rand((4, 4), np.float32)) + 4 * np.eye(4, dtype=np.float32)
    b = rand((4,), np.float32)
    x = lax_linalg.triangular_solve(a, b, left_side=True, lower=True)
    assert x.shape == (4,)
    allclose(x, np.linalg.solve(a, b), tol(np.float32))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_qr(dtype, shape, full):
    a = rand(shape, dtype)
    q, r = lax_linalg.qr(a, full_matrices=full)
    wq, wr = np.linalg.qr(a, mode="complete" if full else "reduced")
    check_dtype(q, dtype)
    check_dtype(r, dtype)
    allclose(q, wq, tol(dtype, 10))
    allclose(r, wr, tol(dtype, 10))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(dtype, shape, full):
    a = rand(shape, dtype)
    u, s, vh = lax_linalg.svd(a, full_matrices=full)
    wu, ws, wvh = np.linalg.svd(a.astype(np.float64), full_matrices=full)
    for x in (u, s, vh):
        check_dtype(x, dtype)
    allclose(s, ws, tol(dtype, 10))
    assert u.shape == wu.shape and vh.shape == wvh.shape
    k = min(shape[-2:])
    recon = (np.asarray(u)[..., :, :k] * np.asarray(s)[..., None, :]) @ np.asarray(vh)[..., :k, :]
    allclose(recon, a.astype(np.float64), tol(dtype, 10))
    s_only = lax_linalg.svd(a, compute_uv=False)
    allclose(s_only, ws, tol(dtype, 10))


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
@pytest.mark.parametrize("lower", [True, False])
def test_eigh(dtype, shape, lower):
    a = sym(shape, dtype)
    v, w = lax_linalg.eigh(a, lower=lower)
    check_dtype(v, dtype)
    check_dtype(w, dtype)
    allclose(w, np.linalg.eigvalsh(a.astype(np.float64)), tol(dtype, 10))
    v = np.asarray(v).astype(np.float64)
    allclose(a.astype(np.float64) @ v, v * np.asarray(w)[..., None, :], tol(dtype, 10))


def test_eigh_reads_one_triangle_without_symmetrize():
    a = sym((4, 4), np.float32)
    junk = a + np.triu(np.full((4, 4), 5.0, np.float32), 1)
    _, w = lax_linalg.eigh(junk, lower=True, symmetrize_input=False)
    allclose(w, np.linalg.eigvalsh(a), tol(np.float32))


PRIMITIVE_FNS = {
    "cholesky": (lambda x: lax_linalg.cholesky(x), spd),
    "lu": (lambda x: lax_linalg.lu(x), rand),
    "qr": (lambda x: lax_linalg.qr(x, full_matrices=False), rand),
    "svd": (lambda x: lax_linalg.svd(x, full_matrices=False), rand),
    "eigh": (lambda x: lax_linalg.eigh(x), sym),
    "triangular_solve": (lambda x: lax_linalg.triangular_solve(
        x + 5 * jnp.eye(4), x[..., :2], left_side=True, lower=True), rand),
}


@pytest.mark.parametrize("name", list(PRIMITIVE_FNS))
def test_vmap_matches_loop(name):
    fn, make = PRIMITIVE_FNS[name]
    xs = make((3, 4, 4), np.float32, seed=5)
    batched = gpuarr.vmap(fn)(xs)
    looped = [fn(x) for x in xs]
    for i, want in enumerate(looped):
        got = gpuarr.tree_util.tree_map(lambda b: np.asarray(b)[i], batched)
        gpuarr.tree_util.tree_map(lambda g, w: np.testing.assert_allclose(
            g, np.asarray(w), rtol=1e-5, atol=1e-5), got, want)
    # vmap over a non-leading axis
    moved = gpuarr.vmap(fn, in_axes=1)(np.moveaxis(xs, 0, 1))
    gpuarr.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(
        np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5), moved, batched)


def test_vmap_triangular_solve_unbatched_operand():
    a = np.tril(rand((4, 4), np.float32)) + 4 * np.eye(4, dtype=np.float32)
    bs = rand((3, 4, 2), np.float32)
    f = lambda a, b: lax_linalg.triangular_solve(a, b, left_side=True, lower=True)
    got = gpuarr.vmap(f, in_axes=(None, 0))(a, bs)
    want = np.stack([np.asarray(f(a, b)) for b in bs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(PRIMITIVE_FNS))
def test_jit_matches_eager(name):
    fn, make = PRIMITIVE_FNS[name]
    x = make((2, 4, 4), np.float32, seed=6)
    gpuarr.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(
        np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6), gpuarr.jit(fn)(x), fn(x))


def test_jaxpr_names_the_primitives():
    text = str(gpuarr.make_jaxpr(lambda x: lax_linalg.svd(x, compute_uv=False))(rand((3, 3), np.float64)))
    assert "svd[" in text and "compute_uv=False" in text
    text = str(gpuarr.make_jaxpr(jnp.linalg.solve)(rand((3, 3), np.float64), rand((3,), np.float64)))
    assert "lu" in text and "triangular_solve" in text


# ---------------------------------------------------------------- gradients

def _spd_of(x):
    return x @ jnp.swapaxes(x, -1, -2) + 4 * jnp.eye(x.shape[-1])


GRAD_CASES = {
    "cholesky": (lambda x: lax_linalg.cholesky(_spd_of(x)), (3, 3)),
    "cholesky_batched": (lambda x: lax_linalg.cholesky(_spd_of(x)), (2, 3, 3)),
    "qr_tall": (lambda x: lax_linalg.qr(x, full_matrices=False), (4, 3)),
    "qr_wide": (lambda x: lax_linalg.qr(x, full_matrices=False), (3, 4)),
    "qr_square": (lambda x: lax_linalg.qr(x), (3, 3)),
    "qr_complete_tall": (lambda x: lax_linalg.qr(x, full_matrices=True), (4, 2)),
    "eigh_values": (lambda x: lax_linalg.eigh(x)[1], (4, 4)),
    "eigh_vectors": (lambda x: lax_linalg.eigh(x)[0] ** 2, (3, 3)),
    "svd_values": (lambda x: lax_linalg.svd(x, compute_uv=False), (4, 3)),
    "svd_vectors_tall": (lambda x: _svd_products(*lax_linalg.svd(x, full_matrices=False)), (4, 3)),
    "svd_vectors_wide": (lambda x: _svd_products(*lax_linalg.svd(x, full_matrices=False)), (3, 4)),
    "lu": (lambda x: lax_linalg.lu(x)[0], (4, 4)),
    "lu_wide": (lambda x: lax_linalg.lu(x)[0], (3, 4)),
    "lu_tall": (lambda x: lax_linalg.lu(x)[0], (4, 3)),
    "triangular_solve_a": (lambda x: lax_linalg.triangular_solve(
        x + 4 * jnp.eye(3), x[:, :2], left_side=True, lower=True), (3, 3)),
    "triangular_solve_right_t": (lambda x: lax_linalg.triangular_solve(
        x + 4 * jnp.eye(3), x[:2], left_side=False, lower=False, transpose_a=True), (3, 3)),
    "triangular_solve_unit": (lambda x: lax_linalg.triangular_solve(
        x, x[:, :1] * 2.0, left_side=True, lower=True, unit_diagonal=True), (3, 3)),
    "det": (jnp.linalg.det, (3, 3)),
    "det_batched": (jnp.linalg.det, (2, 3, 3)),
    "slogdet": (lambda x: jnp.linalg.slogdet(x)[1], (3, 3)),
    "inv": (jnp.linalg.inv, (3, 3)),
    "solve": (lambda x: jnp.linalg.solve(x + 3 * jnp.eye(3), x[:, :2] + 1.0), (3, 3)),
    "solve_vector": (lambda x: jnp.linalg.solve(x + 3 * jnp.eye(3), x[0]), (3, 3)),
    "norm_fro": (jnp.linalg.norm, (3, 4)),
    "norm_nuc": (lambda x: jnp.linalg.norm(x, "nuc"), (3, 4)),
    "norm_2": (lambda x: jnp.linalg.norm(x, 2), (3, 4)),
    "norm_vec3": (lambda x: jnp.linalg.norm(x, 3, axis=-1), (2, 4)),
    "norm_inf": (lambda x: jnp.linalg.norm(x, np.inf, axis=0), (2, 4)),
    "pinv": (jnp.linalg.pinv, (4, 3)),
}


def _svd_products(u, s, vh):
    # Sign-invariant functions of the singular vectors.
    return (u * u, vh * vh, (u[:, :1] * s[0]) @ vh[:1])


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_grads(name):
    fn, shape = GRAD_CASES[name]
    x = rand(shape, np.float64, seed=7)
    check_grads_x64(fn, (x,), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_second_order_grad_det():
    check_grads_x64(jnp.linalg.det, (rand((3, 3), np.float64, seed=8),), order=2, atol=1e-5, rtol=1e-5)


def test_grad_det_formula():
    a = rand((3, 3), np.float32, seed=9)
    g = gpuarr.grad(jnp.linalg.det)(a)
    want = np.linalg.det(a.astype(np.float64)) * np.linalg.inv(a.astype(np.float64)).T
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4, atol=1e-5)
    check_dtype(g, np.float32)


def test_jit_grad_vmap_compose():
    xs = rand((3, 3, 3), np.float32, seed=10)
    f = gpuarr.jit(gpuarr.vmap(gpuarr.grad(lambda x: jnp.linalg.slogdet(x)[1])))
    want = np.linalg.inv(xs.astype(np.float64)).transpose(0, 2, 1)
    np.testing.assert_allclose(np.asarray(f(xs)), want, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- gpuarr.numpy.linalg


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 2, 2, 2)])
def test_det_slogdet_inv(dtype, shape):
    a = rand(shape, dtype)
    a64 = a.astype(np.float64)
    for got in (jnp.linalg.det(a), jnp.linalg.inv(a), *jnp.linalg.slogdet(a)):
        check_dtype(got, dtype)
    allclose(jnp.linalg.det(a), np.linalg.det(a64), tol(dtype, 20))
    sign, logdet = jnp.linalg.slogdet(a)
    wsign, wlogdet = np.linalg.slogdet(a64)
    allclose(sign, wsign, tol(dtype))
    allclose(logdet, wlogdet, tol(dtype, 20))
    allclose(jnp.linalg.inv(a), np.linalg.inv(a64), tol(dtype, 50))


def test_det_singular():
    a = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    assert float(jnp.linalg.det(a)) == 0.0
    sign, logdet = jnp.linalg.slogdet(a)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    z = np.zeros((3, 3), np.float32)
    assert float(jnp.linalg.det(z)) == 0.0


@pytest.mark.parametrize("ashape,bshape", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)),
                                           ((2, 3, 3), (2, 3, 4)), ((2, 3, 3), (3, 1)),
                                           ((1, 3, 3), (4, 3, 2))])
def test_solve(dtype, ashape, bshape):
    a = rand(ashape, dtype, 1) + 3 * np.eye(ashape[-1], dtype=dtype)
    b = rand(bshape, dtype, 2)
    x = jnp.linalg.solve(a, b)
    check_dtype(x, dtype)
    if len(bshape) == 1:
        want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    else:
        want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    allclose(x, want, tol(dtype, 20))


def test_solve_promotes_integers():
    a = np.array([[2, 1], [1, 3]])
    b = np.array([1, 2])
    x = jnp.linalg.solve(a, b)
    check_dtype(x, np.float32)
    allclose(x, np.linalg.solve(a, b), tol(np.float32))


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_jnp_qr_modes(dtype, mode):
    a = rand((2, 5, 3), dtype)
    out = jnp.linalg.qr(a, mode=mode)
    want = np.linalg.qr(a, mode=mode)
    if mode == "r":
        allclose(out, want, tol(dtype, 10))
    else:
        assert type(out).__name__ == "QRResult"
        allclose(out.Q, want.Q, tol(dtype, 10))
        allclose(out.R, want.R, tol(dtype, 10))


def test_jnp_svd_eigh_results():
    a = rand((4, 3), np.float32)
    res = jnp.linalg.svd(a, full_matrices=False)
    assert type(res).__name__ == "SVDResult"
    allclose(res.S, np.linalg.svd(a, compute_uv=False), tol(np.float32))
    allclose(jnp.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False), tol(np.float32))
    s = sym((4, 4), np.float32)
    for uplo in (None, "L", "U"):
        res = jnp.linalg.eigh(s, UPLO=uplo)
        assert type(res).__name__ == "EighResult"
        allclose(res.eigenvalues, np.linalg.eigvalsh(s), tol(np.float32))
    junk = s + np.triu(np.ones((4, 4), np.float32), 1)
    allclose(jnp.linalg.eigvalsh(junk, UPLO="L", symmetrize_input=False), np.linalg.eigvalsh(junk, UPLO="L"),
             tol(np.float32))
    allclose(jnp.linalg.eigvalsh(junk, UPLO="U", symmetrize_input=False), np.linalg.eigvalsh(junk, UPLO="U"),
             tol(np.float32))


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4)])
def test_pinv(dtype, shape):
    a = rand(shape, dtype)
    p = jnp.linalg.pinv(a)
    check_dtype(p, dtype)
    allclose(p, np.linalg.pinv(a.astype(np.float64)), tol(dtype, 50))


def test_pinv_rank_deficient():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], np.float32)
    allclose(jnp.linalg.pinv(a), np.linalg.pinv(a), tol(np.float32, 10))


@pytest.mark.parametrize("bshape", [(5,), (5, 2)])
def test_lstsq(dtype, bshape):
    a, b = rand((5, 3), dtype, 1), rand(bshape, dtype, 2)
    x, resid, rank, s = jnp.linalg.lstsq(a, b)
    wx, wresid, wrank, ws = np.linalg.lstsq(a.astype(np.float64), b.astype(np.float64))
    allclose(x, wx, tol(dtype, 20))
    allclose(resid, wresid, tol(dtype, 20))
    assert int(rank) == wrank
    allclose(s, ws, tol(dtype, 10))


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 3, 5, 8])
def test_matrix_power(dtype, n):
    a = (rand((2, 3, 3), dtype) / 2 + np.eye(3)).astype(dtype)
    got = jnp.linalg.matrix_power(a, n)
    check_dtype(got, dtype)
    allclose(got, np.linalg.matrix_power(a.astype(np.float64), n), tol(dtype, 100))


def test_matrix_power_integer():
    a = np.array([[1, 1], [1, 0]], np.int32)
    got = jnp.linalg.matrix_power(a, 10)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.linalg.matrix_power(a, 10))


def test_matrix_rank():
    a = rand((4, 3), np.float32)
    deficient = np.concatenate([a[:, :2], a[:, :1] + a[:, 1:2]], axis=1)
    assert int(jnp.linalg.matrix_rank(a)) == 3
    assert int(jnp.linalg.matrix_rank(deficient)) == 2
    stack = np.stack([a, deficient])
    np.testing.assert_array_equal(np.asarray(jnp.linalg.matrix_rank(stack)), [3, 2])
    assert int(jnp.linalg.matrix_rank(np.zeros(3, np.float32))) == 0
    assert int(jnp.linalg.matrix_rank(np.ones(3, np.float32))) == 1


VECTOR_ORDS = [None, 1, 2, 3, 0.5, np.inf, -np.inf, 0, -1]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("axis", [0, -1, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norm(dtype, ord, axis, keepdims):
    x = rand((3, 4), dtype)
    got = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    check_dtype(got, dtype)
    allclose(got, np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims), tol(dtype, 10))


@pytest.mark.parametrize("ord", MATRIX_ORDS)
@pytest.mark.parametrize("axis", [(0, 1), (1, 0), (-1, -3), None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm(dtype, ord, axis, keepdims):
    x = rand((3, 2, 4) if axis is not None else (3, 4), dtype)
    got = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    check_dtype(got, dtype)
    allclose(got, np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims), tol(dtype, 10))


def test_norm_defaults_and_aliases():
    x = rand((2, 3, 4), np.float32)
    allclose(jnp.linalg.norm(x), np.linalg.norm(x), tol(np.float32))
    allclose(jnp.linalg.norm(x, keepdims=True), np.linalg.norm(x, keepdims=True), tol(np.float32))
    allclose(jnp.linalg.vector_norm(x), np.linalg.norm(x.ravel()), tol(np.float32))
    allclose(jnp.linalg.vector_norm(x, axis=1, ord=1), np.linalg.norm(x, 1, axis=1), tol(np.float32))
    allclose(jnp.linalg.matrix_norm(x), np.linalg.norm(x, axis=(-2, -1)), tol(np.float32))
    allclose(jnp.linalg.norm(np.arange(4)), np.linalg.norm(np.arange(4)), tol(np.float32))
    check_dtype(jnp.linalg.norm(np.arange(4)), np.float32)


# ---------------------------------------------------------------- error cases


@pytest.mark.parametrize("fn", [jnp.linalg.inv, jnp.linalg.det, jnp.linalg.slogdet,
                                lambda x: lax_linalg.cholesky(x, symmetrize_input=False),
                                lambda x: lax_linalg.eigh(x, symmetrize_input=False)])
def test_non_square_raises_value_error(fn):
    with pytest.raises(ValueError, match=r"2, 3"):
        fn(np.ones((2, 3), np.float32))


@pytest.mark.parametrize("fn", [jnp.linalg.cholesky, jnp.linalg.eigh, jnp.linalg.eigvalsh,
                                lax_linalg.cholesky, lax_linalg.eigh])
def test_non_square_symmetrized_raises_type_error(fn):
    # As in JAX, where symmetrizing (x + x^H) fails first.
    with pytest.raises(TypeError, match=r"\(2, 3\), \(3, 2\)"):
        fn(np.ones((2, 3), np.float32))


def test_error_messages():
    with pytest.raises(ValueError, match=r"Argument to inv must have shape \[..., n, n\], got"):
        jnp.linalg.inv(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="must have rank at least 2"):
        lax_linalg.cholesky(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="does not accept dtype int32"):
        lax_linalg.qr(np.ones((3, 3), np.int32))
    with pytest.raises(ValueError, match="Incompatible shapes for arguments to triangular_solve"):
        lax_linalg.triangular_solve(np.eye(3, dtype=np.float32), np.ones((4, 2), np.float32),
                                    left_side=True)
    with pytest.raises(ValueError, match="Invalid shapes for solve"):
        jnp.linalg.solve(np.eye(3, dtype=np.float32)[None].repeat(2, 0), np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="left hand array must be at least two dimensional"):
        jnp.linalg.solve(np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="The arguments to solve must have shapes"):
        jnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones((4,), np.float32))
    with pytest.raises(ValueError, match="Invalid order 'bad' for matrix norm"):
        jnp.linalg.norm(np.ones((2, 2), np.float32), "bad")
    with pytest.raises(ValueError, match="Invalid order 'fro' for vector norm"):
        jnp.linalg.norm(np.ones(2, np.float32), "fro")
    with pytest.raises(ValueError, match="Improper number of axes for norm"):
        jnp.linalg.norm(np.ones((2, 2, 2), np.float32), axis=(0, 1, 2))
    with pytest.raises(TypeError, match="exponent must be an integer"):
        jnp.linalg.matrix_power(np.eye(2, dtype=np.float32), 1.5)
    with pytest.raises(TypeError, match="Last 2 dimensions of the array must be square"):
        jnp.linalg.matrix_power(np.ones((2, 3), np.float32), 2)
    with pytest.raises(ValueError, match="Unsupported QR decomposition mode 'bogus'"):
        jnp.linalg.qr(np.ones((2, 2), np.float32), mode="bogus")
    with pytest.raises(ValueError, match="UPLO must be one of None, 'L', or 'U'"):
        jnp.linalg.eigh(np.eye(2, dtype=np.float32), UPLO="X")
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.linalg.det([[1.0, 2.0], [3.0, 4.0]])


class _GpuarrModules:
    linalg = jnp.linalg
    lax = lax
    cross = staticmethod(jnp.cross)
    tensordot = staticmethod(jnp.tensordot)


def test_errors_match_jax_classes():
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    jjnp.lax = jax.lax
    cases = [lambda m: m.linalg.inv(np.ones((2, 3), np.float32)),
             lambda m: m.linalg.cholesky(np.ones((2, 3), np.float32)),
             lambda m: m.linalg.eigh(np.ones((2, 3), np.float32)),
             lambda m: m.linalg.det(np.ones((2, 3), np.float32)),
             lambda m: m.linalg.qr(np.ones(3, np.float32)),
             lambda m: m.linalg.svd(np.ones(3, np.float32)),
             lambda m: m.cross(np.ones(4), np.ones(4)),
             lambda m: m.tensordot(np.ones((2, 3)), np.ones((2, 2)), axes=([1], [0])),
             lambda m: m.lax.linalg.triangular_solve(np.eye(3, dtype=np.float32),
                                                     np.ones((4, 2), np.float32), left_side=True),
             lambda m: m.lax.linalg.qr(np.ones((3, 3), np.int32)),
             lambda m: m.linalg.solve(np.ones(3, np.float32), np.ones(3, np.float32)),
             lambda m: m.linalg.norm(np.ones((2, 2), np.float32), "bad"),
             lambda m: m.linalg.matrix_power(np.ones((2, 3), np.float32), 2),
             lambda m: m.tensordot(np.ones((2, 3)), np.ones((3, 2)), axes=3)]
    del jax
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(jjnp)
        with pytest.raises(Exception) as ours:
            case(_GpuarrModules)
        assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)


# ---------------------------------------------------------------- tensordot, kron, trace, cross


@pytest.mark.parametrize("axes,bshape", [(0, (3, 4, 2)), (1, (4, 2)), (2, (3, 4, 2)),
                                         (((1, 2), (0, 1)), (3, 4, 2)), (([2], [1]), (2, 4, 2)),
                                         ((2, 1), (3, 4, 2)), (((0,), (2,)), (3, 4, 2)),
                                         ((-1, 0), (4, 5))])
def test_tensordot(dtype, axes, bshape):
    a, b = rand((2, 3, 4), dtype, 1), rand(bshape, dtype, 2)
    got = jnp.tensordot(a, b, axes=axes)
    check_dtype(got, dtype)
    allclose(got, np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=axes), tol(dtype, 10))


def test_tensordot_errors():
    with pytest.raises(TypeError, match="exceeds input ranks"):
        jnp.tensordot(np.ones((2, 3)), np.ones((3, 2)), axes=3)
    with pytest.raises(TypeError, match="equal length"):
        jnp.tensordot(np.ones((2, 3)), np.ones((3, 2)), axes=([0, 1], [0]))
    with pytest.raises(TypeError, match="same shape"):
        jnp.tensordot(np.ones((2, 3)), np.ones((2, 2)), axes=([1], [0]))


@pytest.mark.parametrize("ashape,bshape", [((2, 3), (4, 5)), ((3,), (2,)), ((2, 2), (3,)),
                                           ((2,), (2, 3, 1)), ((), (3,))])
def test_kron(ashape, bshape):
    a, b = rand(ashape, np.float32, 1), rand(bshape, np.float32, 2)
    got = jnp.kron(a, b)
    check_dtype(got, np.float32)
    allclose(got, np.kron(a, b), tol(np.float32))
    ia, ib = np.arange(6).reshape(2, 3).astype(np.int32), np.arange(4).reshape(2, 2).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.kron(ia, ib)), np.kron(ia, ib))


@pytest.mark.parametrize("offset", [0, 1, -1, 3, -5])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (0, 2), (-1, -2)])
def test_trace(offset, axes):
    x = rand((3, 4, 5), np.float32)
    got = jnp.trace(x, offset=offset, axis1=axes[0], axis2=axes[1])
    allclose(got, np.trace(x, offset=offset, axis1=axes[0], axis2=axes[1]), tol(np.float32))


def test_trace_dtypes():
    i8 = np.arange(9, dtype=np.int8).reshape(3, 3)
    assert jnp.trace(i8).dtype == np.int32
    assert int(jnp.trace(i8)) == np.trace(i8)
    assert jnp.trace(np.eye(3, dtype=bool)).dtype == np.int32
    assert jnp.trace(np.eye(3, dtype=np.float32), dtype=np.int32).dtype == np.int32
    with pytest.raises(ValueError, match="axis 1 is out of bounds for array of dimension 1"):
        jnp.trace(np.ones(3))


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors are deprecated")
@pytest.mark.parametrize("ashape,bshape,kw", [
    ((3,), (3,), {}), ((4, 3), (4, 3), {}), ((2,), (2,), {}), ((4, 2), (4, 3), {}),
    ((3, 4), (3, 4), dict(axis=0)), ((3, 4), (4, 3), dict(axisa=0, axisb=1, axisc=0)),
    ((2, 1, 3), (5, 3), {}),
])
def test_cross(ashape, bshape, kw):
    a, b = rand(ashape, np.float32, 1), rand(bshape, np.float32, 2)
    got = jnp.cross(a, b, **kw)
    allclose(got, np.cross(a, b, **kw), tol(np.float32))


def test_cross_errors_and_grad():
    with pytest.raises(ValueError, match="Dimension must be either 2 or 3"):
        jnp.cross(np.ones(4), np.ones(4))
    check_grads_x64(lambda a, b: jnp.cross(a, b),
                (rand((2, 3), np.float64, seed=1), rand((2, 3), np.float64, seed=2)), order=1)
    check_grads_x64(lambda a, b: jnp.kron(a, b),
                (rand((2, 2), np.float64, seed=1), rand((3,), np.float64, seed=2)), order=1)
    check_grads_x64(lambda a: jnp.trace(a, offset=1), (rand((3, 4), np.float64, seed=1),), order=1)
    check_grads_x64(lambda a, b: jnp.tensordot(a, b),
                (rand((2, 3, 4), np.float64, seed=1), rand((3, 4), np.float64, seed=2)), order=1)


def test_vecdot():
    a, b = rand((2, 1, 3), np.float32, 1), rand((4, 3), np.float32, 2)
    allclose(jnp.vecdot(a, b), np.sum(a * b, axis=-1), tol(np.float32))
    allclose(jnp.linalg.vecdot(a, b), np.sum(a * b, axis=-1), tol(np.float32))
    c, d = rand((3, 2), np.float32, 3), rand((3, 1), np.float32, 4)
    allclose(jnp.vecdot(c, d, axis=0), np.sum(c * d, axis=0), tol(np.float32))


def test_lax_linalg_reachable_from_lax():
    assert lax.linalg.cholesky is lax_linalg.cholesky
    assert jnp.linalg.norm is not None


# ---------------------------------------------------------------- array-API names in jnp.linalg


@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 2, 5])
def test_linalg_diagonal_and_trace(offset):
    x = rand((2, 3, 4), np.float32)
    want = np.diagonal(x, offset=offset, axis1=-2, axis2=-1)
    got = jnp.linalg.diagonal(x, offset=offset)
    assert got.shape == want.shape
    allclose(got, want, tol(np.float32))
    allclose(jnp.linalg.trace(x, offset=offset), np.trace(x, offset=offset, axis1=-2, axis2=-1),
             tol(np.float32))


def test_linalg_cross_outer():
    a, b = rand((4, 3), np.float32, 1), rand((4, 3), np.float32, 2)
    allclose(jnp.linalg.cross(a, b), np.cross(a, b), tol(np.float32))
    allclose(jnp.linalg.cross(a.T, b.T, axis=0), np.cross(a.T, b.T, axis=0), tol(np.float32))
    with pytest.raises(ValueError, match="3-dimensional vectors"):
        jnp.linalg.cross(np.ones(2), np.ones(2))
    allclose(jnp.linalg.outer(a[0], b[1]), np.outer(a[0], b[1]), tol(np.float32))
    with pytest.raises(ValueError, match="one-dimensional"):
        jnp.linalg.outer(a, b)


@pytest.mark.parametrize("shapes", [[(2, 3), (3, 4)], [(3,), (3, 4), (4, 5), (5,)],
                                    [(2, 3), (3, 4), (4, 5), (5, 2)], [(3,), (3,)]])
def test_multi_dot(shapes):
    arrs = [rand(s, np.float32, i) for i, s in enumerate(shapes)]
    got = jnp.linalg.multi_dot(arrs)
    want = np.linalg.multi_dot([a.astype(np.float64) for a in arrs])
    allclose(got, want, tol(np.float32, 10))


def test_multi_dot_errors():
    with pytest.raises(ValueError, match="at least two arrays"):
        jnp.linalg.multi_dot([np.ones((2, 2))])
    with pytest.raises(ValueError, match="must match first dimension"):
        jnp.linalg.multi_dot([np.ones((2, 3)), np.ones((2, 2))])
    with pytest.raises(ValueError, match="two-dimensional"):
        jnp.linalg.multi_dot([np.ones((2, 3)), np.ones((3, 2, 2)), np.ones(2)])


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"])
def test_cond(dtype, p):
    x = rand((2, 4, 4), dtype)
    got = jnp.linalg.cond(x, p)
    check_dtype(got, dtype)
    allclose(got, np.linalg.cond(x.astype(np.float64), p), tol(dtype, 100))


def test_cond_singular_and_errors():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    assert float(jnp.linalg.cond(singular, 1)) == np.inf
    with pytest.raises(ValueError, match="at least 2D"):
        jnp.linalg.cond(np.ones(3))
    with pytest.raises(ValueError, match="must be square"):
        jnp.linalg.cond(np.ones((2, 3)), 1)


# ---------------------------------------------------------------- random shapes


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 5), st.integers(1, 3),
       st.integers(0, 1000))
def test_random_solve_det_inv(batch, n, k, seed):
    batch = tuple(batch)
    a = rand(batch + (n, n), np.float64, seed) + 2 * n * np.eye(n)
    b = rand(batch + (n, k), np.float64, seed + 1)
    with gpuarr.enable_x64():
        allclose(jnp.linalg.solve(a, b), np.linalg.solve(a, b), tol(np.float64, 1e3))
        allclose(jnp.linalg.det(a), np.linalg.det(a), tol(np.float64, 1e3))
        allclose(jnp.linalg.inv(a), np.linalg.inv(a), tol(np.float64, 1e3))
        lu, _, perm = lax_linalg.lu(a)
        L = np.tril(np.asarray(lu), -1) + np.eye(n)
        pa = np.take_along_axis(a, np.asarray(perm)[..., None], axis=-2)
        allclose(L @ np.triu(np.asarray(lu)), pa, tol(np.float64, 1e3))


def test_tensorinv_against_numpy():
    a = np.random.default_rng(0).normal(size=(4, 6, 8, 3))
    with gpuarr.enable_x64():
        got = jnp.linalg.tensorinv(a, ind=2)
        assert got.shape == (8, 3, 4, 6) and got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), np.linalg.tensorinv(a, ind=2), rtol=1e-9)
    with pytest.raises(ValueError, match="product of the first"):
        jnp.linalg.tensorinv(np.ones((2, 3, 4)), ind=1)
    with pytest.raises(ValueError, match="positive integer"):
        jnp.linalg.tensorinv(a, ind=0)


@pytest.mark.parametrize("axes", [None, (0,)])
def test_tensorsolve_against_numpy(axes):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 2, 3) if axes else (2, 3, 6))
    b = rng.normal(size=(2, 3))
    with gpuarr.enable_x64():
        got = jnp.linalg.tensorsolve(a, b, axes=axes)
        assert got.shape == (6,) and got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), np.linalg.tensorsolve(a, b, axes=axes),
                                   rtol=1e-9)
    with pytest.raises(ValueError, match="leading dimensions"):
        jnp.linalg.tensorsolve(np.ones((3, 6)), np.ones((2,)))


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 5, 5)])
def test_slogdet_by_qr(shape):
    """method='qr': |det| from R's diagonal, the sign from it and the Householder reflections
    (geqrf's nonzero taus), as JAX computes it; the same values and gradient as 'lu'."""
    x = rand(shape, np.float32, seed=4)
    sign, logdet = jnp.linalg.slogdet(x, method="qr")
    want_sign, want_logdet = np.linalg.slogdet(x.astype(np.float64))
    assert sign.dtype == logdet.dtype == np.float32 and sign.shape == logdet.shape == shape[:-2]
    np.testing.assert_array_equal(sign, want_sign)
    np.testing.assert_allclose(logdet, want_logdet, rtol=1e-5, atol=1e-5)
    loss = lambda m, method: jnp.sum(jnp.linalg.slogdet(m, method=method)[1])  # noqa: E731
    np.testing.assert_allclose(gpuarr.grad(loss)(x, "qr"), gpuarr.grad(loss)(x, "lu"), rtol=1e-5)
    jitted = gpuarr.jit(lambda m: jnp.linalg.slogdet(m, method="qr"))(x)
    np.testing.assert_allclose(jitted[1], logdet, rtol=1e-6)
    singular = np.zeros((3, 3), np.float32)
    singular[0, 0] = 2
    s, ld = jnp.linalg.slogdet(singular, method="qr")
    assert float(s) == 0 and float(ld) == -np.inf


def test_geqrf_packs_r_and_reflectors_as_lapack():
    x = rand((2, 5, 3), np.float64, seed=6)
    with gpuarr.enable_x64():
        packed, taus = lax_linalg._geqrf(x)
        q = lax_linalg.householder_product(packed, taus)
    r = np.triu(np.asarray(packed)[..., :3, :])
    assert packed.shape == (2, 5, 3) and taus.shape == (2, 3)
    np.testing.assert_allclose(np.asarray(q) @ r, x, atol=1e-12)
    np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(x)[1]), atol=1e-12)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'geqrf'"):
        gpuarr.jvp(lambda m: lax_linalg._geqrf(m)[0], (x,), (x,))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_norm_orders_match_jax_for_real_and_complex(dtype):
    import jax.numpy as jjnp
    rng = np.random.default_rng(7)
    v = rng.normal(size=5).astype(dtype)
    m = rng.normal(size=(3, 4)).astype(dtype)
    if dtype == np.complex64:
        v = v + 1j * rng.normal(size=5).astype(np.float32)
        m = m + 1j * rng.normal(size=(3, 4)).astype(np.float32)
    cases = [(v, {}), (v, {"ord": 2}), (v, {"ord": 1}), (v, {"ord": np.inf}), (v, {"ord": 0}),
             (v, {"ord": 3}), (v, {"ord": -np.inf}), (m, {}), (m, {"ord": "fro"}),
             (m, {"ord": "nuc"}), (m, {"ord": 2}), (m, {"ord": 1}), (m, {"ord": np.inf}),
             (m, {"axis": 1}), (m, {"axis": 0, "ord": 3})]
    for x, kw in cases:
        got, want = jnp.linalg.norm(x, **kw), jjnp.linalg.norm(x, **kw)
        assert got.dtype == want.dtype == np.float32, kw
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, err_msg=str(kw))
