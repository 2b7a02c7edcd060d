"""tridiagonal, symmetric_product, cholesky_update, qdwh and SvdAlgorithm (gpuarr.lax.linalg).

Each is compared with JAX (values, shapes, dtypes, errors; float32 and float64 with x64 set
alike on both sides, complex types where JAX takes them) and with a NumPy float64 oracle
(A = Q T Q^H for tridiagonal, R'^T R' = R^T R + w w^T for cholesky_update, x = u h with
orthonormal u for qdwh), under jit, and under vmap against a Python loop. JAX defines no
derivative for the three primitives (differentiating raises its error, as here); qdwh's JVP
goes through its loops and is checked against JAX and finite differences.
"""
import inspect

import numpy as np
import pytest
from helpers import check_grads_x64, close, rand
from jax_compare import same_error

import gpuarr
from gpuarr.lax import linalg as lax_linalg

jax = pytest.importorskip("jax")
jax_linalg = jax.lax.linalg

TOL = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12}
REAL = {np.float32: np.float32, np.float64: np.float64, np.complex64: np.float32,
        np.complex128: np.float64}


def tol(dtype, scale=1.0):
    return TOL[np.dtype(dtype).type] * scale


def _x64_both(on):
    old, old_jax = gpuarr.config.enable_x64, bool(jax.config.jax_enable_x64)
    gpuarr.config.update("jax_enable_x64", on)
    jax.config.update("jax_enable_x64", on)

    def restore():
        gpuarr.config.update("jax_enable_x64", old)
        jax.config.update("jax_enable_x64", old_jax)
    return restore


def _wide(dtype):
    return np.dtype(dtype) in (np.float64, np.complex128)


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request):
    restore = _x64_both(_wide(request.param))
    yield request.param
    restore()


@pytest.fixture(params=[np.float32, np.float64, np.complex64, np.complex128],
                ids=["f32", "f64", "c64", "c128"])
def anytype(request):
    restore = _x64_both(_wide(request.param))
    yield request.param
    restore()


@pytest.fixture
def x64():
    restore = _x64_both(True)
    yield
    restore()


def jax_all(cases):
    """JAX's results for [(fn, args), ...], from one compiled program (JAX compiles each
    primitive op by op otherwise, which is slow for these)."""
    return jax.jit(lambda arglists: [fn(*a) for (fn, _), a in zip(cases, arglists)])(
        [args for _, args in cases])


def vmap_matches_loop(fn, args, in_axes, tol=1e-6):
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    out = gpuarr.vmap(fn, in_axes=in_axes)(*args)
    for i in range(size):
        one = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]
        want = fn(*one)
        for o, w in zip(gpuarr.tree_util.tree_leaves(out), gpuarr.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(o)[i], np.asarray(w), rtol=tol, atol=tol)


def test_signatures_match_jax():
    for name in ("tridiagonal", "symmetric_product", "cholesky_update", "qdwh", "svd"):
        ours = inspect.signature(getattr(lax_linalg, name)).parameters.values()
        theirs = inspect.signature(getattr(jax_linalg, name)).parameters.values()
        assert [(p.name, p.kind, p.default) for p in ours] == \
            [(p.name, p.kind, p.default) for p in theirs], name
    for name in ("tridiagonal_p", "symmetric_product_p", "cholesky_update_p"):
        assert getattr(lax_linalg, name).name == getattr(jax_linalg, name).name


# ---------------------------------------------------------------- tridiagonal


TYPES = (np.float32, np.float64, np.complex64, np.complex128)


def test_tridiagonal_matches_jax(x64):
    rng = np.random.default_rng(0)
    cases = []
    for dtype in TYPES:
        for shape in [(1, 1), (2, 2), (5, 5), (2, 3, 4, 4)]:
            for lower in (True, False):
                cases.append((dtype, lower, rand(shape, dtype, rng)))
    # Above LAPACK's block size hetrd takes its blocked path, which leaves the last diagonal
    # entry of the upper form untouched (imaginary part included).
    for lower in (True, False):
        cases.append((np.complex128, lower, rand((40, 40), np.complex128, rng)))
    wants = jax_all([(lambda a, lower=lower: jax_linalg.tridiagonal(a, lower=lower), (a,))
                     for _, lower, a in cases])
    for (dtype, lower, a), want in zip(cases, wants):
        got = lax_linalg.tridiagonal(a, lower=lower)
        assert isinstance(got, list) and len(got) == 4
        for g, w in zip(got, want):
            close(g, w, tol(dtype, 100 if a.shape[-1] == 40 else 20))
        real = REAL[np.dtype(dtype).type]
        assert got[1].dtype == real and got[2].dtype == real and got[3].dtype == dtype
        if a.shape[-1] == 40:
            assert (got[0][-1, -1].imag != 0) == (not lower)


def _householder_q(v, taus):
    """H_0 H_1 ... H_{k-1} with H_i = I - tau_i v_i v_i^H, v_i the columns of v."""
    q = np.eye(v.shape[0], dtype=v.dtype)
    for i, tau in enumerate(taus):
        h = np.eye(v.shape[0], dtype=v.dtype) - tau * np.outer(v[:, i], v[:, i].conj())
        q = q @ h
    return q


@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
def test_tridiagonal_reconstructs_input(anytype, lower):
    """A = Q T Q^H in float64, with Q rebuilt from the packed reflectors."""
    n = 6
    x = rand((n, n), anytype, np.random.default_rng(2))
    herm = (x + x.conj().T) / 2
    packed, d, e, taus = (np.asarray(o).astype(np.complex128) for o in
                          lax_linalg.tridiagonal(herm, lower=lower))
    t = np.diag(d) + np.diag(e, -1) + np.diag(e, 1)
    v = np.zeros((n, n - 1), np.complex128)
    for i in range(n - 1):
        if lower:  # v_i = (0, .., 0, 1, a[i+2:, i]), its 1 at row i + 1
            v[i + 1, i], v[i + 2:, i] = 1, packed[i + 2:, i]
        else:  # v_i = (a[:i, i+1], 1, 0, .., 0), its 1 at row i; applied last to first
            v[i, i], v[:i, i] = 1, packed[:i, i + 1]
    q = _householder_q(v, taus) if lower else _householder_q(v[:, ::-1], taus[::-1])
    close(q @ t @ q.conj().T, herm.astype(np.complex128),
          tol(np.complex128, 1e7 if np.dtype(anytype).itemsize <= 8 else 1e3))
    close(q.conj().T @ q, np.eye(n, dtype=np.complex128),
          tol(np.complex128, 1e7 if np.dtype(anytype).itemsize <= 8 else 1e3))
    # The triangle that is not read comes back as it was.
    unread = (lambda m: np.triu(m, 1)) if lower else (lambda m: np.tril(m, -1))
    np.testing.assert_array_equal(unread(packed), unread(herm).astype(np.complex128))


def test_tridiagonal_reads_one_triangle(dtype):
    rng = np.random.default_rng(3)
    a = rand((5, 5), dtype, rng)
    garbage = a + np.triu(rand((5, 5), dtype, rng), 1)
    for g, w in zip(lax_linalg.tridiagonal(a)[1:], lax_linalg.tridiagonal(garbage)[1:]):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_tridiagonal_vmap_jit_and_not_differentiable():
    a = rand((3, 4, 4), np.float32, np.random.default_rng(4))
    vmap_matches_loop(lambda a: lax_linalg.tridiagonal(a, lower=False), [a], (0,))
    vmap_matches_loop(lax_linalg.tridiagonal, [np.moveaxis(a, 0, 2)], (2,))
    for g, w in zip(gpuarr.jit(lax_linalg.tridiagonal)(a), lax_linalg.tridiagonal(a)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    same_error(lambda: gpuarr.grad(lambda a: lax_linalg.tridiagonal(a)[1].sum())(a[0]),
               lambda: jax.grad(lambda a: jax_linalg.tridiagonal(a)[1].sum())(a[0]))
    same_error(lambda: gpuarr.jvp(lambda a: lax_linalg.tridiagonal(a)[1], (a[0],), (a[0],)),
               lambda: jax.jvp(lambda a: jax_linalg.tridiagonal(a)[1], (a[0],), (a[0],)))


@pytest.mark.parametrize("a", [np.ones((3, 2), np.float32), np.zeros((0, 0), np.float32),
                               np.ones((2, 2), np.int32), np.ones((3,), np.float32)],
                         ids=["not square", "empty", "integers", "vector"])
def test_tridiagonal_errors_match_jax(a):
    same_error(lambda: lax_linalg.tridiagonal(a), lambda: jax_linalg.tridiagonal(a))


# ---------------------------------------------------------------- symmetric_product


SYMMETRIC_SHAPES = [((3, 5), (3, 3)), ((4, 1), (4, 4)), ((2, 3, 4), (2, 3, 3))]


def test_symmetric_product_matches_jax_and_numpy(x64):
    rng = np.random.default_rng(5)
    cases = []
    for dtype in (np.float32, np.float64):
        for a_shape, c_shape in SYMMETRIC_SHAPES:
            for kw in (dict(alpha=0.7, beta=-1.3), dict(alpha=0.7, beta=-1.3,
                                                         symmetrize_output=True), {}):
                cases.append((dtype, kw, rand(a_shape, dtype, rng), rand(c_shape, dtype, rng)))
    wants = jax_all([(lambda a, c, kw=kw: jax_linalg.symmetric_product(a, c, **kw), (a, c))
                     for _, kw, a, c in cases])
    for (dtype, kw, a, c), want in zip(cases, wants):
        got = lax_linalg.symmetric_product(a, c, **kw)
        close(got, want, tol(dtype, 10))
        alpha, beta = kw.get("alpha", 1.), kw.get("beta", 0.)
        oracle = alpha * a.astype(np.float64) @ np.swapaxes(a, -1, -2) + beta * c
        # The lower triangle is the valid one; symmetrize_output mirrors it over the diagonal.
        lower = np.tril(np.ones(c.shape[-2:], bool))
        np.testing.assert_allclose(np.asarray(got)[..., lower], oracle[..., lower],
                                   rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
        if kw.get("symmetrize_output"):
            np.testing.assert_array_equal(np.asarray(got), np.swapaxes(np.asarray(got), -1, -2))


def test_symmetric_product_vmap_and_jit():
    rng = np.random.default_rng(7)
    a, c = rand((3, 2, 4), np.float32, rng), rand((2, 2), np.float32, rng)
    fn = lambda a, c: lax_linalg.symmetric_product(a, c, alpha=2., beta=0.5)  # noqa: E731
    vmap_matches_loop(fn, [a, c], (0, None))
    vmap_matches_loop(fn, [np.moveaxis(a, 0, 2), np.stack([c] * 3, 1)], (2, 1))
    close(gpuarr.jit(fn)(a[0], c), fn(a[0], c), tol(np.float32))


def test_symmetric_product_not_differentiable():
    rng = np.random.default_rng(8)
    a, c = rand((3, 2), np.float32, rng), np.eye(3, dtype=np.float32)
    same_error(lambda: gpuarr.grad(lambda a: lax_linalg.symmetric_product(a, c).sum())(a),
               lambda: jax.grad(lambda a: jax_linalg.symmetric_product(a, c).sum())(a))
    same_error(lambda: gpuarr.jvp(lambda c: lax_linalg.symmetric_product(a, c), (c,), (c,)),
               lambda: jax.jvp(lambda c: jax_linalg.symmetric_product(a, c), (c,), (c,)))


@pytest.mark.parametrize("args", [
    (np.ones((3, 5), np.float32), np.ones((5, 5), np.float32)),
    (np.ones((3, 5), np.float32), np.ones((3, 4), np.float32)),
    (np.ones((3, 5), np.complex64), np.ones((3, 3), np.complex64)),
    (np.ones((3, 5), np.int32), np.ones((3, 3), np.int32)),
    (np.ones((5,), np.float32), np.ones((3, 3), np.float32)),
    (np.ones((2, 3, 5), np.float32), np.ones((3, 3), np.float32)),
], ids=["rows", "square", "complex", "integers", "vector", "batch rank"])
def test_symmetric_product_errors_match_jax(args):
    same_error(lambda: lax_linalg.symmetric_product(*args),
               lambda: jax_linalg.symmetric_product(*args))


def test_symmetric_product_mixed_dtypes_error(x64):
    a, c = np.ones((3, 2), np.float32), np.ones((3, 3), np.float64)
    same_error(lambda: lax_linalg.symmetric_product(a, c),
               lambda: jax_linalg.symmetric_product(a, c))


# ---------------------------------------------------------------- cholesky_update


def _factor(rng, n, dtype):
    x = rng.normal(size=(n, n))
    return np.linalg.cholesky(x @ x.T + n * np.eye(n)).T.astype(dtype)


def test_cholesky_update_matches_jax_and_numpy(x64):
    rng = np.random.default_rng(9)
    cases = []
    for dtype in (np.float32, np.float64):
        for n in (1, 4):
            cases.append((dtype, _factor(rng, n, dtype), rng.normal(size=n).astype(dtype)))
    r, w = _factor(rng, 4, np.float64), rng.normal(size=4)
    w[[0, 2]] = 0  # drotg's y == 0 branch: no rotation at those rows
    cases.append((np.float64, r, w))
    # JAX rotates whole rows, so entries below the diagonal take part as well.
    cases.append((np.float64, rand((4, 4), np.float64, rng) + 4 * np.eye(4), w))
    wants = jax_all([(jax_linalg.cholesky_update, (r, w)) for _, r, w in cases])
    for (dtype, r, w), want in zip(cases, wants):
        got = lax_linalg.cholesky_update(r, w)
        close(got, want, tol(dtype, 10))
        if np.any(np.tril(r, -1)):
            continue
        # The NumPy oracle: R'^T R' = R^T R + w w^T with R' upper triangular.
        r64, w64, g64 = r.astype(np.float64), w.astype(np.float64), np.asarray(got, np.float64)
        scale = 1e3 if dtype == np.float32 else 10
        np.testing.assert_allclose(g64.T @ g64, r64.T @ r64 + np.outer(w64, w64),
                                   rtol=TOL[dtype] * scale, atol=TOL[dtype] * scale)
        np.testing.assert_allclose(np.tril(g64, -1), 0, atol=TOL[dtype] * scale)
        assert np.all(np.diag(g64) > 0)


def test_cholesky_update_zero_vector_is_identity(dtype):
    r = _factor(np.random.default_rng(10), 4, dtype)
    np.testing.assert_array_equal(
        np.asarray(lax_linalg.cholesky_update(r, np.zeros(4, dtype))), r)


def test_cholesky_update_jit_no_vmap_no_grad():
    rng = np.random.default_rng(11)
    r, w = _factor(rng, 4, np.float32), rng.normal(size=4).astype(np.float32)
    close(gpuarr.jit(lax_linalg.cholesky_update)(r, w), lax_linalg.cholesky_update(r, w), tol(np.float32))
    rs, ws = np.stack([r, r]), np.stack([w, w])
    same_error(lambda: gpuarr.vmap(lax_linalg.cholesky_update)(rs, ws),
               lambda: jax.vmap(jax_linalg.cholesky_update)(rs, ws))
    same_error(lambda: gpuarr.grad(lambda w: lax_linalg.cholesky_update(r, w).sum())(w),
               lambda: jax.grad(lambda w: jax_linalg.cholesky_update(r, w).sum())(w))


@pytest.mark.parametrize("args", [
    (np.eye(3, dtype=np.float32), np.ones(2, np.float32)),
    (np.ones((3, 2), np.float32), np.ones(3, np.float32)),
    (np.stack([np.eye(3, dtype=np.float32)] * 2), np.ones((2, 3), np.float32)),
    (np.ones(3, np.float32), np.ones(3, np.float32)),
    (np.eye(3, dtype=np.complex64), np.ones(3, np.complex64)),
    (np.eye(3, dtype=np.int32), np.ones(3, np.int32)),
], ids=["vector size", "not square", "batched", "rank", "complex", "integers"])
def test_cholesky_update_errors_match_jax(args):
    same_error(lambda: lax_linalg.cholesky_update(*args),
               lambda: jax_linalg.cholesky_update(*args))


def test_cholesky_update_mixed_dtypes_error(x64):
    r, w = np.eye(3, dtype=np.float32), np.ones(3, np.float64)
    same_error(lambda: lax_linalg.cholesky_update(r, w), lambda: jax_linalg.cholesky_update(r, w))


# ---------------------------------------------------------------- qdwh


def _ill_conditioned(rng, shape, dtype):
    """A matrix with singular values 1 .. 1e-5: QDWH takes its QR steps and more Cholesky ones."""
    u, _, vt = np.linalg.svd(rng.normal(size=shape), full_matrices=False)
    return ((u * np.logspace(0, -5, shape[1])) @ vt).astype(dtype)


@pytest.mark.slow
def test_qdwh_matches_jax(x64):
    rng = np.random.default_rng(12)
    padded = np.zeros((6, 5), np.float32)
    padded[:4, :3] = rand((4, 3), np.float32, rng)
    cases = [  # (dtype, x, keyword arguments)
        (np.float64, rand((5, 3), np.float64, rng), {}),
        (np.complex128, rand((4, 4), np.complex128, rng), dict(is_hermitian=True)),
        (np.float64, _ill_conditioned(rng, (5, 4), np.float64), dict(max_iterations=1)),
        (np.float32, padded, dict(dynamic_shape=(4, 3), eps=1e-4)),
    ]
    wants = jax_all([(lambda x, kw=kw: jax_linalg.qdwh(x, **kw), (x,)) for _, x, kw in cases])
    for (dtype, x, kw), want in zip(cases, wants):
        got = lax_linalg.qdwh(x, **kw)
        assert isinstance(got, tuple) and len(got) == 4
        close(got[0], want[0], tol(dtype, 50))
        close(got[1], want[1], tol(dtype, 50))
        assert np.asarray(got[2]).dtype == want[2].dtype and int(got[2]) == int(want[2])
        assert np.asarray(got[3]).dtype == np.bool_ and bool(got[3]) == bool(want[3])
    assert not bool(wants[2][3])  # one step is not enough for the ill-conditioned matrix


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (6, 1)], ids=str)
def test_qdwh_is_a_polar_decomposition(anytype, shape):
    x = rand(shape, anytype, np.random.default_rng(13))
    u, h, num_iters, converged = lax_linalg.qdwh(x)
    assert u.dtype == anytype and h.dtype == anytype and u.shape == shape
    assert h.shape == (shape[1],) * 2
    assert num_iters.dtype == (np.int64 if _wide(anytype) else np.int32)
    assert bool(converged) and 0 < int(num_iters) <= 10
    u, h = (np.asarray(o).astype(np.complex128) for o in (u, h))
    scale = 1e7 if np.dtype(anytype).itemsize <= 8 else 1e3
    close(u.conj().T @ u, np.eye(shape[1], dtype=np.complex128), tol(np.complex128, scale))
    close(u @ h, x.astype(np.complex128), tol(np.complex128, scale))
    close(h, h.conj().T, tol(np.complex128, scale))
    assert np.linalg.eigvalsh(h).min() > 0
    # The same polar factor as the SVD's: u = U V^H.
    su, _, svh = np.linalg.svd(x.astype(np.complex128), full_matrices=False)
    close(u, su @ svh, tol(np.complex128, scale * 10))


def test_qdwh_options(dtype):
    rng = np.random.default_rng(14)
    bad = _ill_conditioned(rng, (6, 4), dtype)
    full = lax_linalg.qdwh(bad)
    assert bool(full[3]) and int(full[2]) > 2
    one = lax_linalg.qdwh(bad, max_iterations=1)
    assert int(one[2]) == 1 and not bool(one[3])
    # A looser eps needs fewer steps.
    assert int(lax_linalg.qdwh(bad, eps=1e-2)[2]) < int(full[2])
    # A padded matrix: the true-size block is the polar factor of the unpadded one.
    padded = np.zeros((6, 5), dtype)
    padded[:4, :3] = bad[:4, :3]
    got = lax_linalg.qdwh(padded, dynamic_shape=(4, 3))
    close(np.asarray(got[0])[:4, :3], lax_linalg.qdwh(bad[:4, :3])[0], tol(dtype, 1e3))
    np.testing.assert_array_equal(np.asarray(got[0])[4:], 0)


def test_qdwh_jit_vmap_and_jvp(x64):
    rng = np.random.default_rng(15)
    xs = rand((3, 5, 3), np.float64, rng)
    for g, w in zip(gpuarr.jit(lax_linalg.qdwh)(xs[0]), lax_linalg.qdwh(xs[0])):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)
    vmap_matches_loop(lambda x: lax_linalg.qdwh(x)[:2], [xs], (0,), tol=1e-10)
    vmap_matches_loop(lambda x: lax_linalg.qdwh(x)[2:], [np.moveaxis(xs, 0, 1)], (1,))
    # The JVP runs through the loops; reverse mode stops at the while_loop, as in JAX.
    check_grads_x64(lambda x: lax_linalg.qdwh(x)[0], (xs[1],), 1, modes=("fwd",))
    check_grads_x64(lambda x: lax_linalg.qdwh(x)[1], (xs[2],), 1, modes=("fwd",))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop"):
        gpuarr.grad(lambda x: lax_linalg.qdwh(x)[0].sum())(xs[0])


def test_qdwh_wide_input_error():
    x = np.ones((2, 3), np.float32)
    same_error(lambda: lax_linalg.qdwh(x), lambda: jax_linalg.qdwh(x))


# ---------------------------------------------------------------- svd algorithm


def test_svd_algorithm_enum_matches_jax():
    assert [(a.name, a.value) for a in lax_linalg.SvdAlgorithm] == \
        [(a.name, a.value) for a in jax_linalg.SvdAlgorithm]


def test_svd_algorithms_agree(dtype):
    x = rand((2, 5, 3), dtype, np.random.default_rng(16))
    want = lax_linalg.svd(x, full_matrices=False)
    want_s = lax_linalg.svd(x, compute_uv=False)
    close(want[1], jax_linalg.svd(x, full_matrices=False)[1], tol(dtype, 10))
    for algorithm in (*lax_linalg.SvdAlgorithm, jax_linalg.SvdAlgorithm.QR):
        got = lax_linalg.svd(x, full_matrices=False, algorithm=algorithm)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        s = lax_linalg.svd(x, compute_uv=False, algorithm=algorithm)
        np.testing.assert_array_equal(np.asarray(s), np.asarray(want_s))
    with pytest.raises(NotImplementedError):
        lax_linalg.svd(x, algorithm="QR")
