"""gpuarr.experimental.ode.odeint: values against closed forms, a float64 NumPy Dormand-Prince
reference and jax.experimental.ode.odeint (float32 and float64), adjoint gradients with respect
to y0, t, args and closed-over values against JAX and finite differences, pytree states, jit,
vmap and the argument checks."""
import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.experimental.ode import odeint

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")
jax_odeint = pytest.importorskip("jax.experimental.ode").odeint


@pytest.fixture
def x64():
    """64-bit types on in both gpuarr and JAX for the test."""
    old = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", True)
    try:
        with gpuarr.enable_x64():
            yield
    finally:
        jax.config.update("jax_enable_x64", old)


def decay(y, t, k):
    return -k * y


def lotka_volterra(xnp):
    def f(y, t, a, b):
        return xnp.stack([a * y[0] - b * y[0] * y[1], b * y[0] * y[1] - y[1]])
    return f


def pendulum(xnp):
    # A pytree state; the forcing term makes the system non-autonomous (t matters).
    def f(state, t, w):
        return {"q": state["p"], "p": -w ** 2 * xnp.sin(state["q"]) + 0.1 * xnp.cos(t)}
    return f


def _max_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
               for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b),
                               strict=True))


def _dopri_reference(f, y0, ts, rtol=1e-12, atol=1e-12):
    """Independent float64 NumPy Dormand-Prince with step-size control, landing exactly on
    each output time (no interpolation), accurate far beyond the solver tolerances tested."""
    c = [0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1]
    a = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656]]
    b5 = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
    b4 = np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100,
                   1 / 40])
    y, t, h, out = np.asarray(y0, np.float64), ts[0], 1e-3, [np.asarray(y0, np.float64)]
    for target in ts[1:]:
        while t < target:
            h = min(h, target - t)
            k = [f(y, t)]
            for ci, ai in zip(c[1:], a[1:], strict=True):
                k.append(f(y + h * sum(w * kj for w, kj in zip(ai, k, strict=True)), t + ci * h))
            y5 = y + h * sum(w * kj for w, kj in zip(b5[:6], k, strict=True))  # b5[6] is 0
            k.append(f(y5, t + h))
            err = h * sum(w * kj for w, kj in zip(b5 - b4, k, strict=True))
            ratio = np.sqrt(np.mean((err / (atol + rtol * np.maximum(abs(y), abs(y5)))) ** 2))
            if ratio <= 1:
                y, t = y5, t + h
            h *= min(5., max(0.2, 0.9 * ratio ** -0.2))
        out.append(y)
    return np.stack(out)


# ---------------------------------------------------------------- values


def test_exponential_decay_float32_matches_closed_form_and_jax():
    y0 = np.float32([1., 2., -0.5])
    t = np.linspace(0., 2., 5, dtype=np.float32)
    out = odeint(decay, jnp.asarray(y0), jnp.asarray(t), 0.7)
    assert out.shape == (5, 3) and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), y0 * np.exp(-0.7 * t[:, None].astype(np.float64)),
                               rtol=1e-5, atol=1e-6)
    ref = jax_odeint(decay, jjnp.asarray(y0), jjnp.asarray(t), 0.7)
    assert ref.dtype == out.dtype and ref.shape == out.shape
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(out[0]), y0)  # the first row is y0 itself


def test_lotka_volterra_float64_matches_numpy_reference_and_jax(x64):
    y0, t = np.array([1.0, 2.0]), np.linspace(0., 1.5, 4)
    f = lotka_volterra(jnp)
    out = odeint(f, jnp.asarray(y0), jnp.asarray(t), 1.1, 0.4)
    assert out.dtype == np.float64
    ref = _dopri_reference(lambda y, s: lotka_volterra(np)(y, s, 1.1, 0.4), y0, t)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-7, atol=1e-8)
    jref = jax_odeint(lotka_volterra(jjnp), jjnp.asarray(y0), jjnp.asarray(t), 1.1, 0.4)
    np.testing.assert_allclose(np.asarray(out), np.asarray(jref), rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_pytree_state_pendulum_against_jax_float32_and_float64(x64):
    t = np.linspace(0., 2., 5)
    for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-10)):
        y0 = {"q": np.asarray(1.0, dtype), "p": np.asarray([0.2], dtype)}
        out = odeint(pendulum(jnp), y0, jnp.asarray(t, dtype), 1.3)
        ref = jax_odeint(pendulum(jjnp), y0, jjnp.asarray(t, dtype), 1.3)
        assert set(out) == {"q", "p"}
        assert out["q"].shape == (5,) and out["p"].shape == (5, 1)
        assert out["q"].dtype == dtype and out["p"].dtype == dtype
        assert _max_diff(out, ref) < tol


def test_tuple_state_with_mixed_dtypes_keeps_each_leaf_dtype(x64):
    # Leaves are raveled in their common dtype and cast back, as jax.flatten_util does.
    def f(y, t):
        return (-y[0], 0.5 * y[1])
    y0 = (np.float32([1., 2.]), np.float64(3.))
    t = np.linspace(0., 1., 3)
    out = odeint(f, y0, jnp.asarray(t))
    ref = jax_odeint(f, y0, jjnp.asarray(t))
    assert [o.dtype for o in out] == [r.dtype for r in ref] == [np.float32, np.float64]
    assert _max_diff(out, ref) < 1e-6
    np.testing.assert_allclose(np.asarray(out[1]), 3. * np.exp(0.5 * t), rtol=1e-7)


def test_complex_state_matches_closed_form_and_jax():
    # The error norm and the initial step use |y|^2, so a complex state works as in JAX.
    y0, t = np.complex64([1 + 1j, 2]), np.linspace(0., 1., 3, dtype=np.float32)
    out = odeint(lambda y, s: (1j - 0.1) * y, jnp.asarray(y0), jnp.asarray(t))
    ref = jax_odeint(lambda y, s: (1j - 0.1) * y, jjnp.asarray(y0), jjnp.asarray(t))
    assert out.dtype == ref.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(out), y0 * np.exp((1j - 0.1) * t[:, None]), rtol=1e-5)


@pytest.mark.slow
def test_mxstep_and_hmax_follow_jax(x64):
    y0, t = np.array([1.0, 2.0]), np.linspace(0., 1.5, 4)
    for kw in ({"mxstep": 2}, {"hmax": 0.05}, {"rtol": 1e-4, "atol": 1e-6}):
        out = odeint(lotka_volterra(jnp), jnp.asarray(y0), jnp.asarray(t), 1.1, 0.4, **kw)
        ref = jax_odeint(lotka_volterra(jjnp), jjnp.asarray(y0), jjnp.asarray(t), 1.1, 0.4, **kw)
        np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-10, atol=1e-12,
                                   err_msg=str(kw))


# ---------------------------------------------------------------- transformations


@pytest.mark.slow
def test_jit_and_vmap_over_y0():
    t = jnp.linspace(0., 1., 3)
    f = lotka_volterra(jnp)
    ys0 = np.float32([[1., 2.], [0.5, 1.5], [2., 0.3]])
    batched = gpuarr.vmap(lambda y0: odeint(f, y0, t, 1.1, 0.4))(ys0)
    assert batched.shape == (3, 3, 2) and batched.dtype == np.float32
    loop = np.stack([np.asarray(odeint(f, y0, t, 1.1, 0.4)) for y0 in ys0])
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-5, atol=1e-6)
    ref = jax.vmap(lambda y0: jax_odeint(lotka_volterra(jjnp), y0, jjnp.linspace(0., 1., 3),
                                         1.1, 0.4))(ys0)
    np.testing.assert_allclose(np.asarray(batched), np.asarray(ref), rtol=1e-5, atol=1e-6)
    jitted = gpuarr.jit(lambda y0, a: odeint(f, y0, t, a, 0.4))
    np.testing.assert_allclose(np.asarray(jitted(ys0[1], 1.1)), loop[1], rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- gradients


def _lv_loss(xnp, ode):
    f = lotka_volterra(xnp)

    def loss(y0, t, a, b):
        ys = ode(f, y0, t, a, b)
        return xnp.sum(ys[:, 0] ** 2 + xnp.sin(ys[:, 1]))
    return loss


@pytest.mark.slow
def test_grads_against_jax_float32():
    y0, t = np.float32([1., 2.]), np.linspace(0., 1., 4, dtype=np.float32)
    args = (y0, t, np.float32(1.1), np.float32(0.4))
    got = gpuarr.grad(_lv_loss(jnp, odeint), argnums=(0, 1, 2, 3))(*args)
    want = jax.grad(_lv_loss(jjnp, jax_odeint), argnums=(0, 1, 2, 3))(*args)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)
    jitted = gpuarr.jit(gpuarr.grad(_lv_loss(jnp, odeint), argnums=(0, 1, 2, 3)))(*args)
    for g, w in zip(jitted, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


@pytest.mark.slow
def test_grads_against_jax_float64_pytree_and_closure(x64):
    t = np.linspace(0., 1.5, 4)
    y0 = {"q": np.float64(1.0), "p": np.array([0.2])}

    def loss(xnp, ode):
        def fn(y0, t, w, c):
            # `c` reaches func only through its closure: closure_convert makes it an input.
            def f(y, s, w):
                return jax.tree_util.tree_map(lambda v: c * v, pendulum(xnp)(y, s, w))
            ys = ode(f, y0, t, w)
            return xnp.sum(ys["q"] ** 2) + xnp.sum(xnp.cos(ys["p"]))
        return fn

    got = gpuarr.grad(loss(jnp, odeint), argnums=(0, 1, 2, 3))(y0, t, 1.3, 0.9)
    want = jax.grad(loss(jjnp, jax_odeint), argnums=(0, 1, 2, 3))(y0, t, 1.3, 0.9)
    assert _max_diff(got, want) < 1e-9


def test_grads_match_finite_differences(x64):
    f = lotka_volterra(jnp)

    def fn(y0, t, a):
        return odeint(f, y0, t, a, 0.4, rtol=1e-12, atol=1e-12)

    check_grads_x64(fn, (np.array([1.0, 2.0]), np.array([0.0, 0.4, 0.9]), 1.1), order=1,
                modes=("rev",), atol=1e-6, rtol=1e-6)
    # Decay: d/dk of y0 * exp(-k t) at the last time is -t y0 exp(-k t).
    g = gpuarr.grad(lambda k: odeint(decay, jnp.float64([2.0]), jnp.asarray([0., 1.5]), k)[-1, 0])
    np.testing.assert_allclose(float(g(0.7)), -1.5 * 2.0 * np.exp(-0.7 * 1.5), rtol=1e-7)


# ---------------------------------------------------------------- argument checks


@pytest.mark.parametrize("bad", ["a string", np.array(["x"]), object()],
                         ids=["str", "str_array", "object"])
def test_non_array_args_raise_type_error_like_jax(bad):
    t = jnp.linspace(0., 1., 3)
    msg = "The contents of odeint \\*args must be arrays or scalars, but got"
    with pytest.raises(TypeError, match=msg):
        odeint(decay, jnp.float32([1.]), t, {"k": bad})
    with pytest.raises(TypeError, match=msg):
        jax_odeint(decay, jjnp.float32([1.]), jjnp.linspace(0., 1., 3), {"k": bad})


def test_integer_times_raise_type_error():
    with pytest.raises(TypeError, match="t must be an array of floats, but got"):
        odeint(decay, jnp.float32([1.]), jnp.arange(3), 0.5)
    with pytest.raises(TypeError, match="t must be an array of floats, but got"):
        jax_odeint(decay, jjnp.float32([1.]), jjnp.arange(3), 0.5)
