"""lax control flow: cond, switch, while_loop, fori_loop, scan, map, associative_scan.

Values are compared with plain Python equivalents, gradients with central finite
differences (float64 reference), vmap with a Python loop stacking per-example results,
and staged programs are type-checked.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import core, lax
from gpuarr.errors import TracerBoolConversionError


def fd_grad(f, x, eps=1e-4):
    """Central finite differences of scalar f at x (a float64 NumPy array)."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


def typecheck(fun, *args):
    closed = jax.jit(fun).trace(*args).jaxpr
    core.typecheck_program(closed.program)
    return closed


def check_dtype_shape(out, ref):
    out = np.asarray(out)
    assert out.shape == np.shape(ref)
    assert out.dtype == np.asarray(ref).dtype


# ---------------------------------------------------------------- cond / switch


@pytest.mark.parametrize("pred", [True, False])
def test_cond_values_and_pytrees(pred):
    x = np.arange(3, dtype=np.float32)
    out = lax.cond(pred, lambda a, b: {"s": a + b, "p": a * b}, lambda a, b: {"s": a - b, "p": a},
                   x, 2.0)
    ref_s, ref_p = (x + 2, x * 2) if pred else (x - 2, x)
    np.testing.assert_allclose(out["s"], ref_s)
    np.testing.assert_allclose(out["p"], ref_p)
    check_dtype_shape(out["s"], ref_s.astype(np.float32))


def test_cond_under_jit_and_typecheck():
    f = lambda p, x: lax.cond(p > 0, lambda x: jnp.sin(x), lambda x: jnp.cos(x), x)  # noqa: E731
    for p in (1, -1):
        np.testing.assert_allclose(jax.jit(f)(p, 0.5), np.sin(0.5) if p > 0 else np.cos(0.5),
                                   rtol=1e-6)
    closed = typecheck(f, 1, 0.5)
    assert [e.prim.name for e in closed.eqns].count("cond") == 1
    assert "branches=(" in str(closed)


def test_cond_mismatch_errors():
    with pytest.raises(TypeError, match="same pytree structure"):
        lax.cond(True, lambda x: x, lambda x: (x, x), 1.0)
    with pytest.raises(TypeError, match="dtypes do not match"):
        lax.cond(True, lambda x: x, lambda x: x.astype(jnp.int32), 1.0)
    with pytest.raises(TypeError, match="shapes do not match"):
        lax.cond(True, lambda x: x, lambda x: jnp.ones(3), 1.0)
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        lax.cond(jnp.ones(2) > 0, lambda x: x, lambda x: x, 1.0)


def test_cond_iterator_operand_raises():
    # SPEC S9: iterators passed to cond raise.
    np.testing.assert_allclose(lax.cond(True, lambda x: x + 1, lambda x: x - 1,
                                        jnp.array([0.0])), [1.0])
    with pytest.raises(TypeError, match="not a valid JAX type"):
        lax.cond(True, lambda x: next(x) + 1, lambda x: next(x) - 1, iter(range(10)))


@pytest.mark.parametrize("pred", [True, False])
def test_cond_grad_matches_finite_differences(pred):
    def f(x):
        return lax.cond(pred, lambda x: jnp.sum(jnp.sin(x) * x), lambda x: jnp.sum(x ** 3), x)

    x = np.array([0.3, -1.2, 2.0], np.float32)
    g = jax.grad(f)(x)
    ref = fd_grad(lambda v: np.sum(np.sin(v) * v) if pred else np.sum(v ** 3), x)
    np.testing.assert_allclose(g, ref, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(x), g, rtol=1e-6)


def test_cond_grad_with_traced_predicate_under_jit():
    def f(p, x):
        return lax.cond(p, lambda x: x * x * 3.0, lambda x: jnp.exp(x), x)

    g = jax.jit(jax.grad(f, 1))
    np.testing.assert_allclose(g(True, 2.0), 12.0, rtol=1e-6)
    np.testing.assert_allclose(g(False, 2.0), np.exp(2.0), rtol=1e-6)


def test_cond_closure_over_traced_values_grad():
    def f(x, y):
        return lax.cond(x > 0, lambda: x * y, lambda: x + y)

    np.testing.assert_allclose(jax.grad(f, (0, 1))(2.0, 3.0), (3.0, 2.0))
    np.testing.assert_allclose(jax.grad(f, (0, 1))(-2.0, 3.0), (1.0, 1.0))


def test_cond_vmap_batched_and_unbatched_pred():
    def f(p, x):
        return lax.cond(p, lambda x: x * 2.0, lambda x: -x, x)

    ps = np.array([True, False, True])
    xs = np.array([1.0, 2.0, 3.0], np.float32)
    ref = np.stack([np.asarray(f(p, x)) for p, x in zip(ps, xs)])
    np.testing.assert_allclose(jax.vmap(f)(ps, xs), ref)
    np.testing.assert_allclose(jax.vmap(f, (None, 0))(True, xs), xs * 2)
    g = jax.vmap(jax.grad(f, 1))(ps, xs)
    np.testing.assert_allclose(g, [2.0, -1.0, 2.0])


def test_switch_clamps_index_and_vmaps():
    branches = [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x]
    for i, ref in [(-3, 3.0), (0, 3.0), (1, 20.0), (2, -2.0), (9, -2.0)]:
        assert float(lax.switch(i, branches, 2.0)) == ref
    idx = np.array([-1, 0, 1, 2, 5], np.int32)
    xs = np.arange(5, dtype=np.float32)
    out = jax.vmap(lambda i, x: lax.switch(i, branches, x))(idx, xs)
    ref = [branches[min(max(i, 0), 2)](x) for i, x in zip(idx, xs)]
    np.testing.assert_allclose(out, ref)
    with pytest.raises(TypeError, match="Index type must be an integer"):
        lax.switch(1.0, branches, 1.0)
    np.testing.assert_allclose(jax.grad(lambda x: lax.switch(1, branches, x))(3.0), 10.0)


# ---------------------------------------------------------------- while_loop / fori_loop


def test_while_loop_values_and_pytree_carry():
    def f(n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))

    i, v = f(5)
    assert int(i) == 5 and float(v) == 32.0
    i, v = jax.jit(f)(7)
    assert int(i) == 7 and float(v) == 128.0
    assert np.asarray(v).dtype == np.float32


def test_while_loop_errors():
    with pytest.raises(TypeError, match="boolean scalar"):
        lax.while_loop(lambda c: c, lambda c: c * 2.0, 1.0)
    with pytest.raises(TypeError, match="equal types"):
        lax.while_loop(lambda c: c < 3.0, lambda c: jnp.ones(2), 1.0)


def test_while_loop_vmap_batched_predicate_runs_each_lane_to_done():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 100.0, lambda c: (c[0] * 2.0, c[1] + 1), (x, 0))

    xs = np.array([1.0, 30.0, 200.0, 7.0], np.float32)
    vals, counts = jax.vmap(f)(xs)
    ref = [f(x) for x in xs]
    np.testing.assert_allclose(vals, [float(r[0]) for r in ref])
    np.testing.assert_array_equal(counts, [int(r[1]) for r in ref])
    np.testing.assert_allclose(jax.jit(jax.vmap(f))(xs)[0], vals)


def test_while_loop_vmap_unbatched_predicate_batched_body():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]

    xs = np.array([1.0, 2.0, 0.5], np.float32)
    np.testing.assert_allclose(jax.vmap(f)(xs), xs ** 4, rtol=1e-6)


def test_while_loop_forward_mode_and_reverse_mode_error():
    def f(x):
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * c, x)

    out, t = jax.jvp(f, (1.5,), (1.0,))
    # 1.5 -> 2.25 -> 5.0625 -> 25.6...: d/dx x^8 = 8 x^7
    np.testing.assert_allclose(out, 1.5 ** 8, rtol=1e-6)
    np.testing.assert_allclose(t, 8 * 1.5 ** 7, rtol=1e-5)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop or lax.fori_loop with dynamic"):
        jax.grad(f)(1.5)


def test_fori_loop_static_is_scan_and_reverse_differentiable():
    def f(x):
        return lax.fori_loop(0, 5, lambda i, c: c * x + i, 1.0)

    prog = jax.make_jaxpr(f)(2.0)
    names = [e.prim.name for e in prog.eqns]
    assert names == ["scan"]
    assert float(f(2.0)) == 58.0
    np.testing.assert_allclose(jax.grad(f)(2.0), 5 * 16 + 3 * 4 + 4 * 2 + 3)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(2.0), 103.0)


def test_fori_loop_dynamic_is_while():
    def f(x, n):
        return lax.fori_loop(0, n, lambda i, c: c * 2.0 + i, x)

    prog = jax.make_jaxpr(f)(1.0, 3)
    assert [e.prim.name for e in prog.eqns] == ["while"]
    assert float(jax.jit(f)(1.0, 3)) == 1 * 8 + 0 * 4 + 1 * 2 + 2
    out = jax.vmap(f, (None, 0))(1.0, np.array([0, 1, 2, 3], np.int32))
    np.testing.assert_allclose(out, [1.0, 2.0, 5.0, 12.0])


def test_fori_loop_iterators_spec_s9():
    array = jnp.arange(10)
    assert int(lax.fori_loop(0, 10, lambda i, x: x + array[i], 0)) == 45
    iterator = iter(range(10))
    # The body is traced once: next() runs at trace time, giving JAX's surprising 0.
    assert int(lax.fori_loop(0, 10, lambda i, x: x + next(iterator), 0)) == 0


# ---------------------------------------------------------------- scan


def py_scan(f, init, xs, reverse=False):
    carry, ys = init, []
    idx = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for i in idx:
        carry, y = f(carry, xs[i])
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    return carry, np.stack(ys)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 7), reverse=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_scan_matches_python_loop(n, reverse, seed):
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(n, 3)).astype(np.float32)
    w = rng.normal(size=(3,)).astype(np.float32)

    def body(c, x):
        c = np.tanh(c * w + x) if isinstance(c, np.ndarray) else jnp.tanh(c * w + x)
        return c, c.sum()

    c, ys = lax.scan(body, np.zeros(3, np.float32), xs, reverse=reverse)
    rc, rys = py_scan(body, np.zeros(3, np.float32), xs, reverse)
    np.testing.assert_allclose(c, rc, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ys, rys, rtol=1e-5, atol=1e-6)
    check_dtype_shape(ys, rys.astype(np.float32))


def test_scan_pytrees_length_and_none_xs():
    def body(c, x):
        return {"a": c["a"] + x[0], "b": c["b"] * 2}, (x[1], c["a"])

    xs = (np.arange(4, dtype=np.float32), np.arange(4, dtype=np.int32))
    c, (y0, y1) = lax.scan(body, {"a": 0.0, "b": 1}, xs)
    assert float(c["a"]) == 6.0 and int(c["b"]) == 16
    np.testing.assert_array_equal(y0, xs[1])
    np.testing.assert_allclose(y1, [0, 0, 1, 3])
    c, ys = lax.scan(lambda c, _: (c + 1, c), 0, None, length=3)
    assert int(c) == 3
    np.testing.assert_array_equal(ys, [0, 1, 2])


def test_scan_errors():
    with pytest.raises(TypeError, match="same pytree structure"):
        lax.scan(lambda c, x: ((c, c), x), 0.0, jnp.ones(3))
    with pytest.raises(TypeError, match="dtypes do not match"):
        lax.scan(lambda c, x: (c.astype(jnp.int32), x), 0.0, jnp.ones(3))
    with pytest.raises(TypeError, match="not a valid JAX type"):
        lax.scan(lambda c, x: (c, x), 0.0, iter(range(3)))
    with pytest.raises(ValueError, match="different leading axis sizes: 3, 4"):
        lax.scan(lambda c, x: (c, x), 0.0, (jnp.ones(3), jnp.ones(4)))
    with pytest.raises(ValueError, match="`length` not provided"):
        lax.scan(lambda c, x: (c, x), 0.0)


def _rnn_loss(w, h0, xs):
    def body(h, x):
        h = jnp.tanh(w * h + x)
        return h, h * h
    h, ys = lax.scan(body, h0, xs)
    return jnp.sum(h) + jnp.sum(ys)


def _rnn_loss_np(w, h0, xs):
    h, total = h0, 0.0
    for x in xs:
        h = np.tanh(w * h + x)
        total = total + np.sum(h * h)
    return np.sum(h) + total


@pytest.mark.parametrize("argnum", [0, 1, 2])
def test_scan_grad_matches_finite_differences(argnum):
    rng = np.random.default_rng(argnum)
    args = [rng.normal(size=(2,)), rng.normal(size=(2,)), rng.normal(size=(4, 2))]
    g = jax.grad(_rnn_loss, argnum)(*[a.astype(np.float32) for a in args])

    def f(v):
        a = list(args)
        a[argnum] = v
        return _rnn_loss_np(*a)

    np.testing.assert_allclose(g, fd_grad(f, args[argnum]), rtol=2e-3, atol=2e-3)


def test_scan_grad_under_jit_reverse_and_vmap():
    rng = np.random.default_rng(1)
    w = rng.normal(size=(2,)).astype(np.float32)
    h0 = rng.normal(size=(2,)).astype(np.float32)
    xs = rng.normal(size=(3, 4, 2)).astype(np.float32)
    g = jax.jit(jax.grad(_rnn_loss))(w, h0, xs[0])
    np.testing.assert_allclose(g, jax.grad(_rnn_loss)(w, h0, xs[0]), rtol=1e-5)
    per_example = jax.vmap(jax.grad(_rnn_loss), (None, None, 0))(w, h0, xs)
    ref = np.stack([np.asarray(jax.grad(_rnn_loss)(w, h0, x)) for x in xs])
    np.testing.assert_allclose(per_example, ref, rtol=1e-5, atol=1e-6)

    def rev_loss(w):
        c, ys = lax.scan(lambda c, x: (c * w + x, c), 1.0, xs[0, :, 0], reverse=True)
        return c + jnp.sum(ys)

    def rev_np(w):
        c, total = 1.0, 0.0
        for x in xs[0, ::-1, 0]:
            total += c
            c = c * w + x
        return c + total

    np.testing.assert_allclose(jax.grad(rev_loss)(0.7), fd_grad(rev_np, 0.7), rtol=1e-3)


def test_scan_jvp_and_jax_oracle():
    jax_ref = pytest.importorskip("jax")
    w = np.float32(0.8)
    h0 = np.array([0.1, -0.2], np.float32)
    xs = np.linspace(-1, 1, 10, dtype=np.float32).reshape(5, 2)
    out, t = jax.jvp(lambda w: _rnn_loss(w, h0, xs), (w,), (np.float32(1.0),))
    import jax.numpy as rjnp

    def ref_loss(w):
        def body(h, x):
            h = rjnp.tanh(w * h + x)
            return h, h * h
        h, ys = jax_ref.lax.scan(body, h0, xs)
        return rjnp.sum(h) + rjnp.sum(ys)

    rout, rt = jax_ref.jvp(ref_loss, (w,), (np.float32(1.0),))
    np.testing.assert_allclose(out, rout, rtol=1e-5)
    np.testing.assert_allclose(t, rt, rtol=1e-4)


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 1),
                                     (0, 0, 2)])
def test_scan_vmap_matches_loop(in_axes):
    rng = np.random.default_rng(3)
    per_example = [rng.normal(size=(3,) + shape).astype(np.float32)
                   for shape in ((2,), (2,), (4, 2))]
    args = [ex[0] if ax is None else np.moveaxis(ex, 0, ax)
            for ex, ax in zip(per_example, in_axes)]

    def take(a, ax, i):
        return a if ax is None else np.take(a, i, axis=ax)

    out = jax.vmap(_rnn_loss, in_axes)(*args)
    ref = np.stack([np.asarray(_rnn_loss(*[take(a, ax, i) for a, ax in zip(args, in_axes)]))
                    for i in range(3)])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_make_jaxpr_scan_matches_documented_output():
    # The example in the "Common Gotchas" guide (spec/004), as JAX 0.10 prints it.
    def func11(arr, extra):
        ones = jnp.ones(arr.shape)

        def body(carry, aelems):
            ae1, ae2 = aelems
            return (carry + ae1 * ae2 + extra, carry)
        return lax.scan(body, 0., (arr, ones))

    text = str(jax.make_jaxpr(func11)(jnp.arange(16), 5.))
    expected_scan = """\
    d:f32[] e:f32[16] = scan[
      jaxpr={ lambda ; f:f32[] g:f32[] h:i32[] i:f32[]. let
          j:f32[] = convert_element_type[new_dtype=float32 weak_type=False] h
          k:f32[] = mul j i
          l:f32[] = convert_element_type[new_dtype=float32 weak_type=False] g
          m:f32[] = add l k
          n:f32[] = convert_element_type[new_dtype=float32 weak_type=False] f
          o:f32[] = add m n
        in (o, g) }
      length=16
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] b 0.0:f32[] a c
  in (d, e) }"""
    assert text.startswith("{ lambda ; a:i32[16] b:f32[]. let\n    c:f32[16] = broadcast_in_dim")
    assert text.endswith(expected_scan), text
    with pytest.raises(TypeError, match="not a valid JAX type"):
        jax.make_jaxpr(func11)(iter(range(16)), 5.)


def test_make_jaxpr_while_and_cond_print_like_jax():
    text = str(jax.make_jaxpr(lambda x: lax.while_loop(lambda c: c < 10., lambda c: c * 2., x))(1.))
    assert text == """\
{ lambda ; a:f32[]. let
    b:f32[] = while[
      body_jaxpr={ lambda ; c:f32[]. let d:f32[] = mul c 2.0:f32[] in (d,) }
      body_nconsts=0
      cond_jaxpr={ lambda ; e:f32[]. let f:bool[] = lt e 10.0:f32[] in (f,) }
      cond_nconsts=0
    ] a
  in (b,) }"""
    text = str(jax.make_jaxpr(
        lambda p, x: lax.cond(p, lambda x: x + 1., lambda x: jnp.sin(x), x))(True, 1.))
    assert text == """\
{ lambda ; a:bool[] b:f32[]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    d:f32[] = cond[
      branches=(
        { lambda ; e:f32[]. let f:f32[] = sin e in (f,) }
        { lambda ; g:f32[]. let h:f32[] = add g 1.0:f32[] in (h,) }
      )
    ] c b
  in (d,) }"""


def test_python_loops_unroll_but_scan_stays_small():
    # SPEC S6: a Python loop unrolls into one equation per step; scan/fori_loop stay small.
    def unrolled(x):
        for i in range(300):
            x = x * 0.5 + i
        return x

    def rolled(x):
        return lax.fori_loop(0, 300, lambda i, x: x * 0.5 + i, x)

    assert len(jax.make_jaxpr(unrolled)(1.0).eqns) >= 600
    assert len(jax.make_jaxpr(rolled)(1.0).eqns) == 1
    np.testing.assert_allclose(jax.jit(rolled)(1.0), unrolled(1.0), rtol=1e-5)


def test_python_if_on_tracer_points_to_lax_cond():
    with pytest.raises(TracerBoolConversionError, match="lax.cond"):
        jax.jit(lambda x: 1.0 if x > 0 else 2.0)(1.0)
    with pytest.raises(TracerBoolConversionError, match="lax.while_loop"):
        jax.jit(lambda x: x if x > 0 else -x)(1.0)


# ---------------------------------------------------------------- map / associative_scan


@pytest.mark.parametrize("batch_size", [None, 1, 2, 3, 8])
def test_map_with_and_without_batch_size(batch_size):
    xs = np.arange(7, dtype=np.float32)
    out = lax.map(lambda x: {"sq": x * x, "neg": -x}, xs, batch_size=batch_size)
    np.testing.assert_allclose(out["sq"], xs * xs)
    np.testing.assert_allclose(out["neg"], -xs)
    check_dtype_shape(out["sq"], xs)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 17), reverse=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_associative_scan_matches_numpy(n, reverse, seed):
    x = np.random.default_rng(seed).normal(size=(3, n)).astype(np.float32)
    out = lax.associative_scan(jnp.add, x, reverse=reverse, axis=1)
    ref = np.cumsum(x[:, ::-1], axis=1)[:, ::-1] if reverse else np.cumsum(x, axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lax.associative_scan(jnp.maximum, x, axis=1),
                               np.maximum.accumulate(x, axis=1))


def test_associative_scan_pytree_linear_recurrence():
    # h_t = a_t h_{t-1} + b_t as an associative scan over (a, b) pairs.
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 1.0, size=9).astype(np.float32)
    b = rng.normal(size=9).astype(np.float32)

    def combine(x, y):
        return (x[0] * y[0], y[0] * x[1] + y[1])

    _, h = lax.associative_scan(combine, (a, b))
    ref, acc = [], 0.0
    for ai, bi in zip(a, b):
        acc = ai * acc + bi
        ref.append(acc)
    np.testing.assert_allclose(h, ref, rtol=1e-5, atol=1e-6)
    g = jax.grad(lambda b: jnp.sum(lax.associative_scan(combine, (a, b))[1]))(b)
    np.testing.assert_allclose(g, fd_grad(lambda v: np.sum(_linrec(a, v)), b), rtol=1e-3)


def _linrec(a, b):
    acc, out = 0.0, []
    for ai, bi in zip(a, b):
        acc = ai * acc + bi
        out.append(acc)
    return np.array(out)


def test_nested_control_flow_grad():
    def f(x):
        def body(c, t):
            c = lax.cond(t > 1, lambda c: c * x, lambda c: c + x, c)
            return c, c
        c, ys = lax.scan(body, 1.0, jnp.arange(4))
        return c + jnp.sum(ys)

    def f_np(x):
        c, total = 1.0, 0.0
        for t in range(4):
            c = c * x if t > 1 else c + x
            total += c
        return c + total

    np.testing.assert_allclose(f(1.5), f_np(1.5), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(f)(1.5), fd_grad(f_np, 1.5), rtol=1e-3)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(1.5), fd_grad(f_np, 1.5), rtol=1e-3)
    xs = np.array([0.5, 1.5], np.float32)
    np.testing.assert_allclose(jax.vmap(jax.grad(f))(xs), [fd_grad(f_np, x) for x in xs],
                               rtol=1e-3)


def test_integer_carries_and_outputs_under_grad():
    def f(x):
        (c, n), ys = lax.scan(lambda c, t: ((c[0] * x + t, c[1] + 1), c[1]), (1.0, 0),
                              jnp.arange(3.0))
        k = lax.cond(x > 0, lambda: (x * 2.0, 1), lambda: (x, 2))
        return c + n + jnp.sum(ys) + k[0] * k[1]

    def f_np(x):
        c = 1.0
        for t in range(3):
            c = c * x + t
        return c + 3 + 3 + (x * 2.0 if x > 0 else 2 * x)

    np.testing.assert_allclose(f(1.3), f_np(1.3), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(f)(1.3), fd_grad(f_np, 1.3), rtol=1e-3)


def test_staged_transformed_programs_typecheck():
    w = np.float32(0.5)
    h0 = np.zeros(2, np.float32)
    xs = np.ones((3, 2), np.float32)
    typecheck(jax.grad(_rnn_loss), w, h0, xs)
    typecheck(jax.vmap(jax.grad(_rnn_loss), (0, None, None)), np.ones(4, np.float32), h0, xs)
    typecheck(jax.vmap(lambda x: lax.while_loop(lambda c: c < 5.0, lambda c: c + x, 0.0)),
              np.ones(3, np.float32))
    typecheck(jax.grad(lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x), 1), True, 1.0)


def test_weakly_typed_initial_carries_take_the_body_dtype():
    c, _ = lax.scan(lambda c, x: (c + x, c), 0, jnp.ones(3))
    assert np.asarray(c).dtype == np.float32 and float(c) == 3.0
    out = lax.fori_loop(0, 3, lambda i, c: c + jnp.float16(1), 0.0)
    assert np.asarray(out).dtype == np.float16 and float(out) == 3.0
    out = lax.while_loop(lambda c: c < 3, lambda c: c + jnp.float16(1), 0.0)
    assert np.asarray(out).dtype == np.float16
    with pytest.raises(TypeError, match="The output of true_fun has type float32"):
        lax.cond(True, lambda: 1.0, lambda: jnp.float16(2))


def test_nested_scans_per_example_gradients_and_hessian():
    def f(w):
        def outer(c, x):
            d, ys = lax.scan(lambda d, y: (jnp.sin(d * w + y), d), c, jnp.arange(3.0) * x)
            return d + jnp.sum(ys), d
        c, ys = lax.scan(outer, 0.1, jnp.arange(4.0))
        return c + jnp.sum(ys)

    def f_np(w):
        c, total = 0.1, 0.0
        for x in range(4):
            d, inner = c, 0.0
            for y in np.arange(3.0) * x:
                inner += d
                d = np.sin(d * w + y)
            c = d + inner
            total += d
        return c + total

    ws = np.array([0.7, 0.3], np.float32)
    np.testing.assert_allclose(jax.vmap(jax.grad(f))(ws), [fd_grad(f_np, w) for w in ws],
                               rtol=2e-3)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(f)))(ws), jax.vmap(jax.grad(f))(ws),
                               rtol=1e-5)
    prod = lambda x: lax.scan(lambda c, t: (c * t, c), 1.0, x)[0]  # noqa: E731
    np.testing.assert_allclose(jax.hessian(prod)(jnp.arange(1.0, 4.0)),
                               [[0, 3, 2], [3, 0, 1], [2, 1, 0]])
    np.testing.assert_allclose(
        jax.jacrev(lambda x: lax.scan(lambda c, t: (c * t, c), 1.0, x)[1])(jnp.arange(1.0, 4.0)),
        [[0, 0, 0], [1, 0, 0], [2, 1, 0]])


@pytest.mark.parametrize("which", ["scan", "while", "cond", "switch"])
def test_make_jaxpr_text_matches_jax(which):
    jax_ref = pytest.importorskip("jax")

    def program(lib, jnp_):
        lx = lib.lax
        if which == "scan":
            return (lambda x: lx.scan(lambda c, t: (c * 0.5 + t, c), 0., x)), (jnp_.arange(5.),)
        if which == "while":
            return (lambda x: lx.while_loop(lambda c: c < 10., lambda c: c * 2., x)), (1.,)
        if which == "cond":
            return (lambda p, x: lx.cond(p, lambda x: x + 1., jnp_.sin, x)), (True, 1.)
        return (lambda i, x: lx.switch(i, [jnp_.sin, jnp_.cos, jnp_.tanh], x)), (1, 1.)

    import jax.numpy as ref_jnp
    ours_fn, ours_args = program(jax, jnp)
    ref_fn, ref_args = program(jax_ref, ref_jnp)
    ours = str(jax.make_jaxpr(ours_fn)(*ours_args))
    ref = str(jax_ref.make_jaxpr(ref_fn)(*ref_args))
    assert ours == ref
