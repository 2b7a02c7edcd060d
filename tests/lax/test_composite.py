"""lax.composite, dce_sink, stage and shape_as_value against JAX: values, printed programs,
jit (where the compiler inlines the composite like a nested jit), and JAX's errors for
differentiating, batching or closing over traced attributes."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax

jax = pytest.importorskip("jax")


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def softmax_composite(L, np_mod):
    return L.composite(lambda x, *, axis: np_mod.exp(x) / np_mod.exp(x).sum(axis, keepdims=True),
                       name="my.softmax", version=2)


def test_composite_values_and_program():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    ours, theirs = softmax_composite(lax, jnp), softmax_composite(jax.lax, jax.numpy)
    want = theirs(x, axis=1)
    same(ours(x, axis=1), want)
    same(gpuarr.jit(lambda v: ours(v, axis=1))(x), want)
    text = str(gpuarr.make_jaxpr(lambda v: ours(v, axis=1))(x))
    assert "composite[" in text and "name=my.softmax" in text and "version=2" in text
    assert "('axis', (1,), PyTreeDef(*))" in text
    # The compiler inlines it: the generated code has no call left.
    assert "composite" not in gpuarr.jit(lambda v: ours(v, axis=1)).lower(x).as_text()
    pair = lax.composite(lambda a, b: (a * b, a + b), name="pair")(2.0, np.float32(3))
    for got, want in zip(pair, jax.lax.composite(lambda a, b: (a * b, a + b), name="pair")(
            2.0, np.float32(3))):
        same(got, want)


def test_composite_errors_match_jax():
    scale = lax.composite(lambda x, *, k: x * k, name="my.scale")
    with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
        gpuarr.grad(lambda x: scale(x, k=3.0).sum())(jnp.ones(2))
    with pytest.raises(NotImplementedError, match="Batching rule for 'composite'"):
        gpuarr.vmap(lambda x: scale(x, k=3.0))(jnp.ones((2, 2)))
    with pytest.raises(gpuarr.errors.UnexpectedTracerError, match="attribute in the decomp"):
        gpuarr.jit(lambda y: scale(jnp.ones(2), k=y))(2.0)
    # custom_jvp makes it differentiable, as JAX's message suggests
    f = gpuarr.custom_jvp(lambda x: scale(x, k=3.0))
    f.defjvp(lambda p, t: (f(*p), 3.0 * t[0]))
    same(gpuarr.grad(lambda x: f(x).sum())(jnp.ones(2)), np.full(2, 3.0, np.float32))


def test_dce_sink_keeps_its_operand():
    def f(L):
        return lambda x: (L.dce_sink(x * 2), x + 1)[1]
    text = str(gpuarr.make_jaxpr(f(lax))(1.0))
    assert "dce_sink[prevent_mlir_dce=False]" in text and "mul" in text
    same(gpuarr.jit(f(lax))(1.0), jax.jit(f(jax.lax))(1.0))
    same(gpuarr.vmap(f(lax))(np.arange(3.0)), jax.vmap(f(jax.lax))(np.arange(3.0)))
    same(gpuarr.grad(f(lax))(1.0), jax.grad(f(jax.lax))(1.0))
    assert lax.dce_sink(jnp.ones(2)) is None


def test_stage_and_shape_as_value():
    for x in (1.0, 3, np.ones(2), np.arange(3, dtype=np.int64)):
        got, want = lax.stage(x), jax.lax.stage(x)
        same(got, want)
        assert got.weak_type == want.weak_type
    assert str(gpuarr.make_jaxpr(lax.stage)(1.0)) == "{ lambda ; a:f32[]. let  in (a,) }"
    got, want = lax.shape_as_value((2, 3)), jax.lax.shape_as_value((2, 3))
    assert type(got) is type(want) is np.ndarray
    same(got, want)
    same(lax.shape_as_value(()), jax.lax.shape_as_value(()))
