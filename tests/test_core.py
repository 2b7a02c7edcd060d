"""Core: the Program IR, printer, typechecker, Array behaviour, promotion (S3, S5, S8, S10, S14-S16)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import core, lax
from gpuarr.core import ShapedArray


def test_shaped_array():
    a = ShapedArray((2, 3), np.float32)
    assert a.str_short() == "f32[2,3]" and a.ndim == 2 and a.size == 6
    assert a == ShapedArray((2, 3), np.float32) and hash(a) == hash(ShapedArray((2, 3), "float32"))
    assert a != a.update(weak_type=True)
    assert repr(a.update(weak_type=True)) == "ShapedArray(float32[2,3], weak_type=True)"


def test_program_typechecks_and_prints_multiline():
    def f(x, y):
        z = jnp.sin(x) * y
        return jnp.sum(z), z.T

    closed = jax.make_jaxpr(f)(jnp.ones((2, 3)), jnp.ones((2, 3)))
    core.typecheck_program(closed.program)
    assert str(closed) == (
        "{ lambda ; a:f32[2,3] b:f32[2,3]. let\n"
        "    c:f32[2,3] = sin a\n"
        "    d:f32[2,3] = mul c b\n"
        "    e:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] d\n"
        "    f:f32[3,2] = transpose[permutation=(1, 0)] d\n"
        "  in (e, f) }")
    assert closed.out_avals == [ShapedArray((), np.float32), ShapedArray((3, 2), np.float32)]


def test_typechecker_rejects_bad_programs():
    a = core.Var(ShapedArray((3,), np.float32))
    b = core.Var(ShapedArray((4,), np.float32))
    bad = core.Program([], [a], [core.Eqn(lax.lax.sin_p, [a], {}, [b])], [b])
    with pytest.raises(TypeError, match="does not match"):
        core.typecheck_program(bad)
    c = core.Var(ShapedArray((3,), np.float32))
    unbound = core.Program([], [a], [core.Eqn(lax.lax.sin_p, [c], {}, [b])], [b])
    with pytest.raises(TypeError, match="before it is defined"):
        core.typecheck_program(unbound)


def test_closure_consts_are_constvars():
    w = jnp.arange(3.0)
    closed = jax.make_jaxpr(lambda x: x * w)(jnp.ones(3))
    assert str(closed) == "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = mul b a in (c,) }"
    np.testing.assert_array_equal(np.asarray(closed.consts[0]), np.arange(3.0))


def test_source_info_is_recorded():
    closed = jax.make_jaxpr(lambda x: jnp.exp(x))(1.0)
    info = closed.eqns[0].source_info
    assert info.file.endswith("test_core.py") and info.line > 0
    assert "test_core.py" in closed.pretty(source_info=True)


def test_array_basics():
    x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    assert x.shape == (2, 2) and x.ndim == 2 and x.size == 4 and x.dtype == np.float32
    assert repr(x) == "Array([[1., 2.],\n       [3., 4.]], dtype=float32)"
    assert repr(jnp.array(1.0)) == "Array(1., dtype=float32, weak_type=True)"
    assert repr(jnp.arange(3)) == "Array([0, 1, 2], dtype=int32)"
    assert repr(jnp.array([True, False])) == "Array([ True, False], dtype=bool)"
    assert repr(jnp.zeros((2, 0))) == "Array([], shape=(2, 0), dtype=float32)"
    assert repr(jnp.zeros((0,), jnp.int32)) == "Array([], shape=(0,), dtype=int32)"
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]] and x[1, 0].item() == 3.0
    assert x.T.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert float(x[0, 1]) == 2.0 and int(jnp.array(3)) == 3 and bool(jnp.array(True))
    assert [1, 2, 3][jnp.array(1)] == 2
    assert x.block_until_ready() is x
    assert str(x.devices()) == f"{{{jax.devices()[0]!r}}}" and x.devices() == {jax.devices()[0]}
    assert np.asarray(x).flags.writeable is False
    assert x.astype(np.int32).dtype == np.int32
    assert x.reshape(4).shape == (4,) and x.reshape(1, 4).shape == (1, 4)
    assert len(x) == 2 and [r.tolist() for r in x] == [[1.0, 2.0], [3.0, 4.0]]


def test_array_operators_follow_numpy():
    a = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    b = np.full((3,), 2, np.float32)
    x, y = jnp.asarray(a), jnp.asarray(b)
    for op in ["__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__lt__", "__ge__",
               "__eq__", "__ne__", "__floordiv__", "__mod__"]:
        expected = getattr(a, op)(b)
        out = getattr(x, op)(y)
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)
        assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_allclose(x @ x.T, a @ a.T)
    np.testing.assert_allclose(-x, -a)
    np.testing.assert_allclose(abs(-x), a)
    np.testing.assert_allclose(2.0 - x, 2.0 - a)
    i = jnp.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(i & 3, np.arange(6).reshape(2, 3) & 3)
    np.testing.assert_array_equal(~i, ~np.arange(6).reshape(2, 3))


def test_basic_indexing():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = jnp.asarray(a)
    for idx in [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 2), (None, 0), (0, slice(1, None, 2)),
                (slice(None, None, -1),), (1, slice(None), slice(3, 0, -2)), ()]:
        np.testing.assert_array_equal(x[idx], a[idx])
        assert x[idx].shape == a[idx].shape
    mask = a > 10
    np.testing.assert_array_equal(x[jnp.asarray(mask)], a[mask])
    assert int(jnp.arange(10)[11]) == 9  # out-of-bounds reads clamp (SPEC S12)


def test_arrays_are_immutable():
    # SPEC S10
    x = jnp.zeros((3, 3))
    with pytest.raises(TypeError, match=r"x\.at\[idx\]\.set\(y\)"):
        x[1, :] = 1.0
    y = x
    y += 1
    assert float(x.sum()) == 0.0 and float(y.sum()) == 9.0


def test_lists_are_not_arrays():
    # SPEC S8
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.sum([1, 2, 3])
    assert int(jnp.sum(jnp.array([1, 2, 3]))) == 6
    closed = jax.make_jaxpr(lambda xs: sum(xs))([1, 2, 3])
    assert len(closed.in_avals) == 3


def test_grad_through_python_control_flow():
    # SPEC S5
    def divide(x, y):
        return x / y if y >= 1.0 else 0.0

    assert float(jax.grad(divide)(3.0, 2.0)) == 0.5
    dx, dy = jax.grad(divide, argnums=(0, 1))(3.0, 2.0)
    assert float(dx) == 0.5 and float(dy) == -0.75


def test_default_dtypes_are_32_bit():
    # SPEC S14
    assert jnp.array(1.0).dtype == np.float32
    assert jnp.array(1).dtype == np.int32
    assert jnp.zeros(3, dtype=np.float64).dtype == np.float32
    assert jnp.arange(3.0).dtype == np.float32
    with jax.enable_x64():
        assert jnp.array(1.0).dtype == np.float64
        assert jnp.zeros(3, dtype=np.float64).dtype == np.float64
    jax.config.update("jax_enable_x64", True)
    assert jnp.ones(2).dtype == np.float64
    jax.config.update("gpuarr_enable_x64", False)
    assert jnp.ones(2).dtype == np.float32


@pytest.mark.parametrize("var", ["GPUARR_ENABLE_X64", "JAX_ENABLE_X64"])
def test_x64_from_environment(var):
    env = dict(os.environ, **{var: "1"})
    out = subprocess.run([sys.executable, "-c", "import gpuarr.numpy as jnp; print(jnp.ones(1).dtype)"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "float64"


@pytest.mark.parametrize("a,b,expected", [
    (np.int8, np.int8, np.int8), (np.int8, np.uint8, np.int16), (np.int32, np.float32, np.float32),
    (np.float16, np.float32, np.float32), (np.uint8, np.int32, np.int32), (np.bool_, np.int8, np.int8),
    (np.int32, np.int64, np.int32), (np.float32, np.complex64, np.complex64),
])
def test_binary_promotion(a, b, expected):
    # SPEC S15 (64-bit results canonicalize to 32 bits with x64 off)
    x = jnp.ones(2, dtype=a) + jnp.ones(2, dtype=b)
    assert x.dtype == np.dtype(expected)


def test_weak_types():
    x = jnp.ones(3, dtype=np.int8)
    assert (x + 1).dtype == np.int8
    assert (x * 2.5).dtype == np.float32
    h = jnp.ones(3, dtype=np.float16)
    assert (h + 1.0).dtype == np.float16 and (h * 3).dtype == np.float16
    assert (jnp.array(1.0) + 1).weak_type
    assert not (jnp.asarray(np.float32(1.0)) + 1).weak_type
    assert jax.jit(lambda v: v * 2)(1.0).weak_type


def test_unsafe_float_to_int_casts_saturate():
    # SPEC S16
    out = jnp.arange(254.0, 258.0).astype("uint8")
    assert out.tolist() == [254, 255, 255, 255] and out.dtype == np.uint8
    assert jnp.array([np.nan, 1e20, -1e20]).astype(np.int32).tolist() == [0, 2**31 - 1, -2**31]
