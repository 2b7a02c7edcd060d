"""pure_callback and experimental.io_callback: values, result checks, vmap methods, AD errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr.callbacks import io_callback_p, pure_callback_p
from gpuarr.experimental import io_callback
from gpuarr.interpreters import ad
from gpuarr.interpreters import partial_eval as pe

f32 = jax.ShapeDtypeStruct((), np.float32)


def host_sin(x):
    assert isinstance(x, np.ndarray)
    return np.sin(x)


def call_sin(x):
    return jax.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_pure_callback_values(wrap):
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    out = wrap(call_sin)(x)
    assert out.shape == (2, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out, np.sin(x.astype(np.float64)), rtol=1e-6)


def test_pure_callback_pytrees_kwargs_and_scalars():
    def host(a, pair, *, scale):
        assert a.dtype == np.float32 and scale.dtype == np.int32  # Python scalars: JAX dtypes
        return {"sum": a + pair[0] * scale, "n": np.int32(pair[1].size)}

    spec = {"sum": jax.ShapeDtypeStruct((3,), np.float32), "n": jax.ShapeDtypeStruct((), np.int32)}
    f = jax.jit(lambda a, b: jax.pure_callback(host, spec, a, (b, b), scale=2))
    out = f(1.0, jnp.arange(3.0))
    np.testing.assert_allclose(out["sum"], [1.0, 3.0, 5.0])
    assert out["sum"].dtype == np.float32 and out["n"].dtype == np.int32 and int(out["n"]) == 3


def test_pure_callback_result_canonicalized_like_jax():
    # A Python float (float64) result is accepted for a float32 result with x64 off.
    out = jax.pure_callback(lambda x: 1.0, f32, 2.0)
    assert out.dtype == np.float32 and float(out) == 1.0


def test_pure_callback_numpy_array_result_types():
    spec = jax.ShapeDtypeStruct((2,), np.float32)
    out = jax.jit(lambda x: jax.pure_callback(lambda v: np.ones(2, np.float64) * v, spec, x))(3.0)
    np.testing.assert_allclose(out, [3.0, 3.0])


# ---------------------------------------------------------------- result checks


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_result_mismatches_raise(wrap):
    x = jnp.arange(3.0)
    with pytest.raises(RuntimeError, match=r"Incorrect output shape for return value #0: "
                                           r"Expected: \(2,\), Actual: \(3,\)"):
        wrap(lambda x: jax.pure_callback(lambda v: v, jax.ShapeDtypeStruct((2,), np.float32), x))(x)
    with pytest.raises(RuntimeError, match="Incorrect output dtype for return value #0: "
                                           "Expected: float32, Actual: int32"):
        wrap(lambda x: jax.pure_callback(lambda v: v.astype(np.int32),
                                         jax.ShapeDtypeStruct((3,), np.float32), x))(x)
    with pytest.raises(RuntimeError, match="Mismatched number of outputs from callback. "
                                           "Expected: 1, Actual: 2"):
        wrap(lambda x: jax.pure_callback(lambda v: (v, v),
                                         jax.ShapeDtypeStruct((3,), np.float32), x))(x)


def _callback_failures(lib, io_callback):
    """The class of the error and the ends of its message when a callback raises, eagerly and
    under jit, for pure_callback and io_callback (equinox's filter_pure_callback expects a
    RuntimeError from a callback that raised ValueError)."""
    def bad(x):
        raise ValueError("bad thing")

    spec = lib.ShapeDtypeStruct((), np.float32)
    calls = [lambda x: lib.pure_callback(bad, spec, x), lambda x: io_callback(bad, spec, x)]
    out = []
    for call in calls:
        for wrap in (lambda f: f, lib.jit):
            with pytest.raises(Exception) as info:
                wrap(call)(np.float32(1))
            msg = str(info.value)
            out.append((type(info.value).__name__, isinstance(info.value, RuntimeError),
                        msg.split(":", 2)[:2], msg.splitlines()[-1]))
    return out


def test_a_failing_callback_raises_jax_runtime_error(caplog):
    real = pytest.importorskip("jax")
    from jax.experimental import io_callback as real_io_callback

    def failures(lib, io):
        caplog.clear()
        out = _callback_failures(lib, io)
        return out, [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert failures(jax, io_callback) == failures(real, real_io_callback)


def test_argument_and_spec_errors():
    with pytest.raises(ValueError, match="64-bit types"):
        jax.pure_callback(lambda x: x, jax.ShapeDtypeStruct((), np.float64), 1.0)
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        jax.pure_callback(lambda x: x, f32, 1.0, vmap_method="parallel")
    with pytest.raises(TypeError, match="must be callable"):
        jax.pure_callback(None, f32, 1.0)
    with pytest.raises(TypeError, match="ShapeDtypeStruct"):
        jax.pure_callback(lambda x: x, (3,), 1.0)
    with pytest.raises(TypeError):
        jax.pure_callback(lambda x: x, f32, "not an array")


def test_x64_result_allowed_with_x64():
    with jax.enable_x64():
        out = jax.pure_callback(lambda x: x * 2, jax.ShapeDtypeStruct((), np.float64),
                                np.float64(1.5))
        assert out.dtype == np.float64 and float(out) == 3.0


# ---------------------------------------------------------------- vmap


def shapes_seen(method, in_axes, x, y):
    seen = []

    def host(a, b):
        seen.append((a.shape, b.shape))
        return a + b

    def f(a, b):
        shape = jnp.broadcast_shapes(a.shape, b.shape)
        return jax.pure_callback(host, jax.ShapeDtypeStruct(shape, np.float32), a, b,
                                 vmap_method=method)

    out = jax.vmap(f, in_axes=in_axes)(x, y)
    return out, seen


@pytest.mark.parametrize("method,expected", [
    ("sequential", [((), ())] * 4),
    ("sequential_unrolled", [((), ())] * 4),
    ("expand_dims", [((4,), (1,))]),
    ("broadcast_all", [((4,), (4,))]),
    ("legacy_vectorized", [((4,), ())]),
])
def test_vmap_methods_as_documented(method, expected):
    x = jnp.arange(4.0)
    out, seen = shapes_seen(method, (0, None), x, np.float32(1.0))
    np.testing.assert_allclose(out, [1.0, 2.0, 3.0, 4.0])
    assert out.dtype == np.float32
    assert seen == expected


def test_vmap_methods_against_jax_oracle():
    jax_ = pytest.importorskip("jax")
    x = np.arange(4.0, dtype=np.float32)
    for method in ["sequential", "expand_dims", "broadcast_all"]:
        ours, ours_seen = shapes_seen(method, (0, None), x, np.float32(1.0))
        theirs_seen = []

        def host(a, b, _seen=theirs_seen):
            _seen.append((np.shape(a), np.shape(b)))
            return np.asarray(a) + np.asarray(b)

        def f(a, b, _method=method):
            shape = np.broadcast_shapes(np.shape(a), np.shape(b))
            return jax_.pure_callback(host, jax_.ShapeDtypeStruct(shape, np.float32), a, b,
                                      vmap_method=_method)

        theirs = jax_.vmap(f, in_axes=(0, None))(x, np.float32(1.0))
        np.testing.assert_allclose(ours, theirs)
        assert ours_seen == theirs_seen


def test_vmap_without_method_raises():
    with pytest.raises(NotImplementedError, match="vmap_method=None"):
        jax.vmap(call_sin)(jnp.ones((2, 3)))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(0, 1),
       st.sampled_from(["sequential", "expand_dims", "broadcast_all"]))
def test_vmap_matches_python_loop(n, m, axis, method):
    x = np.arange(n * m, dtype=np.float32).reshape((n, m) if axis == 0 else (m, n)) / 7

    def f(row):
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct((m,), np.float32), row,
                                 vmap_method=method)

    out = jax.vmap(f, in_axes=axis)(x)
    expected = np.stack([np.sin(np.take(x, i, axis=axis)) for i in range(n)])
    assert out.shape == (n, m) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_nested_vmap_sequential_and_jit():
    def f(x):
        return jax.pure_callback(lambda v: v * 10, f32, x, vmap_method="sequential")

    x = jnp.arange(6.0).reshape(2, 3)
    out = jax.jit(jax.vmap(jax.vmap(f)))(x)
    np.testing.assert_allclose(out, np.arange(6.0).reshape(2, 3) * 10)


# ---------------------------------------------------------------- autodiff


def test_pure_callback_jvp_and_grad_raise():
    msg = "Pure callbacks do not support JVP. Please use `jax.custom_jvp`"
    with pytest.raises(ValueError, match=msg):
        jax.grad(call_sin)(1.0)
    with pytest.raises(ValueError, match=msg):
        jax.jvp(call_sin, (1.0,), (1.0,))
    with pytest.raises(ValueError, match="Pure callbacks do not support transpose"):
        ad.transpose_rules[pure_callback_p](None, 1.0)


def test_pure_callback_of_constant_under_grad_is_fine():
    # No tangent reaches the callback: it runs as an ordinary value.
    out = jax.grad(lambda x: x * jax.pure_callback(lambda: np.float32(3.0), f32))(2.0)
    np.testing.assert_allclose(out, 3.0)


def test_pure_callback_with_custom_jvp():
    @jax.custom_jvp
    def sin(x):
        return call_sin(x)

    @sin.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return sin(x), jnp.cos(x) * t

    np.testing.assert_allclose(jax.grad(sin)(0.5), np.cos(0.5), rtol=1e-6)


# ---------------------------------------------------------------- purity vs effects


def test_unused_pure_callback_may_be_removed_io_callback_is_kept():
    def f(x):
        jax.pure_callback(host_sin, f32, x)
        io_callback(lambda v: v, f32, x)
        return x

    closed = jax.make_jaxpr(f)(1.0)
    assert [e.prim for e in closed.eqns] == [pure_callback_p, io_callback_p]
    pruned, _ = pe.dce_program(closed.program)
    assert [e.prim for e in pruned.eqns] == [io_callback_p]


def test_io_callback_runs_under_jit_even_when_unused():
    calls = []
    f = jax.jit(lambda x: (io_callback(lambda v: calls.append(float(v)) or v, f32, x), x + 1)[1])
    f(1.0)
    f(2.0)
    assert calls == [1.0, 2.0]


def test_io_callback_values_and_ordered():
    log = []

    def record(tag):
        def host(v):
            log.append((tag, float(v)))
            return v * 2
        return host

    @jax.jit
    def f(x):
        a = io_callback(record("a"), f32, x, ordered=True)
        b = io_callback(record("b"), f32, a, ordered=True)
        return b

    out = f(1.5)
    assert float(out) == 6.0 and out.dtype == np.float32
    assert log == [("a", 1.5), ("b", 3.0)]
    assert "ordered=True" in str(jax.make_jaxpr(f.__wrapped__)(1.0))


def test_io_callback_vmap_is_sequential():
    calls = []

    def host(v):
        calls.append(v.shape)
        return v + 1

    out = jax.vmap(lambda x: io_callback(host, jax.ShapeDtypeStruct((2,), np.float32), x))(
        jnp.zeros((3, 2)))
    np.testing.assert_allclose(out, np.ones((3, 2)))
    assert calls == [(2,)] * 3


def test_io_callback_errors():
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback."):
        jax.vmap(lambda x: io_callback(lambda v: v, f32, x, ordered=True))(jnp.arange(2.0))
    with pytest.raises(ValueError, match="IO callbacks do not support JVP."):
        jax.grad(lambda x: io_callback(lambda v: v, f32, x))(1.0)
    with pytest.raises(ValueError, match="IO callbacks do not support transpose."):
        ad.transpose_rules[io_callback_p](None, 1.0)
    with pytest.raises(RuntimeError, match="Incorrect output shape"):
        io_callback(lambda v: np.zeros(2, np.float32), f32, 1.0)


def test_experimental_enable_x64():
    from gpuarr import experimental

    with experimental.enable_x64():
        assert jnp.zeros(1, np.float64).dtype == np.float64
        with experimental.disable_x64():
            assert jnp.zeros(1, np.float64).dtype == np.float32
