"""Kernel results that follow XLA where a device's math library differs: tanh saturates to
+-1 as XLA's does (so gelu(approximate=True) of large negatives is -0.0, as in JAX), and
zero-size strided slices plan without dividing by zero, and integer arithmetic wraps (signed
overflow is undefined behaviour in OpenCL C, which the compiler used). Compared with JAX under
jit on opencl."""
import jax as real_jax
import jax.numpy as real_jnp
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp

pytestmark = [pytest.mark.kernels, pytest.mark.usefixtures("pocl")]


@pytest.fixture
def on_opencl():
    return lambda f: gpuarr.jit(f, device=gpuarr.devices("opencl")[0])


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.signbit(got.astype(np.float32)), np.signbit(want.astype(np.float32)))
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-6, atol=0)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gelu_tanh_approximation_at_large_negatives(on_opencl, dtype):
    x = np.array([-100, -30, -10, -9.2, -8, -7.9, -5, -0.5, 0, 0.3, 5, 9.5, np.inf, -np.inf],
                 np.float32)
    got = on_opencl(lambda x: gpuarr.nn.gelu(x, approximate=True))(jnp.asarray(x, dtype))
    _same(got, real_jax.nn.gelu(real_jnp.asarray(x, dtype), approximate=True))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tanh_saturates_as_xla(on_opencl):
    x = np.array([-20, -9.5, -8, -7.9989, -7.9988, -3, 0.1, 7.9988, 7.9989, 8, 9.5, 20, np.nan], np.float32)
    got = np.asarray(on_opencl(jnp.tanh)(jnp.asarray(x)))
    want = np.asarray(real_jnp.tanh(x))
    np.testing.assert_array_equal(got[np.abs(x) > 7.99882], want[np.abs(x) > 7.99882])
    np.testing.assert_allclose(got, want, rtol=6e-7)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("index", [np.s_[:0:1, 1], np.s_[:0:2, 1:3], np.s_[2:0, ::2], np.s_[:, 5:]])
def test_zero_size_strided_slices(on_opencl, index):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    got = on_opencl(lambda x: x[index] + 1)(jnp.asarray(x))
    want = real_jax.jit(lambda x: x[index] + 1)(x)
    assert got.shape == want.shape and got.dtype == want.dtype


I32_MIN = -2**31
WRAPPING = {
    # sum(x) > 0 of a sum that wraps: PoCL turned `a + b > 0` into `a > -b` (the fuzzer, seed 212)
    "sum_compared": (lambda L: lambda x: (L.sum(x) > 0, L.sum(x)), [np.array([2, I32_MIN, -3], np.int32)]),
    "cond_on_wrapped_sum": (lambda L: lambda x: L.where(L.sum(x) > 0, x * 2, x + 1),
                            [np.array([2, I32_MIN, -3], np.int32)]),
    "add_compared": (lambda L: lambda x, y: (x + y > 0, x - y < 0), [np.array([2**31 - 1, 5], np.int32),
                                                                      np.array([1, -2**31 + 1], np.int32)]),
    "negate_min": (lambda L: lambda x: (-x, L.abs(x), -x > 0), [np.array([I32_MIN, 3], np.int32)]),
    "int8_product": (lambda L: lambda x: (x * x, x * x > 0), [np.array([-128, 100, 16], np.int8)]),
    "uint16_product": (lambda L: lambda x: (x * x, L.prod(x)), [np.array([65535, 65535, 300], np.uint16)]),
    "int32_prod_compared": (lambda L: lambda x: L.prod(x) < 0, [np.array([65536, 65536, 3], np.int32)]),
    # integer_pow multiplies by repeated squaring: each product wraps too
    "int32_power_compared": (lambda L: lambda x: (x ** 3, x ** 3 > 0, x ** 5 < 0),
                             [np.array([2000, -1700, 65536, 7], np.int32)]),
    "int8_power": (lambda L: lambda x: (x ** 2, x ** 7), [np.array([-128, 100, 16, 3], np.int8)]),
}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", sorted(WRAPPING))
def test_integer_arithmetic_wraps_as_xla(on_opencl, name):
    make, args = WRAPPING[name]
    got = on_opencl(make(jnp))(*[jnp.asarray(a) for a in args])
    want = real_jax.jit(make(real_jnp))(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("kind", ["cond", "fori_loop"])
def test_subnormal_constants_in_loop_bodies_are_kept(on_opencl, kind):
    # A body compiles when first run, inside the flushed program; its constant folding keeps
    # the subnormal, as XLA's does.
    def make(lax, np_):
        if kind == "cond":
            return lambda x: lax.cond(x[0] > 0, lambda: x, lambda: np_.full_like(x, 1e-39))
        return lambda x: lax.fori_loop(0, 2, lambda i, c: np_.where(c > 5, c, 1e-39), x)
    x = np.array([-1, 2, 3], np.float32)
    got = np.asarray(on_opencl(make(gpuarr.lax, jnp))(jnp.asarray(x)))
    want = np.asarray(real_jax.jit(make(real_jax.lax, real_jnp))(x))
    np.testing.assert_array_equal(got, want)


SUBNORMAL_FUNCTIONS = {
    # XLA's expansions return x for these, a zero of x's sign for the next ones; float32 cbrt
    # and acos have constants of their own (lax/subnormal_operands.py, kernels/common.h).
    "kept": lambda L: lambda x: (L.sin(x), L.tan(x), L.arctan(x), L.tanh(x), L.expm1(x)),
    "zeroed": lambda L: lambda x: (L.arcsin(x), L.sinh(x), L.arcsinh(x), L.arctanh(x), L.log1p(x),
                                   L.sqrt(x), L.sign(x)),
    "cbrt_arccos": lambda L: lambda x: (L.cbrt(x), L.arccos(x)),
    "arctan2": lambda L: lambda x: (L.arctan2(x, x[::-1]), L.arctan2(x, 1.0), L.arctan2(1.0, x),
                                    L.arctan2(x, -0.0), L.arctan2(-1e-30, x)),
}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", sorted(SUBNORMAL_FUNCTIONS))
def test_transcendentals_of_subnormals_as_xla(on_opencl, name):
    x = np.resize(np.array([1e-39, -1e-39, 5e-45, -1.1e-38, 0, -0.0, 2e-30], np.float32), 16)
    make = SUBNORMAL_FUNCTIONS[name]
    got = on_opencl(make(jnp))(jnp.asarray(x))
    want = real_jax.jit(make(real_jnp))(x)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.signbit(g)[~np.isnan(w)], np.signbit(w)[~np.isnan(w)])
        np.testing.assert_array_equal(g[~np.isnan(w)], w[~np.isnan(w)])
