"""custom_vmap and sequential_vmap (jax.custom_batching): the documented examples, nested
vmap, vmap of jit and jit of vmap, in_axes variations, jvp and grad (plain and under vmap),
and the errors a rule returning the wrong structures raises. Oracles are Python loops over
the examples, NumPy, and values JAX gives (noted where used)."""
import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import custom_batching, lax

rng = np.random.RandomState(0)


def stack_loop(fun, *args, in_axes=0):
    """The per-example results of `fun`, stacked: the oracle vmap is compared with."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [fun(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)])
            for i in range(n)]
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


def check(x, expected, dtype=None, rtol=1e-6, atol=1e-6):
    expected = np.asarray(expected)
    assert x.shape == expected.shape, (x.shape, expected.shape)
    assert x.dtype == np.dtype(dtype or expected.dtype), (x.dtype, dtype or expected.dtype)
    np.testing.assert_allclose(np.asarray(x), expected, rtol=rtol, atol=atol)


def recording_mul():
    """JAX's first documented example: f adds, its rule multiplies (so a result shows which
    one ran) and records what it was called with."""
    calls = []

    @custom_batching.custom_vmap
    def f(x, y):
        return x + y

    @f.def_vmap
    def f_vmap_rule(axis_size, in_batched, xs, ys):
        calls.append((axis_size, in_batched))
        return xs * ys, any(in_batched)

    return f, calls


# ---------------------------------------------------------------- documented examples


def test_custom_vmap_documented_example():
    f, calls = recording_mul()
    xs, ys = jnp.arange(3), jnp.arange(1, 4)
    out = jax.vmap(f)(xs, ys)
    check(out, [0, 2, 6], np.int32)  # JAX: Array([0, 2, 6], dtype=int32)
    assert calls == [(3, [True, True])]
    # Outside vmap the function runs as written, eagerly and under jit; the rule is unused.
    check(f(xs, ys), [1, 3, 5], np.int32)
    check(jax.jit(f)(xs, ys), [1, 3, 5], np.int32)
    assert len(calls) == 1


def test_def_vmap_returns_the_rule_and_attributes_forward():
    def add(x, y):
        return x + y

    add.note = "kept"
    f = custom_batching.custom_vmap(add)
    rule = f.def_vmap(lambda n, b, x, y: (x - y, True))
    assert f.vmap_rule is rule and f.__name__ == "add" and f.note == "kept"


def test_sequential_vmap_documented_example():
    seen = []

    @custom_batching.sequential_vmap
    def f(x):
        jax.debug.callback(lambda v: seen.append(int(v)), x)
        return x + 1

    out = jax.vmap(f)(jnp.arange(3))
    check(out, [1, 2, 3], np.int32)  # JAX prints 0, 1, 2 and returns Array([1, 2, 3])
    assert seen == [0, 1, 2]


def test_sequential_vmap_matches_a_python_loop():
    calls = []

    @custom_batching.sequential_vmap
    def f(x, y, scale):
        calls.append(np.shape(x))  # traced once per trace of the loop body
        return {"a": jnp.sin(x) * y + x.sum() * scale, "b": x.astype(np.int32)}

    x = rng.randn(4, 3).astype(np.float32)
    y = rng.randn(3).astype(np.float32)
    out = jax.vmap(f, in_axes=(0, None, None))(x, y, 2.0)
    want = stack_loop(lambda x: {"a": np.sin(x) * y + x.sum() * np.float32(2.0),
                                 "b": x.astype(np.int32)}, x)
    check(out["a"], want["a"], np.float32, rtol=1e-5)
    check(out["b"], want["b"], np.int32)
    assert set(calls) == {(3,)}  # the body sees one example, never the batch
    prog = str(jax.make_jaxpr(jax.vmap(f, in_axes=(0, None, None)))(x, y, 2.0))
    assert "scan[" in prog and "custom_vmap_call[" in prog


def test_custom_vjp_around_custom_vmap():
    # JAX's example combining custom_vmap with custom_vjp (the rule is set on the inner
    # function here: gpuarr's custom_vjp does not forward attributes such as def_vmap).
    @custom_batching.custom_vmap
    def inner(x, y):
        return jnp.sin(x) * y

    @inner.def_vmap
    def f_vmap_rule(axis_size, in_batched, xs, ys):
        return jnp.cos(xs) * ys, True

    f = jax.custom_vjp(inner)

    def f_fwd(x, y):
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)

    f.defvjp(f_fwd, f_bwd)
    check(jax.vmap(f)(jnp.zeros(3), jnp.ones(3)), [1.0, 1.0, 1.0], np.float32)  # as JAX
    check(jax.grad(f)(jnp.zeros(()), jnp.ones(())), 1.0, np.float32)  # as JAX


def test_custom_jvp_around_custom_vmap():
    @custom_batching.custom_vmap
    def inner(x):
        return jnp.sin(x)

    inner.def_vmap(lambda n, b, xs: (jnp.sin(xs) * 10.0, True))
    f = jax.custom_jvp(inner)
    f.defjvp(lambda p, t: (f(p[0]), 3.0 * t[0]))
    x = np.linspace(-1, 1, 4).astype(np.float32)
    check(jax.vmap(f)(x), np.sin(x) * 10, np.float32)
    _, t = jax.jvp(f, (x[0],), (np.float32(1.0),))
    check(t, 3.0, np.float32)
    check(jax.vmap(jax.grad(f))(x), np.full(4, 3.0), np.float32)


# ---------------------------------------------------------------- vmap variations


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 1), (1, -1), (-2, 0)])
def test_in_axes_reach_the_rule_as_leading_batch_axes(in_axes):
    calls = []

    @custom_batching.custom_vmap
    def f(x, y):
        return jnp.tanh(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        calls.append((axis_size, in_batched, x.shape, y.shape))
        bx, by = in_batched
        return jnp.tanh(x if bx else x[None]) * (y if by else y[None]), True

    x = rng.randn(2, 3).astype(np.float32)
    y = rng.randn(2, 3).astype(np.float32)
    bx = np.stack([x] * 4, axis=in_axes[0]) if in_axes[0] is not None else x
    by = np.stack([y * (i + 1) for i in range(4)], axis=in_axes[1]) if in_axes[1] is not None \
        else y
    out = jax.vmap(f, in_axes=in_axes)(bx, by)
    want = stack_loop(lambda a, b: np.tanh(a) * b, bx, by, in_axes=in_axes)
    check(out, want, np.float32, rtol=1e-5)
    (size, flags, xs, ys), = calls
    assert size == 4 and flags == [a is not None for a in in_axes]
    assert xs == ((4,) if flags[0] else ()) + (2, 3) and ys == ((4,) if flags[1] else ()) + (2, 3)


def test_pytree_arguments_and_partly_unbatched_outputs():
    calls = []

    @custom_batching.custom_vmap
    def f(params, x):
        return {"y": params["w"] * x + params["b"], "n": jnp.sum(params["w"])}

    @f.def_vmap
    def rule(axis_size, in_batched, params, x):
        calls.append(in_batched)
        assert in_batched == [{"b": False, "w": False}, True]
        return ({"y": params["w"] * x + params["b"], "n": jnp.sum(params["w"])},
                {"y": True, "n": False})

    params = {"w": np.float32([1.0, 2.0]), "b": np.float32([0.5, -0.5])}
    x = rng.randn(5, 2).astype(np.float32)
    out = jax.vmap(f, in_axes=(None, 0), out_axes={"y": 1, "n": None})(params, x)
    check(out["y"], (params["w"] * x + params["b"]).T, np.float32)
    check(out["n"], 3.0, np.float32)
    assert len(calls) == 1


def test_nested_vmap_uses_the_rule_at_each_level():
    calls = []

    @custom_batching.custom_vmap
    def f(x):
        return jnp.sin(x)

    @f.def_vmap
    def rule(axis_size, in_batched, xs):
        calls.append(axis_size)
        # Calling f on the batch applies the rule again under an enclosing vmap.
        return f(xs) if len(calls) < 2 else jnp.sin(xs), True

    x = rng.randn(2, 3, 4).astype(np.float32)
    out = jax.vmap(jax.vmap(f))(x)
    check(out, np.sin(x), np.float32, rtol=1e-6)
    assert calls == [3, 2]


def test_nested_sequential_vmap_nests_the_loops():
    seen = []

    @custom_batching.sequential_vmap
    def f(x, y):
        jax.debug.callback(lambda a, b: seen.append((float(a), float(b))), x, y)
        return x * y

    x = np.arange(2, dtype=np.float32)
    y = np.arange(3, dtype=np.float32) + 10
    out = jax.vmap(jax.vmap(f, in_axes=(None, 0)), in_axes=(0, None))(x, y)
    check(out, x[:, None] * y[None, :], np.float32)
    assert sorted(seen) == [(float(a), float(b)) for a in x for b in y]


def test_vmap_of_jit_and_jit_of_vmap():
    f, calls = recording_mul()
    xs = np.arange(4, dtype=np.float32)
    ys = np.arange(4, dtype=np.float32) + 1
    check(jax.vmap(jax.jit(f))(xs, ys), xs * ys, np.float32)
    check(jax.jit(jax.vmap(f))(xs, ys), xs * ys, np.float32)
    check(jax.jit(jax.vmap(jax.jit(f), in_axes=(0, None)))(xs, ys[1]), xs * ys[1], np.float32)
    assert [c[1] for c in calls] == [[True, True], [True, True], [True, False]]
    # Under jit the function is one custom_vmap_call equation holding the traced program;
    # under vmap the rule has replaced it, as in JAX.
    text = str(jax.make_jaxpr(f)(1.0, 2.0))
    assert "custom_vmap_call[" in text and "call={ lambda" in text and "rule=f_vmap_rule" in text
    assert "custom_vmap_call" not in str(jax.make_jaxpr(jax.vmap(f))(xs, ys))
    assert "mul" in str(jax.make_jaxpr(jax.vmap(f))(xs, ys))


def test_closed_over_values():
    y = jnp.float32(3.0)

    @custom_batching.custom_vmap
    def f(x):
        return x * y

    f.def_vmap(lambda n, b, xs: (xs * y, b[0]))
    x = np.arange(3, dtype=np.float32)
    check(jax.vmap(f)(x), x * 3, np.float32)
    check(jax.jit(lambda x: jax.vmap(f)(x * y))(x), x * 9, np.float32)
    # Closing over a traced value of an enclosing jit: it is an input of the equation.
    check(jax.jit(lambda s: jax.vmap(lambda v: custom_batching.sequential_vmap(
        lambda u: u * s)(v))(x))(2.0), x * 2, np.float32)


def test_derivatives_with_respect_to_closed_over_values():
    calls = []

    def g(x, y):
        @custom_batching.custom_vmap
        def f(x):
            return jnp.sin(x) * y

        def rule(axis_size, in_batched, xs):
            calls.append(in_batched)
            return jnp.sin(xs) * 2.0, True  # y is 2.0 below

        f.def_vmap(rule)
        return f(x).sum()

    x = np.float32([0.3, -1.2, 0.7])
    gy = jax.vmap(jax.grad(g, argnums=1), in_axes=(0, None))(x, 2.0)
    check(gy, np.sin(x), np.float32, rtol=1e-6)
    assert calls == [[True]]
    # Batching the tangent of a closed-over value: the JVP is batched as written.
    check(jax.jacfwd(g, argnums=1)(x, 2.0), np.sin(x).sum(), np.float32, rtol=1e-6)
    _, t = jax.vmap(lambda t: jax.jvp(lambda y: g(x, y), (2.0,), (t,)))(x)
    check(t, np.sin(x).sum() * x, np.float32, rtol=1e-6)


def test_sequential_vmap_closing_over_a_batched_value():
    def g(x, s):
        return custom_batching.sequential_vmap(lambda u: u * s)(x)

    x = np.arange(3, dtype=np.float32)
    s = np.float32([1.0, 2.0, 3.0])
    check(jax.vmap(g)(x, s), x * s, np.float32)


def test_unbatched_arguments_skip_the_rule():
    f, calls = recording_mul()
    out = jax.vmap(lambda x: f(2.0, 3.0) + x)(np.arange(3, dtype=np.float32))
    check(out, np.arange(3) + 5.0, np.float32)
    assert calls == []


# ---------------------------------------------------------------- differentiation


def sin_mul_with_rule():
    calls = []

    @custom_batching.custom_vmap
    def f(x, y):
        return jnp.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        calls.append(in_batched)
        return jnp.sin(xs) * ys, any(in_batched)

    return f, calls


def test_jvp_and_vmap_of_jvp():
    f, calls = sin_mul_with_rule()
    p, t = jax.jvp(f, (1.0, 2.0), (1.0, 0.0))
    check(p, np.sin(1.0) * 2, np.float32)
    check(t, np.cos(1.0) * 2, np.float32, rtol=1e-6)
    assert calls == []
    xs = np.linspace(-1, 1, 3).astype(np.float32)
    p, t = jax.vmap(lambda a: jax.jvp(f, (a, 2.0), (1.0, 0.0)))(xs)
    check(p, np.sin(xs) * 2, np.float32)
    check(t, np.cos(xs) * 2, np.float32, rtol=1e-6)
    # The rule of the JVP is the JVP of the user's rule, which sees every input whose primal
    # or tangent is batched as batched (JAX vmaps over b separately and returns (3, 3)).
    calls.clear()
    p, t = jax.vmap(lambda a, b: jax.jvp(f, (a, b), (a, 1.0)))(xs, xs + 2)
    check(p, np.sin(xs) * (xs + 2), np.float32, rtol=1e-6)
    check(t, np.cos(xs) * xs * (xs + 2) + np.sin(xs), np.float32, rtol=1e-6)
    assert calls == [[True, True]]
    # With no input batched in both, JAX calls the rule with nothing batched, which the
    # rule of its documented example (asserting all(in_batched)) rejects; here the other
    # half is batched too, so the rule sees the batch.
    calls.clear()
    jax.vmap(lambda a: jax.jvp(f, (a, 2.0), (1.0, 0.0)))(xs)
    assert calls == [[True, False]]
    # The JVP stays one equation, with the JVP of the rule (as JAX prints it).
    text = str(jax.make_jaxpr(lambda x, y: jax.jvp(f, (x, y), (x, y)))(1.0, 2.0))
    assert text.count("custom_vmap_call[") == 1 and "rule=jvp(rule)" in text


def test_jacfwd_and_jacrev_use_the_rule():
    calls = []

    @custom_batching.custom_vmap
    def f(x):
        return jnp.sin(x)

    @f.def_vmap
    def rule(axis_size, in_batched, xs):
        assert all(in_batched)  # JAX's jacfwd fails here: it passes [False]
        calls.append(axis_size)
        return jnp.sin(xs), True

    x = np.linspace(-1, 1, 3).astype(np.float32)
    check(jax.jacfwd(f)(x), np.diag(np.cos(x)), np.float32, rtol=1e-6)
    check(jax.jacrev(jax.vmap(f))(x), np.diag(np.cos(x)), np.float32, rtol=1e-6)
    check(jax.hessian(lambda v: f(v).sum())(x), np.diag(-np.sin(x)), np.float32, rtol=1e-6)
    assert 3 in calls  # (jacrev of a scalar function vmaps over one cotangent)


def test_grad_differentiates_the_function():
    f, calls = sin_mul_with_rule()
    gx, gy = jax.grad(f, argnums=(0, 1))(1.0, 2.0)
    check(gx, np.cos(1.0) * 2, np.float32, rtol=1e-6)
    check(gy, np.sin(1.0), np.float32, rtol=1e-6)
    check(jax.jit(jax.grad(f))(1.0, 2.0), np.cos(1.0) * 2, np.float32, rtol=1e-6)
    y, lin = jax.linearize(f, 1.0, 2.0)
    check(lin(1.0, 1.0), np.cos(1.0) * 2 + np.sin(1.0), np.float32, rtol=1e-6)
    assert calls == []  # JAX raises here: custom_vmap has no reverse mode there


@pytest.mark.parametrize("use_jit", [False, True])
def test_vmap_of_grad_uses_the_rule_forward_and_backward(use_jit):
    f, calls = sin_mul_with_rule()
    xs = np.linspace(-1, 1, 4).astype(np.float32)
    ys = np.linspace(1, 2, 4).astype(np.float32)
    g = jax.vmap(jax.grad(f, argnums=(0, 1)))
    g = jax.jit(g) if use_jit else g
    gx, gy = g(xs, ys)
    want = stack_loop(lambda a, b: (np.cos(a) * b, np.sin(a)), xs, ys)
    check(gx, want[0], np.float32, rtol=1e-6)
    check(gy, want[1], np.float32, rtol=1e-6)
    # Once for the primal, once differentiated for the cotangents.
    assert calls == [[True, True], [True, True]]
    calls.clear()
    gx, gy = jax.vmap(jax.grad(f, argnums=(0, 1)), in_axes=(0, None))(xs, np.float32(2.0))
    check(gx, np.cos(xs) * 2, np.float32, rtol=1e-6)
    check(gy, np.sin(xs), np.float32, rtol=1e-6)
    # The primal call sees y unbatched; per-example cotangents need y batched.
    assert calls == [[True, False], [True, True]]


def test_grad_of_vmap_differentiates_the_rule():
    f, calls = sin_mul_with_rule()
    xs = np.linspace(-1, 1, 3).astype(np.float32)
    g = jax.grad(lambda x: jax.vmap(f, in_axes=(0, None))(x, 2.0).sum())(xs)
    check(g, np.cos(xs) * 2, np.float32, rtol=1e-6)
    assert calls == [[True, False]]


def test_sequential_vmap_derivatives_loop():
    f = custom_batching.sequential_vmap(lambda x, y: jnp.sin(x) * y + x.sum())
    x = rng.randn(3, 4).astype(np.float32)

    def loss(x):
        return f(x, 2.0).sum()

    def want_grad(x):
        return np.cos(x) * 2 + x.shape[-1]

    check(jax.grad(loss)(x[0]), want_grad(x[0]), np.float32, rtol=1e-5)
    check(jax.vmap(jax.grad(loss))(x), want_grad(x), np.float32, rtol=1e-5)
    check(jax.jit(jax.vmap(jax.grad(loss)))(x), want_grad(x), np.float32, rtol=1e-5)
    check(jax.grad(lambda x: jax.vmap(loss)(x).sum())(x), want_grad(x), np.float32, rtol=1e-5)
    hess = jax.vmap(jax.hessian(loss))(x)
    check(hess, stack_loop(lambda v: np.diag(-np.sin(v) * 2), x), np.float32, rtol=1e-5)
    _, t = jax.vmap(lambda v: jax.jvp(loss, (v,), (jnp.ones_like(v),)))(x)
    check(t, want_grad(x).sum(1), np.float32, rtol=1e-5)
    prog = str(jax.make_jaxpr(jax.vmap(jax.grad(loss)))(x))
    assert "rule=transpose(sequential_rule)" in prog


def test_integer_inputs_and_outputs_under_grad():
    @custom_batching.custom_vmap
    def f(x, n):
        return x * n, n * 2

    f.def_vmap(lambda size, b, x, n: ((x * n, n * 2), (any(b), b[1])))
    g = jax.grad(lambda x, n: f(x, n)[0])(3.0, 4)
    check(g, 4.0, np.float32)
    xs = np.float32([1.0, 2.0])
    ns = np.int32([3, 5])
    check(jax.vmap(jax.grad(lambda x, n: f(x, n)[0]))(xs, ns), [3.0, 5.0], np.float32)
    p, t = jax.jvp(lambda x: f(x, 4), (3.0,), (1.0,))
    check(p[1], 8, np.int32)
    assert t[1].dtype == jax.float0


@pytest.mark.parametrize("name", ["rule", "sequential"])
def test_check_grads(name):
    if name == "rule":
        @custom_batching.custom_vmap
        def f(x):
            return jnp.sin(x) * x

        f.def_vmap(lambda n, b, xs: (jnp.sin(xs) * xs, True))
    else:
        f = custom_batching.sequential_vmap(lambda x: jnp.sin(x) * x)
    x = rng.uniform(-1, 1, (3, 2))
    check_grads_x64(f, [x[0]], 2)
    check_grads_x64(jax.vmap(f), [x], 2)


# ---------------------------------------------------------------- errors


def wrong(rule):
    @custom_batching.custom_vmap
    def f(x, y):
        return x + y, x * y

    f.def_vmap(rule)
    return jax.vmap(f)


XS = np.arange(3, dtype=np.float32)


def test_rule_output_structures_are_checked_with_jaxs_messages():
    with pytest.raises(ValueError, match=r"structure of output value and output batching "
                                         r"specification returned by custom vmap rule "
                                         r"\(<lambda>\) do not match\.\nOutput values: "
                                         r"PyTreeDef\(\(\*, \*\)\)\nBatching spec: "
                                         r"PyTreeDef\(\*\)"):
        wrong(lambda n, b, x, y: ((x + y, x * y), True))(XS, XS)
    with pytest.raises(ValueError, match=r"structure of output returned by custom vmap rule "
                                         r"\(<lambda>\) does not match that of original "
                                         r"custom-vmapped function\.\nOriginal output: "
                                         r"PyTreeDef\(\(\*, \*\)\)\nRule output: "
                                         r"PyTreeDef\(\[\*, \*\]\)"):
        wrong(lambda n, b, x, y: ([x + y, x * y], [True, True]))(XS, XS)
    with pytest.raises(ValueError, match="too many values to unpack"):
        wrong(lambda n, b, x, y: (x + y, x * y, True))(XS, XS)


def test_rule_output_shapes_are_checked():
    # JAX returns whatever the rule gives; a wrong shape is an error here.
    with pytest.raises(ValueError, match=r"returned an output of shape \(2,\) marked batched"):
        wrong(lambda n, b, x, y: ((x[:2] + y[:2], x * y), (True, True)))(XS, XS)


def test_missing_rule_and_unresolvable_arguments():
    @custom_batching.custom_vmap
    def g(x, y):
        return x

    with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap "
                                             "function g using def_vmap."):
        g(1.0, 2.0)
    with pytest.raises(AttributeError, match="No batching rule defined"):
        jax.vmap(g)(XS, XS)
    g.def_vmap(lambda n, b, x, y: (x, b[0]))
    out = g(1.0, y=2.0)
    check(out, 1.0, np.float32)
    assert out.weak_type  # as JAX, which evaluates the traced function
    with pytest.raises(TypeError, match=r"The input arguments to the custom_vmap-decorated "
                                        r"function g could not be resolved to positional-only "
                                        r"arguments\. Binding failed with the error:\n"
                                        r"missing a required argument: 'y'"):
        g(1.0, z=2.0)


def test_rule_closing_over_a_batched_value_is_an_error():
    def g(s):
        @custom_batching.custom_vmap
        def f(x):
            return x * s

        f.def_vmap(lambda n, b, x: (x * s, b[0]))
        return f(2.0)

    # JAX fails with a bare AssertionError.
    with pytest.raises(ValueError, match="closes over a value that an enclosing vmap batches"):
        jax.vmap(g)(XS)


def test_map_of_sequential_function_under_jit():
    f = custom_batching.sequential_vmap(lambda x: jnp.cumsum(x) * 2.0)
    x = rng.randn(5, 3).astype(np.float32)
    check(jax.jit(lambda x: lax.map(f, x))(x), np.cumsum(x, 1) * 2, np.float32, rtol=1e-5)
    check(jax.jit(jax.vmap(f))(x), np.cumsum(x, 1) * 2, np.float32, rtol=1e-5)
