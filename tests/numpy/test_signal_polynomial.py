"""convolve/correlate, matvec/vecmat, lax.linalg.eig with jnp.linalg.eig/eigvals, roots and
polyfit: values, shapes and dtypes against NumPy (float64 references), gradients by finite
differences, vmap against a Python loop, jit against eager, and the error cases."""
import numpy as np
import pytest
from helpers import check_grads_x64
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.errors import ConcretizationTypeError

MODES = ("full", "same", "valid")


def rng(seed=0):
    return np.random.default_rng(seed)


def sample(shape, dtype, seed=0):
    r = rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return r.uniform(size=shape) > 0.5
    if dtype.kind in "iu":
        return r.integers(-4, 5, shape).astype(dtype)
    if dtype.kind == "c":
        return (r.normal(size=shape) + 1j * r.normal(size=shape)).astype(dtype)
    return r.normal(size=shape).astype(dtype)


def assert_same_values(got, want, atol):
    """Equal as multisets (eigenvalues and roots come in no particular order)."""
    got, want = list(np.ravel(got)), list(np.ravel(want))
    assert len(got) == len(want)
    for w in want:
        dist = [abs(g - w) if not np.isnan(g) else np.inf for g in got]
        i = int(np.argmin(dist)) if got else -1
        assert dist[i] <= atol * max(1.0, abs(w)), (got, want)
        got.pop(i)


def tol(dtype):
    return 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


# ---------------------------------------------------------------- convolve / correlate


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), m=st.integers(1, 8), mode=st.sampled_from(MODES),
       op=st.sampled_from(["convolve", "correlate"]),
       dtype=st.sampled_from([np.float32, np.int32, np.complex64, np.bool_]))
def test_convolve_correlate_match_numpy(n, m, mode, op, dtype):
    a, v = sample((n,), dtype, 1), sample((m,), dtype, 2)
    out = getattr(jnp, op)(a, v, mode=mode)
    want = getattr(np, op)(a.astype(np.complex128 if dtype == np.complex64 else np.float64),
                           v.astype(np.complex128 if dtype == np.complex64 else np.float64),
                           mode=mode)
    assert out.shape == want.shape
    assert out.dtype == (np.complex64 if dtype == np.complex64 else np.float32)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


def test_default_modes_follow_jax():
    a, v = np.arange(5.0), np.array([1.0, 2.0, 0.5])
    assert jnp.convolve(a, v).shape == (7,)  # 'full'
    assert jnp.correlate(a, v).shape == (3,)  # 'valid'


def test_float64_under_x64():
    a, v = sample((6,), np.float64), sample((4,), np.float64, 1)
    with gpuarr.enable_x64():
        out = jnp.convolve(a, v, mode="same")
    assert out.dtype == np.float64
    np.testing.assert_allclose(np.asarray(out), np.convolve(a, v, mode="same"), rtol=1e-13)


def test_preferred_element_type_keeps_integers_exact():
    a, v = np.arange(6, dtype=np.int32), np.array([3, -1, 2], np.int32)
    out = jnp.convolve(a, v, preferred_element_type=np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), np.convolve(a, v))
    out = jnp.correlate(a, v, mode="full", preferred_element_type=np.int32)
    np.testing.assert_array_equal(np.asarray(out), np.correlate(a, v, mode="full"))


def test_correlate_conjugates_the_second_argument():
    a = np.array([3 + 1j, 2, 2 - 3j], np.complex64)
    v = np.array([4, 2 - 5j, 1], np.complex64)
    np.testing.assert_allclose(np.asarray(jnp.correlate(a, v, mode="full")),
                               [3 + 1j, 3 + 17j, 18 + 11j, 27 + 4j, 8 - 12j], rtol=1e-6)


def test_dtypes_match_jax():
    jax = pytest.importorskip("jax")
    for dt in (np.int8, np.int32, np.float16, np.float32, np.complex64, np.bool_):
        a, v = sample((5,), dt), sample((3,), dt, 1)
        for op in ("convolve", "correlate"):
            assert getattr(jnp, op)(a, v).dtype == getattr(jax.numpy, op)(a, v).dtype, (op, dt)


@pytest.mark.parametrize("args, kwargs, err, match", [
    ((np.ones((2, 2)), np.ones(3)), {}, ValueError, "only support 1-dimensional inputs"),
    ((np.ones(0), np.ones(3)), {}, ValueError, "inputs cannot be empty"),
    ((np.ones(3), np.ones(3)), {"mode": "middle"}, ValueError, "mode must be one of"),
    (([1.0, 2.0], np.ones(3)), {}, TypeError, "requires ndarray or scalar arguments"),
])
def test_convolve_errors(args, kwargs, err, match):
    with pytest.raises(err, match=match):
        jnp.convolve(*args, **kwargs)
    with pytest.raises(err, match=match.replace("convolve", "correlate")):
        jnp.correlate(*args, **kwargs)


@pytest.mark.parametrize("mode", MODES)
def test_convolve_correlate_gradients(mode):
    a, v = sample((6,), np.float64), sample((3,), np.float64, 1)
    check_grads_x64(lambda x, y: jnp.convolve(x, y, mode=mode), (a, v), order=2)
    check_grads_x64(lambda x, y: jnp.correlate(x, y, mode=mode), (v, a), order=2)


def test_convolve_vmap_and_jit_match_loop():
    xs, k = sample((4, 7), np.float32), sample((3,), np.float32, 1)
    out = gpuarr.vmap(lambda x: jnp.convolve(x, k, mode="same"))(xs)
    loop = np.stack([np.asarray(jnp.convolve(x, k, mode="same")) for x in xs])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-6)
    ks = sample((4, 3), np.float32, 2)
    out = gpuarr.vmap(jnp.correlate, in_axes=(0, 0))(xs, ks)
    loop = np.stack([np.asarray(jnp.correlate(x, kk)) for x, kk in zip(xs, ks)])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-6)
    jitted = gpuarr.jit(jnp.convolve, static_argnames="mode")
    np.testing.assert_allclose(np.asarray(jitted(xs[0], k, mode="valid")),
                               np.asarray(jnp.convolve(xs[0], k, mode="valid")), rtol=1e-6)


# ---------------------------------------------------------------- matvec / vecmat


@pytest.mark.parametrize("s1, s2", [((2, 3), (3,)), ((4, 2, 3), (3,)), ((2, 3), (5, 3)),
                                    ((4, 1, 2, 3), (5, 3)), ((1, 3, 2), (4, 2))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
def test_matvec_matches_numpy(s1, s2, dtype):
    x1, x2 = sample(s1, dtype), sample(s2, dtype, 1)
    out = jnp.matvec(x1, x2)
    want = np.matvec(x1, x2)
    assert out.shape == want.shape and out.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(out), want, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("s1, s2", [((3,), (3, 2)), ((4, 3), (3, 2)), ((3,), (5, 3, 2)),
                                    ((4, 1, 3), (5, 3, 2))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
def test_vecmat_matches_numpy(s1, s2, dtype):
    x1, x2 = sample(s1, dtype), sample(s2, dtype, 1)
    out = jnp.vecmat(x1, x2)
    want = np.vecmat(x1, x2)  # conjugates x1
    assert out.shape == want.shape and out.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(out), want, rtol=tol(dtype), atol=tol(dtype))


def test_matvec_vecmat_errors():
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        jnp.matvec(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'm'"):
        jnp.matvec(np.ones((2, 3)), np.ones(4))
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
        jnp.vecmat(np.ones(3), np.ones((4, 2)))
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        jnp.matvec(np.ones((2, 2, 3)), np.ones((3, 3)))


def test_matvec_vecmat_gradients_and_vmap():
    a, x = sample((2, 3, 4), np.float64), sample((4,), np.float64, 1)
    check_grads_x64(jnp.matvec, (a, x), order=1)
    check_grads_x64(jnp.vecmat, (sample((3,), np.float64), a), order=1)
    xs = sample((5, 4), np.float32)
    out = gpuarr.vmap(jnp.matvec, in_axes=(None, 0))(a[0].astype(np.float32), xs)
    loop = np.stack([np.asarray(jnp.matvec(a[0].astype(np.float32), x)) for x in xs])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-6)


# ---------------------------------------------------------------- eig


def _check_decomposition(a, w, vl, vr, rtol):
    a = a.astype(np.complex128)
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], atol=rtol * scale * 10)
    vlh = np.conj(np.swapaxes(vl, -1, -2))
    np.testing.assert_allclose(vlh @ a, w[..., :, None] * vlh, atol=rtol * scale * 10)
    np.testing.assert_allclose(np.linalg.norm(vr, axis=-2), 1, rtol=rtol * 10)
    np.testing.assert_allclose(np.linalg.norm(vl, axis=-2), 1, rtol=rtol * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(4, 4), (3, 2, 2), (1, 1)])
def test_eig_decomposes(dtype, shape):
    a = sample(shape, dtype)
    with gpuarr.enable_x64():
        w, vl, vr = lax.linalg.eig(a)
    want = np.complex128 if np.dtype(dtype).itemsize * (2 if dtype in (np.float32, np.float64)
                                                        else 1) == 16 else np.complex64
    assert w.dtype == vl.dtype == vr.dtype == want
    assert w.shape == shape[:-1] and vl.shape == vr.shape == shape
    _check_decomposition(a, np.asarray(w), np.asarray(vl), np.asarray(vr), tol(want))
    assert_same_values(np.asarray(w), np.linalg.eigvals(a.astype(np.complex128)), tol(want) * 10)


def test_eig_output_selection_and_jaxpr():
    a = sample((3, 3), np.float32)
    assert len(lax.linalg.eig(a, compute_left_eigenvectors=False)) == 2
    assert len(lax.linalg.eig(a, compute_right_eigenvectors=False)) == 2
    (w,) = lax.linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    assert w.shape == (3,) and w.dtype == np.complex64
    text = str(gpuarr.make_jaxpr(lambda x: lax.linalg.eig(x, compute_left_eigenvectors=False))(a))
    # Too long for one line: one parameter a line, sorted by name (as JAX prints them).
    assert ("eig[\n      compute_left_eigenvectors=False\n      compute_right_eigenvectors=True\n"
            in text)
    assert "c64[3,3]" in text


def test_eig_implementation_argument():
    a = sample((2, 2), np.float32)
    (w,) = lax.linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False,
                          implementation=lax.linalg.EigImplementation.LAPACK)
    with pytest.warns(DeprecationWarning, match="use_magma is deprecated"):
        (w2,) = lax.linalg.eig(a, compute_left_eigenvectors=False,
                               compute_right_eigenvectors=False, use_magma=False)
    np.testing.assert_array_equal(np.asarray(w), np.asarray(w2))


def test_jnp_linalg_eig_and_eigvals():
    a = np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)
    w, v = jnp.linalg.eig(a)
    assert isinstance(jnp.linalg.eig(a), jnp.linalg.EigResult)
    np.testing.assert_allclose(np.asarray(w), [3, -1], atol=1e-6)
    np.testing.assert_allclose(np.abs(np.asarray(v)), np.full((2, 2), np.sqrt(0.5)), atol=1e-6)
    rot = np.array([[0, 1], [-1, 0]], np.int32)  # integers promote; eigenvalues +-i
    wr = jnp.linalg.eigvals(rot)
    assert wr.dtype == np.complex64
    assert_same_values(np.asarray(wr), [-1j, 1j], 1e-6)


def test_eig_jit_and_vmap_match_loop():
    a = sample((4, 3, 3), np.float32)
    f = gpuarr.jit(lambda x: lax.linalg.eig(x, compute_left_eigenvectors=False))
    for got, want in zip(f(a), lax.linalg.eig(a, compute_left_eigenvectors=False)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    b = sample((3, 3, 4), np.float32, 1)
    out = gpuarr.vmap(jnp.linalg.eigvals, in_axes=2)(b)
    loop = np.stack([np.asarray(jnp.linalg.eigvals(b[:, :, i])) for i in range(4)])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-6)


def test_eig_of_nonfinite_matrix_is_nan():
    a = np.stack([np.eye(2), np.full((2, 2), np.nan)]).astype(np.float32)
    w = np.asarray(jnp.linalg.eigvals(a))
    assert_same_values(w[0], [1, 1], 1e-6)
    assert np.isnan(w[1]).all()


@pytest.mark.parametrize("x, err, match", [
    (np.ones((2, 3), np.float32), ValueError, "must be a square matrix"),
    (np.ones(3, np.float32), TypeError, "must have rank at least 2"),
    (np.ones((2, 2), np.int32), TypeError, "does not accept dtype int32"),
])
def test_eig_errors(x, err, match):
    with pytest.raises(err, match=match):
        lax.linalg.eig(x)
    with pytest.raises(err, match=match):
        gpuarr.jit(lax.linalg.eig)(x)


def test_eigvals_gradient_by_finite_differences():
    a = sample((4, 4), np.float64)

    def f(x):  # a smooth function of the eigenvalues that does not depend on their order
        w = jnp.linalg.eigvals(x)
        return jnp.real(jnp.sum(w * w * w)) + jnp.imag(jnp.sum(jnp.exp(w) * (1 + 2j)))

    check_grads_x64(f, (a,), order=1)
    b = sample((3, 3), np.complex128, 3)
    check_grads_x64(lambda x: jnp.real(jnp.sum(jnp.linalg.eigvals(x) ** 3)), (b,), order=1,
                modes=("fwd",))


def test_complex_eig_gradients_match_jax():
    jax = pytest.importorskip("jax")
    b = sample((3, 3), np.complex64, 3)
    weights = np.arange(1, 10).reshape(3, 3)

    def f(np_, lx):
        def fun(x):
            w, vr = lx.linalg.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
            return np_.real(np_.sum(w ** 3)) + np_.imag(np_.sum(vr * weights))
        return fun

    ours = gpuarr.grad(f(jnp, lax))(b)
    theirs = jax.grad(f(jax.numpy, jax.lax))(b)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-3, atol=1e-3)


def test_eigvals_jvp_matches_jax():
    jax = pytest.importorskip("jax")
    a, t = sample((4, 4), np.float32), sample((4, 4), np.float32, 1)

    def f(lx):
        return lambda x: lx.linalg.eig(x, compute_left_eigenvectors=False,
                                       compute_right_eigenvectors=False)[0]

    _, ours = gpuarr.jvp(f(lax), (a,), (t,))
    _, theirs = jax.jvp(f(jax.lax), (a,), (t,))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-4, atol=2e-4)


def test_eigenvector_derivatives_need_opt_in():
    a = sample((3, 3), np.float32)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True"):
        gpuarr.jvp(lambda x: lax.linalg.eig(x, compute_left_eigenvectors=False), (a,), (a,))
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True"):
        gpuarr.grad(lambda x: jnp.real(jnp.linalg.eig(x)[1]).sum())(a)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigenvector_derivatives_with_opt_in(dtype):
    a = sample((3, 3), dtype, 5)
    check_grads_x64(lambda x: lax.linalg.eig(x, enable_eigvec_derivs=True), (a,), order=1,
                modes=("fwd",))
    if dtype == np.float64:  # (reverse mode of complex inputs: test_complex_eig_gradients...)
        check_grads_x64(lambda x: jnp.real(lax.linalg.eig(x, enable_eigvec_derivs=True)[2]
                                       * np.arange(1, 10).reshape(3, 3)).sum(), (a,), order=1)


def test_eigenvector_derivatives_of_a_batch_match_each_matrix():
    a, da = sample((2, 3, 3), np.float64, 6), sample((2, 3, 3), np.float64, 7)
    eig = lambda x: lax.linalg.eig(x, enable_eigvec_derivs=True)  # noqa: E731
    _, batched = gpuarr.jvp(eig, (a,), (da,))
    # The NumPy backend computes a batch matrix by matrix, bit for bit; on kernel platforms the
    # batched products and reductions round differently (an ulp of complex64), so JAX's own
    # default tolerance for complex64 (public_test_util: 1e-6) applies there.
    rtol, atol = (1e-10, 0) if gpuarr.default_backend() == "cpu" else (1e-6, 1e-6)
    for i in range(2):
        _, single = gpuarr.jvp(eig, (a[i],), (da[i],))
        for got, want in zip(batched, single):
            np.testing.assert_allclose(np.asarray(got)[i], np.asarray(want), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- roots


@pytest.mark.parametrize("p", [[1.0, -3.0, 2.0], [0.0, 0.0, 1.0, 2.0], [1.0, 0.0, 0.0],
                               [0.0, 0.0, 0.0], [2.0], [0.0, 0.0, 1.0, 0.0, -1.0],
                               [1, 2, 3, 4, 5]])
def test_roots_match_numpy(p):
    p = np.array(p)
    out = jnp.roots(p)
    want = np.roots(p)
    assert out.dtype == np.complex64 and out.shape == want.shape
    assert_same_values(np.asarray(out), want, 1e-4)


def test_roots_without_stripping_and_under_jit():
    p = np.array([0.0, 0.0, 1.0, 2.0], np.float32)
    expected = [-2.0, np.nan + 1j * np.nan, np.nan + 1j * np.nan]
    np.testing.assert_allclose(np.asarray(jnp.roots(p, strip_zeros=False)), expected)
    f = gpuarr.jit(lambda q: jnp.roots(q, strip_zeros=False))
    np.testing.assert_allclose(np.asarray(f(p)), expected)
    assert np.isnan(np.asarray(f(np.zeros(3, np.float32)))).all()
    with pytest.raises(ConcretizationTypeError, match="pass strip_zeros=False"):
        gpuarr.jit(jnp.roots)(p)


def test_roots_errors_and_scalars():
    with pytest.raises(ValueError, match="Input must be a rank-1 array"):
        jnp.roots(np.ones((2, 2)))
    assert jnp.roots(3.0).shape == (0,) and jnp.roots(3.0).dtype == np.complex64
    with gpuarr.enable_x64():
        assert jnp.roots(np.array([1.0, -1.0])).dtype == np.complex128


def test_roots_vmap_matches_loop():
    ps = sample((3, 4), np.float32)
    out = gpuarr.vmap(lambda p: jnp.roots(p, strip_zeros=False))(ps)
    loop = np.stack([np.asarray(jnp.roots(p)) for p in ps])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-5)


# ---------------------------------------------------------------- polyfit


def _data(k=None):
    x = np.linspace(-1, 2, 12)
    noise = rng(4).normal(size=(12,) if k is None else (12, k)) * 0.1
    base = 1 - 2 * x + 0.5 * x ** 2
    y = (base if k is None else base[:, None] * np.arange(1, k + 1)) + noise
    return x, y


@pytest.mark.parametrize("k", [None, 3])
@pytest.mark.parametrize("deg", [0, 1, 2, 4])
def test_polyfit_matches_numpy(k, deg):
    x, y = _data(k)
    with gpuarr.enable_x64():
        out = jnp.polyfit(x, y, deg)
        w = np.abs(np.cos(x)) + 0.1
        weighted = jnp.polyfit(x, y, deg, w=w)
    assert out.shape == np.polyfit(x, y, deg).shape and out.dtype == np.float64
    np.testing.assert_allclose(np.asarray(out), np.polyfit(x, y, deg), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(weighted), np.polyfit(x, y, deg, w=w), rtol=1e-9,
                               atol=1e-10)


@pytest.mark.parametrize("k", [None, 2])
def test_polyfit_full_and_cov_match_numpy(k):
    x, y = _data(k)
    with gpuarr.enable_x64():
        p, resid, rank, s, rcond = jnp.polyfit(x, y, 2, full=True)
        _, cov = jnp.polyfit(x, y, 2, cov=True)
        _, unscaled = jnp.polyfit(x, y, 2, cov="unscaled")
    np_p, np_resid, np_rank, np_s, np_rcond = np.polyfit(x, y, 2, full=True)
    np.testing.assert_allclose(np.asarray(p), np_p, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(resid), np_resid, rtol=1e-7)
    assert int(rank) == np_rank and rank.dtype == np.int64  # the default int under x64
    np.testing.assert_allclose(np.asarray(s), np_s, rtol=1e-9)
    assert float(rcond) == pytest.approx(np_rcond)
    np.testing.assert_allclose(np.asarray(cov), np.polyfit(x, y, 2, cov=True)[1], rtol=1e-7)
    np.testing.assert_allclose(np.asarray(unscaled),
                               np.polyfit(x, y, 2, cov="unscaled")[1], rtol=1e-7)


def test_polyfit_float32_dtype_and_jax_shapes():
    jax = pytest.importorskip("jax")
    x, y = _data(3)
    x, y = x.astype(np.float32), y.astype(np.float32)
    for kw in ({}, {"full": True}, {"cov": True}):
        ours = jnp.polyfit(x, y, 2, **kw)
        theirs = jax.numpy.polyfit(x, y, 2, **kw)
        ours, theirs = (ours, theirs) if isinstance(ours, tuple) else ((ours,), (theirs,))
        for o, t in zip(ours, theirs):
            assert o.shape == t.shape and o.dtype == t.dtype, kw
            np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-3, atol=1e-4)


def test_polyfit_gradient_and_jit():
    x, y = _data()
    check_grads_x64(lambda yy: jnp.polyfit(x, yy, 2), (y,), order=1)
    check_grads_x64(lambda xx: jnp.polyfit(xx, y, 2), (x,), order=1, atol=1e-4, rtol=1e-4)
    f = gpuarr.jit(jnp.polyfit, static_argnames=("deg",))
    np.testing.assert_allclose(np.asarray(f(x, y, deg=2)), np.asarray(jnp.polyfit(x, y, 2)),
                               rtol=1e-5)


def test_polyfit_vmap_matches_loop():
    x, y = _data(4)
    ys = y.T.astype(np.float32)
    out = gpuarr.vmap(lambda yy: jnp.polyfit(x.astype(np.float32), yy, 2))(ys)
    loop = np.stack([np.asarray(jnp.polyfit(x.astype(np.float32), yy, 2)) for yy in ys])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("args, kwargs, err, match", [
    ((np.ones(3), np.ones(3), -1), {}, ValueError, "expected deg >= 0"),
    ((np.ones((3, 1)), np.ones(3), 1), {}, TypeError, "expected 1D vector for x"),
    ((np.ones(0), np.ones(0), 1), {}, TypeError, "expected non-empty vector for x"),
    ((np.ones(3), np.ones((3, 1, 1)), 1), {}, TypeError, "expected 1D or 2D array for y"),
    ((np.ones(3), np.ones(4), 1), {}, TypeError, "expected x and y to have same length"),
    ((np.ones(3), np.ones(3), 1), {"w": np.ones((3, 1))}, TypeError, "expected a 1-d array"),
    ((np.ones(3), np.ones(3), 1), {"w": np.ones(4)}, TypeError, "w and y to have the same"),
    ((np.arange(3.0), np.ones(3), 2), {"cov": True}, ValueError, "must exceed order"),
])
def test_polyfit_errors(args, kwargs, err, match):
    with pytest.raises(err, match=match):
        jnp.polyfit(*args, **kwargs)
