"""The differentiation API: grad/value_and_grad/vjp/jvp/linearize options and errors,
jacobians and hessians against finite differences, float0, checkpoint, linear_transpose,
composition with jit and vmap, and the SPEC behaviours S5 and S18."""
import numpy as np
import pytest
from helpers import allclose, check_grads_x64
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr as jax
import gpuarr.lax as lax
import gpuarr.numpy as jnp
from gpuarr import dtypes, grad, jit, vmap
from gpuarr.ad_checkpoint import checkpoint, checkpoint_policies


def _fd_jacobian(f, x, eps=1e-6):
    """Central-difference Jacobian of f: R^n -> R^m in float64 (shape out + in)."""
    x = np.asarray(x, np.float64)
    out = np.asarray(f(x), np.float64)
    jac = np.zeros(out.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        jac[(...,) + idx] = (np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps)
    return jac


# ---------------------------------------------------------------- basics and composition


def test_grad_of_grad_jit_vmap_compose():
    allclose(grad(grad(jnp.sin))(1.), -np.sin(1.))
    allclose(jit(grad(jnp.sin))(1.), np.cos(1.))
    allclose(grad(jit(jnp.sin))(1.), np.cos(1.))
    allclose(jit(grad(jit(grad(jnp.sin))))(1.), -np.sin(1.))
    xs = np.linspace(-1, 1, 5).astype(np.float32)
    out = vmap(grad(lambda x: jnp.sin(x) * x))(xs)
    loop = np.stack([np.asarray(grad(lambda x: jnp.sin(x) * x)(x)) for x in xs])
    allclose(out, loop)
    assert out.dtype == np.float32


def test_jit_of_grad_is_one_program():
    text = str(jax.make_jaxpr(grad(lambda x: jnp.sin(x) * 2.))(1.))
    assert "sin" in text and "cos" in text and "jit" not in text


def test_grad_argnums_and_pytrees():
    def f(p, x, y):
        return jnp.sum(p["w"] * x) + p["b"] * y

    p = {"w": jnp.array([1., 2.]), "b": jnp.float32(3.)}
    x = jnp.array([4., 5.])
    gp = grad(f)(p, x, 2.)
    allclose(gp["w"], [4., 5.])
    allclose(gp["b"], 2.)
    gx, gy = grad(f, argnums=(1, 2))(p, x, 2.)
    allclose(gx, [1., 2.])
    allclose(gy, 3.)
    assert gx.shape == (2,) and gx.dtype == np.float32


def test_value_and_grad_has_aux():
    def f(x):
        return jnp.sum(x ** 2), {"n": x.shape[0], "m": jnp.mean(x)}

    (v, aux), g = jax.value_and_grad(f, has_aux=True)(jnp.arange(3.))
    allclose(v, 5.)
    allclose(g, [0., 2., 4.])
    assert aux["n"] == 3
    allclose(aux["m"], 1.)
    g2, aux2 = grad(f, has_aux=True)(jnp.arange(3.))
    allclose(g2, [0., 2., 4.])
    assert not isinstance(aux2["m"], jax.core.Tracer)


def test_vjp_jvp_linearize_has_aux():
    f = lambda x: (jnp.sin(x), x * 2)  # noqa: E731
    y, pull, aux = jax.vjp(f, jnp.arange(3.), has_aux=True)
    allclose(aux, [0., 2., 4.])
    (ct,) = pull(jnp.ones(3))
    allclose(ct, np.cos(np.arange(3.)))
    y, t, aux = jax.jvp(f, (jnp.arange(3.),), (jnp.ones(3),), has_aux=True)
    allclose(t, np.cos(np.arange(3.)))
    allclose(aux, [0., 2., 4.])
    y, f_jvp, aux = jax.linearize(f, jnp.arange(3.), has_aux=True)
    allclose(f_jvp(jnp.ones(3)), np.cos(np.arange(3.)))
    allclose(aux, [0., 2., 4.])


def test_stop_gradient():
    f = lambda x: x ** 2 + jax.lax.stop_gradient(x ** 3)  # noqa: E731
    allclose(grad(f)(2.), 4.)
    assert jax.stop_gradient is lax.stop_gradient
    tree = jax.stop_gradient({"a": jnp.ones(2)})
    allclose(tree["a"], [1., 1.])


# ---------------------------------------------------------------- errors and float0


def test_grad_nonscalar_output_raises():
    with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
        grad(lambda x: x * 2)(jnp.ones(3))


def test_grad_integer_input_raises_and_allow_int():
    with pytest.raises(TypeError, match="allow_int"):
        grad(lambda x: x * 2.)(3)
    g = grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2., 3)
    allclose(g[0], 3.)
    assert g[1].dtype == dtypes.float0 and g[1].shape == ()
    gi = grad(lambda x, ns: x * jnp.sum(ns), argnums=1, allow_int=True)(2., jnp.arange(3))
    assert isinstance(gi, np.ndarray) and gi.dtype == dtypes.float0 and gi.shape == (3,)


def test_jvp_argument_errors():
    with pytest.raises(TypeError, match="tuples or lists"):
        jax.jvp(jnp.sin, 1., 1.)
    with pytest.raises(ValueError, match="shape"):
        jax.jvp(jnp.sin, (jnp.ones(2),), (jnp.ones(3),))


# ---------------------------------------------------------------- jacobians and hessians


def _g(x):
    return jnp.stack([jnp.sin(x[0]) * x[1], x[0] ** 2 + jnp.exp(x[2]), x[1] * x[2]])


def _g_np(x):
    return np.stack([np.sin(x[0]) * x[1], x[0] ** 2 + np.exp(x[2]), x[1] * x[2]])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=3, max_size=3))
def test_jacfwd_jacrev_match_finite_differences(vals):
    x = np.array(vals, np.float32)
    want = _fd_jacobian(_g_np, x)
    jf = jax.jacfwd(_g)(x)
    jr = jax.jacrev(_g)(x)
    assert jf.shape == jr.shape == (3, 3) and jf.dtype == jr.dtype == np.float32
    allclose(jf, want, 1e-4)
    allclose(jr, want, 1e-4)


def test_jacobian_pytrees_argnums_has_aux():
    def f(a, b):
        return {"s": jnp.sum(a * b), "v": a * 2.}

    a, b = jnp.arange(1., 4.), jnp.ones((3,))
    for jac in (jax.jacfwd, jax.jacrev):
        j = jac(f, argnums=(0, 1))(a, b)
        allclose(j["s"][0], b)
        allclose(j["s"][1], a)
        allclose(j["v"][0], 2 * np.eye(3))
        allclose(j["v"][1], np.zeros((3, 3)))
        j2, aux = jac(lambda x: (x ** 2, x.sum()), has_aux=True)(a)
        allclose(j2, np.diag(2 * np.arange(1., 4.)))
        allclose(aux, 6.)
    jm = jax.jacrev(lambda m: m @ m)(jnp.eye(2))
    assert jm.shape == (2, 2, 2, 2)


def test_hessian_matches_finite_differences():
    def f(x):
        return jnp.sum(jnp.sin(x) * x[0]) + x[1] ** 3

    x = np.array([0.3, -0.7, 1.1], np.float32)

    def grad_np(v):
        return np.asarray(grad(f)(np.asarray(v, np.float32)), np.float64)

    h = jax.hessian(f)(x)
    assert h.shape == (3, 3)
    allclose(h, _fd_jacobian(grad_np, x, eps=1e-3), 5e-3)
    allclose(h, np.asarray(h).T, 1e-5)
    allclose(jit(jax.hessian(f))(x), h)


def test_jacrev_of_jit_and_vmap():
    f = jit(lambda x: jnp.tanh(x) * x[::-1])
    x = jnp.array([0.1, 0.5, -0.3])
    allclose(jax.jacrev(f)(x), jax.jacfwd(f)(x))
    batch = vmap(jax.jacrev(f))(jnp.stack([x, 2 * x]))
    allclose(batch[1], jax.jacrev(f)(2 * x))


def test_linear_transpose():
    f = lambda x, y: 2. * x + jnp.sum(y)  # noqa: E731
    x, y = jnp.ones(3), jnp.ones(4)
    t = jax.linear_transpose(f, x, y)
    ct_x, ct_y = t(jnp.array([1., 2., 3.]))
    allclose(ct_x, [2., 4., 6.])
    allclose(ct_y, [6., 6., 6., 6.])
    m = jnp.arange(6.).reshape(2, 3)
    (mt,) = jax.linear_transpose(lambda v: m @ v, jnp.ones(3))(jnp.array([1., 1.]))
    allclose(mt, np.arange(6.).reshape(2, 3).T @ np.ones(2))


# ---------------------------------------------------------------- primitive-specific gradients


def test_reduce_max_ties_split_evenly():
    g = grad(lambda x: lax.reduce_max(x, (0,)))(jnp.array([1., 3., 3.]))
    allclose(g, [0., .5, .5])
    g = grad(lambda x: lax.reduce_min(x, (0,)))(jnp.array([2., 2., 3., 2.]))
    allclose(g, [1 / 3, 1 / 3, 0., 1 / 3])
    gx, gy = grad(lambda x, y: lax.max(x, y), argnums=(0, 1))(2., 2.)
    allclose(gx, .5)
    allclose(gy, .5)


def test_indexing_and_dynamic_slice_gradients():
    x = jnp.arange(5.)
    g = grad(lambda x: jnp.sum(x[jnp.array([0, 2, 2])] * 2.))(x)
    allclose(g, [2., 0., 4., 0., 0.])
    g = grad(lambda x: jnp.sum(lax.dynamic_slice(x, (jnp.int32(1),), (2,)) ** 2))(x)
    allclose(g, [0., 2., 4., 0., 0.])
    g = grad(lambda u: jnp.sum(lax.dynamic_update_slice(x, u, (jnp.int32(3),)) ** 2))(
        jnp.ones(2))
    allclose(g, [2., 2.])


def test_at_update_gradients():
    x = jnp.arange(5.)
    i = jnp.array([0, 2, 2])
    allclose(grad(lambda x: jnp.sum(x.at[i].add(x[:3] ** 2)))(x), [1., 3., 5., 1., 1.])
    allclose(grad(lambda x: jnp.sum(x.at[i].set(7.) * jnp.arange(5.)))(x), [0., 1., 0., 3., 4.])
    allclose(grad(lambda x: jnp.sum(x.at[1:3].get() ** 2))(x), [0., 2., 4., 0., 0.])
    # scatter_max: ties between the operand and repeated updates share the gradient, as in JAX
    allclose(grad(lambda x: jnp.sum(x.at[i].max(2.)))(x), [0., 1., 1 / 3, 1., 1.])


def test_sort_gradient_is_a_permutation():
    x = jnp.array([3., 1., 2.])
    g = grad(lambda x: jnp.sum(lax.sort(x) * jnp.array([1., 10., 100.])))(x)
    allclose(g, [100., 1., 10.])


def test_concatenate_pad_select_convert_gradients():
    f = lambda x: jnp.sum(lax.concatenate([x, 2 * x], 0) * jnp.arange(6.))  # noqa: E731
    allclose(grad(f)(jnp.ones(3)), np.arange(3.) + 2 * np.arange(3., 6.))
    f = lambda x: jnp.sum(lax.pad(x, 0., ((1, 1, 1),)) ** 2)  # noqa: E731
    allclose(grad(f)(jnp.arange(3.)), 2 * np.arange(3.))
    f = lambda x: jnp.sum(lax.select(x > 1., x ** 2, -x))  # noqa: E731
    allclose(grad(f)(jnp.arange(3.)), [-1., -1., 4.])
    f = lambda x: jnp.sum(x.astype(jnp.int32).astype(jnp.float32) + x)  # noqa: E731
    allclose(grad(f)(jnp.arange(3.)), [1., 1., 1.])


# ---------------------------------------------------------------- SPEC S5 and S18


def test_s5_grad_through_python_control_flow():
    def divide(x, y):
        return x / y if y >= 1. else 0.

    allclose(grad(divide)(3., 2.), 0.5)
    allclose(grad(divide, argnums=1)(3., 2.), -0.75)
    assert float(grad(divide)(3., 0.5)) == 0.0


def test_s18_where_nan_gradient_and_fix():
    def my_log(x):
        return jnp.where(x > 0., jnp.log(x), 0.)

    def safe_for_grad_log(x):
        return jnp.log(jnp.where(x > 0., x, 1.))

    def my_log_or_y(x, y):
        return jnp.where(x > 0., jnp.log(jnp.where(x > 0., x, 1.)), y)

    assert float(my_log(0.)) == 0.0
    assert np.isnan(float(grad(my_log)(0.)))
    assert float(safe_for_grad_log(0.)) == 0.0
    assert float(grad(safe_for_grad_log)(0.)) == 0.0
    assert float(grad(my_log_or_y)(0., 2.)) == 0.0
    assert float(grad(my_log_or_y, 1)(0., 2.)) == 1.0


def test_s18_sort_based_functions_have_zero_gradient():
    def f(x):
        return (x > 0).astype(float)

    df = vmap(grad(f))
    x = jnp.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    allclose(f(x), [0., 0., 0., 1., 1.])
    assert np.asarray(df(x)).tolist() == [0., 0., 0., 0., 0.]
    assert float(grad(lambda x: jnp.argmax(x).astype(jnp.float32))(x[:1].reshape(()))) == 0.0


def test_s18_sigmoid_values_and_gradients():
    dg = vmap(grad(jax.nn.sigmoid))
    x = jnp.array([-10.0, -1.0, 0.0, 1.0, 10.0])
    with np.printoptions(suppress=True, precision=2):
        assert str(np.asarray(jax.nn.sigmoid(x))) == "[0.   0.27 0.5  0.73 1.  ]"
        assert str(np.asarray(dg(x))) == "[0.   0.2  0.25 0.2  0.  ]"


def test_s18_smooth_replacements():
    x = jnp.array([-2., -0.5, 0., 0.5, 2.])
    allclose(grad(lambda v: jnp.sum(jax.nn.relu(v)))(x), [0., 0., 0., 1., 1.])
    allclose(vmap(grad(jax.nn.soft_sign))(x), 1 / (1 + np.abs(np.asarray(x))) ** 2)
    allclose(vmap(grad(jax.nn.softplus))(x), 1 / (1 + np.exp(-np.asarray(x))))
    allclose(vmap(grad(jax.nn.squareplus))(x), (1 + np.asarray(x) / np.sqrt(np.asarray(x) ** 2 + 4)) / 2)
    s = jax.nn.softmax(x)
    allclose(s, np.exp(x) / np.exp(x).sum())
    assert float(grad(jax.nn.relu)(0.)) == 0.0


# ---------------------------------------------------------------- checkpoint


def test_checkpoint_values_program_and_recompute():
    f = checkpoint(lambda x: jnp.sin(jnp.sin(x)))
    allclose(f(1.), np.sin(np.sin(1.)))
    allclose(grad(f)(1.), np.cos(np.sin(1.)) * np.cos(1.))
    text = str(jax.make_jaxpr(f)(1.))
    assert "remat2[" in text and "differentiated=False" in text and "policy=None" in text
    # The backward pass recomputes sin a: three sin equations instead of two.
    grad_text = str(jax.make_jaxpr(grad(f))(1.))
    assert grad_text.count(" sin ") == 3
    plain = str(jax.make_jaxpr(grad(lambda x: jnp.sin(jnp.sin(x))))(1.))
    assert plain.count(" sin ") == 2
    allclose(jit(grad(f))(1.), grad(f)(1.))
    allclose(vmap(grad(f))(jnp.arange(3.)), np.cos(np.sin(np.arange(3.))) * np.cos(np.arange(3.)))
    allclose(grad(grad(f))(1.), grad(grad(lambda x: jnp.sin(jnp.sin(x))))(1.))


@pytest.mark.parametrize("policy", [None, checkpoint_policies.nothing_saveable,
                                    checkpoint_policies.everything_saveable,
                                    checkpoint_policies.dots_saveable])
def test_checkpoint_policies_give_the_same_gradient(policy):
    w = jnp.array(np.random.RandomState(0).randn(4, 4).astype(np.float32)) * 0.3

    def mlp(w, x):
        return jnp.sum(jnp.tanh(w @ jnp.tanh(w @ x)))

    x = jnp.arange(4.)
    want = grad(mlp)(w, x)
    got = grad(checkpoint(mlp, policy=policy))(w, x)
    allclose(got, want)
    allclose(grad(jax.remat(mlp, policy=policy))(w, x), want)


def _scan_fn(x):
    c, ys = jax.lax.scan(lambda c, v: (c * jnp.sin(v), c), 1.0, x)
    return c + ys.sum()


def _cond_fn(x):
    return jax.lax.cond(x.sum() > 0, lambda x: jnp.sin(x).sum(), lambda x: jnp.cos(x).sum(), x)


def _fori_fn(x):
    return jax.lax.fori_loop(0, 3, lambda i, c: c * jnp.sin(c), x).sum()


@pytest.mark.parametrize("fn", [_scan_fn, _cond_fn, _fori_fn])
def test_checkpoint_around_control_flow(fn):
    """The scan or cond inside is split into its known and unknown parts, so grad of a
    checkpointed function equals grad of the function, and the known part is recomputed."""
    x = jnp.linspace(0.1, 1.0, 4)
    want = grad(fn)(x)
    for got in (grad(checkpoint(fn))(x), jit(grad(checkpoint(fn)))(x),
                vmap(grad(checkpoint(fn)))(jnp.stack([x, -x]))[0]):
        allclose(got, want)
        assert got.shape == (4,) and got.dtype == np.float32
    check_grads_x64(checkpoint(fn), (np.linspace(0.1, 1.0, 4),), order=2, modes=("rev",))
    if fn is _scan_fn:  # the backward pass runs the primal scan again
        assert _count_eqns(jax.make_jaxpr(grad(checkpoint(fn)))(x).program, "sin") == 2
        assert _count_eqns(jax.make_jaxpr(grad(fn))(x).program, "sin") == 1


def _count_eqns(prog, name):
    """Equations of primitive `name` in `prog` and, once per use, in the Programs it calls."""
    from gpuarr.core import ClosedProgram, subprograms
    return sum((eqn.prim.name == name) + sum(
        _count_eqns(sub.program if isinstance(sub, ClosedProgram) else sub, name)
        for sub in subprograms(eqn.params)) for eqn in prog.eqns)


def test_vjp_cotangent_type_errors():
    _, pull = jax.vjp(jnp.sin, jnp.float32(1.))
    allclose(pull(1.0)[0], np.cos(1.))  # a weakly typed Python float is accepted
    with pytest.raises(ValueError, match=r"got float16\[\], but expected float32\[\]"):
        pull(jnp.float16(1.))
    with pytest.raises(ValueError, match=r"got float32\[2\]"):
        pull(jnp.ones(2))


def test_abs_of_complex_is_real_with_jax_derivative():
    jax_ref = pytest.importorskip("jax")
    z = np.array([3 + 4j, -1 + 2j, 0.5 - 0.25j])
    with jax.enable_x64():
        out = jit(jnp.abs)(z)
        assert out.dtype == np.float64
        check_grads_x64(jnp.abs, (z,), order=2)
    t = np.array([1 + 1j, 2 - 1j, -1j], np.complex64)
    got = jax.jvp(jnp.abs, (z.astype(np.complex64),), (t,))[1]
    want = jax_ref.jvp(jax_ref.numpy.abs, (z.astype(np.complex64),), (t,))[1]
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
