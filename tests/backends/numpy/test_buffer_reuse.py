"""Buffer reuse in the NumPy backend's generated code: a dead temporary that no view can see
(made and read only by elementwise ufuncs and fresh-output primitives such as reductions and
products) becomes the `out` buffer of a later elementwise step. Inputs are never written."""
import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr.backends.numpy import codegen
from gpuarr.compiler import passes

pytestmark = pytest.mark.numpy_backend


def softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def source(fun, *args):
    return codegen.source_of(passes.optimize(jax.jit(fun).trace(*args).jaxpr))


def test_reduction_reader_leaves_its_operand_reusable():
    x = np.random.default_rng(0).normal(size=(128, 64)).astype(np.float32)
    src = source(softmax, x)
    # The quotient is a product by the row sums' reciprocal (XLA's rewrite of a division by a
    # broadcast value, made under jit as in JAX).
    div = next(ln for ln in src.splitlines() if "f_mul" in ln)
    exp_var = next(ln for ln in src.splitlines() if "f_exp" in ln).split("=")[0].strip()
    assert div.rstrip().endswith(f", {exp_var})"), src  # the exp buffer receives the quotient
    before = x.copy()
    got = jax.jit(softmax)(x)
    np.testing.assert_array_equal(x, before)
    ref = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5)


def test_view_readers_keep_a_buffer_from_reuse():
    # `t` is read through a transpose (a view that lives on as an output), so the later
    # elementwise step must not overwrite it.
    def f(x):
        t = jnp.exp(x)
        return t.T, jnp.sin(t) + 1.0

    x = np.random.default_rng(1).normal(size=(96, 80)).astype(np.float32)
    view, other = jax.jit(f)(x)
    np.testing.assert_allclose(np.asarray(view), np.exp(x).T, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(other), np.sin(np.exp(x)) + 1.0, rtol=1e-5)


def test_large_elementwise_steps_split_rows_between_threads():
    # Outputs of 2^18+ elements: each ufunc runs as two halves of the leading axis, with
    # operands broadcast from a row, a column and a scalar, an `out` aliasing an operand, a
    # comparison (bool output) and maximum (whose `out` NumPy takes by keyword only).
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1025, 300)).astype(np.float32)
    row = rng.normal(size=(300,)).astype(np.float32)
    col = rng.normal(size=(1025, 1)).astype(np.float32)

    def f(x, row, col):
        y = jnp.exp(jnp.sin(x) * row + col) - 1.5
        return jnp.maximum(y, x), (y > 0.25) & (x < 0)

    src = source(f, x, row, col)
    assert "split_" in src, src
    got_max, got_mask = jax.jit(f)(x, row, col)
    y = np.exp(np.sin(x.astype(np.float64)) * row + col) - 1.5
    assert got_max.dtype == np.float32 and got_mask.dtype == np.bool_
    np.testing.assert_allclose(np.asarray(got_max), np.maximum(y, x), rtol=2e-6, atol=1e-6)
    agree = np.asarray(got_mask) == ((y > 0.25) & (x < 0))
    assert agree.mean() > 0.9999  # float32 against float64 may differ right at the threshold
