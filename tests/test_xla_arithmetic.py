"""XLA's arithmetic under jit, compared with JAX value for value: division by a constant or by
a broadcast value is multiplication by the reciprocal rounded to the dtype (XLA's simplifier),
so `jit(lambda i: 4.0 * i / 20000)(15691)` is 3.1381998 where eager division gives 3.1382.
Also lax.top_k's list result and lax.stop_gradient of Python scalars."""
import numpy as np
import pytest

import gpuarr
from gpuarr import lax
from tests.jax_compare import outcome, same_results

jax = pytest.importorskip("jax")

RNG = np.random.default_rng(0)
F32 = RNG.uniform(-1e4, 1e4, 4096).astype(np.float32)
F16 = RNG.uniform(-100, 100, 4096).astype(np.float16)
M32 = RNG.uniform(-1e4, 1e4, (64, 64)).astype(np.float32)
COL = RNG.uniform(1, 1e3, (64, 1)).astype(np.float32)
INTS = RNG.integers(1, 100, (64, 64)).astype(np.float32)  # exact row sums, in any order
VARYING = RNG.uniform(1, 1e3, 4096).astype(np.float32)
SCALARS = [np.float32(v) for v in F32[:16]]

# (name, function, arguments): each case's results must equal JAX's exactly under jit. The
# divisors 3, 7 and 20000 have inexact reciprocals: x / c and x * (1 / c) differ by an ulp
# for about half of the values, so each case tells the two apart.
JIT_CASES = [
    ("int scalar times float over int", lambda i: 4.0 * i / 20000, [np.int32(15691)]),
    ("f32 array / python float", lambda x: x / 3.0, [F32]),
    ("f32 array / python int", lambda x: x / 7, [F32]),
    ("f32 array / numpy scalar", lambda x: x / np.float32(20000), [F32]),
    ("f32 array / closed-over array", lambda x: x / VARYING, [F32]),
    ("f32 array / closed-over column", lambda x: x / COL, [M32]),
    ("f16 array / python float", lambda x: x / 7.0, [F16]),
    ("bf16 array / python float (float32 inside)", lambda x: x / 3.0,
     [F32.astype(gpuarr.numpy.bfloat16)]),
    ("f32 matrix / runtime column", lambda x, y: x / y, [M32, COL]),
    ("f32 matrix / runtime row", lambda x, y: x / y, [M32, COL.T]),
    ("f32 matrix / runtime scalar", lambda x, y: x / y, [M32, np.float32(7)]),
    ("f32 matrix / its row sums", lambda x: x / x.sum(1, keepdims=True), [INTS]),
    ("f32 array / same-shape array", lambda x, y: x / y, [F32, VARYING]),
    ("python float / f32 array", lambda x: 7.0 / x, [VARYING]),
    ("f32 array / zero", lambda x: x / 0.0, [np.array([0.0, 1.0, -1.0], np.float32)]),
    ("constant / constant (folded)", lambda x: x + np.float32(62764.0) / 20000, [np.float32(0)]),
    ("int32 floor division", lambda x: x // 7, [np.arange(-50, 50, dtype=np.int32)]),
    ("int32 lax.div", lambda x: lax.div(x, np.int32(7)), [np.arange(-50, 50, dtype=np.int32)]),
    ("mean", lambda x: x.mean(), [F32[:100]]),
] + [(f"f32 scalar {i} / constant", lambda x: x / 20000.0, [s]) for i, s in enumerate(SCALARS)] \
  + [(f"f32 scalar {i} / runtime scalar", lambda x, y: x / y, [s, np.float32(20000)])
     for i, s in enumerate(SCALARS)]


def _same(fn, args, jit):
    got = outcome(gpuarr, fn, args, jit=jit)
    want = outcome(jax, _with_jax_lax(fn), args, jit=jit)
    for g, w in same_results(got, want):
        np.testing.assert_array_equal(g, w)


def _with_jax_lax(fn):
    """`fn` with `lax` read as JAX's lax (for the cases that call lax directly)."""
    if "lax" not in fn.__code__.co_names:
        return fn
    import types
    return types.FunctionType(fn.__code__, {**fn.__globals__, "lax": jax.lax}, fn.__name__,
                              fn.__defaults__, fn.__closure__)


@pytest.mark.parametrize("name,fn,args", JIT_CASES, ids=[c[0] for c in JIT_CASES])
def test_division_under_jit_matches_jax(name, fn, args):
    _same(fn, args, jit=True)


def test_the_example_of_the_issue():
    f = lambda i: 4.0 * i / 20000  # noqa: E731
    got = gpuarr.jit(f)(gpuarr.numpy.int32(15691))
    assert np.float32(got) == np.float32(jax.jit(f)(jax.numpy.int32(15691))) == np.float32(3.1381998)
    assert np.float32(f(gpuarr.numpy.int32(15691))) == np.float32(3.1382)  # eager: no rewrite


def test_division_under_jit_with_x64():
    x = RNG.uniform(-1e4, 1e4, 4096)
    for api in (gpuarr, jax):
        api.config.update("jax_enable_x64", True)
    try:
        _same(lambda x: x / 7.0, [x], jit=True)
        _same(lambda x, y: x / y, [x, 7.0], jit=True)
        for s in x[:16]:
            _same(lambda x: x / 7.0, [np.float64(s)], jit=True)
    finally:
        for api in (gpuarr, jax):
            api.config.update("jax_enable_x64", False)


# Eager division is the exact quotient in both wherever no broadcast is involved. (JAX's eager
# division by a scalar or a smaller array runs through XLA's broadcast rewrite too; gpuarr's
# eager division does not rewrite.)
EAGER_CASES = [
    ("f32 scalar / scalar", lambda x, y: x / y, [np.float32(62764.0), np.float32(20000)]),
    ("int scalar times float over int", lambda i: 4.0 * i / 20000, [np.int32(15691)]),
    ("f32 array / same-shape array", lambda x, y: x / y, [F32, VARYING]),
    ("f16 array / same-shape array", lambda x, y: x / y, [F16, F16[::-1]]),
    ("python float / f32 array", lambda x: 7.0 / x, [VARYING]),
] + [(f"f32 scalar {i} / scalar", lambda x, y: x / y, [s, np.float32(20000)])
     for i, s in enumerate(SCALARS)]


@pytest.mark.parametrize("name,fn,args", EAGER_CASES, ids=[c[0] for c in EAGER_CASES])
def test_eager_division_matches_jax(name, fn, args):
    _same(fn, args, jit=False)


def test_division_rewrite_is_a_jit_pass():
    # The rewrite shows in the lowered program and not in the traced one.
    f = gpuarr.jit(lambda x: x / 3.0)
    x = gpuarr.numpy.ones(4)
    assert "div" in str(f.trace(x).jaxpr)
    lowered = str(f.lower(x).compiler_ir())
    assert "mul" in lowered
    with gpuarr.api.config_disable_passes():
        assert np.array_equal(gpuarr.jit(lambda x: x / 3.0)(F32), F32 / np.float32(3))


def test_top_k_returns_a_list():
    for api in (gpuarr, jax):
        x = api.numpy.array([3.0, 1.0, 4.0, 1.0, 5.0])
        out = api.lax.top_k(x, 2)
        assert type(out) is list and len(out) == 2
        jitted = api.jit(lambda x: api.lax.top_k(x, 2))(x)
        assert type(jitted) is list
    got, want = gpuarr.lax.top_k(gpuarr.numpy.arange(5.0), 2), jax.lax.top_k(jax.numpy.arange(5.0), 2)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype


@pytest.mark.parametrize("value", [1.0, 2, True, 1 + 2j])
def test_stop_gradient_of_a_python_scalar_is_itself(value):
    got, want = gpuarr.lax.stop_gradient(value), jax.lax.stop_gradient(value)
    assert isinstance(got, type(value)) and isinstance(want, type(value))
    assert type(got) is type(value) and got == want == value
    assert gpuarr.lax.stop_gradient((value, [value])) == (value, [value])


def test_stop_gradient_of_a_scalar_under_transformations():
    f = lambda x: lax.stop_gradient(2.0) * x ** 2  # noqa: E731
    assert float(gpuarr.jit(f)(3.0)) == float(jax.jit(_with_jax_lax(f))(3.0)) == 18.0
    assert float(gpuarr.grad(f)(3.0)) == float(jax.grad(_with_jax_lax(f))(3.0)) == 12.0
    with pytest.raises(OverflowError):
        gpuarr.lax.stop_gradient(2 ** 40)
