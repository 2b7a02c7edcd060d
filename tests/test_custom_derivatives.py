"""custom_jvp / custom_vjp: the examples of JAX's "Custom derivative rules" tutorial, and
their composition with jit, vmap and higher-order differentiation."""
from functools import partial

import numpy as np
import pytest
from helpers import allclose, check_grads_x64

import gpuarr
import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import custom_derivatives as cd
from gpuarr import custom_jvp, custom_vjp, grad, jit, vmap


@custom_jvp
def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
    return ans, ans_dot


def test_log1pexp_stable_gradient():
    # Without the rule, grad at 100. is nan (inf / inf); the custom rule gives 1.
    naive = grad(lambda x: jnp.log(1. + jnp.exp(x)))(100.)
    assert np.isnan(naive)
    g = grad(log1pexp)(100.)
    assert g.dtype == np.float32 and float(g) == 1.0
    assert float(jit(grad(log1pexp))(100.)) == 1.0
    allclose(vmap(jit(grad(log1pexp)))(jnp.arange(3.)), 1 - 1 / (1 + np.exp(np.arange(3.))), 1e-6)


@custom_jvp
def f_sin_mul(x, y):
    return jnp.sin(x) * y


@f_sin_mul.defjvp
def f_sin_mul_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    primal_out = f_sin_mul(x, y)
    tangent_out = jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
    return primal_out, tangent_out


def test_custom_jvp_doc_example_values():
    out = f_sin_mul(2., 3.)
    allclose(out, np.sin(2.) * 3., 1e-6)
    y, y_dot = jax.jvp(f_sin_mul, (2., 3.), (1., 0.))
    allclose(y, np.sin(2.) * 3., 1e-6)
    allclose(y_dot, np.cos(2.) * 3., 1e-6)
    allclose(grad(f_sin_mul)(2., 3.), np.cos(2.) * 3., 1e-6)
    allclose(grad(f_sin_mul, argnums=1)(2., 3.), np.sin(2.), 1e-6)


def test_defjvps():
    @custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    f.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
              lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)
    allclose(grad(f)(2., 3.), np.cos(2.) * 3., 1e-6)
    allclose(grad(f, 1)(2., 3.), np.sin(2.), 1e-6)
    _, t = jax.jvp(f, (2., 3.), (1., 1.))
    allclose(t, np.cos(2.) * 3. + np.sin(2.), 1e-6)


def test_defjvps_none_entry_is_zero():
    @custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(lambda g, ans, x, y: g * y, None)
    assert float(grad(f, 1)(2., 3.)) == 0.0
    assert float(grad(f, 0)(2., 3.)) == 3.0


def test_custom_jvp_nondiff_argnums():
    @partial(custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    def app_jvp(f, primals, tangents):
        x, = primals
        x_dot, = tangents
        return f(x), 2. * x_dot

    app.defjvp(app_jvp)
    assert float(app(lambda x: x ** 3, 3.)) == 27.0
    assert float(grad(app, 1)(lambda x: x ** 3, 3.)) == 2.0
    assert float(jit(grad(app, 1), static_argnums=0)(lambda x: x ** 3, 3.)) == 2.0


def test_convention_at_zero():
    @custom_jvp
    def f(x):
        return x / (1 + jnp.sqrt(x))

    @f.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = f(x)
        ans_dot = ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1) ** 2)) * x_dot
        return ans, ans_dot

    assert np.isnan(float(grad(lambda x: x / (1 + jnp.sqrt(x)))(0.)))
    assert float(grad(f)(0.)) == 1.0


def test_custom_jvp_higher_order():
    @custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        g, = tangents
        return f(x), 2 * jnp.cos(x) * g  # deliberately not the true derivative

    allclose(grad(f)(1.), 2 * np.cos(1.), 1e-6)
    # The second derivative differentiates the rule's tangent expression 2 cos(x) g.
    allclose(grad(grad(f))(1.), -2 * np.sin(1.), 1e-6)
    allclose(jit(grad(grad(f)))(1.), -2 * np.sin(1.), 1e-6)


def test_custom_jvp_jit_program_and_composition():
    text = str(jax.make_jaxpr(f_sin_mul)(2., 3.))
    assert "custom_jvp_call[" in text and "jvp=f_sin_mul_jvp" in text
    assert "call_jaxpr={" in text and "symbolic_zeros=False" in text
    allclose(grad(jit(f_sin_mul))(2., 3.), np.cos(2.) * 3., 1e-6)
    allclose(jit(grad(f_sin_mul))(2., 3.), np.cos(2.) * 3., 1e-6)
    xs = np.linspace(0, 2, 5, dtype=np.float32)
    allclose(vmap(f_sin_mul)(xs, xs), np.sin(xs) * xs, 1e-5)
    allclose(vmap(grad(f_sin_mul))(xs, xs), np.cos(xs) * xs, 1e-5)
    allclose(grad(lambda x: vmap(f_sin_mul)(x, x).sum())(xs), np.cos(xs) * xs + np.sin(xs), 1e-5)
    allclose(jax.jacfwd(lambda x: vmap(f_sin_mul)(x, x))(xs), np.diag(np.cos(xs) * xs + np.sin(xs)), 1e-5)


def test_custom_jvp_vmap_matches_loop():
    xs = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    out = vmap(grad(lambda x: log1pexp(x).sum()))(xs)
    loop = np.stack([np.asarray(grad(lambda x: log1pexp(x).sum())(x)) for x in xs])
    allclose(out, loop, 1e-6)
    assert out.shape == (4, 3) and out.dtype == np.float32


def test_custom_jvp_closure_over_jit_traced_value():
    # Under jit, a closed-over traced value becomes an input of the custom_jvp_call equation.
    @jit
    def outer(w, x):
        @custom_jvp
        def g(x):
            return jnp.sin(x) * w

        g.defjvp(lambda p, t: (g(p[0]), jnp.cos(p[0]) * t[0] * w))
        return grad(g)(x)

    allclose(outer(2., 0.5), 2. * np.cos(0.5), 1e-6)


def test_custom_jvp_bad_rule_output():
    @custom_jvp
    def f(x):
        return x

    f.defjvp(lambda p, t: p[0])  # not a pair
    with pytest.raises(TypeError, match="pair"):
        grad(f)(1.)

    @custom_jvp
    def h(x):
        return jnp.sum(x)

    h.defjvp(lambda p, t: (h(p[0]), t[0]))  # tangent shape (3,) for a scalar output
    with pytest.raises(TypeError, match="shapes"):
        jax.jvp(h, (jnp.ones(3),), (jnp.ones(3),))


def test_custom_jvp_without_rule_raises():
    @custom_jvp
    def f(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined"):
        f(1.)


# ---------------------------------------------------------------- custom_vjp


@custom_vjp
def f_vjp_sin(x):
    return jnp.sin(x)


def f_fwd(x):
    return f_vjp_sin(x), jnp.cos(x)


def f_bwd(cos_x, y_bar):
    return (cos_x * y_bar,)


f_vjp_sin.defvjp(f_fwd, f_bwd)


def test_custom_vjp_doc_example():
    allclose(f_vjp_sin(3.), np.sin(3.), 1e-6)
    allclose(grad(f_vjp_sin)(3.), np.cos(3.), 1e-6)
    allclose(jit(grad(f_vjp_sin))(3.), np.cos(3.), 1e-6)
    allclose(grad(jit(f_vjp_sin))(3.), np.cos(3.), 1e-6)
    xs = np.linspace(0, 3, 4, dtype=np.float32)
    allclose(vmap(grad(f_vjp_sin))(xs), np.cos(xs), 1e-6)
    allclose(grad(lambda x: vmap(f_vjp_sin)(x).sum())(xs), np.cos(xs), 1e-6)
    allclose(jax.jacrev(lambda x: vmap(f_vjp_sin)(x))(xs), np.diag(np.cos(xs)), 1e-6)
    text = str(jax.make_jaxpr(f_vjp_sin)(3.))
    assert "custom_vjp_call[" in text and "fwd=f_fwd" in text and "bwd=f_bwd" in text


def test_custom_vjp_forward_mode_raises():
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        jax.jvp(f_vjp_sin, (3.,), (1.,))


@custom_vjp
def clip_gradient(lo, hi, x):
    return x  # identity function


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)  # save bounds as residuals


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))  # use None to indicate zero cotangents


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def test_gradient_clipping_doc_example():
    def clip_sin(x):
        x = clip_gradient(-0.75, 0.75, x)
        return jnp.sin(x)

    t = np.linspace(0, 10, 50, dtype=np.float32)
    allclose(vmap(grad(clip_sin))(t), np.clip(np.cos(t), -0.75, 0.75), 1e-6)
    allclose(jit(vmap(grad(clip_sin)))(t), np.clip(np.cos(t), -0.75, 0.75), 1e-6)


def test_custom_vjp_nondiff_argnums():
    @partial(custom_vjp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    def app_fwd(f, x):
        return app(f, x), x

    def app_bwd(f, x, g):
        return (5 * g,)

    app.defvjp(app_fwd, app_bwd)
    assert float(app(lambda x: x ** 2, 4.)) == 16.0
    assert float(grad(app, 1)(lambda x: x ** 2, 4.)) == 5.0


def test_custom_vjp_pytree_args_and_unbatched_input():
    @custom_vjp
    def f(p, x):
        return p["w"] * x + p["b"]

    def fwd(p, x):
        return f(p, x), (p, x)

    def bwd(res, g):
        p, x = res
        return ({"w": g * x, "b": g}, g * p["w"])

    f.defvjp(fwd, bwd)
    p = {"w": jnp.float32(2.), "b": jnp.float32(1.)}
    xs = jnp.arange(4.)
    gp = grad(lambda p: vmap(lambda x: f(p, x))(xs).sum())(p)
    allclose(gp["w"], np.arange(4.).sum(), 1e-6)
    allclose(gp["b"], 4., 1e-6)
    check_grads_x64(lambda w, x: f({"w": w, "b": 1.0}, x), (2.0, 3.0), 1, modes=("rev",))


def test_custom_vjp_bad_bwd_output():
    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g,))  # one cotangent for two args
    with pytest.raises(TypeError, match="length"):
        grad(f)(1., 2.)


def test_closure_convert_with_custom_vjp():
    def outer(w):
        g = lambda x: jnp.sin(w * x)  # noqa: E731
        converted, consts = jax.closure_convert(g, 1.)
        return _apply(converted, 1.5, *consts)

    allclose(grad(outer)(0.5), 1.5 * np.cos(0.75), 1e-6)


@partial(custom_vjp, nondiff_argnums=(0,))
def _apply(f, x, *consts):
    return f(x, *consts)


def _apply_fwd(f, x, *consts):
    return f(x, *consts), (x, consts)


def _apply_bwd(f, res, g):
    x, consts = res
    _, pull = jax.vjp(f, x, *consts)
    return pull(g)


_apply.defvjp(_apply_fwd, _apply_bwd)


def test_custom_vjp_linearized_then_transposed_and_batched():
    y, f_lin = jax.linearize(lambda x: f_vjp_sin(x) * 2., jnp.arange(3.))
    (ct,) = jax.linear_transpose(f_lin, jnp.ones(3))(jnp.ones(3))
    allclose(ct, 2 * np.cos(np.arange(3.)), 1e-6)
    # vmap of the linear map stages a batched custom_lin; its transpose runs the batched bwd
    cts = jnp.stack([jnp.ones(3), 2 * jnp.ones(3)])
    (bct,) = jax.linear_transpose(vmap(f_lin), jnp.ones((2, 3)))(cts)
    allclose(bct, np.stack([2 * np.cos(np.arange(3.)), 4 * np.cos(np.arange(3.))]), 1e-6)
    with pytest.raises(TypeError, match="forward-mode"):
        f_lin(jnp.ones(3))


def test_linear_call_uses_the_given_transpose():
    from gpuarr.custom_derivatives import linear_call

    def f(x):
        # a "linear" map x -> 2x whose transpose is declared (deliberately) as ct -> 3 ct
        return linear_call(lambda r, v: r * v, lambda r, ct: 3. * ct, 2., x)

    allclose(f(1.5), 3., 1e-6)
    allclose(grad(f)(1.5), 3., 1e-6)


def test_custom_vjp_higher_order_differentiates_bwd():
    allclose(grad(grad(f_vjp_sin))(1.), -np.sin(1.), 1e-6)
    allclose(jit(grad(grad(f_vjp_sin)))(1.), -np.sin(1.), 1e-6)
    # reverse over reverse (jax.hessian is forward over reverse, which custom_vjp refuses)
    allclose(jax.jacrev(jax.jacrev(lambda x: jnp.sum(f_vjp_sin(x))))(jnp.arange(2.)),
             np.diag(-np.sin(np.arange(2.))), 1e-6)


def test_symbolic_zeros():
    from gpuarr.custom_derivatives import SymbolicZero
    seen = []

    @custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        seen.append((type(tx) is SymbolicZero, type(ty) is SymbolicZero))
        out = tx * y if type(tx) is not SymbolicZero else SymbolicZero(jax.typeof(x * y))
        if type(ty) is not SymbolicZero:
            out = x * ty if type(out) is SymbolicZero else out + x * ty
        return x * y, out

    f.defjvp(f_jvp, symbolic_zeros=True)
    allclose(grad(f)(2., 3.), 3., 1e-6)
    assert seen[-1] == (False, True)
    allclose(grad(f, 1)(2., 3.), 2., 1e-6)
    assert seen[-1] == (True, False)
    allclose(vmap(grad(f))(jnp.arange(3.), jnp.ones(3)), np.ones(3), 1e-6)
    allclose(grad(lambda x: vmap(f)(x, jnp.ones(3)).sum())(jnp.arange(3.)), np.ones(3), 1e-6)


def test_default_arguments_reach_the_rules():
    # JAX binds defaults before splitting off nondiff_argnums, so an omitted argument with a
    # default is still passed to the rules.
    power = custom_jvp(lambda x, n=2: x ** n, nondiff_argnums=(1,))
    power.defjvp(lambda n, p, t: (p[0] ** n, n * p[0] ** (n - 1) * t[0]))
    allclose(power(3.0), 9.0, 1e-6)
    allclose(grad(power)(3.0), 6.0, 1e-6)
    allclose(grad(lambda x: power(x, 3))(2.0), 12.0, 1e-6)
    allclose(jit(power)(2.0), 4.0, 1e-6)
    scaled = custom_jvp(lambda x, s=1.0: x * s)
    scaled.defjvp(lambda p, t: (p[0] * p[1], t[0] * p[1] + p[0] * t[1]))
    allclose(grad(scaled)(2.0), 1.0, 1e-6)
    times = custom_vjp(lambda x, n=2.0: x * n, nondiff_argnums=(1,))
    times.defvjp(lambda x, n: (x * n, None), lambda n, res, ct: (ct * n,))
    allclose(times(3.0), 6.0, 1e-6)
    allclose(grad(times)(3.0), 2.0, 1e-6)


def test_unhashable_callable_objects():
    # The wrapped function may be any callable, hashable or not and with or without a
    # __name__; its defaults still reach the rules.
    class Scale:
        __hash__ = None

        def __call__(self, x, s=2.0):
            return jnp.sin(x) * s

    f = custom_jvp(Scale())
    f.defjvp(lambda p, t: (f(*p), jnp.cos(p[0]) * p[1] * t[0] + jnp.sin(p[0]) * t[1]))
    allclose(f(1.0), 2 * np.sin(1.0), 1e-6)
    allclose(f(1.0, s=3.0), 3 * np.sin(1.0), 1e-6)
    allclose(grad(f)(1.0), 2 * np.cos(1.0), 1e-6)
    allclose(jit(f)(1.0), 2 * np.sin(1.0), 1e-6)
    assert f.__name__ == "Scale"
    g = custom_vjp(Scale())
    g.defvjp(lambda x, s: (g(x, s), (x, s)),
             lambda r, ct: (ct * jnp.cos(r[0]) * r[1], ct * jnp.sin(r[0])))
    allclose(g(1.0, s=3.0), 3 * np.sin(1.0), 1e-6)
    allclose(grad(g)(1.0), 2 * np.cos(1.0), 1e-6)
    allclose(grad(g, 1)(1.0, 3.0), np.sin(1.0), 1e-6)


@pytest.mark.parametrize("tangent", ["float", "int"])
def test_integer_output_needs_a_float0_tangent(tangent):
    @custom_jvp
    def f(x):
        return jnp.round(x).astype(jnp.int32)

    @f.defjvp
    def f_jvp(primals, tangents):
        t = tangents[0] if tangent == "float" else jnp.zeros((), jnp.int32)
        return f(primals[0]), t

    got = "float32" if tangent == "float" else "int32"
    with pytest.raises(TypeError, match=rf"Expected float0\[\] \(tangent type of int32\[\]\) "
                                        rf"but got {got}\[\]"):
        jax.jvp(f, (1.3,), (1.0,))


def test_integer_output_with_a_float0_tangent():
    @custom_jvp
    def f(x):
        return jnp.round(x).astype(jnp.int32)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), np.zeros((), jax.dtypes.float0)

    out, t = jax.jvp(f, (1.3,), (1.0,))
    assert int(out) == 1 and t.dtype == jax.dtypes.float0


def test_custom_vjp_in_nested_jit_whose_result_is_the_output():
    # The inliner splices jit -> jit -> custom_vjp_call; the innermost result is read
    # through two levels of renaming.
    f = custom_vjp(jnp.sin)
    f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (g * jnp.cos(x),))
    np.testing.assert_allclose(float(jit(lambda x: jit(f)(x))(1.0)), np.sin(1.0), rtol=1e-6)
    np.testing.assert_allclose(float(jit(grad(lambda x: jit(f)(x)))(1.0)), np.cos(1.0), rtol=1e-6)
    assert float(jit(lambda x: jit(lambda y: jit(lambda z: z)(y))(x) + 1)(1.0)) == 2.0

# ---------------------------------------------------------------- custom_vjp with symbolic_zeros=True

def _program(jax):
    seen = []

    @jax.custom_vjp
    def f(x, y):
        return x * y, x + y

    def fwd(x, y):
        seen.append(("fwd", type(x).__name__, bool(x.perturbed), bool(y.perturbed)))
        return f(x.value, y.value), (x.value, y.value)

    def bwd(res, g):
        seen.append(("bwd",) + tuple("SymbolicZero" if type(c).__name__ == "SymbolicZero"
                                     else "array" for c in g))
        ga, gb = g
        ga = 0.0 if type(ga).__name__ == "SymbolicZero" else ga
        gb = 0.0 if type(gb).__name__ == "SymbolicZero" else gb
        return ga * res[1] + gb, ga * res[0] + gb

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    out = [jax.grad(lambda x: f(x, 3.0)[0])(2.0),
           jax.jit(jax.grad(lambda y: f(2.0, y)[1], argnums=0))(3.0),
           jax.grad(lambda x, y: sum(f(x, y)), argnums=(0, 1))(2.0, 3.0)]
    return out, seen


def test_symbolic_zeros_reach_the_rules():
    out, seen = _program(gpuarr)
    np.testing.assert_allclose([float(out[0]), float(out[1])], [3.0, 1.0])
    np.testing.assert_allclose([float(v) for v in out[2]], [4.0, 3.0])
    assert seen[0] == ("fwd", "CustomVJPPrimal", True, False)
    assert seen[1] == ("bwd", "array", "SymbolicZero")
    assert seen[2] == ("fwd", "CustomVJPPrimal", False, True)
    assert cd.custom_vjp_primal_tree_values({"a": cd.CustomVJPPrimal(1.0, True)}) == {"a": 1.0}
    zeros = cd.zero_from_primal((np.ones(2, np.float32), np.int32(1)))
    assert zeros[0].dtype == np.float32 and zeros[1].dtype == gpuarr.dtypes.float0
    assert type(cd.zero_from_primal(1.0, symbolic_zeros=True)) is cd.SymbolicZero


def test_symbolic_zeros_match_jax():
    jax = pytest.importorskip("jax")
    (ours, ours_seen), (theirs, theirs_seen) = _program(gpuarr), _program(jax)
    assert ours_seen == theirs_seen
    for a, b in zip(gpuarr.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_custom_vjp_fwd_takes_nondiff_arguments_in_place():
    # JAX calls fwd with the function's own argument order and bwd with the non-differentiable
    # arguments first (flax's fp8 quantized_dot has nondiff_argnums=(8, 9)).
    def make(api):
        f = api.custom_vjp(lambda x, spec, y: x * y - len(spec), nondiff_argnums=(1,))

        def fwd(x, spec, y):
            assert isinstance(spec, str)
            return f(x, spec, y), (x, y)

        def bwd(spec, res, ct):
            x, y = res
            return ct * y * len(spec), ct * x
        f.defvjp(fwd, bwd)
        return api.grad(lambda x, y: f(x, "ab", y), argnums=(0, 1))
    real_jax = pytest.importorskip("jax")
    got, want = make(gpuarr)(3.0, 5.0), make(real_jax)(3.0, 5.0)
    for g, w in zip(got, want):
        allclose(g, np.asarray(w), 1e-6)


def test_custom_vjp_bwd_runs_when_every_output_cotangent_is_zero():
    # A bwd may return values that do not depend on the cotangents: flax's fp8 in_q returns the
    # new scale and amax history as the gradients of the old ones, while the product using its
    # outputs (another custom_vjp) gives them no cotangent. JAX still calls bwd, eagerly and
    # under jit (outputs nothing uses are dropped before, so their bwd does not run).
    def make(api):
        @partial(api.custom_vjp, nondiff_argnums=(0,))
        def update(n, x, history):
            return x * 1.0, history

        def fwd(n, x, history):
            return (x * 1.0, history), api.numpy.max(api.numpy.abs(x)) * n

        def bwd(n, amax, cts):
            return None, api.numpy.zeros(3).at[0].set(amax)
        update.defvjp(fwd, bwd)

        @api.custom_vjp
        def use(y, history):
            return (y * history).sum() + y.sum()
        use.defvjp(lambda y, history: (use(y, history), None), lambda res, ct: (None, None))
        return api.grad(lambda x, history: use(*update(2.0, x, history)), argnums=(0, 1))
    real_jax = pytest.importorskip("jax")
    x, history = np.array([1.0, -4.0, 2.0], np.float32), np.zeros(3, np.float32)
    for jitted in (False, True):
        ours, theirs = make(gpuarr), make(real_jax)
        if jitted:
            ours, theirs = gpuarr.jit(ours), real_jax.jit(theirs)
        got, want = ours(x, history), theirs(x, history)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        np.testing.assert_array_equal(np.asarray(got[1]), [8.0, 0.0, 0.0])
