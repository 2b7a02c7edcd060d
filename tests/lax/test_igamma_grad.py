"""lax.igamma_grad_a (dP(a, x)/da) and the derivatives built on it: grad of igamma / igammac in
a, lax.random_gamma_grad and the gamma sampler's gradient. Values against JAX in float32 and
float64, against a finite difference of the float64 regularized gamma function, special
values, dtypes, shapes and vmap."""
import contextlib
import functools

import numpy as np
import pytest

import gpuarr
from gpuarr import lax, random
from gpuarr.lax.special_extra import regularized_gamma

jax = pytest.importorskip("jax")

# a in [0.01, 100] and x in [0, 200], dense where the series and the continued fraction meet.
_A = np.concatenate([np.geomspace(0.01, 100, 41), [0.5, 1, 2, 10, 50]])
_X = np.concatenate([[0.0], np.geomspace(1e-3, 200, 47), [0.5, 1, 2, 10, 50, 51, 100]])
A, X = (v.ravel() for v in np.meshgrid(_A, _X, indexing="ij"))

# (relative, absolute) tolerances against JAX: float64 agrees to rounding; JAX's float32 loops
# stop at float32 precision (about 1e-5 relative near x = a), ours round a float64 result.
TOL = {np.float32: (1e-4, 1e-6), np.float64: (1e-11, 1e-13)}


@contextlib.contextmanager
def _in_both(dtype):
    """The x64 setting for `dtype`, in gpuarr and JAX alike."""
    with gpuarr.enable_x64(dtype == np.float64), jax.enable_x64(dtype == np.float64):
        yield


@functools.cache
def _jax_on_grid(dtype):
    """JAX's igamma_grad_a, grad of igamma and igammac in a, and random_gamma_grad on the grid
    (one compiled program: compiling JAX's loops dominates the time of these tests)."""
    def refs(a, x):
        return {"igamma_grad_a": jax.lax.igamma_grad_a(a, x),
                "igamma": jax.vmap(jax.grad(jax.lax.igamma, 0))(a, x),
                "igammac": jax.vmap(jax.grad(jax.lax.igammac, 0))(a, x),
                "random_gamma_grad": jax.lax.random_gamma_grad(a, x)}
    with jax.enable_x64(dtype == np.float64):
        return jax.jit(refs)(A.astype(dtype), X.astype(dtype))


def _check(ours, theirs, dtype):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype == dtype
    assert ours.shape == theirs.shape
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- against JAX


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_igamma_grad_a_matches_jax(dtype):
    a, x = A.astype(dtype), X.astype(dtype)
    theirs = _jax_on_grid(dtype)["igamma_grad_a"]
    with gpuarr.enable_x64(dtype == np.float64):
        _check(lax.igamma_grad_a(a, x), theirs, dtype)
        grid = (a.reshape(len(_A), -1), x.reshape(len(_A), -1))
        _check(lax.igamma_grad_a(*grid), np.asarray(theirs).reshape(len(_A), -1), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_grad_in_a_matches_jax(name, dtype):
    a, x = A.astype(dtype), X.astype(dtype)
    theirs = _jax_on_grid(dtype)[name]
    with gpuarr.enable_x64(dtype == np.float64):
        ours = gpuarr.vmap(gpuarr.grad(getattr(lax, name), 0))(a, x)
        _check(ours, theirs, dtype)
        # Reverse mode through a reduction, and forward mode, give the same derivatives.
        ours = gpuarr.grad(lambda a: getattr(lax, name)(a, x).sum())(a)
        _check(ours, theirs, dtype)
        _, ours = gpuarr.jvp(lambda a: getattr(lax, name)(a, x), (a,), (np.ones_like(a),))
        _check(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_gamma_grad_matches_jax(dtype):
    a, x = A.astype(dtype), X.astype(dtype)
    with gpuarr.enable_x64(dtype == np.float64):
        _check(lax.random_gamma_grad(a, x), _jax_on_grid(dtype)["random_gamma_grad"], dtype)


def test_float64_matches_jax_beyond_the_grid():
    # Large shapes (the series needs many terms near x = a), tiny ones and far tails, where
    # x^a e^-x / Gamma(a) underflows and JAX keeps the first term of the series or fraction.
    a, x = (v.ravel() for v in np.meshgrid(np.geomspace(1e-6, 1e5, 23),
                                           np.geomspace(1e-10, 1e6, 29), indexing="ij"))
    with _in_both(np.float64):
        theirs = jax.jit(lambda a, x: (jax.lax.igamma_grad_a(a, x),
                                       jax.lax.random_gamma_grad(a, x)))(a, x)
        _check(lax.igamma_grad_a(a, x), theirs[0], np.float64)
        _check(lax.random_gamma_grad(a, x), theirs[1], np.float64)


# ---------------------------------------------------------------- an independent oracle


def _finite_difference(a, x):
    """dP/da by the eighth-order central difference of the float64 P, with steps that keep
    a - 4h > 0, and the rounding error of the quotient (P <= 1 is rounded to about eps)."""
    h = np.minimum(1e-3 * np.minimum(a, 1.0), a / 5)
    weights = ((1, 4 / 5), (2, -1 / 5), (3, 4 / 105), (4, -1 / 280))
    total = sum(w * (regularized_gamma(a + k * h, x, False) - regularized_gamma(a - k * h, x, False))
                for k, w in weights)
    return total / h, 4 * np.finfo(np.float64).eps / h


def test_float64_matches_finite_differences():
    want, noise = _finite_difference(A, X)
    with gpuarr.enable_x64():
        out = lax.igamma_grad_a(A, X)
        grad_q = gpuarr.vmap(gpuarr.grad(lax.igammac, 0))(A, X)
    assert out.dtype == grad_q.dtype == np.float64
    for got in (np.asarray(out), -np.asarray(grad_q)):
        err = np.abs(got - want)
        assert (err <= 1e-9 * np.abs(want) + noise).all(), (err / (np.abs(want) + noise)).max()


def test_float32_is_float64_rounded():
    a, x = A.astype(np.float32), X.astype(np.float32)
    with gpuarr.enable_x64():
        want = np.asarray(lax.igamma_grad_a(a.astype(np.float64), x.astype(np.float64)))
    out = np.asarray(lax.igamma_grad_a(a, x))
    # Below float32's smallest normal JAX keeps the first term of the series (its working
    # precision underflows), and so does the float32 evaluation.
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=0, atol=np.finfo(np.float32).tiny)
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    np.testing.assert_array_equal(out[normal], want[normal].astype(np.float32))


# ---------------------------------------------------------------- special values, dtypes, shapes

NAN, INF = np.nan, np.inf
# a <= 0, x < 0 and NaN give NaN; x = 0 gives 0 (for a > 0); infinite a or x give NaN, as in
# JAX; where x^a e^-x / Gamma(a) underflows the derivative is 0.
EDGE_A = [0.0, -1.0, 1.0, 1.0, 1.0, 2.0, NAN, 2.0, 0.0, INF, INF, 2.0, 50.0, 3.0]
EDGE_X = [1.0, 1.0, -1.0, 0.0, INF, NAN, 1.0, 1e-30, 0.0, 1.0, INF, -INF, 1e4, 1e3]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values_match_jax(dtype):
    a, x = np.array(EDGE_A, dtype), np.array(EDGE_X, dtype)
    with _in_both(dtype):
        theirs = jax.jit(lambda a, x: (jax.lax.igamma_grad_a(a, x),
                                       jax.lax.random_gamma_grad(a, x)))(a, x)
        for ours, want in zip((lax.igamma_grad_a(a, x), lax.random_gamma_grad(a, x)), theirs):
            assert ours.dtype == want.dtype == dtype
            np.testing.assert_allclose(np.asarray(ours), np.asarray(want), rtol=1e-6)
    out = np.asarray(lax.igamma_grad_a(a, x))
    assert np.isnan(out[[0, 1, 2, 4, 5, 6, 8, 9, 10, 11]]).all()
    assert (out[[3, 12, 13]] == 0).all()


def test_dtypes_shapes_and_weak_types():
    f32 = np.float32
    out = lax.igamma_grad_a(2.0, 1.0)
    theirs = jax.eval_shape(jax.lax.igamma_grad_a, 2.0, 1.0)
    assert out.dtype == theirs.dtype == f32
    assert gpuarr.typeof(out).weak_type and theirs.weak_type
    # A Python scalar takes the array's dtype; size-1 dimensions broadcast.
    for a, x in [(2.5, np.full((2, 3), 1.5, f32)), (np.full((1, 3), 2.5, f32), np.full((2, 3), 1.5, f32))]:
        ours, theirs = lax.igamma_grad_a(a, x), jax.eval_shape(jax.lax.igamma_grad_a, a, x)
        assert ours.shape == theirs.shape == (2, 3) and ours.dtype == theirs.dtype == f32
        # a literal from JAX 0.10.2
        np.testing.assert_allclose(np.asarray(ours), np.full((2, 3), -0.25217527), rtol=1e-6)
    with gpuarr.enable_x64():
        assert lax.igamma_grad_a(np.float64(2), np.float64(1)).dtype == np.float64
        with pytest.raises(TypeError):
            lax.igamma_grad_a(np.ones(2, f32), np.ones(2, np.float64))
    with pytest.raises(TypeError):
        lax.igamma_grad_a(np.int32(1), np.int32(2))
    with pytest.raises(TypeError, match="must have the same number of dimensions"):
        lax.igamma_grad_a(np.ones(3, f32), np.ones((2, 3), f32))
    # float16 is computed in float64 and rounded, as the other special functions.
    h = lax.igamma_grad_a(np.float16(2.5), np.float16(1.5))
    assert h.dtype == np.float16
    np.testing.assert_allclose(float(h), -0.25217527, rtol=1e-3)


def test_jit_and_jaxpr():
    a, x = np.float32([0.5, 2.5, 40.0]), np.float32([0.3, 1.5, 45.0])
    ours = gpuarr.jit(gpuarr.grad(lambda a: lax.igamma(a, x).sum()))(a)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(lax.igamma_grad_a(a, x)))
    assert ours.dtype == np.float32
    jaxpr = str(gpuarr.make_jaxpr(gpuarr.grad(lax.igamma))(2.5, 1.5))
    assert "igamma_grad_a" in jaxpr and "pure_callback" not in jaxpr


# ---------------------------------------------------------------- vmap


def test_vmap_matches_a_loop():
    rng = np.random.default_rng(0)
    a = rng.uniform(0.1, 20, (4, 5)).astype(np.float32)
    x = rng.uniform(0.0, 30, (4, 5)).astype(np.float32)
    loop = np.stack([np.asarray(lax.igamma_grad_a(a[i], x[i])) for i in range(4)])
    for fn in (gpuarr.vmap(lax.igamma_grad_a), gpuarr.jit(gpuarr.vmap(lax.igamma_grad_a))):
        out = fn(a, x)
        assert out.shape == (4, 5) and out.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(out), loop)
    out = gpuarr.vmap(lax.igamma_grad_a, in_axes=(1, 1), out_axes=1)(a, x)
    np.testing.assert_array_equal(np.asarray(out), loop)
    # One operand unbatched, and a vmap of the gradient.
    out = gpuarr.vmap(lax.igamma_grad_a, in_axes=(None, 0))(a[0], x)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(lax.igamma_grad_a(a[:1] + 0 * x, x)))
    ours = gpuarr.vmap(gpuarr.vmap(gpuarr.grad(lax.igammac, 0)))(a, x)
    np.testing.assert_array_equal(np.asarray(ours), -loop)


# ---------------------------------------------------------------- higher derivatives


def test_derivatives_of_igamma_grad_a():
    a, x = 2.5, np.array([0.4, 1.5, 6.0])
    with gpuarr.enable_x64():
        # d/dx dP/da = d/da dP/dx: the rule of igamma_grad_a in x against lax.igamma's density.
        mixed = gpuarr.vmap(gpuarr.grad(gpuarr.grad(lax.igamma, 0), 1), (None, 0))(a, x)
        other = gpuarr.vmap(gpuarr.grad(gpuarr.grad(lax.igamma, 1), 0), (None, 0))(a, x)
        np.testing.assert_allclose(np.asarray(mixed), np.asarray(other), rtol=1e-12)
        h = 1e-5
        fd = (np.asarray(lax.igamma_grad_a(a, x + h)) - np.asarray(lax.igamma_grad_a(a, x - h))) / (2 * h)
        np.testing.assert_allclose(np.asarray(mixed), fd, rtol=1e-8)
        # Not differentiable in a, as in JAX (which differentiates it in neither operand).
        with pytest.raises(NotImplementedError, match="igamma_grad_a"):
            gpuarr.grad(gpuarr.grad(lax.igamma, 0), 0)(a, 1.5)
    with pytest.raises(NotImplementedError, match="igamma_grad_a"):
        jax.grad(jax.grad(jax.lax.igamma, 0), 0)(a, 1.5)


# ---------------------------------------------------------------- the gamma sampler


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gamma_sample_gradients_match_jax(dtype):
    a = np.geomspace(0.01, 100, 24).astype(dtype).reshape(4, 6)
    # log space (loggamma): d log x / da = (dx/da) / x.
    samplers = (lambda r: r.gamma, lambda r: r.loggamma)
    with _in_both(dtype):
        theirs = jax.jit(lambda a: [jax.grad(lambda a: s(jax.random)(jax.random.key(3), a).sum())(a)
                                    for s in samplers])(a)
        for s, want in zip(samplers, theirs):
            ours = gpuarr.grad(lambda a: s(random)(random.key(3), a).sum())(a)
            assert np.asarray(ours).dtype == np.asarray(want).dtype == dtype
            assert ours.shape == want.shape == (4, 6)
            rtol = 2e-5 if dtype == np.float32 else 1e-9
            np.testing.assert_allclose(np.asarray(ours), np.asarray(want), rtol=rtol)


def test_gamma_sample_gradient_keeps_the_cdf_level():
    # Implicit reparameterisation: moving a by h and the sample by h dx/da keeps P(a, x).
    a = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 100.0])
    x = np.array([1e-3, 0.05, 0.7, 3.1, 8.0, 110.0])
    with gpuarr.enable_x64():
        g = np.asarray(lax.random_gamma_grad(a, x))
        dp_da = np.asarray(lax.igamma_grad_a(a, x))
    h = 1e-5
    moved = regularized_gamma(a + h, x + h * g, False) - regularized_gamma(a - h, x - h * g, False)
    # The first-order change cancels: what is left is far below the change in a alone.
    assert (np.abs(moved) < 1e-6 * 2 * h * np.abs(dp_da)).all()
