"""Loops written inline into the NumPy backend's generated code.

scan, while and cond become `for`/`while`/`if` statements inside the compiled Program; a
scan is pruned (dead outputs and the carries only they need) and split (its carry-independent
part runs once, batched over xs). Results are compared with plain Python loops over float64
NumPy (values, shapes and dtypes), eager with jitted, and the generated source is checked for
the shape of the loop. Expression rules (BLAS products, reductions) and 0-d operators are
checked against NumPy too.
"""
import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.backends import host_threads
from gpuarr.backends.numpy import codegen, rules_control_flow
from gpuarr.compiler import passes
from gpuarr.lax import control_flow

RNG = np.random.default_rng(0)


def f32(*shape, scale=1.0):
    return (RNG.normal(size=shape) * scale).astype(np.float32)


def source(fun, *args):
    """The Python source the NumPy backend generates for `fun` under jit."""
    closed = passes.optimize(jax.jit(fun).trace(*args).jaxpr)
    return codegen.source_of(closed)


def loop_body(src: str) -> list[str]:
    """The statements inside the first `for`/`while` of generated source."""
    lines = src.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith(("for ", "while ")))
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for ln in lines[start + 1:]:
        if len(ln) - len(ln.lstrip()) <= indent:
            break
        body.append(ln.strip())
    return body


def assert_matches(out, ref, rtol=1e-5, atol=1e-5):
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- scan


def rnn(W, U, h0, xs):
    def step(h, x):
        h = jnp.tanh(W @ h + U @ x)
        return h, h
    return lax.scan(step, h0, xs)


def rnn_reference(W, U, h0, xs, reverse=False):
    W, U, h = (np.asarray(a, np.float64) for a in (W, U, h0))
    ys = np.zeros((len(xs), len(h)))
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for t in order:
        h = np.tanh(W @ h + U @ np.asarray(xs[t], np.float64))
        ys[t] = h
    return h, ys


@pytest.mark.parametrize("jit", [False, True])
def test_rnn_scan_matches_python_loop(jit):
    W, U, h0, xs = f32(16, 16, scale=0.25), f32(16, 16, scale=0.25), f32(16), f32(30, 16)
    fn = jax.jit(rnn) if jit else rnn
    h, ys = fn(W, U, h0, xs)
    h_ref, ys_ref = rnn_reference(W, U, h0, xs)
    assert h.dtype == np.float32 and ys.dtype == np.float32
    assert_matches(h, h_ref)
    assert_matches(ys, ys_ref)


def test_rnn_loop_keeps_only_carry_work():
    """A recurrent cell runs as one chain of calls: the product of [W | U] with each row
    [h_t | x_t] of a buffer, then tanh into the next row; the unused ys are never stored."""
    W, U, h0, xs = f32(8, 8, scale=0.25), f32(8, 8, scale=0.25), f32(8), f32(12, 8)

    def last(W, U, h0, xs):  # sin is a ufunc; float32 tanh is not (exactly 1 past XLA's clamp)
        return lax.scan(lambda h, x: (jnp.sin(W @ h + U @ x),) * 2, h0, xs)[0]

    src = source(last, W, U, h0, xs)
    assert "for " not in src and "isfinite" not in src and "else:" not in src, src
    driven = [ln for ln in src.splitlines() if ln.strip().startswith("map(")]
    assert len(driven) == 2 and ".dot" in driven[0] and "sin" in driven[1], src
    assert "concat" in src and "eye" not in src, src
    h = np.asarray(h0, np.float64)
    for x in xs.astype(np.float64):
        h = np.sin(W @ h + U @ x)
    assert_matches(jax.jit(last)(W, U, h0, xs), h)


def test_leaky_rnn_loop_hoists_the_input_product():
    """A step whose tail reads the old carry is no cell: `U @ x_t` is hoisted out of the loop
    and batched, and the loop keeps one product a step."""
    W, U, h0, xs = f32(8, 8), f32(8, 8), f32(8), f32(12, 8)

    def leaky(W, U, h0, xs):
        def step(h, x):
            return jnp.tanh(W @ h + U @ x) + 0.5 * h, None
        return lax.scan(step, h0, xs)[0]

    src = source(leaky, W, U, h0, xs)
    assert src.count("for ") == 1, src
    body = loop_body(src)
    assert sum("dot" in ln for ln in body) == 1, src
    assert not any("[" in ln and "] =" in ln for ln in body), src  # no stacked output rows
    # The hoisted products come out one row per step (xs @ U.T), not as a transposed view.
    assert "transpose" not in src, src
    h = np.asarray(h0, np.float64)
    for x in xs.astype(np.float64):
        h = np.tanh(W @ h + U @ x) + 0.5 * h
    assert_matches(jax.jit(leaky)(W, U, h0, xs), h)


def test_reverse_scan_with_hoisted_and_loop_outputs():
    xs = f32(9, 3)
    c0 = f32(3)

    def f(c, xs):
        def step(c, x):
            c = c * 0.5 + x
            return c, (c, jnp.sin(x) * 2.0)  # the second output needs no carry
        return lax.scan(step, c, xs, reverse=True)

    for fn in (f, jax.jit(f)):
        c, (ys, zs) = fn(c0, xs)
        ref_c, ref_ys = np.asarray(c0, np.float64), np.zeros((9, 3))
        for t in range(8, -1, -1):
            ref_c = ref_c * 0.5 + xs[t]
            ref_ys[t] = ref_c
        assert_matches(c, ref_c)
        assert_matches(ys, ref_ys)
        assert_matches(zs, np.sin(xs.astype(np.float64)) * 2.0)
        assert zs.dtype == ys.dtype == c.dtype == np.float32


def test_scan_drops_a_carry_only_a_dead_output_needs():
    def f(xs):
        def step(carry, x):
            total, count = carry
            return (total + x, count + 1), None
        (total, _), _ = lax.scan(step, (jnp.float32(0), jnp.int32(0)), xs)
        return total

    xs = f32(20)
    src = source(f, xs)
    assert not any("int" in ln or "count" in ln for ln in loop_body(src))
    assert len(loop_body(src)) == 2, src  # one add, one carry assignment
    out = jax.jit(f)(xs)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.sum(xs.astype(np.float64)), rtol=1e-5)


def test_scan_carry_that_feeds_a_live_carry_is_kept():
    def f(x0):
        def step(carry, _):
            a, b = carry
            return (a + b, b * 2.0), None
        return lax.scan(step, (x0, jnp.float32(1)), None, length=6)[0][0]

    out = jax.jit(f)(np.float32(1.0))
    a, b = 1.0, 1.0
    for _ in range(6):
        a, b = a + b, b * 2.0
    assert out.dtype == np.float32 and float(out) == a


def test_map_is_computed_without_a_loop():
    xs = f32(7, 4)

    def f(xs):
        return lax.map(lambda x: jnp.exp(x) @ x, xs)

    src = source(f, xs)
    assert "for " not in src
    out = jax.jit(f)(xs)
    x64 = xs.astype(np.float64)
    assert out.dtype == np.float32 and out.shape == (7,)
    assert_matches(out, np.einsum("ij,ij->i", np.exp(x64), x64))


@pytest.mark.parametrize("length", [0, 1, 2])
def test_short_scans(length):
    xs = f32(length, 2)

    def f(c, xs):
        return lax.scan(lambda c, x: (c + x, c * x), c, xs)

    for fn in (f, jax.jit(f)):
        c, ys = fn(np.ones(2, np.float32), xs)
        ref_c, ref_ys = np.ones(2), np.zeros((length, 2))
        for t in range(length):
            ref_ys[t] = ref_c * xs[t]
            ref_c = ref_c + xs[t]
        assert ys.shape == (length, 2) and ys.dtype == np.float32 and c.dtype == np.float32
        assert_matches(c, ref_c)
        assert_matches(ys, ref_ys)


def test_output_that_is_the_incoming_carry():
    def f(c, xs):
        return lax.scan(lambda c, x: (c + x, c), c, xs)

    xs = f32(5)
    c, ys = jax.jit(f)(np.float32(0), xs)
    ref = np.concatenate([[0.0], np.cumsum(xs.astype(np.float64))])
    assert_matches(ys, ref[:-1])
    assert_matches(c, ref[-1])


def test_nested_scans_and_fallback_past_max_depth(monkeypatch):
    def f(xs):
        def outer(c, row):
            inner = lax.scan(lambda d, v: (d + v * c, d), 0.0 * c, row)[0]
            return c + inner, inner
        return lax.scan(outer, jnp.float32(1), xs)

    xs = f32(4, 3)
    ref_c, ref_ys = 1.0, []
    for row in xs.astype(np.float64):
        d = 0.0
        for v in row:
            d = d + v * ref_c
        ref_c = ref_c + d
        ref_ys.append(d)
    src = source(f, xs)
    assert src.count("for ") == 2
    for depth in (codegen.Codegen.MAX_DEPTH, 1):
        monkeypatch.setattr(codegen.Codegen, "MAX_DEPTH", depth)
        c, ys = jax.jit(f)(xs) if depth > 1 else f(xs)
        assert_matches(c, ref_c, rtol=1e-4)
        assert_matches(ys, ref_ys, rtol=1e-4)


def test_scan_with_effects_runs_them_in_order():
    seen = []

    def f(xs):
        def step(c, x):
            jax.debug.callback(lambda v: seen.append(float(v)), x)
            return c + x, x * 2.0
        return lax.scan(step, jnp.float32(0), xs)

    xs = np.arange(4, dtype=np.float32)
    c, ys = jax.jit(f)(xs)
    assert seen == [0.0, 1.0, 2.0, 3.0]
    assert float(c) == 6.0
    assert_matches(ys, xs * 2.0)


def test_split_body_matches_the_unsplit_body():
    """The pruned and split loop computes what the original body computes step by step."""
    W, U, h0, xs = f32(6, 6, scale=0.3), f32(6, 6, scale=0.3), f32(6), f32(10, 6)
    closed = jax.make_jaxpr(rnn)(W, U, h0, xs)
    (eqn,) = [e for e in closed.eqns if e.prim is control_flow.scan_p]
    body = eqn.params["jaxpr"]
    loop = rules_control_flow._scan_loop(body, 10, 2, 1, (True, True))
    assert loop.pre is not None and loop.ys == (("loop", 0),)
    pre_outs = codegen.compile_closed(loop.pre)(W, U, xs)
    step = codegen.compile_closed(body)
    split = codegen.compile_closed(loop.body)
    consts = [(W, U)[i] for i in loop.body_consts]
    h_ref = h_split = h0
    for t in range(10):
        h_ref, _ = step(W, U, h_ref, xs[t])
        h_split, _ = split(*consts, h_split, *(r[t] for r in pre_outs))
        np.testing.assert_allclose(h_split, h_ref, rtol=1e-5, atol=1e-6)


def test_grad_through_jitted_scan_matches_finite_differences():
    W, U, xs = f32(5, 5, scale=0.3), f32(5, 5, scale=0.3), f32(8, 5)

    def loss(h0):
        return jnp.sum(rnn(W, U, h0, xs)[1] ** 2)

    h0 = f32(5)
    g = jax.jit(jax.grad(loss))(h0)

    def ref(h):
        return np.sum(rnn_reference(W, U, h, xs)[1] ** 2)

    eps = 1e-5
    fd = np.array([(ref(h0 + eps * e) - ref(h0 - eps * e)) / (2 * eps) for e in np.eye(5)])
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, fd, rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------------- while and cond


def newton_sqrt(a):
    def cond(c):
        x, i = c
        err = lax.reduce_max(jnp.abs(x * x - a) / a, (0,))
        return jnp.logical_and(err > 1e-5, i < 100)

    def body(c):
        x, i = c
        return 0.5 * (x + a / x), i + 1
    return lax.while_loop(cond, body, (a, 0))


def test_while_newton_matches_python_loop():
    a = RNG.uniform(1.0, 100.0, size=50).astype(np.float32)
    x, i = a.astype(np.float64), 0
    while np.max(np.abs(x * x - a) / a) > 1e-5 and i < 100:
        x, i = 0.5 * (x + a / x), i + 1
    for fn in (newton_sqrt, jax.jit(newton_sqrt)):
        out, n = fn(a)
        assert out.dtype == np.float32 and n.dtype == np.int32 and n.shape == ()
        assert int(n) in (i, i + 1)
        np.testing.assert_allclose(out, np.sqrt(a.astype(np.float64)), rtol=1e-5)


def test_while_scalar_arithmetic_uses_operators_and_wraps_like_int32():
    def f(x):
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] + jnp.int32(2 ** 30), c[1] + 1),
                              (x, jnp.int32(0)))

    src = source(f, np.int32(0))
    assert any(" < " in ln for ln in loop_body(src)), src
    with np.errstate(over="ignore"):
        x, n = jax.jit(f)(np.int32(2 ** 30))
    assert x.dtype == np.int32 and int(n) == 3
    assert int(x) == np.int64(4 * 2 ** 30).astype(np.int32)


def test_fori_loop_with_traced_bounds():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, v: v * 2.0 + i, x)

    for n in (0, 1, 5):
        ref = 1.0
        for i in range(n):
            ref = ref * 2.0 + i
        out = jax.jit(f)(n, np.float32(1))
        assert out.dtype == np.float32 and float(out) == ref


def test_cond_inside_scan():
    def f(xs):
        def step(c, x):
            c = lax.cond(x > 0, lambda v: v + x, lambda v: v * 0.5, c)
            return c, lax.switch(jnp.int32(x > 1) * 5 - 1, [jnp.sin, jnp.cos, jnp.tanh], c)
        return lax.scan(step, jnp.float32(1), xs)

    xs = f32(12)
    c_ref, ys_ref = 1.0, []
    for x in xs.astype(np.float64):
        c_ref = c_ref + x if x > 0 else c_ref * 0.5
        ys_ref.append(np.tanh(c_ref) if x > 1 else np.sin(c_ref))
    src = source(f, xs)
    assert "if " in src and "else:" in src
    for fn in (f, jax.jit(f)):
        c, ys = fn(xs)
        assert c.dtype == ys.dtype == np.float32
        assert_matches(c, c_ref)
        assert_matches(ys, ys_ref)


# ---------------------------------------------------------------- expressions and operators


@pytest.mark.parametrize("dims,shapes", [
    ((((1,), (0,)), ((), ())), ((4, 3), (3, 5))),
    ((((0,), (0,)), ((), ())), ((3, 4), (3, 5))),
    ((((1,), (1,)), ((), ())), ((4, 3), (5, 3))),
    ((((0,), (1,)), ((), ())), ((3, 4), (5, 3))),
    ((((0,), (0,)), ((), ())), ((3,), (3, 5))),
    ((((1,), (0,)), ((), ())), ((4, 3), (3,))),
])
def test_dot_general_expression_matches_numpy(dims, shapes):
    x, y = f32(*shapes[0]), f32(*shapes[1])
    out = jax.jit(lambda a, b: lax.dot_general(a, b, dims))(x, y)
    (lc, rc), _ = dims
    ref = np.tensordot(x.astype(np.float64), y.astype(np.float64), (lc, rc))
    assert out.dtype == np.float32
    assert_matches(out, ref)
    assert "dot_general" not in source(lambda a, b: lax.dot_general(a, b, dims), x, y)


@pytest.mark.parametrize("dims,shapes", [
    ((((), ()), ((0,), (0,))), ((64,), (64, 40))),           # rows scaled (per-example grads)
    ((((), ()), ((1,), (0,))), ((40, 64), (64,))),           # batch axis last on the left
    ((((), ()), ((0,), (1,))), ((6, 5, 20), (3, 6, 17))),    # batch with free axes each side
    ((((), ()), ((), ())), ((30,), (20,))),                  # outer product
    ((((), ()), ((0,), (0,))), ((64, 20), (64, 3))),         # short output rows
])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_dot_general_without_contraction_is_the_exact_product(dims, shapes, dtype):
    # One product per element and no sums: equal, bit for bit, to NumPy's broadcast multiply.
    x = (RNG.normal(size=shapes[0]) * 8).astype(dtype)
    y = (RNG.normal(size=shapes[1]) * 8).astype(dtype)
    _, (lb, rb) = dims
    lf = [i for i in range(x.ndim) if i not in lb]
    rf = [i for i in range(y.ndim) if i not in rb]
    xt = np.transpose(x, list(lb) + lf)
    yt = np.transpose(y, list(rb) + rf)
    ref = xt.reshape(xt.shape + (1,) * len(rf)) * yt.reshape(
        yt.shape[:len(rb)] + (1,) * len(lf) + yt.shape[len(rb):])
    out = jax.jit(lambda a, b: lax.dot_general(a, b, dims))(x, y)
    assert out.shape == ref.shape and out.dtype == dtype
    np.testing.assert_array_equal(np.asarray(out), ref)


@pytest.mark.parametrize("busy", [False, True])
def test_blas_thread_policy_gives_numpy_products(busy, monkeypatch):
    assert host_threads._machine_is_busy() in (True, False)
    monkeypatch.setattr(host_threads, "_machine_is_busy", lambda: busy)
    assert host_threads.blas_dot(64 * 64) is np.dot
    a, b = f32(500, 64), f32(64, 64)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for macs in (500 * 64 * 64, 1 << 26):
        # On some processors OpenBLAS's threaded kernels sum in another order than one thread
        # does, so both are held to the float64 product rather than to each other.
        got = host_threads.blas_dot(macs)(a, b)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("op,ref", [
    (lambda x: lax.reduce_sum(x, (0,)), lambda x: np.sum(x, 0)),
    (lambda x: lax.reduce_max(x, (1,)), lambda x: np.max(x, 1)),
    (lambda x: lax.reduce_min(x, (0, 1)), np.min),
    (lambda x: lax.reduce_prod(x, (1,)), lambda x: np.prod(x, 1)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reduce_expressions_keep_dtype(op, ref, dtype):
    x = (RNG.integers(-3, 4, size=(3, 4))).astype(dtype)
    out = jax.jit(op)(x)
    assert np.asarray(out).dtype == dtype
    np.testing.assert_array_equal(out, ref(x).astype(dtype))


def test_bool_reductions_and_logical_ops():
    x = RNG.integers(0, 2, size=(3, 5)).astype(bool)

    def f(x):
        return lax.reduce_or(x, (1,)), lax.reduce_and(x, (0,)), jnp.logical_and(x[0], x[1]), \
            jnp.logical_or(x[0, 0], x[1, 0]), jnp.logical_xor(x[0], x[2])

    for fn in (f, jax.jit(f)):
        outs = fn(x)
        refs = (x.any(1), x.all(0), x[0] & x[1], x[0, 0] | x[1, 0], x[0] ^ x[2])
        for o, r in zip(outs, refs):
            assert np.asarray(o).dtype == np.bool_
            np.testing.assert_array_equal(o, r)


def test_scalar_operators_keep_dtypes():
    def f(a, b, i):
        return a * b - a / b, a < b, i * i + i - 7, -a, i == 3

    a, b, i = np.float32(1.5), np.float32(-0.25), np.int32(3)
    outs = jax.jit(f)(a, b, i)
    refs = (a * b - a / b, a < b, i * i + i - 7, -a, i == 3)
    for o, r in zip(outs, refs):
        assert np.asarray(o).dtype == np.asarray(r).dtype and np.shape(o) == ()
        assert np.asarray(o) == r


def test_loops_whose_bodies_write_no_statement():
    def f(c, xs):
        c, ys = lax.scan(lambda c, x: (c, x), c, xs)
        z = lax.cond(c[0] > 0, lambda v: v, lambda v: v, c)
        return c, ys, z

    c0, xs = f32(2), f32(3, 2)
    for fn in (f, jax.jit(f)):
        c, ys, z = fn(c0, xs)
        np.testing.assert_array_equal(c, c0)
        np.testing.assert_array_equal(ys, xs)
        np.testing.assert_array_equal(z, c0)
        assert c.dtype == ys.dtype == z.dtype == np.float32


# ---------------------------------------------------------------- buffers reused across iterations


def run_both(f, *args):
    """f eagerly and under jit; checks that no input array was written to."""
    before = [np.array(a, copy=True) for a in args]
    results = [f(*args), jax.jit(f)(*args)]
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    return results


def test_carries_updated_in_place_keep_their_values():
    a, xs = f32(4), f32(6, 4)

    def f(a, xs):
        def step(c, x):
            p, q, r = c
            return (jnp.sin(p) + x, q * 2.0, p - jnp.max(q)), (p, q + r)  # p and q are also ys
        return lax.scan(step, (a, a, a), xs)

    ref_p = ref_q = ref_r = a.astype(np.float64)
    ref_ys0, ref_ys1 = [], []
    for x in xs.astype(np.float64):
        ref_ys0.append(ref_p)
        ref_ys1.append(ref_q + ref_r)
        ref_p, ref_q, ref_r = np.sin(ref_p) + x, ref_q * 2.0, ref_p - np.max(ref_q)
    for (p, q, r), (ys0, ys1) in run_both(f, a, xs):
        for out, ref in ((p, ref_p), (q, ref_q), (r, ref_r), (ys0, ref_ys0), (ys1, ref_ys1)):
            assert out.dtype == np.float32
            assert_matches(out, ref)


def test_carry_read_after_its_replacement_is_computed():
    W, h0, xs = f32(5, 5, scale=0.3), f32(5), f32(7, 5)

    def f(h0, xs):
        def step(h, x):
            new = jnp.tanh(h + x)
            return new, jnp.reshape(h, (5, 1)) * 1.0 + (W @ h)[:, None]
        return lax.scan(step, h0, xs)

    ref_h, ref_ys = h0.astype(np.float64), []
    for x in xs.astype(np.float64):
        ref_ys.append(ref_h[:, None] + (W @ ref_h)[:, None])
        ref_h = np.tanh(ref_h + x)
    for h, ys in run_both(f, h0, xs):
        assert_matches(h, ref_h)
        assert_matches(ys, ref_ys)


def test_same_value_in_two_carries_and_product_carry():
    W, a = f32(3, 3, scale=0.5), f32(3)

    def f(a):
        def body(c):
            i, u, v = c
            return i + 1, W @ u, v * 0.5 + u
        return lax.while_loop(lambda c: c[0] < 4, body, (0, a, a))

    u, v = a.astype(np.float64), a.astype(np.float64)
    for _ in range(4):
        u, v = W @ u, v * 0.5 + u
    for i, out_u, out_v in run_both(f, a):
        assert int(i) == 4 and out_u.dtype == out_v.dtype == np.float32
        assert_matches(out_u, u)
        assert_matches(out_v, v)


def test_loop_temporaries_do_not_leak_into_outputs():
    xs = f32(5, 3)

    def f(xs):
        def step(c, x):
            t = jnp.exp(x) * 2.0  # a temporary written into a loop buffer...
            return c + t, t + 0.0  # ...whose successor is an output
        return lax.scan(step, jnp.zeros(3, jnp.float32), xs)

    ref_ys = np.exp(xs.astype(np.float64)) * 2.0
    for c, ys in run_both(f, xs):
        assert_matches(ys, ref_ys)
        assert_matches(c, ref_ys.sum(0))


def test_out_buffers_of_maximum_and_minimum_raise_no_deprecation(recwarn):
    x, y = f32(80, 80), f32(80, 80)

    def f(x, y):
        return jnp.minimum(jnp.maximum(x * 2.0, y) + 1.0, x)

    out = jax.jit(f)(x, y)
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]
    assert "out=" in source(f, x, y)
    np.testing.assert_array_equal(out, np.minimum(np.maximum(x * 2.0, y) + 1.0, x))


def test_carries_written_in_place_when_no_view_can_exist():
    a, xs = f32(4), f32(6, 4)

    def f(a, xs):
        def step(c, x):
            p, q = c
            p = p * 0.9 + x
            q = jnp.cos(q + p)  # a ufunc writes into the carry (float32 tanh and sin are none)
            return (p, q), q
        return lax.scan(step, (a, a), xs)

    src = source(f, a, xs)
    assert src.count(".copy()") == 2, src
    ref_p = ref_q = a.astype(np.float64)
    ref_ys = []
    for x in xs.astype(np.float64):
        ref_p = ref_p * 0.9 + x
        ref_q = np.cos(ref_q + ref_p)
        ref_ys.append(ref_q)
    for (p, q), ys in run_both(f, a, xs):
        assert_matches(p, ref_p)
        assert_matches(q, ref_q)
        assert_matches(ys, ref_ys)


def test_cond_with_one_branch_and_clamped_index():
    x = f32(3)
    cond_p = control_flow.cond_p  # a single-branch cond is legal at the primitive level
    closed = jax.make_jaxpr(lambda v: v * 2.0)(x)
    out = jax.jit(lambda i, v: cond_p.bind(i, v, branches=(closed,)))(np.int32(5), x)
    np.testing.assert_array_equal(out[0], x * 2.0)
    fs = [lambda v: v + 1.0, lambda v: v * 3.0, lambda v: v - 2.0]
    for i in (-4, 0, 1, 2, 9):
        got = jax.jit(lambda i, v: lax.switch(i, fs, v))(np.int32(i), x)
        np.testing.assert_array_equal(got, fs[min(max(i, 0), 2)](x))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int8", "uint16", "int32"])
def test_reduce_expressions_keep_narrow_and_extension_dtypes(dtype):
    dt = jnp.dtype(dtype)
    x = (np.arange(12).reshape(3, 4) % 3 + 1).astype(dt)
    ops = [lambda v: lax.reduce_max(v, (1,)), lambda v: lax.reduce_min(v, (0,)),
           lambda v: lax.reduce_sum(v, (1,)), lambda v: lax.reduce_prod(v, (0,))]
    refs = [x.max(1), x.min(0), x.sum(1, dtype=dt), x.prod(0, dtype=dt)]
    for op, ref in zip(ops, refs):
        out = np.asarray(jax.jit(op)(x))
        assert out.dtype == dt
        np.testing.assert_array_equal(out.astype(np.float64), ref.astype(np.float64))


def _pass_through_cond_loop(lax_mod, jnp_mod, a, s):
    """A while loop whose body computes `u` elementwise and hands it to the next iteration
    through a zero-operand cond (the branch returns the value it closes over), then reads the
    old carry `a` after `u` is computed: blackjax's NUTS trajectory expansion in small."""
    def body(c):
        i, a, s = c
        u = jnp_mod.sin(a) * 3.0
        s_new = s + a
        a_new = lax_mod.cond(i % 3 != 2, lambda: u, lambda: a)
        return i + 1, a_new, s_new
    return lax_mod.while_loop(lambda c: c[0] < 5, body, (0, a, s))


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_a_value_passed_through_a_cond_into_the_carry_keeps_its_buffer(mode):
    """The body's temporaries may live in buffers allocated once before the loop, but not one
    that reaches the carry through a cond: the next iteration would overwrite the carry while
    it is still read (`s + a` read the new `sin(a) * 3`). Compared with JAX (float32) and with
    a float64 NumPy loop."""
    jax_ref = pytest.importorskip("jax")
    a0, s0 = f32(3), f32(3)
    fun = lambda a, s: _pass_through_cond_loop(lax, jnp, a, s)  # noqa: E731
    got = fun(a0, s0) if mode == "eager" else jax.jit(fun)(a0, s0)
    want = jax_ref.jit(lambda a, s: _pass_through_cond_loop(jax_ref.lax, jax_ref.numpy, a, s))(
        a0, s0)
    a, s = a0.astype(np.float64), s0.astype(np.float64)
    for i in range(5):
        a, s = (np.sin(a) * 3.0 if i % 3 != 2 else a), s + a
    for g, w, ref in zip(got[1:], want[1:], (a, s)):
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape == (3,)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-5, atol=1e-5)
