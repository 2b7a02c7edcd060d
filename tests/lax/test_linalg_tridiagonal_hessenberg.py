"""tridiagonal_solve, lu_pivots_to_permutation, householder_product and hessenberg
(gpuarr.lax.linalg), and gpuarr.scipy.linalg's hessenberg, pascal, invpascal, invhilbert and
fiedler_companion.

Each is checked against a NumPy float64 oracle (dense solves, explicit reflector products,
A = Q H Q^H, LU permutations), against JAX when it is installed (values, shapes, dtypes and
errors, float32 and float64 with x64 on both sides), under vmap against a Python loop, under
jit, and for tridiagonal_solve under finite-difference gradient checks.
"""
import numpy as np
import pytest
from helpers import allclose, check_grads_x64, rand

import gpuarr
from gpuarr import dtypes
from gpuarr.lax import linalg as lax_linalg
from gpuarr.scipy import linalg as gl

try:
    import jax as ref
except ImportError:  # the comparisons with JAX skip themselves
    ref = None

TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}


def tol(dtype, scale=1.0):
    return TOL[np.dtype(dtype).type] * scale


def need_jax():
    return pytest.importorskip("jax")


def check_dtype(x, dtype):
    assert np.dtype(x.dtype) == np.dtype(dtype), (x.dtype, dtype)


def _x64_both(on):
    """Set enable_x64 in gpuarr and (when installed) JAX; return a function that undoes it."""
    old, old_ref = gpuarr.config.enable_x64, ref and bool(ref.config.jax_enable_x64)
    gpuarr.config.update("jax_enable_x64", on)
    if ref is not None:
        ref.config.update("jax_enable_x64", on)

    def restore():
        gpuarr.config.update("jax_enable_x64", old)
        if ref is not None:
            ref.config.update("jax_enable_x64", old_ref)
    return restore


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request):
    restore = _x64_both(request.param == np.float64)
    yield request.param
    restore()


@pytest.fixture(params=[np.complex64, np.complex128], ids=["c64", "c128"])
def ctype(request):
    restore = _x64_both(request.param == np.complex128)
    yield request.param
    restore()


@pytest.fixture
def x64():
    restore = _x64_both(True)
    yield
    restore()


def same_error(ours, theirs, message=True):
    """Both calls raise the same exception class (and message, unless `message` is False)."""
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(Exception) as got:
        ours()
    assert type(got.value) is type(want.value), (got.value, want.value)
    if message:
        assert str(got.value) == str(want.value)


def vmap_matches_loop(fn, args, in_axes):
    """vmap(fn) over the mapped arguments equals stacking fn over a Python loop."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    out = gpuarr.vmap(fn, in_axes=in_axes)(*args)
    for i in range(size):
        one = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]
        want = fn(*one)
        for o, w in zip(gpuarr.tree_util.tree_leaves(out), gpuarr.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(o)[i], np.asarray(w), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- tridiagonal_solve


def diagonals(batch, m, dtype=np.float64, seed=0, dominant=False):
    """Random diagonals (dl, d, du) of [*batch, m], with junk in the unread dl[0], du[-1]."""
    dl, d, du = (rand(batch + (m,), dtype, seed + i) for i in range(3))
    if dominant:
        d = d + np.asarray(4, dtype)
    dl[..., 0], du[..., -1] = 7, -9
    return dl, d, du


def dense(dl, d, du):
    """The [..., m, m] tridiagonal matrices with these diagonals, in float64 (or complex128)."""
    m = d.shape[-1]
    wide = np.complex128 if np.iscomplexobj(d) else np.float64
    a = np.zeros(d.shape + (m,), wide)
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    return a


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)], ids=str)
@pytest.mark.parametrize("m", [1, 2, 5, 9])
def test_tridiagonal_solve_matches_dense_solve(dtype, batch, m):
    # Not diagonally dominant: row swaps happen.
    dl, d, du = diagonals(batch, m, dtype, seed=m)
    b = rand(batch + (m, 3), dtype, seed=10)
    x = lax_linalg.tridiagonal_solve(dl, d, du, b)
    check_dtype(x, dtype)
    allclose(x, np.linalg.solve(dense(dl, d, du), b.astype(np.float64)), tol(dtype, 50))


def test_tridiagonal_solve_complex(ctype):
    dl, d, du = diagonals((2,), 6, ctype, seed=3)
    b = rand((2, 6, 2), ctype, seed=4)
    x = lax_linalg.tridiagonal_solve(dl, d, du, b)
    check_dtype(x, ctype)
    allclose(x, np.linalg.solve(dense(dl, d, du), b.astype(np.complex128)), tol(ctype, 50))


def test_tridiagonal_solve_zero_diagonal_needs_pivoting(x64):
    m = 6  # zero diagonal, ones beside it: nonsingular for even m, but every pivot is zero
    dl, d, du = np.ones(m), np.zeros(m), np.ones(m)
    b = rand((m, 2), np.float64)
    x = lax_linalg.tridiagonal_solve(dl, d, du, b)
    allclose(x, np.linalg.solve(dense(dl, d, du), b), tol(np.float64))


def test_tridiagonal_solve_singular_gives_nan_per_system(x64):
    dl = np.array([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    d = np.array([[1.0, 1.0, 1.0], [3.0, 3.0, 3.0]])
    du = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])  # first matrix: rows 0 and 1 equal
    x = np.asarray(lax_linalg.tridiagonal_solve(dl, d, du, np.ones((2, 3, 1))))
    assert np.isnan(x[0]).all() and np.isfinite(x[1]).all()
    # perturb_singular gives a finite answer instead.
    x = np.asarray(lax_linalg.tridiagonal_solve(dl, d, du, np.ones((2, 3, 1)),
                                                perturb_singular=True))
    assert np.isfinite(x).all()
    allclose(dense(dl, d, du)[1] @ x[1], np.ones((3, 1)), tol(np.float64))


def test_tridiagonal_solve_perturb_singular_nonsingular_systems(dtype):
    dl, d, du = diagonals((2,), 7, dtype, seed=5)
    b = rand((2, 7, 2), dtype, seed=6)
    x = lax_linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True)
    check_dtype(x, dtype)
    allclose(x, np.linalg.solve(dense(dl, d, du), b.astype(np.float64)), tol(dtype, 50))


def test_tridiagonal_solve_empty(dtype):
    z = np.zeros((2, 0), dtype)
    for perturb in (False, True):
        x = lax_linalg.tridiagonal_solve(z, z, z, np.zeros((2, 0, 3), dtype),
                                         perturb_singular=perturb)
        assert x.shape == (2, 0, 3) and np.dtype(x.dtype) == dtype


@pytest.mark.parametrize("perturb", [False, True])
def test_tridiagonal_solve_matches_jax(dtype, perturb):
    jax = need_jax()
    dl, d, du = diagonals((2, 3), 8, dtype, seed=1)
    b = rand((2, 3, 8, 2), dtype, seed=2)
    got = lax_linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=perturb)
    want = jax.lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=perturb)
    check_dtype(got, want.dtype)
    allclose(got, np.asarray(want), tol(dtype, 50))


def test_tridiagonal_solve_singular_matches_jax(x64):
    jax = need_jax()
    cases = [([0.0, 1.0], [1.0, 1.0], [1.0, 0.0]),
             ([0.0, 0.0, 0.0], [0.0, 1.0, 3.0], [0.0, 0.0, 0.0]),
             ([0.0, 1.0, 2.0], [1.0, 1.0, 3.0], [1.0, 3.0, 0.0])]
    for diags in cases:
        diags = [np.array(v) for v in diags]
        b = np.arange(1.0, len(diags[0]) + 1)[:, None]
        for perturb in (False, True):
            got = lax_linalg.tridiagonal_solve(*diags, b, perturb_singular=perturb)
            want = jax.lax.linalg.tridiagonal_solve(*diags, b, perturb_singular=perturb)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_tridiagonal_solve_grads():
    dl, d, du = diagonals((), 5, dominant=True, seed=2)
    b = rand((5, 2), np.float64, seed=3)
    check_grads_x64(lax_linalg.tridiagonal_solve, (dl, d, du, b), order=2, modes=("fwd", "rev"),
                atol=1e-5, rtol=1e-5)
    # Batched diagonals, and b alone.
    dl, d, du = diagonals((2,), 4, dominant=True, seed=4)
    check_grads_x64(lambda b: lax_linalg.tridiagonal_solve(dl, d, du, b), (rand((2, 4, 1), np.float64),),
                order=1, modes=("fwd", "rev"))


def test_tridiagonal_solve_unread_entries_get_zero_gradient():
    dl, d, du = diagonals((), 4, dominant=True)
    b = rand((4, 1), np.float64)
    g = gpuarr.grad(lambda dl, du: lax_linalg.tridiagonal_solve(dl, d, du, b).sum(),
                    argnums=(0, 1))(dl, du)
    assert float(g[0][0]) == 0.0 and float(g[1][-1]) == 0.0


@pytest.mark.slow
def test_tridiagonal_solve_grads_match_jax(x64):
    jax = need_jax()
    dl, d, du = diagonals((2,), 5, dominant=True, seed=7)
    b = rand((2, 5, 3), np.float64, seed=8)

    def loss(mod, fn):
        return lambda *args: mod.numpy.sum(mod.numpy.sin(fn(*args)))

    got = gpuarr.grad(loss(gpuarr, lax_linalg.tridiagonal_solve), argnums=(0, 1, 2, 3))(
        dl, d, du, b)
    want = jax.grad(loss(jax, jax.lax.linalg.tridiagonal_solve), argnums=(0, 1, 2, 3))(
        dl, d, du, b)
    for g, w in zip(got, want):
        allclose(g, np.asarray(w), tol(np.float64, 10))


@pytest.mark.parametrize("in_axes", [(None, None, None, 0), (0, 0, 0, 0), (None, 1, None, 2),
                                     (0, None, None, None)], ids=str)
def test_tridiagonal_solve_vmap(in_axes):
    dl, d, du = diagonals((), 5, np.float32, dominant=True)
    b = rand((5, 2), np.float32, seed=1)
    args = [dl, d, du, b]
    for i, ax in enumerate(in_axes):
        if ax is not None:
            args[i] = np.stack([args[i] * (1 + 0.1 * k) for k in range(3)], axis=ax)
    vmap_matches_loop(lax_linalg.tridiagonal_solve, args, in_axes)


def test_tridiagonal_solve_vmap_over_b_adds_right_hand_sides():
    dl, d, du = diagonals((), 5, np.float32, dominant=True)
    bs = rand((3, 5, 2), np.float32)
    prog = gpuarr.make_jaxpr(gpuarr.vmap(lax_linalg.tridiagonal_solve, (None,) * 3 + (0,)))(
        dl, d, du, bs)
    (eqn,) = [e for e in prog.program.eqns if e.prim.name == "tridiagonal_solve"]
    assert eqn.inputs[3].aval.shape == (5, 6)


def test_tridiagonal_solve_jit(dtype):
    dl, d, du = diagonals((2,), 6, dtype, dominant=True)
    b = rand((2, 6, 2), dtype)
    eager = lax_linalg.tridiagonal_solve(dl, d, du, b)
    jitted = gpuarr.jit(lax_linalg.tridiagonal_solve, static_argnames="perturb_singular")
    np.testing.assert_allclose(np.asarray(jitted(dl, d, du, b)), np.asarray(eager), rtol=1e-6)
    text = str(gpuarr.make_jaxpr(lax_linalg.tridiagonal_solve)(dl, d, du, b))
    assert "tridiagonal_solve[perturb_singular=False]" in text


def _tridiagonal_error_cases():
    o, o2 = np.ones(4, np.float32), np.ones((2, 4), np.float32)
    b, b2 = np.ones((4, 2), np.float32), np.ones((2, 4, 2), np.float32)
    i = np.ones(4, np.int32)
    return [
        ("vector b", (o, o, o, o)),
        ("scalar diagonal", (np.float32(1), o, o, b)),
        ("diagonal shapes", (o[:3], o, o, b)),
        ("b rows", (o, o, o, b[:3])),
        ("batch count", (o, o, o, b2)),
        ("integers", (i, i, i, np.ones((4, 2), np.int32))),
        ("batch sizes", (o2, o2, o2, np.ones((3, 4, 2), np.float32))),
    ]


@pytest.mark.parametrize("case", _tridiagonal_error_cases(), ids=lambda c: c[0])
def test_tridiagonal_solve_errors_match_jax(case):
    jax = need_jax()
    name, args = case
    same_error(lambda: lax_linalg.tridiagonal_solve(*args),
               lambda: jax.lax.linalg.tridiagonal_solve(*args),
               message=name != "batch sizes")


def test_tridiagonal_solve_mixed_dtypes_error(x64):
    o = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="requires arguments to have the same dtypes, got "
                                        "float32, float32, float32, float64"):
        lax_linalg.tridiagonal_solve(o, o, o, np.ones((3, 1)))
    if ref is not None:
        same_error(lambda: lax_linalg.tridiagonal_solve(o, o, o, np.ones((3, 1))),
                   lambda: ref.lax.linalg.tridiagonal_solve(o, o, o, np.ones((3, 1))))


# ---------------------------------------------------------------- lu_pivots_to_permutation


@pytest.mark.parametrize("shape", [(5, 5), (2, 6, 4), (3, 4, 6)], ids=str)
def test_lu_pivots_to_permutation_matches_lu(shape):
    a = rand(shape, np.float32)
    _, pivots, perm = lax_linalg.lu(a)
    got = lax_linalg.lu_pivots_to_permutation(pivots, shape[-2])
    check_dtype(got, np.int32)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(perm))


def test_lu_pivots_to_permutation_numpy_oracle():
    pivots = np.array([[2, 2, 3], [0, 1, 2], [4, 3, 4]], np.int32)
    got = np.asarray(lax_linalg.lu_pivots_to_permutation(pivots, 5))
    for row, piv in zip(got, pivots):
        want = np.arange(5)
        for i, p in enumerate(piv):
            want[[i, p]] = want[[p, i]]
        np.testing.assert_array_equal(row, want)
    assert got.shape == (3, 5)
    empty = lax_linalg.lu_pivots_to_permutation(np.zeros((2, 0), np.int32), 3)
    np.testing.assert_array_equal(np.asarray(empty), np.tile(np.arange(3), (2, 1)))


def test_lu_pivots_to_permutation_matches_jax():
    jax = need_jax()
    pivots = np.array([[2, 2, 3], [0, 1, 2], [7, -1, -9], [-2, 4, 0]], np.int32)
    for size in (3, 5):
        got = lax_linalg.lu_pivots_to_permutation(pivots, size)
        want = jax.lax.linalg.lu_pivots_to_permutation(pivots, size)
        check_dtype(got, want.dtype)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_lu_pivots_to_permutation_vmap_jit_and_jvp():
    pivots = np.array([[2, 2, 3], [0, 1, 2], [4, 3, 4]], np.int32)
    fn = lambda p: lax_linalg.lu_pivots_to_permutation(p, 5)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(gpuarr.vmap(fn)(pivots)), np.asarray(fn(pivots)))
    np.testing.assert_array_equal(np.asarray(gpuarr.vmap(fn, in_axes=1)(pivots.T)),
                                  np.asarray(fn(pivots)))
    np.testing.assert_array_equal(np.asarray(gpuarr.jit(fn)(pivots)), np.asarray(fn(pivots)))
    # Integer in, integer out: the tangent is a float0 zero, as in JAX.
    out, tangent = gpuarr.jvp(fn, (pivots,), (np.zeros(pivots.shape, dtypes.float0),))
    assert tangent.dtype == dtypes.float0 and tangent.shape == (3, 5)


def test_lu_pivots_to_permutation_errors():
    pivots = np.array([1, 2, 2], np.int32)
    cases = [(pivots, 2), (pivots.astype(np.float32), 5), (pivots.astype(np.uint32), 5),
             (np.int32(1), 5)]
    for args in cases:
        with pytest.raises((TypeError, ValueError)):
            lax_linalg.lu_pivots_to_permutation(*args)
        if ref is not None:
            same_error(lambda: lax_linalg.lu_pivots_to_permutation(*args),
                       lambda: ref.lax.linalg.lu_pivots_to_permutation(*args))


# ---------------------------------------------------------------- householder_product


def reflector_product(a, taus):
    """H_0 H_1 ... H_{k-1} [:, :n] from the definition, in float64 (or complex128)."""
    m, n = a.shape
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    q = np.eye(m, dtype=wide)
    for i, tau in enumerate(taus):
        v = np.zeros(m, wide)
        v[i], v[i + 1:] = 1, a[i + 1:, i]
        q = q @ (np.eye(m) - tau * np.outer(v, v.conj()))
    return q[:, :n]


@pytest.mark.parametrize("shape,k", [((5, 3), 3), ((5, 3), 1), ((4, 4), 4), ((6, 2), 0),
                                     ((2, 4, 3), 2)], ids=str)
def test_householder_product_matches_definition(dtype, shape, k):
    a = rand(shape, dtype)
    taus = rand(shape[:-2] + (k,), dtype, seed=1)
    q = lax_linalg.householder_product(a, taus)
    check_dtype(q, dtype)
    count = int(np.prod(shape[:-2]))
    want = np.stack([reflector_product(x, t) for x, t in
                     zip(a.reshape((count,) + shape[-2:]), taus.reshape(count, k))])
    allclose(q, want.reshape(shape), tol(dtype, 20))


def test_householder_product_complex(ctype):
    a, taus = rand((5, 3), ctype), rand((3,), ctype, seed=2)
    q = lax_linalg.householder_product(a, taus)
    check_dtype(q, ctype)
    allclose(q, reflector_product(a, taus), tol(ctype, 20))


def test_householder_product_orthogonal_reflectors(x64):
    # With tau_i = 2 / |v_i|^2 each reflector is orthogonal, so Q has orthonormal columns.
    a = rand((3, 6, 4), np.float64)
    v = np.tril(a, -1) + np.eye(6, 4)
    taus = 2 / np.sum(v * v, axis=-2)
    q = np.asarray(lax_linalg.householder_product(a, taus))
    allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(4), (3, 4, 4)), tol(np.float64))


def test_householder_product_reproduces_qr(dtype):
    lapack = pytest.importorskip("scipy.linalg.lapack")
    a = rand((6, 4), np.float64, seed=3)
    packed, taus = lapack.dgeqrf(a)[:2]
    q = lax_linalg.householder_product(packed.astype(dtype), taus.astype(dtype))
    r = np.triu(packed[:4])
    allclose(np.asarray(q, np.float64) @ r, a, tol(dtype, 20))
    allclose(np.asarray(q).T @ np.asarray(q), np.eye(4), tol(dtype, 10))


def test_householder_product_matches_jax(dtype):
    jax = need_jax()
    a, taus = rand((2, 5, 4), dtype), rand((2, 3), dtype, seed=4)
    got = lax_linalg.householder_product(a, taus)
    want = jax.lax.linalg.householder_product(a, taus)
    check_dtype(got, want.dtype)
    allclose(got, np.asarray(want), tol(dtype, 20))


def test_householder_product_vmap_and_jit():
    a, taus = rand((3, 5, 3), np.float32), rand((3, 2), np.float32, seed=1)
    vmap_matches_loop(lax_linalg.householder_product, [a, taus], (0, 0))
    vmap_matches_loop(lax_linalg.householder_product, [a, taus[0]], (0, None))
    vmap_matches_loop(lax_linalg.householder_product, [np.moveaxis(a, 0, 2), taus], (2, 0))
    np.testing.assert_allclose(np.asarray(gpuarr.jit(lax_linalg.householder_product)(a, taus)),
                               np.asarray(lax_linalg.householder_product(a, taus)), rtol=1e-6)


def test_householder_product_is_not_differentiable():
    a, taus = rand((4, 3), np.float64), rand((2,), np.float64, seed=1)
    with pytest.raises(NotImplementedError,
                       match="Differentiation rule for 'householder_product' not implemented"):
        gpuarr.grad(lambda a: lax_linalg.householder_product(a, taus).sum())(a)
    with pytest.raises(NotImplementedError, match="householder_product"):
        gpuarr.jvp(lambda t: lax_linalg.householder_product(a, t), (taus,), (taus,))


@pytest.mark.parametrize("name,a,taus", [
    ("wide", np.ones((3, 5), np.float32), np.ones(2, np.float32)),
    ("too many taus", np.ones((5, 3), np.float32), np.ones(4, np.float32)),
    ("integers", np.ones((5, 3), np.int32), np.ones(2, np.int32)),
    ("mixed", np.ones((5, 3), np.float32), np.ones(2, np.complex64)),
    ("batch count", np.ones((2, 5, 3), np.float32), np.ones(2, np.float32)),
    ("vector", np.ones(3, np.float32), np.ones(2, np.float32)),
    ("scalar taus", np.ones((5, 3), np.float32), np.float32(1)),
    ("batch sizes", np.ones((2, 5, 3), np.float32), np.ones((3, 2), np.float32)),
], ids=lambda x: x if isinstance(x, str) else "")
def test_householder_product_errors(name, a, taus):
    with pytest.raises((TypeError, ValueError)):
        lax_linalg.householder_product(a, taus)
    if ref is not None:
        same_error(lambda: lax_linalg.householder_product(a, taus),
                   lambda: ref.lax.linalg.householder_product(a, taus),
                   message=name != "batch sizes")


# ---------------------------------------------------------------- hessenberg


def unpack_hessenberg(packed, taus):
    """(H, Q) in float64 from lax.linalg.hessenberg's packed output, for one matrix."""
    packed = np.asarray(packed).astype(np.complex128 if np.iscomplexobj(packed) else np.float64)
    n = packed.shape[-1]
    q = np.eye(n, dtype=packed.dtype)
    if n > 1:
        q[1:, 1:] = reflector_product(packed[1:, :-1], np.asarray(taus))
    return np.triu(packed, -1), q


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (2, 3, 4, 4)], ids=str)
def test_hessenberg_reconstructs_input(dtype, shape):
    a = rand(shape, dtype)
    packed, taus = lax_linalg.hessenberg(a)
    check_dtype(packed, dtype)
    check_dtype(taus, dtype)
    assert packed.shape == shape and taus.shape == shape[:-2] + (shape[-1] - 1,)
    flat = np.asarray(packed).reshape((-1,) + shape[-2:])
    for x, p, t in zip(a.reshape(flat.shape), flat, np.asarray(taus).reshape(len(flat), -1)):
        h, q = unpack_hessenberg(p, t)
        allclose(q.T @ q, np.eye(shape[-1]), tol(dtype, 10))
        allclose(q @ h @ q.T, x, tol(dtype, 20))


def test_hessenberg_complex(ctype):
    a = rand((5, 5), ctype)
    packed, taus = lax_linalg.hessenberg(a)
    check_dtype(packed, ctype)
    h, q = unpack_hessenberg(packed, taus)
    allclose(q @ h @ q.conj().T, a, tol(ctype, 20))
    # The subdiagonal is real, as LAPACK's gehrd makes it.
    assert np.abs(np.diag(h, -1).imag).max() == 0


def test_hessenberg_matches_lapack_packed_form(dtype):
    lapack = pytest.importorskip("scipy.linalg.lapack")
    a = rand((6, 6), dtype, seed=2)
    gehrd = lapack.sgehrd if dtype == np.float32 else lapack.dgehrd
    want_a, want_tau = gehrd(a)[:2]
    packed, taus = lax_linalg.hessenberg(a)
    allclose(packed, want_a, tol(dtype, 20))
    allclose(taus, want_tau[:5], tol(dtype, 20))


@pytest.mark.parametrize("kind", ["real", "complex"])
def test_hessenberg_matches_jax(dtype, kind):
    jax = need_jax()
    a = rand((2, 6, 6), dtype, seed=3)
    if kind == "complex":
        a = a + 1j * rand((2, 6, 6), dtype, seed=4)
    got = lax_linalg.hessenberg(a)
    want = jax.lax.linalg.hessenberg(a)
    for g, w in zip(got, want):
        check_dtype(g, w.dtype)
        allclose(g, np.asarray(w), tol(dtype, 20))


def test_hessenberg_vmap_jit_and_not_differentiable():
    a = rand((3, 4, 4), np.float32)
    vmap_matches_loop(lax_linalg.hessenberg, [a], (0,))
    vmap_matches_loop(lax_linalg.hessenberg, [np.moveaxis(a, 0, 2)], (2,))
    for g, w in zip(gpuarr.jit(lax_linalg.hessenberg)(a), lax_linalg.hessenberg(a)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    with pytest.raises(NotImplementedError,
                       match="Differentiation rule for 'hessenberg' not implemented"):
        gpuarr.grad(lambda a: lax_linalg.hessenberg(a)[0].sum())(a[0])


@pytest.mark.parametrize("name,a", [("not square", np.ones((5, 3), np.float32)),
                                    ("integers", np.ones((3, 3), np.int32)),
                                    ("vector", np.ones(3, np.float32))])
def test_hessenberg_errors(name, a):
    with pytest.raises((TypeError, ValueError)):
        lax_linalg.hessenberg(a)
    if ref is not None:
        same_error(lambda: lax_linalg.hessenberg(a), lambda: ref.lax.linalg.hessenberg(a))


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (2, 2), (5, 5), (2, 3, 4, 4)], ids=str)
def test_scipy_hessenberg(dtype, shape):
    a = rand(shape, dtype, seed=5)
    h = gl.hessenberg(a)
    h2, q = gl.hessenberg(a, calc_q=True)
    check_dtype(h, dtype)
    check_dtype(q, dtype)
    assert h.shape == q.shape == shape
    np.testing.assert_array_equal(np.asarray(h), np.asarray(h2))
    assert (np.tril(np.asarray(h), -2) == 0).all()
    if shape[-1]:
        qn, hn = np.asarray(q, np.float64), np.asarray(h, np.float64)
        allclose(qn @ hn @ np.swapaxes(qn, -1, -2), a.astype(np.float64), tol(dtype, 20))
    sl = pytest.importorskip("scipy.linalg")
    if len(shape) == 2 and shape[0]:
        want_h, want_q = sl.hessenberg(a.astype(np.float64), calc_q=True)
        allclose(h, want_h, tol(dtype, 20))
        allclose(q, want_q, tol(dtype, 20))


def test_scipy_hessenberg_matches_jax(dtype):
    jax = need_jax()
    import jax.scipy.linalg as jsl
    a = rand((2, 5, 5), dtype, seed=6)
    for got, want in zip(gl.hessenberg(a, calc_q=True), jsl.hessenberg(a, calc_q=True)):
        check_dtype(got, want.dtype)
        allclose(got, np.asarray(want), tol(dtype, 20))
    del jax


# ---------------------------------------------------------------- special matrices


@pytest.mark.parametrize("kind", [None, "lower", "upper", "symmetric"])
def test_pascal_and_invpascal(dtype, kind):
    sl = pytest.importorskip("scipy.linalg")
    for n in (0, 1, 4, 9):
        p, pi = gl.pascal(n, kind), gl.invpascal(n, kind)
        check_dtype(p, np.float32)  # float32 whatever x64 says, as JAX
        check_dtype(pi, dtype)
        assert p.shape == pi.shape == (n, n)
        if n:
            np.testing.assert_array_equal(np.asarray(p), sl.pascal(n, kind or "symmetric"))
            np.testing.assert_array_equal(np.asarray(pi), sl.invpascal(n, kind or "symmetric"))
            np.testing.assert_array_equal(np.asarray(p, np.float64) @ np.asarray(pi), np.eye(n))


def test_pascal_matches_jax(dtype):
    jax = need_jax()
    for kind in (None, "lower", "upper"):
        for fn, ours in ((jax.scipy.linalg.pascal, gl.pascal),
                         (jax.scipy.linalg.invpascal, gl.invpascal)):
            got, want = ours(7, kind), fn(7, kind)
            check_dtype(got, want.dtype)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-5)


def test_pascal_bad_kind():
    for fn in (gl.pascal, gl.invpascal):
        with pytest.raises(ValueError, match="Expected kind to be one of"):
            fn(3, "diagonal")


def test_invhilbert(dtype):
    for n in (0, 1, 3, 6):
        h = gl.invhilbert(n)
        check_dtype(h, dtype)
        assert h.shape == (n, n)
        if n:
            np.testing.assert_allclose(np.asarray(h, np.float64) @ np.asarray(gl.hilbert(n)),
                                       np.eye(n), atol=1e-6 * 10 ** n)
    sl = pytest.importorskip("scipy.linalg")
    allclose(gl.invhilbert(8), sl.invhilbert(8), tol(dtype))  # exact integers, up to float32 rounding
    if ref is not None:
        want = ref.scipy.linalg.invhilbert(8)
        check_dtype(want, dtype)
        allclose(gl.invhilbert(8), np.asarray(want), tol(dtype, 10))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_fiedler_companion_eigenvalues_are_roots(n, x64):
    coeffs = rand((n,), np.float64, seed=n)
    c = np.asarray(gl.fiedler_companion(coeffs))
    assert c.shape == (n - 1, n - 1)
    got = np.sort_complex(np.linalg.eigvals(c))
    np.testing.assert_allclose(got, np.sort_complex(np.roots(coeffs)), rtol=1e-8, atol=1e-8)
    sl = pytest.importorskip("scipy.linalg")
    np.testing.assert_allclose(c, sl.fiedler_companion(coeffs), rtol=1e-14)


def test_fiedler_companion_shapes_dtypes_and_batches(dtype):
    assert gl.fiedler_companion(np.array([2.0], dtype)).shape == (0, 0)
    check_dtype(gl.fiedler_companion(np.array([1, 2, 3])), dtype)  # integers promote
    check_dtype(gl.fiedler_companion(np.array([1, 2, 3], np.complex64)), np.complex64)
    coeffs = rand((2, 3, 6), dtype)
    out = gl.fiedler_companion(coeffs)
    assert out.shape == (2, 3, 5, 5)
    allclose(out[1, 2], np.asarray(gl.fiedler_companion(coeffs[1, 2])), tol(dtype))
    np.testing.assert_allclose(np.asarray(gpuarr.jit(gl.fiedler_companion)(coeffs)),
                               np.asarray(out), rtol=1e-6)
    with pytest.raises(ValueError, match="nonzero length"):
        gl.fiedler_companion(np.zeros((2, 0)))
    with pytest.raises(TypeError):
        gl.fiedler_companion([1.0, 2.0])


@pytest.mark.slow
def test_fiedler_companion_matches_jax(dtype):
    jax = need_jax()
    for shape in [(1,), (2,), (5,), (6,), (2, 7)]:
        coeffs = rand(shape, dtype, seed=len(shape))
        got, want = gl.fiedler_companion(coeffs), jax.scipy.linalg.fiedler_companion(coeffs)
        check_dtype(got, want.dtype)
        allclose(got, np.asarray(want), tol(dtype))


def test_new_functions_are_exported():
    for name in ("hessenberg", "pascal", "invpascal", "invhilbert", "fiedler_companion"):
        assert name in gl.__all__ and callable(getattr(gl, name))
    for name in ("tridiagonal_solve", "lu_pivots_to_permutation", "householder_product",
                 "hessenberg"):
        assert callable(getattr(gpuarr.lax.linalg, name))


# ---------------------------------------------------------------- ormqr, qr(mode='raw'), qr_multiply


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("left,transpose", [(True, False), (True, True), (False, False),
                                            (False, True)])
def test_ormqr_applies_q_without_forming_it(dtype, left, transpose):
    """Q (from householder_product) times c, against NumPy in float64; batched."""
    a = rand((2, 5, 3), dtype, seed=11)
    packed, taus = lax_linalg._geqrf(a)
    q = np.asarray(lax_linalg.householder_product(
        np.concatenate([np.asarray(packed), np.zeros((2, 5, 2), dtype)], axis=-1),
        np.asarray(taus)), np.complex128)  # the full 5 x 5 Q
    q = q.conj().transpose(0, 2, 1) if transpose else q
    c = rand((2, 5, 4) if left else (2, 4, 5), dtype, seed=12)
    got = lax_linalg.ormqr(packed, taus, c, left=left, transpose=transpose)
    want = q @ c if left else c @ q
    check_dtype(got, dtype)
    allclose(got, want if np.dtype(dtype).kind == "c" else want.real, tol(dtype, 10))
    looped = np.stack([np.asarray(lax_linalg.ormqr(packed[i], taus[i], c[i], left=left,
                                                   transpose=transpose)) for i in range(2)])
    allclose(gpuarr.vmap(lambda p, t, m: lax_linalg.ormqr(p, t, m, left=left, transpose=transpose))(
        packed, taus, c), looped, tol(dtype))
    with pytest.raises(ValueError, match="ormqr with left="):
        lax_linalg.ormqr(packed, taus, c[..., :3, :3], left=left)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'ormqr'"):
        gpuarr.jvp(lambda m: lax_linalg.ormqr(packed, taus, m, left=left), (c,), (c,))


def test_qr_raw_mode_is_lapacks_packed_form():
    x = rand((4, 3), np.float32, seed=13)
    h, taus = gpuarr.numpy.linalg.qr(x, mode="raw")
    want_h, want_taus = np.linalg.qr(x, mode="raw")  # LAPACK's geqrf, transposed
    assert h.shape == (3, 4) and taus.shape == (3,) and h.dtype == taus.dtype == np.float32
    allclose(h, want_h, tol(np.float32))
    allclose(taus, want_taus, tol(np.float32))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("mode", ["left", "right"])
@pytest.mark.parametrize("conjugate", [False, True])
def test_qr_multiply(shape, mode, conjugate):
    """(Q @ c, R) or (c @ Q, R) against the Q and R of a reduced QR (float64 NumPy), 1-D c
    included, and against JAX when it is installed."""
    m, n = shape
    k = min(m, n)
    a = rand(shape, np.complex64, seed=14)
    q, r = np.linalg.qr(a.astype(np.complex128))
    q = q.conj() if conjugate else q
    for c in (rand((k, 2) if mode == "left" else (2, m), np.complex64, seed=15),
              rand((k,) if mode == "left" else (m,), np.complex64, seed=16)):
        out, got_r = gl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
        want = q @ c if mode == "left" else (c @ q)
        assert out.shape == want.shape and out.dtype == np.complex64
        # NumPy's QR is the same LAPACK geqrf, so Q and R agree with it exactly, signs included.
        allclose(out, want, tol(np.complex64, 10))
        allclose(got_r, r, tol(np.complex64, 10))
        if ref is not None:
            ref_out, ref_r = ref.scipy.linalg.qr_multiply(a, c, mode=mode, conjugate=conjugate)
            allclose(out, np.asarray(ref_out), tol(np.complex64, 10))
            allclose(got_r, np.asarray(ref_r), tol(np.complex64, 10))
    with pytest.raises(ValueError, match="Array shapes are not compatible"):
        gl.qr_multiply(a, np.ones((k + 1, 2), np.complex64) if mode == "left"
                       else np.ones((2, m + 1), np.complex64), mode=mode)
    assert len(gl.qr_multiply(a, c, mode=mode, pivoting=True)) == 3
