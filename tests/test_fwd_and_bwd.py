"""vjp functions are pytrees of their residuals (returned from and passed into jit), and
fwd_and_bwd splits a function's forward and backward passes into two jitted functions, as in
JAX; gradients against NumPy's closed forms and JAX where it is installed."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp

RNG = np.random.default_rng(3)
X = RNG.normal(size=(4, 5)).astype(np.float32)
W = RNG.normal(size=(5, 3)).astype(np.float32)
CT = RNG.normal(size=(4, 3)).astype(np.float32)


def f(x, w):
    return jnp.tanh(x @ w)


def _grads(x, w, ct):
    """Closed-form cotangents of tanh(x @ w), in float64."""
    x, w, ct = (np.asarray(a, np.float64) for a in (x, w, ct))
    d = ct * (1 - np.tanh(x @ w) ** 2)
    return d @ w.T, x.T @ d


def test_vjp_function_is_a_pytree_of_residuals():
    y, f_vjp = gpuarr.vjp(f, X, W)
    leaves, tree = gpuarr.tree_util.tree_flatten(f_vjp)
    assert leaves and all(isinstance(leaf, gpuarr.Array) for leaf in leaves)
    rebuilt = gpuarr.tree_util.tree_unflatten(tree, leaves)
    want_x, want_w = _grads(X, W, CT)
    for fn in (f_vjp, rebuilt):
        gx, gw = fn(CT)
        np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(gw), want_w, rtol=1e-5, atol=1e-5)
        assert gx.dtype == np.float32 and gw.shape == W.shape
    # Returned from a jitted function and passed into another.
    y2, f_vjp2 = gpuarr.jit(lambda x, w: gpuarr.vjp(f, x, w))(X, W)
    np.testing.assert_allclose(np.asarray(y2), np.asarray(y), rtol=1e-6)
    gx, gw = gpuarr.jit(lambda fn, ct: fn(ct))(f_vjp2, CT)
    np.testing.assert_allclose(np.asarray(gw), want_w, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="unexpected tree structure"):
        f_vjp((CT,))


def test_fwd_and_bwd_compile_once():
    fwd, bwd = gpuarr.fwd_and_bwd(f, argnums=(0, 1))
    for i in range(3):
        x = X + i
        y, res = fwd(x, W)
        gx, gw = bwd(res, CT)
        want_x, want_w = _grads(x, W, CT)
        np.testing.assert_allclose(np.asarray(y), np.tanh(np.asarray(x, np.float64) @ W),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(gw), want_w, rtol=1e-5, atol=1e-5)
    assert fwd._cache_size() == 1 and bwd._cache_size() == 1
    # An int argnums gives one cotangent; has_aux adds the aux value to fwd's results.
    fwd1, bwd1 = gpuarr.fwd_and_bwd(lambda x, w: (f(x, w).sum(), {"n": 3.0}), argnums=1,
                                    has_aux=True, jitted=False)
    y, res, aux = fwd1(X, W)
    assert float(aux["n"]) == 3.0
    np.testing.assert_allclose(np.asarray(bwd1(res, 1.0)), _grads(X, W, np.ones_like(CT))[1],
                               rtol=1e-5, atol=1e-5)


def test_fwd_and_bwd_match_jax():
    jax = pytest.importorskip("jax")
    jf, jb = jax.fwd_and_bwd(lambda x, w: jax.numpy.tanh(x @ w), argnums=(0, 1))
    gf, gb = gpuarr.fwd_and_bwd(f, argnums=(0, 1))
    (jy, jres), (gy, gres) = jf(X, W), gf(X, W)
    np.testing.assert_allclose(np.asarray(gy), np.asarray(jy), rtol=1e-6, atol=1e-6)
    for g, j in zip(gb(gres, CT), jb(jres, CT)):
        assert g.shape == j.shape and g.dtype == j.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(j), rtol=1e-5, atol=1e-6)


def test_linearize_and_linear_transpose_give_pytrees():
    # As in JAX, both return a Partial over their residuals: it can leave a jitted function.
    x = jnp.asarray(X[0])
    y, f_jvp = gpuarr.jit(lambda x: gpuarr.linearize(jnp.sin, x))(x)
    assert isinstance(f_jvp, gpuarr.tree_util.Partial)
    np.testing.assert_allclose(np.asarray(f_jvp(2 * x)), 2 * np.cos(X[0]) * X[0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gpuarr.jit(lambda fn, t: fn(t))(f_jvp, x)),
                               np.cos(X[0]) * X[0], rtol=1e-6)
    f_t = gpuarr.jit(lambda x: gpuarr.linear_transpose(lambda v: v @ W, x))(x)
    (ct,) = f_t(jnp.ones(3))
    np.testing.assert_allclose(np.asarray(ct), W.sum(1), rtol=1e-6)
    with pytest.raises(TypeError, match="cotangent type does not match"):
        f_t(jnp.ones(4))
