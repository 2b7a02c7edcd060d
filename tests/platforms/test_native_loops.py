"""Loops of the native platform run by the C loop driver (gpuarr/backends/native_loops.py):
results against the NumPy backend (cpu platform) and JAX on the same programs, which loops
the driver takes, and the ones it leaves to the Python driver."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.backends import native, native_loops
from gpuarr.platforms import get_platform


@pytest.fixture
def plat(native_platform):
    return native_platform


def compile_both(plat, f, *args):
    """(native callable, NumPy-backend results, native launch plan) of jit(f)'s Program."""
    closed = gpuarr.make_jaxpr(f)(*args)
    run = plat.compile(closed)
    want = get_platform("cpu").compile_numpy(closed)(*[np.asarray(a) for a in args])
    return run, want, getattr(run, "launch_plan", None)


def loops_in_c(launch_plan) -> list:
    return [type(s.fn).__name__ for s in launch_plan.steps
            if isinstance(s.fn if s.kind == "host" else None, native_loops.NativeLoop)]


def check(got, want, rtol=1e-5, atol=1e-6):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def rnn(np_, lax_):
    def f(w, u, xs):
        def body(h, x):
            h = np_.tanh(h @ w + x @ u)
            return h, h
        return lax_.scan(body, np_.zeros(w.shape[0], np.float32), xs)
    return f


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rnn_scan_with_matrix_products_runs_in_c(plat, dtype):
    rng = np.random.default_rng(0)
    w, u = (rng.standard_normal((24, 24)).astype(dtype) * 0.3 for _ in range(2))
    xs = rng.standard_normal((40, 24)).astype(dtype)
    run, want, lp = compile_both(plat, rnn(jnp, lax), w, u, xs)
    assert loops_in_c(lp) == ["ScanLoop"]
    got = run(w, u, xs)
    check(got, want)
    if dtype == np.float32:
        ref = jax.jit(rnn(jjnp, jax.lax))(w, u, xs)
        check(got, [np.asarray(r) for r in ref], rtol=1e-4, atol=1e-5)


def test_reverse_scan_swapped_carries_passthrough_and_consts(plat):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((3, 5)).astype(np.float32) for _ in range(2))
    xs = rng.standard_normal((9, 5)).astype(np.float32)
    table = np.linspace(-1, 1, 5).astype(np.float32)   # a closed-over constant of the body

    def f(a, b, xs):
        def body(carry, x):
            p, q, n, keep, r, s = carry
            new_p = q + x * table          # computed from another carry
            new_q = jnp.sin(p) + a.T @ (b @ x) + (a.T @ b)[0]
            # r and s trade buffers as they are (each result is the other carry's input)
            return (new_p, new_q, n + 1, keep, s, r), (p, x * 2.0, jnp.sum(new_q))
        init = (jnp.zeros(5, np.float32), jnp.ones(5, np.float32), jnp.int32(0),
                jnp.full(2, 7.0, np.float32), jnp.arange(3.0), -jnp.arange(3.0))
        return lax.scan(body, init, xs, reverse=True)

    run, want, lp = compile_both(plat, f, a, b, xs)
    assert loops_in_c(lp) == ["ScanLoop"]
    got = jax.tree_util.tree_leaves(run(a, b, xs))
    check(got, jax.tree_util.tree_leaves(want))
    # the swapped pair against a NumPy replay of the loop
    p, q = np.zeros(5, np.float32), np.ones(5, np.float32)
    for x in xs[::-1]:
        p, q = q + x * table, np.sin(p) + a.T @ (b @ x) + (a.T @ b)[0]
    np.testing.assert_allclose(np.asarray(got[0]), p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), q, rtol=1e-5, atol=1e-6)
    assert int(np.asarray(got[2])) == 9
    np.testing.assert_array_equal(np.asarray(got[4]), -np.arange(3.0))   # nine swaps


def test_while_and_fori_loops_run_in_c(plat):
    rng = np.random.default_rng(2)
    m = (rng.standard_normal((8, 8)) * 0.2).astype(np.float32)
    v = rng.standard_normal(8).astype(np.float32)

    def program(np_, lax_):
        def f(m, v, n):
            def cond(s):
                return (s[0] < n) & (np_.sum(np_.abs(s[1])) > 1e-3)

            def body(s):
                return s[0] + 1, np_.tanh(m @ s[1]) * 1.1
            k, w = lax_.while_loop(cond, body, (np.int32(0), v))
            y = lax_.fori_loop(0, n, lambda i, y: y * 0.5 + m[i % 8], np_.zeros(8, np.float32))
            return k, w, y
        return f

    for n in (0, 1, 13):
        n = np.int32(n)
        run, want, lp = compile_both(plat, program(jnp, lax), m, v, n)
        assert loops_in_c(lp) == ["WhileLoop", "WhileLoop"]
        got = run(m, v, n)
        check(got, want)
        check(got, [np.asarray(r) for r in jax.jit(program(jjnp, jax.lax))(m, v, n)],
              rtol=1e-4, atol=1e-5)
        assert int(np.asarray(got[0])) == min(int(n), int(np.asarray(want[0])))


def test_loops_the_driver_cannot_take_keep_the_python_driver(plat):
    x = np.random.default_rng(3).standard_normal((6, 10)).astype(np.float32)

    def sorts(x):   # a sort in the body: a host library step the C driver does not run
        return lax.scan(lambda c, r: (c + jnp.sort(r), jnp.max(r)), jnp.zeros(10, np.float32), x)

    run, want, lp = compile_both(plat, sorts, x)
    assert loops_in_c(lp) == []
    check(run(x), want)

    def batched(x):   # vmap of a while: the predicate is a vector
        return gpuarr.vmap(lambda r: lax.while_loop(lambda s: s[0] < r[0] * 3 + 5,
                                                    lambda s: (s[0] + 1.0, s[1] * 1.01),
                                                    (0.0, r))[1])(x)

    run, want, lp = compile_both(plat, batched, x)
    check(run(x), want)


def test_big_bodies_keep_the_threaded_python_driver(plat):
    x = np.ones((3, native.PARALLEL_MIN_BYTES // 4), np.float32)
    run, want, lp = compile_both(plat, lambda x: lax.scan(lambda c, r: (c * 0.5 + r, None),
                                                          jnp.zeros(x.shape[1], np.float32), x),
                                 x)
    assert loops_in_c(lp) == []
    check(run(x), want)


def test_jitted_scan_matches_jax_through_the_public_api(plat):
    rng = np.random.default_rng(4)
    w, u = (rng.standard_normal((16, 16)).astype(np.float32) * 0.3 for _ in range(2))
    xs = rng.standard_normal((25, 16)).astype(np.float32)
    with gpuarr.default_device(plat.devices()[0]):
        got = gpuarr.jit(rnn(jnp, lax))(w, u, xs)
    want = jax.jit(rnn(jjnp, jax.lax))(w, u, xs)
    for g, r in zip(got, want):
        assert g.shape == r.shape and g.dtype == r.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-4, atol=1e-5)
