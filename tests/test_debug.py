"""debug.print and debug.callback: run-time values under jit, vmap, grad/jvp, scan and transpose."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax
from gpuarr.debug import debug_callback_p
from gpuarr.interpreters import partial_eval as pe


def lines(capsys):
    return capsys.readouterr().out.splitlines()


# ---------------------------------------------------------------- formatting, eager


def test_print_eager_formats_like_str_format(capsys):
    jax.debug.print("x={x} y={}", jnp.float32(1.5), x=jnp.arange(3))
    jax.debug.print("{a:.2f} {a!r}", a=jnp.float32(2.25))
    jax.debug.print("no placeholders")
    jax.debug.print("{}", 2)
    assert lines(capsys) == ["x=[0 1 2] y=1.5", "2.25 Array(2.25, dtype=float32)",
                             "no placeholders", "2"]


def test_print_without_placeholders_appends_arguments(capsys):
    jax.debug.print("values:", 1, jnp.arange(2), skip_format_check=True)
    assert lines(capsys) == ["values: 1 [0 1]"]


def test_print_unused_arguments_raise():
    with pytest.raises(ValueError, match="Unused positional arguments"):
        jax.debug.print("no fields", 1)
    with pytest.raises(ValueError, match="f-string"):
        jax.debug.print("x", x=1)


def test_print_two_call_form(capsys):
    jax.debug.print(ordered=True)("{x}", x=jnp.int32(3))
    assert lines(capsys) == ["3"]
    with pytest.raises(TypeError, match="unexpected arguments"):
        jax.debug.print(None, 1)


def test_print_uses_numpy_printoptions_of_the_call(capsys):
    x = jnp.array([1.0 / 3.0])
    with np.printoptions(precision=2):
        f = jax.jit(lambda x: jax.debug.print("{}", x))
        f(x)
    f(x)  # the options were captured when the function was traced
    assert lines(capsys) == ["[0.33]", "[0.33]"]


# ---------------------------------------------------------------- jit


def test_print_under_jit_prints_at_run_time(capsys):
    traced = []

    @jax.jit
    def f(x):
        traced.append(1)
        jax.debug.print("x={}", x)
        return x + 1

    f(1.0)
    f(2.0)
    assert lines(capsys) == ["x=1.0", "x=2.0"]
    assert len(traced) == 1


def test_print_is_staged_and_survives_dce(capsys):
    closed = jax.make_jaxpr(lambda x: (jax.debug.print("{}", x), x * 2)[1])(1.0)
    prims = [e.prim for e in closed.eqns]
    assert debug_callback_p in prims
    assert "debug_callback[callback=print('{}') ordered=False]" in str(closed)
    # Effectful: kept although it has no outputs.
    pruned, _ = pe.dce_program(closed.program, [False])
    assert [e.prim for e in pruned.eqns] == [debug_callback_p]
    jax.jit(lambda x: (jax.debug.print("kept {}", x), 0.0)[1])(5.0)
    assert lines(capsys) == ["kept 5.0"]


def test_ordered_prints_keep_program_order(capsys):
    @jax.jit
    def f(x):
        jax.debug.print("first {}", x, ordered=True)
        y = x * 2
        jax.debug.print("second {}", y, ordered=True)
        jax.debug.print("third {}", y + 1)
        return y

    f(1.0)
    assert lines(capsys) == ["first 1.0", "second 2.0", "third 3.0"]


# ---------------------------------------------------------------- vmap


def test_print_under_vmap_once_per_element(capsys):
    def f(x, y):
        jax.debug.print("{} {}", x, y)
        return x

    jax.vmap(f, in_axes=(0, None))(jnp.arange(3), 7)
    assert lines(capsys) == ["0 7", "1 7", "2 7"]
    jax.jit(jax.vmap(f, in_axes=(None, 0)))(5, jnp.arange(2))
    assert lines(capsys) == ["5 0", "5 1"]


def test_print_under_vmap_of_unbatched_value_prints_once(capsys):
    jax.vmap(lambda x: (jax.debug.print("c {}", 4), x)[1])(jnp.arange(3))
    assert lines(capsys) == ["c 4"]


def test_nested_vmap_order_matches_jax(capsys):
    def f(x):
        jax.debug.print("x={x}", x=x)
        return x

    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    jax.vmap(jax.vmap(f))(x)
    ours = lines(capsys)
    # JAX unrolls the innermost vmap first: its index varies slowest.
    assert ours == [f"x={v}" for v in [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]]
    jax.vmap(jax.vmap(f, in_axes=1))(x.reshape(2, 3, 1))  # inner axis of size 1
    assert lines(capsys) == ["x=[0. 1. 2.]", "x=[3. 4. 5.]"]


def test_nested_vmap_against_jax_oracle(capsys):
    jax_ = pytest.importorskip("jax")

    def run(lib):
        def f(x, y):
            lib.debug.print("{} {}", x, y)
            return x

        lib.vmap(lib.vmap(f, in_axes=(0, None)), in_axes=(1, 0))(
            np.arange(6, dtype=np.int32).reshape(3, 2), np.arange(2, dtype=np.int32))
        if lib is jax_:
            jax_.effects_barrier()
        return lines(capsys)

    assert run(jax) == run(jax_)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(0, 1))
def test_vmap_print_matches_python_loop(n, m, axis):
    import contextlib
    import io

    x = np.arange(n * m, dtype=np.float32).reshape((n, m) if axis == 0 else (m, n))

    def f(row):
        jax.debug.print("{r}", r=row)
        return row

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        jax.vmap(f, in_axes=axis)(x)
    expected = io.StringIO()
    with contextlib.redirect_stdout(expected):
        for i in range(n):
            f(np.take(x, i, axis=axis))
    assert buf.getvalue() == expected.getvalue()


# ---------------------------------------------------------------- jvp, grad, transpose


def g(x):
    jax.debug.print("g {}", x)
    return jnp.sin(x) * x


def test_print_under_grad_prints_primal_once(capsys):
    out = jax.grad(g)(1.0)
    assert lines(capsys) == ["g 1.0"]
    np.testing.assert_allclose(out, np.cos(1.0) + np.sin(1.0), rtol=1e-6)


def test_print_under_jvp_prints_primals_only(capsys):
    p, t = jax.jvp(g, (2.0,), (10.0,))
    assert lines(capsys) == ["g 2.0"]
    np.testing.assert_allclose(t, 10.0 * (np.cos(2.0) * 2.0 + np.sin(2.0)), rtol=1e-6)


def test_print_under_jit_of_grad_and_grad_of_jit(capsys):
    jax.jit(jax.grad(g))(3.0)
    jax.grad(jax.jit(g))(4.0)
    assert lines(capsys) == ["g 3.0", "g 4.0"]


def test_print_of_linear_input_is_dropped_by_transpose(capsys):
    def lin(x):
        jax.debug.print("lin {}", x)
        return 3.0 * x

    ct = jax.linear_transpose(lin, 1.0)(2.0)
    np.testing.assert_allclose(ct[0], 6.0)
    assert lines(capsys) == []  # as in JAX: the transposed program has no print


def test_debug_callback_rules_directly():
    from gpuarr.interpreters import ad

    rule = ad.transpose_rules[debug_callback_p]
    assert rule([], ad.UndefinedPrimal(jax.typeof(1.0)), callback=print, ordered=False) == [None]


# ---------------------------------------------------------------- scan


def body(c, x):
    jax.debug.print("c={c} x={x}", c=c, x=x)
    return c + x, c * x


def test_print_under_scan_each_iteration(capsys):
    xs = jnp.arange(3.0)
    carry, ys = lax.scan(body, 0.0, xs)
    assert lines(capsys) == ["c=0.0 x=0.0", "c=0.0 x=1.0", "c=1.0 x=2.0"]
    jax.jit(lambda xs: lax.scan(body, 0.0, xs))(xs)
    assert lines(capsys) == ["c=0.0 x=0.0", "c=0.0 x=1.0", "c=1.0 x=2.0"]
    np.testing.assert_allclose(carry, 3.0)
    np.testing.assert_allclose(ys, [0.0, 0.0, 2.0])


def test_print_under_vmap_of_scan(capsys):
    xs = jnp.arange(4.0).reshape(2, 2)
    jax.vmap(lambda xs: lax.scan(body, 0.0, xs))(xs)
    # Per iteration, one line per batch element (as JAX prints it).
    assert lines(capsys) == ["c=0.0 x=0.0", "c=0.0 x=2.0", "c=0.0 x=1.0", "c=2.0 x=3.0"]


def test_print_under_grad_of_scan(capsys):
    grad = jax.grad(lambda xs: lax.scan(body, 0.0, xs)[0])(jnp.arange(3.0))
    assert lines(capsys) == ["c=0.0 x=0.0", "c=0.0 x=1.0", "c=1.0 x=2.0"]
    np.testing.assert_allclose(grad, [1.0, 1.0, 1.0])


# ---------------------------------------------------------------- debug.callback


def test_callback_receives_arrays_and_static_leaves():
    seen = []

    def cb(x, tag, *, z):
        seen.append((x, tag, z))

    jax.debug.callback(cb, 1.0, "tag", z=jnp.arange(2))
    x, tag, z = seen[0]
    assert isinstance(x, jax.Array) and x.dtype == np.float32 and x.weak_type
    assert tag == "tag"
    np.testing.assert_array_equal(z, [0, 1])
    assert z.dtype == np.int32


def test_callback_under_jit_vmap_and_two_call_form():
    seen = []
    f = jax.jit(jax.vmap(lambda x: (jax.debug.callback(ordered=True)(seen.append, x), x)[1]))
    f(jnp.arange(3.0))
    f(jnp.arange(2.0))
    assert [float(v) for v in seen] == [0.0, 1.0, 2.0, 0.0, 1.0]
    assert all(isinstance(v, jax.Array) and v.shape == () for v in seen)


def test_callback_errors():
    with pytest.raises(TypeError, match="must be callable"):
        jax.debug.callback(3, 1.0)
    with pytest.raises(TypeError, match="unexpected arguments"):
        jax.debug.callback(None, 1.0)


def test_debug_log_writes_to_the_logger(caplog, capsys):
    import logging
    with caplog.at_level(logging.INFO, logger="gpuarr.debugging"):
        jax.debug.log("x={x}", x=1)
        jax.jit(lambda x: jax.debug.log("y={}", x))(2.0)
        jax.vmap(lambda x: jax.debug.log("v={}", x))(jnp.arange(2.0))
    assert [r.getMessage() for r in caplog.records] == ["x=1", "y=2.0", "v=0.0", "v=1.0"]
    assert capsys.readouterr().out == ""


def _callback_weak_types(lib):
    """The weak type of a callback's Arrays: kept where the callback runs at once (eager,
    eager jvp and grad), dropped inside a compiled program, constants included."""
    seen = []

    def record(tag):
        return lambda y: seen.append((tag, y.dtype.name, bool(y.weak_type)))

    jnp = lib.numpy
    lib.debug.callback(record("eager"), jnp.asarray(1.0))
    lib.jit(lambda x: lib.debug.callback(record("jit"), x))(1.0)
    lib.jit(lambda: lib.debug.callback(record("jit const"), jnp.asarray(1.0)))()
    lib.jvp(lambda x: (lib.debug.callback(record("jvp"), x), x)[1], (1.0,), (1.0,))
    lib.grad(lambda x: (lib.debug.callback(record("grad"), x), x)[1])(1.0)
    lib.jit(lib.grad(lambda x: (lib.debug.callback(record("jit grad"), x), x)[1]))(1.0)
    lib.effects_barrier()
    return seen


def test_callback_weak_types_as_jax():
    real = pytest.importorskip("jax")
    assert _callback_weak_types(jax) == _callback_weak_types(real)
