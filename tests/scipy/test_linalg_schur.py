"""The Schur decomposition (gpuarr.lax.linalg.schur) and what gpuarr.scipy.linalg builds on
it: schur, rsf2csf, sqrtm, funm and solve_sylvester.

Schur forms are not unique, so the decomposition is checked by its properties against NumPy
in float64 (A = Z T Z^H, Z unitary, T (quasi) upper triangular with standardized 2x2 blocks,
the eigenvalues of A on its diagonal) and against JAX (LAPACK's gees) where the result is
determined: the order of the eigenvalues and the moduli of T's entries, which a change of
sign or phase of the Schur vectors leaves alone. The functions built on it are compared with
JAX and SciPy, eagerly, under jit and over batches.
"""
import numpy as np
import pytest
from helpers import rand

import gpuarr
import gpuarr.numpy as gnp
from gpuarr.lax import linalg as lax_linalg
from gpuarr.scipy import linalg as gl

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jsl = pytest.importorskip("jax.scipy.linalg")
sl = pytest.importorskip("scipy.linalg")

TOL = {np.float32: 5e-5, np.float64: 1e-12, np.complex64: 5e-5, np.complex128: 1e-12}


@pytest.fixture
def x64():
    """float64 in gpuarr and JAX alike."""
    old_ours, old_ref = gpuarr.config.enable_x64, bool(jax.config.jax_enable_x64)
    gpuarr.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    yield
    gpuarr.config.update("jax_enable_x64", old_ours)
    jax.config.update("jax_enable_x64", old_ref)


def check_schur_form(a, t, z):
    """A = Z T Z^H, Z unitary, T upper triangular (complex) or quasi upper triangular with
    LAPACK's standardized 2x2 blocks (real), with A's eigenvalues on its diagonal blocks."""
    dt = np.dtype(a.dtype).type
    tol = TOL[dt] * 10 * max(1, a.shape[-1])
    t, z, a = (np.asarray(x).astype(np.complex128) for x in (t, z, a))
    n = a.shape[-1]
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(z @ t @ z.conj().T, a, atol=tol * scale)
    np.testing.assert_allclose(z.conj().T @ z, np.eye(n), atol=tol)
    if np.dtype(dt).kind == "c":
        assert not np.tril(t, -1).any()
        eigs = np.diag(t)
    else:
        assert not np.tril(t, -2).any() and not t.imag.any()
        sub = np.diag(t, -1).real
        assert not (sub[1:] != 0)[sub[:-1] != 0].any(), "2x2 blocks overlap"
        eigs = np.diag(t).copy()
        for i in np.flatnonzero(sub):  # a complex pair: equal diagonal, opposite signs
            assert t[i, i] == t[i + 1, i + 1]
            assert t[i, i + 1].real * t[i + 1, i].real < 0
            w = np.sqrt(-t[i, i + 1].real * t[i + 1, i].real)
            eigs[i], eigs[i + 1] = t[i, i] + 1j * w, t[i, i] - 1j * w
    assert_same_eigenvalues(eigs, np.linalg.eigvals(a), np.sqrt(tol) * scale)


def assert_same_eigenvalues(got, want, atol):
    """Equal as multisets: each wanted eigenvalue is matched with the nearest unused one."""
    got = list(got)
    for w in want:
        i = int(np.argmin(np.abs(np.array(got) - w)))
        assert abs(got[i] - w) <= atol, (got, want)
        got.pop(i)


# ---------------------------------------------------------------- lax.linalg.schur


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (6, 6), (2, 3, 5, 5)], ids=str)
def test_schur_is_a_schur_form(x64, dtype, shape):
    a = rand(shape, dtype, seed=shape[-1])
    t, z = lax_linalg.schur(a)
    assert t.dtype == z.dtype == dtype and t.shape == z.shape == shape
    flat = a.reshape((-1,) + shape[-2:])
    for x, tt, zz in zip(flat, np.asarray(t).reshape(flat.shape), np.asarray(z).reshape(flat.shape)):
        check_schur_form(x, tt, zz)


STRUCTURED = {
    "upper": np.triu(rand((5, 5), np.float64, seed=1)),
    "lower": np.tril(rand((5, 5), np.float64, seed=2)),  # the permutation step makes it triangular
    "zeros": np.zeros((4, 4)),
    "rotation": np.array([[0.0, -1.0], [1.0, 0.0]]),
    "jordan": np.eye(5) + np.eye(5, k=1),
    "cycle": np.roll(np.eye(6), 1, axis=0),  # eigenvalues on the unit circle
    "companion": np.array([[-2.0, -3.0, -4.0, -5.0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]),
    "symmetric": (lambda x: x + x.T)(rand((6, 6), np.float64, seed=3)),
    "sparse": rand((7, 7), np.float64, seed=4) * (rand((7, 7), np.float64, seed=5) > 0.6),
    "graded": np.diag(10.0 ** np.arange(6)) @ rand((6, 6), np.float64, seed=6),
    "random": rand((12, 12), np.float64, seed=7),
    "complex": rand((9, 9), np.complex128, seed=8),
    "complex sparse": rand((7, 7), np.complex128, seed=9) * (rand((7, 7), np.float64, seed=5) > 0.6),
}


@pytest.mark.parametrize("name", sorted(STRUCTURED))
def test_schur_matches_lapack(x64, name):
    """The eigenvalues come out in LAPACK's order. Given the order, T is unique up to the
    signs (phases) of the Schur vectors, except in the rows and columns of a 2x2 block, which
    a rotation within its invariant subspace changes: where there is none, |T| equals
    LAPACK's entry by entry."""
    a = STRUCTURED[name]
    t, z = lax_linalg.schur(a)
    check_schur_form(a, t, z)
    t, want_t = np.asarray(t), np.asarray(jax.lax.linalg.schur(a)[0])
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(np.diag(t), np.diag(want_t), atol=1e-12 * scale)
    if np.iscomplexobj(a) or not np.diag(t, -1).any():
        np.testing.assert_allclose(np.abs(t), np.abs(want_t), atol=1e-11 * scale)


def test_triangular_input_is_its_own_schur_form(x64):
    a = STRUCTURED["upper"]
    t, z = lax_linalg.schur(a)
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal(np.asarray(z), np.eye(5))


def test_float32_diagonal_matches_jax():
    a = rand((3, 6, 6), np.float32, seed=10)
    t, _ = lax_linalg.schur(a)
    want, _ = jax.lax.linalg.schur(a)
    np.testing.assert_allclose(np.diagonal(np.asarray(t), axis1=-2, axis2=-1),
                               np.diagonal(np.asarray(want), axis1=-2, axis2=-1), atol=1e-5)


def test_without_schur_vectors_and_empty(x64):
    a = rand((2, 4, 4), np.float64, seed=11)
    (t,) = lax_linalg.schur(a, compute_schur_vectors=False)
    np.testing.assert_array_equal(np.asarray(t), np.asarray(lax_linalg.schur(a)[0]))
    for shape in [(0, 0), (2, 0, 0)]:
        t, z = lax_linalg.schur(np.zeros(shape, np.float32))
        assert t.shape == z.shape == shape and t.dtype == np.float32


def test_nan_input_gives_nans():
    a = np.stack([np.full((3, 3), np.nan, np.float32), rand((3, 3), np.float32)])
    t, z = lax_linalg.schur(a)
    assert np.isnan(np.asarray(t)[0]).all() and np.isnan(np.asarray(z)[0]).all()
    assert np.isfinite(np.asarray(t)[1]).all()


def test_schur_jit_vmap_and_jaxpr():
    a = rand((3, 5, 5), np.float32, seed=12)
    eager = lax_linalg.schur(a)
    for got, want in zip(gpuarr.jit(lax_linalg.schur)(a), eager):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    out = gpuarr.vmap(lax_linalg.schur, in_axes=1)(np.moveaxis(a, 0, 1))
    for i in range(3):
        for o, w in zip(out, lax_linalg.schur(a[i])):
            np.testing.assert_array_equal(np.asarray(o)[i], np.asarray(w))
    assert "schur[" in str(gpuarr.make_jaxpr(lax_linalg.schur)(a[0]))


def same_error(ours, theirs):
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(Exception) as got:
        ours()
    assert type(got.value) is type(want.value), (got.value, want.value)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("a", [np.ones((3, 4), np.float32), np.ones((3, 3), np.int32),
                               np.ones(3, np.float32), np.ones((3, 3), np.float16)],
                         ids=["not square", "integers", "vector", "float16"])
def test_schur_errors(a):
    same_error(lambda: lax_linalg.schur(a), lambda: jax.lax.linalg.schur(a))


def test_sort_and_grad_errors():
    a = rand((3, 3), np.float32)
    same_error(lambda: lax_linalg.schur(a, sort_eig_vals=True),
               lambda: jax.lax.linalg.schur(a, sort_eig_vals=True))
    same_error(lambda: gpuarr.grad(lambda x: lax_linalg.schur(x)[0].sum())(a),
               lambda: jax.grad(lambda x: jax.lax.linalg.schur(x)[0].sum())(a))
    same_error(lambda: gpuarr.grad(lambda x: gl.sqrtm(x).real.sum())(a),
               lambda: jax.grad(lambda x: jsl.sqrtm(x).real.sum())(a))


# ---------------------------------------------------------------- scipy.linalg


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
@pytest.mark.parametrize("output", ["real", "complex"])
def test_scipy_schur_dtypes(dtype, output):
    a = (rand((4, 4), np.float64, seed=13) * 3).astype(dtype)
    if dtype == np.int32 and output == "real":
        same_error(lambda: gl.schur(a, output), lambda: jsl.schur(a, output))
        return
    got, want = gl.schur(a, output), jsl.schur(a, output)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
    check_schur_form(a.astype(got[0].dtype), *got)
    same_error(lambda: gl.schur(a, "other"), lambda: jsl.schur(a, "other"))


def test_rsf2csf_matches_jax(x64):
    a = rand((2, 6, 6), np.float64, seed=14)
    t, z = (np.asarray(x) for x in jax.lax.linalg.schur(a))  # one real Schur form for both
    got, want = gl.rsf2csf(t, z), jsl.rsf2csf(t, z)
    jitted = gpuarr.jit(gl.rsf2csf)(t[0], z[0])
    for g, w, j in zip(got, want, jitted):
        assert g.dtype == w.dtype == np.complex128 and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=1e-12)
        np.testing.assert_allclose(np.asarray(j), np.asarray(w)[0], atol=1e-12)
    tc, zc = (np.asarray(x) for x in got)
    check_schur_form(a[0].astype(np.complex128), tc[0], zc[0])
    # Z's batch axes broadcast against T's.
    np.testing.assert_allclose(np.asarray(gl.rsf2csf(t, z[0])[0]), np.asarray(jsl.rsf2csf(t, z[0])[0]),
                               atol=1e-12)
    same_error(lambda: gl.rsf2csf(t[0], z[0, :5, :5]), lambda: jsl.rsf2csf(t[0], z[0, :5, :5]))
    same_error(lambda: gl.rsf2csf(t[0, :5], z[0]), lambda: jsl.rsf2csf(t[0, :5], z[0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_sqrtm(x64, dtype):
    # Eigenvalues off the negative real axis: there the branch of the square root would
    # hang on the sign of a rounding-level imaginary part.
    a = rand((5, 5), dtype, seed=15) + 4 * np.eye(5, dtype=dtype)
    got = gl.sqrtm(a)
    want = jsl.sqrtm(a)
    assert got.dtype == want.dtype and got.shape == (5, 5)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=tol)
    np.testing.assert_allclose(np.asarray(got), sl.sqrtm(a.astype(np.complex128)), atol=tol)
    np.testing.assert_allclose(np.asarray(gpuarr.jit(gl.sqrtm)(a)), np.asarray(got), atol=tol)
    # A square root of the zero matrix is zero (its recurrence never divides 0 by 0).
    np.testing.assert_array_equal(np.asarray(gl.sqrtm(np.zeros((3, 3)))), np.zeros((3, 3)))
    same_error(lambda: gl.sqrtm(a, blocksize=2), lambda: jsl.sqrtm(a, blocksize=2))


def test_funm(x64):
    a = rand((6, 6), np.float64, seed=16)
    got = gl.funm(a, gnp.exp)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(got), sl.expm(a), atol=1e-10)
    f, err = gl.funm(a, gnp.sin, disp=False)
    want_f, want_err = jsl.funm(a, jnp.sin, disp=False)
    np.testing.assert_allclose(np.asarray(f), np.asarray(want_f), atol=1e-10)
    np.testing.assert_allclose(np.asarray(err), np.asarray(want_err), rtol=1e-6)
    assert err.dtype == want_err.dtype
    jitted = gpuarr.jit(lambda x: gl.funm(x, lambda w: gnp.sin(w) + 2 * gnp.cos(w)))(a)
    want = jsl.funm(a, lambda w: jnp.sin(w) + 2 * jnp.cos(w))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(want), atol=1e-10)
    same_error(lambda: gl.funm(np.ones((2, 3, 3)), gnp.exp), lambda: jsl.funm(np.ones((2, 3, 3)), jnp.exp))


def test_funm_float32():
    a = rand((4, 4), np.float32, seed=17)
    f, err = gl.funm(a, gnp.exp, disp=False)
    want_f, want_err = jsl.funm(a, jnp.exp, disp=False)
    assert f.dtype == want_f.dtype == np.complex64 and err.dtype == want_err.dtype
    np.testing.assert_allclose(np.asarray(f), np.asarray(want_f), atol=1e-4)


def test_matrix_functions_under_vmap():
    a = rand((3, 4, 4), np.float32, seed=25) + 3 * np.eye(4, dtype=np.float32)
    got = gpuarr.jit(gpuarr.vmap(gl.sqrtm))(a)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.vmap(jsl.sqrtm)(a)), atol=1e-5)
    got = gpuarr.vmap(lambda x: gl.funm(x, gnp.exp))(a)
    want = np.stack([sl.expm(x.astype(np.float64)) for x in a])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester(x64, method):
    a, b = rand((2, 4, 4), np.float64, seed=18), rand((3, 3), np.float64, seed=19)
    c = rand((4, 3), np.float64, seed=20)
    got = gl.solve_sylvester(a, b, c, method=method)
    want = jsl.solve_sylvester(a, b, c, method=method)
    assert got.dtype == want.dtype == np.float64 and got.shape == (2, 4, 3)
    for i in range(2):
        np.testing.assert_allclose(np.asarray(got)[i], sl.solve_sylvester(a[i], b, c), atol=1e-10)
    jitted = gpuarr.jit(lambda a, b, c: gl.solve_sylvester(a, b, c, method=method))(a[0], b, c)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(got)[0], atol=1e-12)


def test_solve_sylvester_complex_float32_and_errors():
    a, b, c = (rand(s, np.complex64, seed=21 + i) for i, s in enumerate([(3, 3), (2, 2), (3, 2)]))
    got, want = gl.solve_sylvester(a, b, c), jsl.solve_sylvester(a, b, c)
    assert got.dtype == want.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-4)
    # A and -A share eigenvalues: no unique solution, NaNs as in JAX.
    assert np.isnan(np.asarray(gl.solve_sylvester(np.eye(2), -np.eye(2), np.eye(2)))).all()
    same_error(lambda: gl.solve_sylvester(a, a, c), lambda: jsl.solve_sylvester(a, a, c))
    same_error(lambda: gl.solve_sylvester(a, b, c, method="other"),
               lambda: jsl.solve_sylvester(a, b, c, method="other"))
