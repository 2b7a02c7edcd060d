"""jit: tracing once per signature, caching, static and donated arguments, errors (SPEC S1-S4, S6, S23)."""
import functools
import warnings
from functools import partial

import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import errors, tree_util
from gpuarr.jit_api import PjitFunction


def test_jit_computes_like_eager():
    def f(x, y):
        return jnp.sin(x) * y + jnp.exp(-x) / 2.0

    x = jnp.arange(6.0).reshape(2, 3)
    y = jnp.ones((2, 3), dtype=jnp.float32) * 3
    expected = np.sin(np.arange(6.0).reshape(2, 3)) * 3 + np.exp(-np.arange(6.0).reshape(2, 3)) / 2
    out = jax.jit(f)(x, y)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert out.dtype == np.float32 and out.shape == (2, 3)


def test_impure_function_prints_once_and_freezes_globals(capsys):
    # SPEC S1, the "jit changes my function" example: prints happen at trace time only, and
    # the global y is read once and frozen into the compiled program.
    g = {"y": 0}

    def impure_func(x):
        print("Inside:", g["y"])
        return x + g["y"]

    jitted = jax.jit(impure_func)
    for y in range(3):
        g["y"] = y
        print("Result:", jitted(y))
    assert capsys.readouterr().out == "Inside: 0\nResult: 0\nResult: 1\nResult: 2\n"

    for y in range(3):
        g["y"] = y
        print("Result:", impure_func(y))
    assert capsys.readouterr().out == ("Inside: 0\nResult: 0\nInside: 1\nResult: 2\n"
                                       "Inside: 2\nResult: 4\n")


def test_retrace_on_new_shape_dtype_and_weak_type():
    traces = []

    @jax.jit
    def f(x):
        traces.append(x.aval)
        return x * 2

    f(jnp.ones(3))
    f(jnp.zeros(3))
    assert len(traces) == 1
    f(jnp.ones(4))
    assert len(traces) == 2
    f(jnp.ones(4, dtype=jnp.int32))
    assert len(traces) == 3
    f(1.0)  # weakly typed Python scalar
    f(jnp.float32(1.0))  # strongly typed scalar: a different signature
    assert len(traces) == 5
    assert traces[3].weak_type and not traces[4].weak_type


def test_tracer_repr_inside_jit(capsys):
    def func(x):
        print(x)
        return jnp.cos(x)

    res = jax.jit(func)(0.0)
    assert float(res) == 1.0
    assert capsys.readouterr().out.startswith("Traced<ShapedArray(float32[])>")


def test_bool_of_tracer_names_the_argument():
    def divide(x, y):
        return x / y if y >= 1.0 else 0.0

    with pytest.raises(errors.TracerBoolConversionError) as info:
        jax.jit(divide)(3.0, 2.0)
    msg = str(info.value)
    assert "argument y" in msg and "static_argnums" in msg and "lax.cond" in msg
    assert isinstance(info.value, errors.ConcretizationTypeError)
    assert isinstance(info.value, TypeError)
    assert float(jax.jit(divide, static_argnums=1)(3.0, 2.0)) == 1.5
    assert float(jax.jit(divide, static_argnames="y")(3.0, y=2.0)) == 1.5


@pytest.mark.parametrize("convert,err", [(int, errors.ConcretizationTypeError),
                                         (range, errors.TracerIntegerConversionError),
                                         (float, errors.ConcretizationTypeError),
                                         (np.asarray, errors.TracerArrayConversionError)])
def test_concretization_errors(convert, err):
    with pytest.raises(err) as info:
        jax.jit(lambda x: convert(x))(1)
    assert type(info.value) is err  # the class JAX raises, not only a subclass of it


def test_leaked_tracer_raises_unexpected_tracer_error():
    leaked = []

    @jax.jit
    def f(x):
        leaked.append(x)
        return x + 1

    f(1.0)
    with pytest.raises(errors.UnexpectedTracerError, match="escape"):
        leaked[0] + 1
    with pytest.raises(errors.UnexpectedTracerError):
        jax.jit(lambda y: y * leaked[0])(2.0)


def test_static_argnums_hash_and_unhashable():
    calls = []

    @partial(jax.jit, static_argnums=(1,))
    def f(x, n):
        calls.append(n)
        return x * n

    assert float(f(2.0, 3)) == 6.0
    assert float(f(2.0, 3)) == 6.0
    assert float(f(2.0, 3.0)) == 6.0  # 3.0 == 3 but a different type: retraced
    assert calls == [3, 3.0]
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        f(2.0, np.arange(3))


def test_static_argnames_inferred_from_argnums_and_back():
    f = jax.jit(lambda x, n: x * n, static_argnums=1)
    assert f._static_argnames == ("n",)
    g = jax.jit(lambda x, n: x * n, static_argnames="n")
    assert g._static_argnums == (1,)
    assert float(g(2.0, n=4)) == 8.0 and float(g(2.0, 4)) == 8.0


def test_method_jit_three_strategies(capsys):
    # SPEC S4: the FAQ's "how to use jit with methods" examples, outputs as documented.
    class Plain:
        def __init__(self, x, mul):
            self.x, self.mul = x, mul

        @jax.jit
        def calc(self, y):
            return self.x * y if self.mul else y

    with pytest.raises(TypeError, match="as an abstract array"):
        Plain(2, True).calc(3)

    class Helper:
        def __init__(self, x, mul):
            self.x, self.mul = x, mul

        def calc(self, y):
            return _calc(self.mul, self.x, y)

    @partial(jax.jit, static_argnums=0)
    def _calc(mul, x, y):
        return x * y if mul else y

    print(Helper(2, True).calc(3))

    class StaticSelf:
        def __init__(self, x, mul):
            self.x, self.mul = x, mul

        @partial(jax.jit, static_argnums=0)
        def calc(self, y):
            return self.x * y if self.mul else y

    c = StaticSelf(2, True)
    print(c.calc(3))
    c.mul = False
    print(c.calc(3))  # stale: the default __hash__ is the object id

    class Tree:
        def __init__(self, x, mul):
            self.x, self.mul = x, mul

        @jax.jit
        def calc(self, y):
            return self.x * y if self.mul else y

        def _tree_flatten(self):
            return (self.x,), {"mul": self.mul}

        @classmethod
        def _tree_unflatten(cls, aux, children):
            return cls(*children, **aux)

    tree_util.register_pytree_node(Tree, Tree._tree_flatten, Tree._tree_unflatten)
    c = Tree(2, True)
    print(c.calc(3))
    c.mul = False
    print(c.calc(3))
    c = Tree(jnp.array(2), True)
    print(c.calc(3))
    assert capsys.readouterr().out == "6\n6\n6\n6\n3\n6\n"


def test_jit_of_jit_and_closures_over_arrays():
    w = jnp.arange(3.0)
    inner = jax.jit(lambda x: x * w)
    outer = jax.jit(lambda x: inner(x) + 1)
    np.testing.assert_allclose(outer(jnp.ones(3)), np.arange(3.0) + 1)
    text = str(jax.make_jaxpr(outer)(jnp.ones(3)))
    assert "jit[" in text and "name=<lambda>" in text


def test_decorator_forms():
    @jax.jit
    def a(x):
        return x + 1

    @jax.jit(static_argnums=1)
    def b(x, n):
        return x + n

    @partial(jax.jit, static_argnames=["n"])
    def c(x, n):
        return x + n

    assert isinstance(a, PjitFunction)
    assert float(a(1.0)) == 2.0 and float(b(1.0, 2)) == 3.0 and float(c(1.0, n=3)) == 4.0
    assert a.__name__ == "a" and a.__wrapped__ is not None


def test_pytree_arguments_and_outputs():
    @jax.jit
    def f(d):
        return {"s": d["a"] + d["b"], "t": (d["a"] * 2,)}

    out = f({"a": jnp.ones(2), "b": jnp.arange(2.0)})
    assert set(out) == {"s", "t"}
    np.testing.assert_allclose(out["s"], [1.0, 2.0])
    np.testing.assert_allclose(out["t"][0], [2.0, 2.0])


def test_x64_is_part_of_the_cache_key():
    traced = []

    @jax.jit
    def f(x):
        traced.append(1)
        return jnp.asarray(x) * 2

    assert f(1.0).dtype == np.float32
    with jax.enable_x64():
        assert f(1.0).dtype == np.float64
    assert len(traced) == 2


def test_clear_caches_with_a_jit_whose_construction_raised():
    # the half-made jit stays reachable from the kept traceback, without a cache of its own
    with pytest.raises(TypeError, match="Expected a callable value") as raised:
        jax.jit(1)
    assert raised.value.__traceback__ is not None
    jax.clear_caches()
    f = jax.jit(lambda x: x + 1)
    assert float(f(1.0)) == 2.0


def test_disable_jit_and_clear_caches(capsys):
    f = jax.jit(lambda x: (print("tracing"), x + 1)[1])
    f(1.0)
    f(1.0)
    with jax.disable_jit():
        f(1.0)
    assert capsys.readouterr().out == "tracing\ntracing\n"
    jax.clear_caches()
    f(1.0)
    assert capsys.readouterr().out == "tracing\n"


def test_donation_invalidates_and_warns():
    def add(x, y):
        return x + y

    x = jax.device_put(np.ones((2, 3), np.float32))
    y = jax.device_put(np.ones((2, 3), np.float32))
    z = jax.jit(add, donate_argnums=(1,))(x, y)
    np.testing.assert_allclose(z, 2 * np.ones((2, 3)))
    assert y.is_deleted() and not x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        y + 1
    a = jax.device_put(np.ones((2, 3), np.float32))
    b = jax.device_put(np.ones((2, 3), np.float32))
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: f32\[2,3\]\{1,0\}"):
        jax.jit(add, donate_argnums=(0, 1))(a, b)
    c = jax.device_put(np.ones((1, 3), np.float32))
    d = jax.device_put(np.ones((2, 3), np.float32))
    with pytest.warns(UserWarning, match=r"f32\[1,3\]\{1,0\}"):
        jax.jit(add, donate_argnums=(0,))(c, d)
    # keyword arguments are never donated; a donated pytree donates every leaf
    e = jax.device_put(np.ones((2, 3), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jax.jit(add, donate_argnums=(1,))(x, y=e)
    assert not e.is_deleted()
    xs = [jax.device_put(np.ones((2, 3), np.float32)), jax.device_put(np.ones((3, 4), np.float32))]
    jax.jit(lambda xs: [x + 1 for x in xs], donate_argnums=0)(xs)
    assert all(x.is_deleted() for x in xs)


def test_make_jaxpr_syntax():
    text = str(jax.make_jaxpr(jnp.sin)(jnp.ones(3)))
    assert text == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"
    text = str(jax.make_jaxpr(lambda x: x * 2.0)(jnp.ones(3)))
    assert text == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }"
    text = str(jax.make_jaxpr(lambda x: jnp.sum(x, axis=0))(jnp.ones((2, 3))))
    assert text == ("{ lambda ; a:f32[2,3]. let\n"
                    "    b:f32[3] = reduce_sum[axes=(0,) out_sharding=None] a\n"
                    "  in (b,) }")


def test_python_loop_unrolls_into_a_long_program():
    # SPEC S6: a Python loop under jit becomes one equation per iteration.
    def f(x):
        for _ in range(50):
            x = x + 1.0
        return x

    closed = jax.make_jaxpr(f)(1.0)
    assert len(closed.eqns) == 50
    assert float(jax.jit(f)(1.0)) == 51.0


def test_invalid_inputs_raise_type_error():
    with pytest.raises(TypeError, match="as an abstract array"):
        jax.jit(lambda x: x)("a string")
    with pytest.raises(TypeError, match="Expected a callable"):
        jax.jit(3)


def test_jit_caches_per_function():
    f = jax.jit(lambda x: x + 1)
    g = jax.jit(lambda x: x + 2)
    f(1.0)
    g(1.0)
    assert f._cache_size() == 1 and g._cache_size() == 1


def test_functools_partial_and_kwargs_are_dynamic():
    traces = []

    def f(x, scale=1.0):
        traces.append(1)
        return x * scale

    jf = jax.jit(f)
    assert float(jf(2.0, scale=3.0)) == 6.0
    assert float(jf(2.0, scale=4.0)) == 8.0
    assert len(traces) == 1
    assert float(jax.jit(functools.partial(f, scale=5.0))(2.0)) == 10.0


def test_private_attributes_of_the_function_do_not_shadow_jit_methods():
    class Op:
        def __call__(self, x):
            return x * 2

    op = Op()
    op._call = "not a method"  # the name of a method of the jitted wrapper
    op.tag = "kept"
    f = jax.jit(op)
    assert f.tag == "kept"
    np.testing.assert_array_equal(np.asarray(f(np.arange(3.0))), np.arange(3.0) * 2)


# ---- jit's placement and sharding arguments ---------------------------------------------------

def test_jit_device_argument_is_deprecated_and_honoured():
    from gpuarr.backends import opencl
    if not opencl.available():
        pytest.skip("PoCL / pyopencl not installed")
    dev = jax.devices("opencl")[0]
    with pytest.warns(DeprecationWarning, match="backend and device argument on jit"):
        f = jax.jit(lambda x: jnp.exp(x) + 1, device=dev)
    out = f(jnp.arange(3.0))
    assert out.device == dev
    np.testing.assert_allclose(np.asarray(out), np.exp(np.arange(3.0)) + 1, rtol=1e-6)
    with pytest.warns(DeprecationWarning):
        g = jax.jit(lambda x: x * 2, backend="cpu")
    assert g(jnp.ones(2)).device == jax.devices("cpu")[0]
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="both a device"):
        jax.jit(lambda x: x, device=jax.devices("cpu")[0], backend="cpu")


def test_jit_shardings_and_compiler_options():
    assert float(jax.jit(lambda x: x + 1, in_shardings=(None,), out_shardings=None)(1.0)) == 2.0
    with pytest.raises(NotImplementedError, match="does not shard"):
        jax.jit(lambda x: x, in_shardings=(object(),))
    with pytest.raises(jax.errors.JaxRuntimeError, match="No such compile option: 'foo'"):
        jax.jit(lambda x: x, compiler_options={"foo": 1})


def test_closed_over_numpy_constants_take_their_canonical_dtype():
    f = jax.jit(lambda i: jax.lax.neg(np.arange(5)) + i)
    out = f(1)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), 1 - np.arange(5))
    assert jax.jit(lambda: np.arange(3.0) * 2)().dtype == np.float32


@pytest.mark.parametrize("argnums", [1, (0, 1)])
def test_float0_outputs_leave_jit_as_numpy_arrays_as_in_jax(argnums):
    # A gradient with respect to an integer is float0, which supports no operation: JAX's jit
    # returns it as a NumPy array, so comparing two of them (equinox's tree_equal) works.
    jjax = pytest.importorskip("jax")

    def run(lib):
        f = lib.jit(lambda x, i: lib.grad(lambda x, i: x * 2.0, argnums, allow_int=True)(x, i))
        leaves = lib.tree_util.tree_leaves(f(1.0, 2))
        return [(isinstance(g, np.ndarray), g.dtype, np.shape(g), bool(np.all(g == g)))
                for g in leaves]

    assert run(jax) == run(jjax)
