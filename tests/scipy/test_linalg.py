"""gpuarr.scipy.linalg against scipy.linalg: values in float64 (x64 enabled) and float32,
dtypes, batches against a Python loop, jit, vmap, finite-difference gradients and errors."""
import numpy as np
import pytest
from helpers import allclose, check_grads_x64, rand

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.scipy import linalg as gl

sl = pytest.importorskip("scipy.linalg")

TOL = {np.float32: 2e-4, np.float64: 1e-9, np.complex64: 2e-4}


def tol(dtype, scale=1.0):
    return TOL[np.dtype(dtype).type] * scale


def spd(shape, dtype=np.float64, seed=0):
    """Well-conditioned Hermitian positive-definite matrices."""
    a = rand(shape, dtype, seed)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def tri(shape, dtype=np.float64, seed=0, lower=False):
    """Well-conditioned triangular matrices."""
    a = rand(shape, dtype, seed) + 3 * np.eye(shape[-1])
    return (np.tril(a) if lower else np.triu(a)).astype(dtype)


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request):
    if request.param == np.float64:
        with gpuarr.enable_x64():
            yield np.float64
    else:
        yield np.float32


A, B = rand((4, 4), np.float64, seed=1), rand((4, 2), np.float64, seed=2)
S, U, L = spd((4, 4), seed=3), tri((4, 4), seed=4), tri((4, 4), seed=5, lower=True)
R = rand((4, 3), np.float64, seed=6)

# (name, gpuarr call, SciPy call, float64 arguments); outputs compared leaf by leaf.
CASES = [
    ("cholesky", gl.cholesky, sl.cholesky, (S,)),
    ("cholesky_lower", lambda a: gl.cholesky(a, lower=True), lambda a: sl.cholesky(a, lower=True),
     (S,)),
    ("cho_solve", lambda a, b: gl.cho_solve(gl.cho_factor(a), b),
     lambda a, b: sl.cho_solve(sl.cho_factor(a), b), (S, B)),
    ("cho_solve_lower", lambda a, b: gl.cho_solve(gl.cho_factor(a, lower=True), b[:, 0]),
     lambda a, b: sl.cho_solve(sl.cho_factor(a, lower=True), b[:, 0]), (S, B)),
    ("solve_triangular", gl.solve_triangular, sl.solve_triangular, (U, B)),
    ("solve_triangular_T_lower", lambda a, b: gl.solve_triangular(a, b, trans="T", lower=True),
     lambda a, b: sl.solve_triangular(a, b, trans="T", lower=True), (L, B)),
    ("solve_triangular_unit", lambda a, b: gl.solve_triangular(a, b, 2, unit_diagonal=True),
     lambda a, b: sl.solve_triangular(a, b, 2, unit_diagonal=True), (U, B)),
    ("solve", gl.solve, sl.solve, (A, B)),
    ("solve_vector", gl.solve, sl.solve, (A, B[:, 0])),
    ("solve_sym", lambda a, b: gl.solve(a, b, assume_a="sym"),
     lambda a, b: sl.solve(a, b, assume_a="sym"), (S, B)),
    ("solve_pos", lambda a, b: gl.solve(a, b, assume_a="pos"),
     lambda a, b: sl.solve(a, b, assume_a="pos"), (S, B)),
    ("solve_pos_vector", lambda a, b: gl.solve(a, b[:, 0], assume_a="pos", lower=True),
     lambda a, b: sl.solve(a, b[:, 0], assume_a="pos", lower=True), (S, B)),
    ("inv", gl.inv, sl.inv, (A,)),
    ("det", gl.det, sl.det, (A,)),
    ("lu", gl.lu, sl.lu, (A,)),
    ("lu_wide", gl.lu, sl.lu, (R.T,)),
    ("lu_permute_l", lambda a: gl.lu(a, permute_l=True), lambda a: sl.lu(a, permute_l=True),
     (R,)),
    ("lu_factor", gl.lu_factor, sl.lu_factor, (A,)),
    ("lu_solve", lambda a, b: gl.lu_solve(gl.lu_factor(a), b),
     lambda a, b: sl.lu_solve(sl.lu_factor(a), b), (A, B)),
    ("lu_solve_trans", lambda a, b: gl.lu_solve(gl.lu_factor(a), b[:, 1], trans=1),
     lambda a, b: sl.lu_solve(sl.lu_factor(a), b[:, 1], trans=1), (A, B)),
    ("qr", gl.qr, sl.qr, (R,)),
    ("qr_economic", lambda a: gl.qr(a, mode="economic"), lambda a: sl.qr(a, mode="economic"),
     (R,)),
    ("qr_r", lambda a: gl.qr(a, mode="r"), lambda a: sl.qr(a, mode="r"), (R.T,)),
    ("svdvals", lambda a: gl.svd(a, compute_uv=False), lambda a: sl.svd(a, compute_uv=False),
     (R,)),
    ("eigvalsh", lambda a: gl.eigh(a, eigvals_only=True), lambda a: sl.eigh(a, eigvals_only=True),
     (S,)),
    ("eigvalsh_upper", lambda a: gl.eigh(a, lower=False, eigvals_only=True),
     lambda a: sl.eigh(a, lower=False, eigvals_only=True), (S,)),  # JAX symmetrizes a
    ("eigh_tridiagonal", lambda d, e: gl.eigh_tridiagonal(d, e, eigvals_only=True),
     lambda d, e: sl.eigh_tridiagonal(d, e, eigvals_only=True), (A[0], A[1, :3])),
    ("eigh_tridiagonal_i", lambda d, e: gl.eigh_tridiagonal(d, e, eigvals_only=True,
                                                            select="i", select_range=(1, 2)),
     lambda d, e: sl.eigh_tridiagonal(d, e, True, select="i", select_range=(1, 2)),
     (A[0], A[1, :3])),
    ("polar", gl.polar, sl.polar, (R,)),
    ("polar_left_svd", lambda a: gl.polar(a, "left", method="svd"),
     lambda a: sl.polar(a, "left"), (R.T,)),
    ("expm_frechet", gl.expm_frechet, sl.expm_frechet, (A, B @ B.T)),
    ("block_diag", lambda a, b: gl.block_diag(a, b, b[:, 0], 2.0),
     lambda a, b: sl.block_diag(a, b, b[:, 0], 2.0), (A, B)),
    ("toeplitz", gl.toeplitz, sl.toeplitz, (A[0], A[1, :3])),
    ("toeplitz_c", gl.toeplitz, sl.toeplitz, (A[0],)),
    ("hankel", gl.hankel, sl.hankel, (A[0], A[1, :3])),
    ("circulant", gl.circulant, sl.circulant, (A[0],)),
    ("companion", gl.companion, sl.companion, (A[0],)),
    ("leslie", gl.leslie, sl.leslie, (A[0], A[1, :3])),
    ("fiedler", gl.fiedler, sl.fiedler, (A[0],)),
    ("convolution_matrix", lambda a: gl.convolution_matrix(a, 3, "same"),
     lambda a: sl.convolution_matrix(a, 3, "same"), (A[0],)),
]
# Scales 0.01 to 30 pick every Pade order and several squarings.
CASES += [(f"expm_{s}", gl.expm, sl.expm, (s * A,)) for s in (0.01, 0.1, 0.3, 0.7, 3.0, 30.0)]


@pytest.mark.parametrize("name,fn,ref,args", CASES, ids=[c[0] for c in CASES])
def test_values_vs_scipy(name, fn, ref, args, dtype):
    want = ref(*args)
    got = fn(*[a.astype(dtype) for a in args])
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    scale = 30.0 if name == "expm_30.0" else 1.0
    for g, w in zip(got, want):
        if np.asarray(w).dtype.kind in "iu":  # pivots
            np.testing.assert_array_equal(g, w)
            assert g.dtype == np.int32
        else:
            assert g.dtype == dtype, (g.dtype, dtype)
            allclose(g, w, tol(dtype, scale * max(1.0, float(np.max(np.abs(w))))))


def test_factorizations_reconstruct(dtype):
    a = R.astype(dtype)
    u, s, vh = gl.svd(a)
    assert (u.shape, s.shape, vh.shape) == ((4, 4), (3,), (3, 3))
    allclose(np.asarray(u)[:, :3] * np.asarray(s) @ np.asarray(vh), a, tol(dtype, 10))
    w, v = gl.eigh(S.astype(dtype))
    allclose(np.asarray(v).T @ S @ np.asarray(v), np.diag(np.asarray(w)), tol(dtype, 30))
    w, v = gl.eigh_tridiagonal(A[0].astype(dtype), A[1, :3].astype(dtype))
    t = np.diag(A[0]) + np.diag(A[1, :3], 1) + np.diag(A[1, :3], -1)
    allclose(np.asarray(v).T @ t @ np.asarray(v), np.diag(np.asarray(w)), tol(dtype, 10))


def test_default_dtypes():
    ints = np.array([[2, 1], [1, 3]])
    for out in (gl.cholesky(ints), gl.inv(ints), gl.det(ints), gl.expm(ints),
                gl.solve(ints, np.array([1, 2]), assume_a="pos"), gl.lu(ints)[2],
                gl.solve_triangular(ints, np.array([1, 2])), gl.hilbert(3)):
        assert out.dtype == np.float32
    assert gl.lu_factor(ints)[1].dtype == np.int32
    assert gl.toeplitz(np.arange(3)).dtype == gl.circulant(np.arange(3)).dtype == np.int32
    assert gl.block_diag().shape == (1, 0)
    allclose(gl.hilbert(4), sl.hilbert(4), tol(np.float32))
    np.testing.assert_array_equal(gl.hadamard(8), sl.hadamard(8))
    assert gl.hadamard(4).dtype == np.int32 and gl.helmert(4).dtype == np.float32
    allclose(gl.helmert(5, full=True), sl.helmert(5, full=True), tol(np.float32))
    for scale in (None, "sqrtn", "n"):
        w = gl.dft(5, scale)
        assert w.dtype == np.complex64
        allclose(w, sl.dft(5, scale), tol(np.complex64))


@pytest.mark.parametrize("name", ["cholesky", "cho_solve", "solve_triangular", "solve_pos",
                                  "lu_solve", "expm"])
def test_complex64(name):
    h = spd((3, 3), np.complex64, seed=7)
    b = rand((3, 2), np.complex64, seed=8)
    t = tri((3, 3), np.complex64, seed=9)
    got, want = {
        "cholesky": lambda: (gl.cholesky(h, lower=True), sl.cholesky(h, lower=True)),
        "cho_solve": lambda: (gl.cho_solve(gl.cho_factor(h), b), sl.cho_solve(sl.cho_factor(h), b)),
        "solve_triangular": lambda: (gl.solve_triangular(t, b, trans="C"),
                                     sl.solve_triangular(t, b, trans="C")),
        "solve_pos": lambda: (gl.solve(h, b, assume_a="pos"), sl.solve(h, b, assume_a="pos")),
        "lu_solve": lambda: (gl.lu_solve(gl.lu_factor(h), b, trans=2),
                             sl.lu_solve(sl.lu_factor(h), b, trans=2)),
        "expm": lambda: (gl.expm(0.3 * h), sl.expm(0.3 * h)),
    }[name]()
    assert got.dtype == np.complex64
    allclose(got, want, tol(np.complex64, 10))


# Batched inputs against a Python loop over the batch (batch axes broadcast where JAX does).
BA, BS, BU = rand((2, 3, 3), np.float64, seed=10), spd((2, 3, 3), seed=11), tri((2, 3, 3), seed=12)
BB = rand((2, 3, 2), np.float64, seed=13)
BATCHED = [
    ("cholesky", gl.cholesky, (BS,)),
    ("cho_solve", lambda a, b: gl.cho_solve(gl.cho_factor(a, lower=True), b), (BS, BB)),
    ("solve_triangular", lambda a, b: gl.solve_triangular(a, b, trans=1), (BU, BB)),
    ("solve_pos", lambda a, b: gl.solve(a, b, assume_a="pos"), (BS, BB)),
    ("lu", gl.lu, (BA,)),
    ("lu_solve", lambda a, b: gl.lu_solve(gl.lu_factor(a), b, trans=1), (BA, BB)),
    ("qr", gl.qr, (BA,)),
    ("expm", gl.expm, (np.stack([0.05 * BA[0], 20 * BA[1]]),)),
    ("polar", gl.polar, (BA,)),
    ("toeplitz", gl.toeplitz, (BA[:, 0], BA[:, 1])),
]


@pytest.mark.parametrize("name,fn,args", BATCHED, ids=[c[0] for c in BATCHED])
def test_batched_vs_loop(name, fn, args):
    args = [a.astype(np.float32) for a in args]
    got = fn(*args)
    want = [fn(*[a[i] for a in args]) for i in range(2)]
    for leaf, loop in zip(got if isinstance(got, tuple) else (got,),
                          zip(*want) if isinstance(got, tuple) else [want]):
        allclose(leaf, np.stack(loop), tol(np.float32, 10))
    vmapped = gpuarr.vmap(fn)(*args)
    for g, v in zip(got if isinstance(got, tuple) else (got,),
                    vmapped if isinstance(vmapped, tuple) else (vmapped,)):
        allclose(v, g, tol(np.float32, 10))


def test_broadcast_batches():
    b = BB[0].astype(np.float32)
    allclose(gl.solve_triangular(BU.astype(np.float32), b), np.stack([sl.solve_triangular(u, b) for u in BU]),
             tol(np.float32))
    allclose(gl.cho_solve((np.linalg.cholesky(BS[0]).astype(np.float32), True), BB),
             np.stack([sl.solve(BS[0], bb) for bb in BB]), tol(np.float32))
    with pytest.raises(ValueError):  # as in JAX, b may not have more batch axes than a
        gl.solve(BS[0], BB, assume_a="pos")
    allclose(gl.solve(BS, BB[..., 0], assume_a="pos"),
             np.stack([sl.solve(s, bb[:, 0]) for s, bb in zip(BS, BB)]), tol(np.float32))
    with pytest.warns(FutureWarning):
        x = gl.solve_triangular(BU, BB[..., 0])
    allclose(x, np.stack([sl.solve_triangular(u, bb[:, 0]) for u, bb in zip(BU, BB)]), tol(np.float32))


def test_jit():
    a, s, b = A.astype(np.float32), S.astype(np.float32), B.astype(np.float32)
    for fn, args in [(lambda a: gl.expm(a, max_squarings=8), (a,)), (gl.lu, (a,)),
                     (lambda s, b: gl.solve(s, b, assume_a="pos"), (s, b)),
                     (lambda a, b: gl.lu_solve(gl.lu_factor(a), b, trans=2), (a, b)),
                     (lambda a, b: gl.solve_triangular(a, b, trans="T"), (a, b)),
                     (lambda s, b: gl.cho_solve(gl.cho_factor(s), b), (s, b)),
                     (gl.polar, (a,)), (gl.toeplitz, (a[0], a[1]))]:
        eager, jitted = fn(*args), gpuarr.jit(fn)(*args)
        for e, j in zip(eager if isinstance(eager, tuple) else (eager,),
                        jitted if isinstance(jitted, tuple) else (jitted,)):
            allclose(j, e, tol(np.float32))


def test_expm_overflow_gives_nan():
    assert np.isnan(np.asarray(gl.expm(1e6 * A.astype(np.float32), max_squarings=4))).all()
    allclose(gl.expm(np.triu(A), upper_triangular=True), sl.expm(np.triu(A)), tol(np.float32, 10))


GRADS = [
    ("solve", lambda a, b: gl.solve(a, b), (A, B)),
    ("solve_pos", lambda a, b: gl.solve(a @ a.T + 4 * jnp.eye(4), b, assume_a="pos"), (A, B)),
    ("inv", gl.inv, (A,)),
    ("det", gl.det, (A,)),
    ("expm", gl.expm, (0.5 * A,)),
    ("expm_scaled", gl.expm, (4 * A,)),
    ("expm_frechet", lambda a, e: gl.expm_frechet(a, e, compute_expm=False), (0.3 * A, A.T)),
    ("cho_solve", lambda a, b: gl.cho_solve(gl.cho_factor(a @ a.T + 4 * jnp.eye(4)), b), (A, B)),
    ("solve_triangular", lambda a, b: gl.solve_triangular(a, b, trans=1, lower=True), (L, B)),
    ("lu_solve", lambda a, b: gl.lu_solve(gl.lu_factor(a), b), (A, B)),
    ("polar", lambda a: gl.polar(a)[1], (R,)),
]


@pytest.mark.parametrize("name,fn,args", GRADS, ids=[c[0] for c in GRADS])
def test_grads(name, fn, args):
    check_grads_x64(fn, args, order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_errors():
    square_only = [gl.cholesky, gl.inv, gl.det, gl.expm, lambda a: gl.solve(a, a[:, 0]),
                   lambda a: gl.solve(a, a[:, :1], assume_a="pos"),
                   lambda a: gl.solve_triangular(a, a[:, 0]),
                   lambda a: gl.expm_frechet(a, a)]
    for fn in square_only:
        with pytest.raises(ValueError):
            fn(R)
    with pytest.raises(ValueError):
        gl.expm(np.ones(3))
    with pytest.raises(ValueError, match="same shape"):
        gl.expm_frechet(A, BA)
    for bad in [lambda: gl.solve_triangular(U, B, trans=3),
                lambda: gl.lu_solve(gl.lu_factor(A), B, trans=3),
                lambda: gl.solve(A, B, assume_a="banded"), lambda: gl.qr(A, mode="raw"),
                lambda: gl.polar(A, side="up"), lambda: gl.polar(A, method="newton"),
                lambda: gl.block_diag(BA), lambda: gl.companion(np.ones(1)),
                lambda: gl.eigh_tridiagonal(A[0], A[1, :3], select="i"),
                lambda: gl.convolution_matrix(A[0], 0)]:
        with pytest.raises(ValueError):
            bad()
    for unsupported in [lambda: gl.eigh(S, S), lambda: gl.eigh(S, eigvals=(0, 1)),
                        lambda: gl.polar(R.T),
                        lambda: gl.eigh_tridiagonal(A[0], A[1, :3], select="v")]:
        with pytest.raises(NotImplementedError):
            unsupported()
    with pytest.raises(TypeError):
        gl.eigh_tridiagonal(np.arange(4), np.arange(3))
    with pytest.raises(TypeError):
        gl.toeplitz([1, 2, 3])


def test_namespace():
    import gpuarr.scipy
    assert gpuarr.scipy.linalg is gl
    for name in gl.__all__:
        assert callable(getattr(gl, name)), name
