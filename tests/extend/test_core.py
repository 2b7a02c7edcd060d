"""Primitives defined the way libraries define them (jax.extend.core.Primitive with
def_impl/def_abstract_eval, rules in jax.interpreters.ad/batching, a decomposition through
mlir.register_lowering(p, mlir.lower_fun(f))) run eagerly, under jit, grad and vmap, and
compose; each is defined identically on JAX and compared with it. Also the names around them:
pytype_aval_mappings, trace identity, PartialVal, Ref, Format, key arrays and tracers as
jax.Array."""
import importlib

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import extend
from gpuarr.experimental.layout import Format, Layout
from gpuarr.interpreters import ad, batching, mlir, partial_eval, xla

jax = pytest.importorskip("jax")


def define(ext, ad_mod, batching_mod, mlir_mod, np_mod, lowered: bool):
    """The same three primitives on either library: a nonlinear `scaled_sin(x, k)` with a JVP
    and a batching rule, a linear `double(x)` with a transpose rule, and a two-result
    `sincos(x)`; `lowered` defines them by decomposition, otherwise by def_impl."""
    scaled_sin = ext.core.Primitive("scaled_sin")
    double = ext.core.Primitive("double")
    sincos = ext.core.Primitive("sincos")
    sincos.multiple_results = True

    impl_scaled_sin = lambda x, *, k: k * np_mod.sin(x)  # noqa: E731
    impl_double = lambda x: 2.0 * x  # noqa: E731
    impl_sincos = lambda x: (np_mod.sin(x), np_mod.cos(x))  # noqa: E731
    for p, impl, multiple in ((scaled_sin, impl_scaled_sin, False), (double, impl_double, False),
                              (sincos, impl_sincos, True)):
        if lowered:
            mlir_mod.register_lowering(p, mlir_mod.lower_fun(impl, multiple_results=multiple))
            if not hasattr(mlir_mod, "LoweredFun"):  # JAX evaluates eagerly through the lowering
                p.def_impl(lambda *a, _p=p, **kw: jax.jit(lambda *b: _p.bind(*b, **kw))(*a))
        else:
            p.def_impl(impl)
            mlir_mod.register_lowering(p, mlir_mod.lower_fun(impl, multiple_results=multiple))
    scaled_sin.def_abstract_eval(lambda x, *, k: x)
    double.def_abstract_eval(lambda x: x)
    sincos.def_abstract_eval(lambda x: (x, x))

    def scaled_sin_jvp(primals, tangents, *, k):
        (x,), (t,) = primals, tangents
        return scaled_sin.bind(x, k=k), k * np_mod.cos(x) * ad_mod.instantiate_zeros(t)
    ad_mod.primitive_jvps[scaled_sin] = scaled_sin_jvp
    ad_mod.primitive_jvps[double] = lambda p, t: (double.bind(*p), double.bind(
        ad_mod.instantiate_zeros(t[0])))
    ad_mod.primitive_transposes[double] = lambda ct, x: [double.bind(ad_mod.instantiate_zeros(ct))]
    ad_mod.primitive_jvps[sincos] = lambda p, t: (sincos.bind(*p), [
        np_mod.cos(p[0]) * t[0], -np_mod.sin(p[0]) * t[0]])
    batching_mod.primitive_batchers[scaled_sin] = lambda v, d, *, k: (scaled_sin.bind(*v, k=k), d[0])
    batching_mod.primitive_batchers[double] = lambda v, d: (double.bind(*v), d[0])
    batching_mod.axis_primitive_batchers[sincos] = (
        lambda size, name, trace_type, v, d: (sincos.bind(*v), [d[0], d[0]]))
    return scaled_sin, double, sincos


def programs(api, np_mod, prims):
    scaled_sin, double, sincos = prims

    def f(x):
        s, c = sincos.bind(x)
        return np_mod.sum(double.bind(scaled_sin.bind(x, k=1.5)) * s + c)

    return {
        "eager": lambda x: double.bind(scaled_sin.bind(x, k=1.5)),
        "sincos": lambda x: sincos.bind(x)[1],
        "jit": api.jit(f),
        "grad": api.grad(f),
        "jit_grad": api.jit(api.grad(f)),
        "vmap": api.vmap(lambda x: scaled_sin.bind(x, k=0.5)),
        "vmap_sincos": api.vmap(lambda x: sincos.bind(x)[0] * 2.0),
        "jit_vmap_grad": api.jit(api.vmap(api.grad(lambda x: f(x[None])))),
        "vjp_double": lambda x: api.vjp(double.bind, x)[1](np_mod.ones_like(x))[0],
    }


@pytest.mark.parametrize("lowered", [True, False], ids=["lower_fun", "def_impl"])
def test_library_primitives_match_jax(lowered):
    ours = programs(gpuarr, gnp, define(extend, ad, batching, mlir, gnp, lowered))
    import jax.extend
    import jax.interpreters.ad
    import jax.interpreters.batching
    import jax.interpreters.mlir
    theirs = programs(jax, jax.numpy, define(jax.extend, jax.interpreters.ad,
                                             jax.interpreters.batching, jax.interpreters.mlir,
                                             jax.numpy, lowered))
    x = np.linspace(-1.0, 1.0, 5).astype(np.float32)
    for name in ours:
        got, want = np.asarray(ours[name](x)), np.asarray(theirs[name](x))
        assert got.shape == want.shape and got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)


def test_a_decomposed_primitive_is_inlined_under_jit():
    p = extend.core.Primitive("plus_one_times_two")
    p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(p, mlir.lower_fun(lambda x: (x + 1.0) * 2.0, multiple_results=False))
    closed = gpuarr.jit(lambda x: p.bind(gnp.sin(x))).trace(np.ones(3, np.float32)).jaxpr
    from gpuarr.compiler import passes
    names = [e.prim.name for e in passes.optimize(closed).program.eqns]
    assert "plus_one_times_two" not in names and "sin" in names
    np.testing.assert_allclose(gpuarr.jit(p.bind)(np.ones(3, np.float32)), [4.0] * 3)


def test_pytype_aval_mappings_give_library_types_an_aval():
    class Box:
        def __init__(self, v):
            self.v = np.asarray(v, np.float32)

        def __array__(self, dtype=None, copy=None):
            return self.v

    assert xla.pytype_aval_mappings is gpuarr.core.pytype_aval_mappings
    with pytest.raises(TypeError, match="not a valid array type"):
        gpuarr.typeof(Box([1.0]))
    xla.pytype_aval_mappings[Box] = lambda b: gpuarr.core.ShapedArray(b.v.shape, b.v.dtype)
    try:
        assert gpuarr.typeof(Box([1.0, 2.0])) == gpuarr.core.ShapedArray((2,), np.float32)
        assert extend.core.valid_jaxtype(Box([1.0])) and not extend.core.valid_jaxtype("s")
    finally:
        del xla.pytype_aval_mappings[Box]


def test_opaque_trace_state_identifies_the_current_trace():
    outer = extend.core.get_opaque_trace_state()
    seen = []

    def f(x):
        seen.append(extend.core.get_opaque_trace_state())
        seen.append(extend.core.get_opaque_trace_state())
        assert extend.core.find_top_trace([x]) is gpuarr.core.current_trace()
        return x

    gpuarr.jit(f)(1.0)
    assert seen[0] == seen[1] and seen[0] != outer
    assert outer == extend.core.get_opaque_trace_state()


def test_mapped_and_unmapped_avals_match_jax():
    from jax.extend import core as jcore
    aval = gpuarr.core.ShapedArray((2, 3), np.float32)
    javal = jax.core.ShapedArray((2, 3), np.float32)
    assert extend.core.mapped_aval(3, 1, aval).shape == jcore.mapped_aval(3, 1, javal).shape
    assert extend.core.unmapped_aval(4, 0, aval).shape == jcore.unmapped_aval(4, 0, javal).shape
    with pytest.raises(ValueError, match="mapped size"):
        extend.core.mapped_aval(5, 0, aval)


def test_partial_val():
    known, unknown = partial_eval.PartialVal.known(3.0), partial_eval.PartialVal.unknown(
        gpuarr.core.ShapedArray((2,), np.float32))
    assert known.is_known() and known.get_known() == 3.0 and known.get_aval().shape == ()
    assert not unknown.is_known() and unknown.get_known() is None
    assert unknown.get_aval().shape == (2,)


def test_tracers_and_key_arrays_are_arrays_as_in_jax():
    seen = []

    def f(x, key):
        seen.append((isinstance(x, gpuarr.Array), isinstance(x, gnp.ndarray),
                     isinstance(key, gpuarr.Array)))
        return x

    gpuarr.jit(f)(1.0, gpuarr.random.key(0))
    gpuarr.vmap(gpuarr.grad(lambda x: f(x, gpuarr.random.key(0))))(np.ones(2, np.float32))
    assert seen == [(True, True, True)] * 2
    key = gpuarr.random.split(gpuarr.random.key(0), 3)
    assert isinstance(key, gpuarr.Array) and not isinstance("x", gpuarr.Array)
    jkey = jax.random.split(jax.random.key(0), 3)
    assert str(gpuarr.typeof(key)) == str(jax.typeof(jkey)) == "key<fry>[3]"
    assert gpuarr.typeof(key) == gpuarr.typeof(gpuarr.random.split(gpuarr.random.key(1), 3))


def test_refs_read_and_write_like_jax():
    for lib in (gpuarr, jax):
        ref = lib.new_ref(lib.numpy.zeros(3, np.float32))
        ref[1] = 5.0
        ref[...] = ref[...] * 2.0
        assert isinstance(ref, lib.Ref)
        np.testing.assert_array_equal(lib.freeze(ref), [0.0, 10.0, 0.0])
        assert lib.typeof(ref).shape == (3,) and lib.typeof(ref).dtype == np.float32
    ref = gpuarr.new_ref(gnp.zeros(3, np.float32))
    with pytest.raises(ValueError, match="Ref holds f32\\[3\\]"):
        ref[...] = gnp.zeros(2, np.float32)

    def inside(x):
        local = gpuarr.new_ref(x)
        local[0] = x[1]
        return local[...]
    np.testing.assert_array_equal(gpuarr.jit(inside)(np.arange(3.0, dtype=np.float32)),
                                  [1.0, 1.0, 2.0])
    with pytest.raises(NotImplementedError, match="leak"):
        gpuarr.jit(lambda x: ref.__setitem__(..., x))(np.ones(3, np.float32))


def test_format_and_layout():
    sharding = gpuarr.sharding.SingleDeviceSharding(gpuarr.devices()[0])
    fmt = Format(Layout((1, 0)), sharding)
    assert fmt == Format(Layout((1, 0)), sharding) and fmt != Format(Layout((0, 1)), sharding)
    assert fmt.layout.major_to_minor == (1, 0) and fmt.sharding is sharding
    with pytest.raises(TypeError, match="Layout or None"):
        Format("C", sharding)


def _interpret(api, closed, *args):
    importlib.import_module(f"{api.__name__}.extend.core")
    """Evaluate a jaxpr equation by equation through JAX's public names, as equinox's
    finalise_eval_jaxpr does: eqn.primitive, eqn.invars, get_bind_params, jax.core.eval_jaxpr."""
    env = {}
    for v, x in zip(closed.jaxpr.invars, args):
        env[v] = x
    for eqn in closed.jaxpr.eqns:
        assert isinstance(eqn.primitive, api.extend.core.Primitive)
        params = eqn.primitive.get_bind_params(eqn.params)
        ins = [v.val if isinstance(v, api.extend.core.Literal) else env[v] for v in eqn.invars]
        out = eqn.primitive.bind(*ins, **params)
        for v, o in zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]):
            env[v] = o
    return [env[v] for v in closed.jaxpr.outvars], api.core.eval_jaxpr(
        closed.jaxpr, closed.consts, *args)


def test_jaxpr_interpreters_read_jax_names_of_equations():
    x = np.linspace(0.0, 1.0, 5).astype(np.float32)
    for api in (gpuarr, jax):
        closed = api.make_jaxpr(lambda x: api.numpy.sin(x) * 2.0 + 1.0)(x)
        by_eqn, evaluated = _interpret(api, closed, x)
        np.testing.assert_allclose(np.asarray(by_eqn[0]), np.sin(x) * 2 + 1, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(evaluated[0]), np.sin(x) * 2 + 1, rtol=1e-6)
        assert [e.effects for e in closed.jaxpr.eqns] == [set()] * len(closed.jaxpr.eqns)
    printing = gpuarr.make_jaxpr(lambda x: gpuarr.debug.print("{}", x))(1.0)
    assert all(len(e.effects) == 1 for e in printing.jaxpr.eqns)


def test_trace_main_is_the_identity_libraries_compare():
    # equinox's filter_jvp keeps the outputs whose tracer's trace has the top trace's `main`.
    seen = []

    def f(x):
        top = extend.core.find_top_trace([x])
        seen.append(top.main is x._trace.main)
        return x * 2.0
    gpuarr.jvp(f, (1.0,), (1.0,))
    assert seen == [True]


def test_jax_lib_version_and_traceback_frames():
    import sys

    from gpuarr import lib
    from gpuarr._src import traceback_util
    assert lib.__version__ == jax.lib.__version__
    assert traceback_util.include_frame(sys._getframe())  # a test's frame is the user's
    gpuarr_frame = type("F", (), {"f_code": gpuarr.numpy.sum.__code__})()
    assert not traceback_util.include_frame(gpuarr_frame)


def _rule_arguments(ext, ad_mod, batching_mod, lib):
    """The Python types a library's JVP and batching rules are handed (JAX: tuples)."""
    seen = []
    p = ext.core.Primitive("probe_args")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)

    def jvp(primals, tangents):
        seen.append(("jvp", type(primals).__name__, type(tangents).__name__))
        return p.bind(*primals), tangents[0]

    def batch(vals, dims):
        seen.append(("batch", type(vals).__name__, type(dims).__name__))
        return p.bind(*vals), dims[0]

    ad_mod.primitive_jvps[p] = jvp
    batching_mod.primitive_batchers[p] = batch
    lib.jvp(p.bind, (np.float32(1.0),), (np.float32(1.0),))
    lib.vmap(p.bind)(np.ones(2, np.float32))
    return seen


def test_library_rules_get_tuples_as_in_jax():
    from jax.interpreters import ad as jad
    from jax.interpreters import batching as jbatching
    got = _rule_arguments(extend, ad, batching, gpuarr)
    want = _rule_arguments(jax.extend, jad, jbatching, jax)
    assert got == want


def _callback_lowered(lib):
    """A primitive whose MLIR rule emits a Python callback (equinox's noinline): eagerly its
    impl runs; under jit the callback does, calling a jitted function traced once for the
    four calls of one signature; the rule itself runs at each compilation."""
    counts = {"impl": 0, "callback": 0, "traced": 0}
    p = lib.extend.core.Primitive("host_double")

    def impl(x):
        counts["impl"] += 1
        return x * 2

    @lib.jit
    def doubled(x):
        counts["traced"] += 1
        return x * 2

    def callback(x):
        counts["callback"] += 1
        return (doubled(x),)

    def rule(ctx, x):
        results, _, keepalive = lib.interpreters.mlir.emit_python_callback(
            ctx, callback, None, [x], ctx.avals_in, ctx.avals_out, has_side_effect=False)
        ctx.module_context.add_keepalive(keepalive)
        return results

    p.def_impl(impl)
    p.def_abstract_eval(lambda x: x)
    lib.interpreters.mlir.register_lowering(p, rule)
    x = np.arange(3.0, dtype=np.float32)
    eager = p.bind(x)
    after_eager = dict(counts)
    jitted = lib.jit(lambda x: p.bind(x) + p.bind(x) + p.bind(x + 1) + p.bind(x + 2))(x)
    return np.asarray(eager).tolist(), np.asarray(jitted).tolist(), after_eager, counts


def test_a_rule_emitting_a_python_callback_runs_it_under_jit():
    import jax.extend.core  # noqa: F401  (the attribute paths above)
    import jax.interpreters.mlir  # noqa: F401
    assert _callback_lowered(gpuarr) == _callback_lowered(jax)
