"""Ahead-of-time stages (gpuarr.stages): jit(f).trace / .lower / .compile, compared with JAX's."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import stages


def f(x, y, scale=2.0):
    return {"a": jnp.sin(x) * scale, "b": (x @ y).sum()}


def jf(x, y, scale=2.0):
    return {"a": jjnp.sin(x) * scale, "b": (x @ y).sum()}


@pytest.fixture
def inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)


def test_stage_types_and_metadata_match_jax(inputs):
    x, y = inputs
    traced = gpuarr.jit(f, static_argnames="scale").trace(x, y, scale=3.0)
    jtraced = jax.jit(jf, static_argnames="scale").trace(x, y, scale=3.0)
    assert isinstance(traced, stages.Traced)
    assert traced.fun_name == "f"
    assert str(traced.in_tree) == str(jtraced.in_tree)
    assert str(traced.out_tree) == str(jtraced.out_tree)
    assert [(a.shape, a.dtype) for a in gpuarr.tree_util.tree_leaves(traced.in_avals)] == \
        [(a.shape, a.dtype) for a in jax.tree_util.tree_leaves(jtraced.in_avals)]
    infos = gpuarr.tree_util.tree_leaves(traced.out_info)
    jinfos = jax.tree_util.tree_leaves(jtraced.out_info)
    assert [(i.shape, i.dtype) for i in infos] == [(i.shape, i.dtype) for i in jinfos]
    arg_infos = gpuarr.tree_util.tree_leaves(traced.args_info)
    assert [(i.shape, i.dtype, i.donated) for i in arg_infos] == [
        ((3, 4), np.float32, False), ((4, 2), np.float32, False)]
    assert "sin" in str(traced.jaxpr)
    lowered = traced.lower()
    assert isinstance(lowered, stages.Lowered)
    assert "dot_general" in lowered.as_text()
    compiled = lowered.compile()
    assert isinstance(compiled, stages.Compiled)
    assert str(compiled.out_tree) == str(jtraced.out_tree)


def test_compiled_call_matches_jit_and_jax(inputs):
    x, y = inputs
    compiled = gpuarr.jit(f).lower(x, y).compile()
    out = compiled(x, y)
    want = jax.jit(jf)(x, y)
    assert out["a"].dtype == np.float32 and out["a"].shape == (3, 4)
    np.testing.assert_allclose(np.asarray(out["a"]), np.asarray(want["a"]), rtol=1e-6)
    np.testing.assert_allclose(float(out["b"]), float(want["b"]), rtol=1e-5)
    # NumPy float64 inputs are canonicalized to the compiled float32 signature, as in JAX.
    again = compiled(x.astype(np.float64), y)
    np.testing.assert_array_equal(np.asarray(again["a"]), np.asarray(out["a"]))
    assert compiled.call(x, y)["b"] == out["b"]


def test_static_arguments_are_baked_in(inputs):
    x, y = inputs
    compiled = gpuarr.jit(f, static_argnums=2).lower(x, y, 5.0).compile()
    np.testing.assert_allclose(np.asarray(compiled(x, y)["a"]), np.sin(x) * 5.0, rtol=1e-6)
    with pytest.raises(TypeError, match="input pytree does not match"):
        compiled(x, y, 5.0)


def test_lower_from_shape_dtype_structs(inputs):
    x, y = inputs
    spec = [gpuarr.ShapeDtypeStruct(a.shape, a.dtype) for a in (x, y)]
    compiled = gpuarr.jit(f).lower(*spec).compile()
    np.testing.assert_allclose(np.asarray(compiled(x, y)["a"]), 2 * np.sin(x), rtol=1e-6)


def test_wrong_types_raise_jax_errors(inputs):
    x, y = inputs
    compiled = gpuarr.jit(f).lower(x, y).compile()
    jcompiled = jax.jit(jf).lower(x, y).compile()
    for bad in [(x[:2], y), (x.astype(np.int32), y)]:
        with pytest.raises(TypeError) as ours:
            compiled(*bad)
        with pytest.raises(TypeError) as theirs:
            jcompiled(*bad)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="input pytree does not match"):
        compiled([x], y)
    with pytest.raises(TypeError, match="input pytree does not match"):
        compiled(x)


def test_keyword_arguments_keep_their_place():
    g = gpuarr.jit(lambda x, *, k: x * k)
    compiled = g.lower(jnp.ones(2), k=jnp.full(2, 3.0)).compile()
    assert str(compiled.in_tree) == "PyTreeDef(((*,), {'k': *}))"
    np.testing.assert_array_equal(np.asarray(compiled(jnp.ones(2), k=jnp.full(2, 4.0))), [4, 4])


@pytest.mark.numpy_backend  # its generated Python; kernel platforms print kernels (below)
def test_as_text_is_the_generated_code(inputs):
    x, y = inputs
    text = gpuarr.jit(f).lower(x, y).compile().as_text()
    assert text.startswith("def program(")
    assert "return" in text


def test_cost_analysis_counts_like_xla():
    def g(x, w):
        return jnp.tanh(x @ w).sum()

    x, w = np.ones((8, 16), np.float32), np.ones((16, 4), np.float32)
    costs = gpuarr.jit(g).lower(x, w).cost_analysis()
    jcosts = jax.jit(lambda x, w: jjnp.tanh(x @ w).sum()).lower(x, w).compile().cost_analysis()
    # 2*8*4*16 for the product, 31 adds for the sum; 32 tanh.
    assert costs["flops"] == jcosts["flops"] == 2 * 8 * 4 * 16 + 31
    assert costs["transcendentals"] == jcosts["transcendentals"] == 32
    assert costs["bytes accessed"] > 0
    mem = gpuarr.jit(g).lower(x, w).compile().memory_analysis()
    assert mem["argument_size_in_bytes"] == x.nbytes + w.nbytes
    assert mem["output_size_in_bytes"] == 4


def test_cost_analysis_multiplies_scan_bodies():
    def body(c, x):
        return c * x + 1.0, None

    def g(xs):
        return gpuarr.lax.scan(body, jnp.zeros(4), xs)[0]

    costs = gpuarr.jit(g).trace(np.ones((10, 4), np.float32)).cost_analysis()
    assert costs["flops"] == 10 * (4 + 4)


def test_compiled_for_a_kernel_platform_prints_its_kernels():
    from gpuarr.backends import opencl
    if not opencl.available():
        pytest.skip("PoCL / pyopencl not installed")
    with gpuarr.default_device(gpuarr.devices("opencl")[0]):
        compiled = gpuarr.jit(lambda a: jnp.exp(a) * 2).lower(jnp.arange(4.0)).compile()
    text = compiled.as_text()
    assert "kernel gpuarr_elementwise_0 (elementwise)" in text and "exp_f32(" in text
    np.testing.assert_allclose(np.asarray(compiled(jnp.arange(4.0))), 2 * np.exp(np.arange(4.0)),
                               rtol=1e-6)


def test_typing_names_accept_what_jax_accepts():
    import typing

    from gpuarr.typing import ArrayLike, DTypeLike
    members = typing.get_args(ArrayLike)
    assert gpuarr.Array in members and np.ndarray in members and float in members
    assert np.dtype in typing.get_args(DTypeLike)

    def scale(x: ArrayLike, dtype: DTypeLike = np.float32) -> gpuarr.Array:
        return jnp.asarray(x, dtype) * 2

    assert scale(1.5).dtype == np.float32


def test_stage_types_jax_names():
    # The type names JAX programs annotate with: jit's result is a stages.Wrapped.
    import gpuarr
    from gpuarr import errors, lax, stages
    assert isinstance(gpuarr.jit(lambda x: x), stages.Wrapped)
    assert not isinstance(lambda x: x, stages.Wrapped)
    assert stages.CompilerOptions == dict[str, str | bool]
    assert issubclass(errors.InconclusiveDimensionOperation, Exception)
    assert lax.DotAlgorithmPreset in lax.PrecisionLike.__args__


def _pmap_ahead_of_time(lib):
    f = lib.pmap(lambda x, y: 2 * x + y, in_axes=(0, None), donate_argnums=(0,))
    x = lib.numpy.array([3])
    lowered = f.lower(x, 4)
    assert "mul" in lowered.as_text() or "multiply" in lowered.as_text()
    compiled = lowered.compile()
    out = compiled(lib.numpy.array([3]), 4)
    return type(lowered).__name__, type(compiled).__name__, np.asarray(out).tolist(), out.dtype


def test_pmap_lower_and_compile_as_jax():
    assert _pmap_ahead_of_time(gpuarr) == _pmap_ahead_of_time(jax)


def _compile_with_options(lib, options):
    lowered = lib.jit(lambda x, y: 2 * x + y).lower(lib.numpy.array(3), 4)
    try:
        out = lowered.compile(compiler_options=options)(lib.numpy.array(3), 4)
    except lib.errors.JaxRuntimeError as e:
        return "JaxRuntimeError", str(e)
    return int(out)


@pytest.mark.parametrize("options", [
    {"xla_gpu_autotune_level": "0"}, {"xla_cpu_enable_fast_math": True},
    {"exec_time_optimization_effort": 0.5}, {"an option that does not make sense": "bad"}])
def test_compiler_options_accepted_and_refused_as_jax(options):
    assert _compile_with_options(gpuarr, options) == _compile_with_options(jax, options)
