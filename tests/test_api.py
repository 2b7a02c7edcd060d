"""The top-level API as JAX has it. Public names of the top level, lax, errors and nn:
custom_gradient, naming helpers, ensure_compile_time_eval, config context managers, process
queries, error classes, lax enums, complex primitives, reductions, shape helpers, special
functions, implicit solvers and dot_product_attention (expected values are NumPy/loop oracles or
literals from JAX). Then JAX's smaller top-level names and jax.dtypes names, compared with JAX:
config-option context managers (defaults, validation errors, honoured options), effects_barrier,
live_arrays, copy_to_host_async, process_indices, host_ids, make_user_context, gpuarr.version,
and dtypes.itemsize_bits / scalar_type_of / extended / prng_key."""
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr
import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import dtypes, errors, lax

f32 = np.float32


def A(*v):
    return np.array(v, f32)


rng = np.random.RandomState(0)

# ---------------------------------------------------------------- top level


def test_custom_gradient():
    @jax.custom_gradient
    def g(x, y):
        return x * y, lambda ct: (ct * y * 10, ct * x)

    assert float(g(2.0, 3.0)) == 6.0
    gx, gy = jax.grad(g, argnums=(0, 1))(2.0, 3.0)
    assert (float(gx), float(gy)) == (30.0, 2.0)

    @jax.custom_gradient
    def h(x):  # one argument: the vjp may return a bare cotangent
        e = jnp.exp(x)
        return jnp.log1p(e), lambda ct: ct * e / (1 + e) * 3
    sig = 1 / (1 + np.exp(-0.5))
    want = 3 * sig * 0.5 + np.log1p(np.exp(0.5))
    np.testing.assert_allclose(jax.grad(lambda x: h(x) * x)(0.5), want, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.grad(h))(0.5), 3 * sig, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(jax.grad(h))(jnp.zeros(3)), np.full(3, 1.5), rtol=1e-6)


def test_named_call_and_named_scope():
    f = jax.named_call(lambda x: x * 2, name="dbl")
    assert float(f(3.0)) == 6.0 and float(jax.grad(f)(1.0)) == 2.0
    assert str(jax.make_jaxpr(f)(3.0)) == str(jax.make_jaxpr(lambda x: x * 2)(3.0))
    with jax.named_scope("outer"):
        with jax.named_scope("inner"):
            assert jax.named_scope.current() == "outer/inner"
            y = jnp.sin(1.0)
    assert jax.named_scope.current() == ""
    np.testing.assert_allclose(y, np.sin(1.0), rtol=1e-6)
    with pytest.raises(TypeError, match="must be a string"):
        jax.named_scope(3)


def test_ensure_compile_time_eval():
    seen = {}

    @jax.jit
    def f(x):
        with jax.ensure_compile_time_eval():
            y = jnp.sin(2.0)
            seen["y"] = type(y)
            z = x + 1
            # A traced value is still a tracer (and, as in JAX, a jax.Array to isinstance).
            seen["z"] = (isinstance(z, jax.core.Tracer), isinstance(z, jax.Array))
            if y > 0:  # a concrete value: Python can branch on it
                z = z * 2
        return y + z

    np.testing.assert_allclose(f(1.0), np.sin(2.0) + 4.0, rtol=1e-6)
    assert seen["y"] is jax.Array and seen["z"] == (True, True)
    prog = jax.make_jaxpr(f)(1.0)
    assert "sin" not in str(prog)  # sin(2.0) was evaluated at trace time, a literal remains
    with jax.ensure_compile_time_eval():  # outside jit: no effect
        assert float(jnp.cos(0.0)) == 1.0


def test_config_context_managers_set_and_restore():
    cfg = jax.config
    for name in ("debug_nans", "debug_infs", "log_compiles", "explain_cache_misses",
                 "check_tracer_leaks"):
        state = getattr(jax, name)
        before = getattr(cfg, name)
        with state(True):
            assert getattr(cfg, name) is True and state.value is True
            with state(False):
                assert getattr(cfg, name) is False
            assert getattr(cfg, name) is True
        assert getattr(cfg, name) == before
    with jax.checking_leaks():
        assert cfg.check_tracer_leaks is True
    assert cfg.check_tracer_leaks is False
    with jax.default_matmul_precision("highest"):
        assert cfg.jax_default_matmul_precision == "highest"
    assert cfg.default_matmul_precision is None  # as in JAX
    with pytest.raises(ValueError):
        with jax.default_matmul_precision("bogus"):
            pass
    with jax.debug_nans(True), pytest.raises(FloatingPointError):
        jnp.log(-jnp.ones(2))


def test_float0_process_queries_and_environment_info():
    assert jax.float0 == np.dtype([("float0", np.void, 0)])
    assert jax.grad(lambda x, n: x * 2.0, argnums=1, allow_int=True)(1.0, 3).dtype == jax.float0
    assert (jax.process_index(), jax.process_count()) == (0, 1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert (jax.host_id(), jax.host_count()) == (0, 1)
    assert len(w) == 2 and "renamed" in str(w[0].message)
    info = jax.print_environment_info(return_string=True)
    assert "numpy:" in info and "process_count: 1" in info


def test_error_hierarchy():
    assert issubclass(errors.ConcretizationTypeError, errors.JAXTypeError)
    assert issubclass(errors.TracerArrayConversionError, errors.JAXTypeError)
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.TracerIntegerConversionError, errors.JAXTypeError)
    assert issubclass(errors.UnexpectedTracerError, errors.JAXTypeError)
    assert issubclass(errors.KeyReuseError, errors.JAXTypeError)
    assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
    assert issubclass(errors.JAXTypeError, TypeError) and issubclass(errors.JAXIndexError, IndexError)
    assert issubclass(errors.JaxRuntimeError, RuntimeError)
    assert issubclass(errors.JaxprTypeError, TypeError)
    with pytest.raises(errors.JAXTypeError):
        jax.jit(lambda x: int(x))(1.0)


# ---------------------------------------------------------------- lax: enums, complex, reductions


def test_precision_and_rounding_method():
    P = lax.Precision
    assert [p.name for p in P] == ["DEFAULT", "HIGH", "HIGHEST"]
    assert P("highest") is P.HIGHEST and P("float32") is P.HIGHEST and P(2) is P.HIGHEST
    assert P("tensorfloat32") is P.HIGH and P("fastest") is P.DEFAULT and P(None) is P.DEFAULT
    assert repr(P.HIGH) == "Precision.HIGH" and str(P.HIGH) == "HIGH"
    a = rng.randn(3, 4).astype(f32)
    b = rng.randn(4, 2).astype(f32)
    for fn in (lambda: lax.dot(a, b, precision=P.HIGHEST),
               lambda: lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=P.HIGH),
               lambda: jax.jit(lambda x, y: jnp.matmul(x, y, precision=P.HIGHEST))(a, b),
               lambda: jnp.einsum("ij,jk->ik", a, b, precision=P.DEFAULT)):
        np.testing.assert_allclose(fn(), a @ b, rtol=1e-5)
    R = lax.RoundingMethod
    assert (int(R.AWAY_FROM_ZERO), int(R.TO_NEAREST_EVEN)) == (0, 1)
    x = np.array([0.5, 1.5, 2.5, -0.5], f32)
    np.testing.assert_array_equal(lax.round(x, R.TO_NEAREST_EVEN), [0, 2, 2, -0])
    np.testing.assert_array_equal(lax.round(x, R.AWAY_FROM_ZERO), [1, 2, 3, -1])
    assert lax.DotDimensionNumbers is not None and lax.ConvGeneralDilatedDimensionNumbers is not None


def test_complex_conj_real_imag():
    x, y = rng.randn(3).astype(f32), rng.randn(3).astype(f32)
    z = lax.complex(x, y)
    assert z.dtype == np.complex64
    np.testing.assert_allclose(z, x + 1j * y)
    np.testing.assert_allclose(lax.real(z), x)
    np.testing.assert_allclose(lax.imag(z), y)
    np.testing.assert_allclose(lax.conj(z), x - 1j * y)
    assert lax.conj(x).dtype == np.complex64 and lax.real(z).dtype == np.float32
    assert jax.typeof(lax.complex(1.0, 2.0)).weak_type
    assert "conj[input_dtype=float32]" in str(jax.make_jaxpr(lax.conj)(1.0))
    with pytest.raises(TypeError, match="real does not accept dtype float32"):
        lax.real(1.0)
    with pytest.raises(TypeError, match="complex does not accept dtype int32"):
        lax.complex(1, 2)
    # gradients, literals from JAX
    assert float(jax.grad(lambda t: lax.real(t * lax.complex(t, t)))(2.0)) == 4.0
    assert complex(jax.grad(lambda w: lax.real(lax.conj(w) * w))(np.complex64(1 + 2j))) == 2 - 4j
    assert complex(jax.grad(lambda w: lax.imag(w * w))(np.complex64(1 + 2j))) == 4 - 2j
    assert float(jax.grad(lambda t: lax.real(lax.conj(t)) * t)(3.0)) == 6.0


def test_reduce_xor_and_general_reduce():
    v = np.array([3, 5, 6, 9], np.int32)
    assert int(lax.reduce_xor(v, (0,))) == 3 ^ 5 ^ 6 ^ 9
    assert bool(lax.reduce_xor(np.array([True, True, False]), (0,))) is False
    x = np.arange(6.0, dtype=f32).reshape(2, 3)
    np.testing.assert_array_equal(lax.reduce(x, 0.0, lax.add, (0,)), x.sum(0))
    np.testing.assert_array_equal(lax.reduce(x, -np.inf, lax.max, (1,)), x.max(1))
    np.testing.assert_array_equal(lax.reduce(x, 1.0, lax.add, (0,)), 1 + x.sum(0))  # init counts
    assert "reduce_sum" in str(jax.make_jaxpr(lambda a: lax.reduce(a, 0.0, lax.add, (0,)))(x))
    # a non-monoid computation is folded left to right from the initial value
    np.testing.assert_array_equal(lax.reduce(x, 0.0, lambda a, b: a + 2 * b, (1,)), [6.0, 24.0])
    s, p = lax.reduce((x, x), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), (0,))
    np.testing.assert_array_equal(s, x.sum(0))
    np.testing.assert_array_equal(p, x.prod(0))
    assert int(lax.reduce(v, 0, lax.bitwise_xor, (0,))) == 3 ^ 5 ^ 6 ^ 9
    g = jax.grad(lambda a: lax.reduce(a, 0.0, lambda c, b: c + 2 * b * b, (0,)).sum())
    np.testing.assert_allclose(g(np.arange(3.0, dtype=f32)), [0, 4, 8])
    np.testing.assert_array_equal(jax.jit(lambda a: lax.reduce(a, 0.0, lambda c, b: c - b, (0, 1)))(x), -15.0)


def test_optimization_barrier():
    out = lax.optimization_barrier((1.0, jnp.ones(2)))
    assert jax.typeof(out[0]).weak_type and out[1].shape == (2,)
    assert "optimization_barrier" in str(jax.make_jaxpr(lax.optimization_barrier)((1.0, jnp.ones(2))))
    assert float(jax.grad(lambda t: lax.optimization_barrier(t) * 2)(1.0)) == 2.0
    np.testing.assert_array_equal(jax.vmap(lambda t: lax.optimization_barrier(t * 2))(jnp.arange(3.0)),
                                  [0, 2, 4])


# ---------------------------------------------------------------- lax: shapes


def test_shape_helpers():
    x = np.arange(6.0, dtype=f32).reshape(2, 3)
    assert lax.stack([x, x], 1).shape == (2, 2, 3)
    np.testing.assert_array_equal(lax.stack([np.ones(2), np.zeros(2)], -1), [[1, 0], [1, 0]])
    parts = lax.unstack(x, 1)
    assert isinstance(parts, tuple) and len(parts) == 3
    np.testing.assert_array_equal(parts[2], [2.0, 5.0])
    a, b = lax.split(np.arange(6).reshape(2, 3), [1, 2], axis=1)
    np.testing.assert_array_equal(b, [[1, 2], [4, 5]])
    with pytest.raises(ValueError):
        lax.split(np.arange(5), [2, 2])
    np.testing.assert_array_equal(lax.tile(np.arange(3), (2,)), np.tile(np.arange(3), 2))
    np.testing.assert_array_equal(lax.tile(x, (2, 3)), np.tile(x, (2, 3)))
    assert lax.collapse(jnp.ones((2, 3, 4)), 1).shape == (2, 12)
    assert lax.collapse(jnp.ones((2, 3, 4)), 0, 2).shape == (6, 4)
    assert lax.broadcast_to_rank(jnp.ones(3), 3).shape == (1, 1, 3)
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        lax.broadcast_shapes((2,), (3,))
    l, r = rng.randn(2, 3, 4).astype(f32), rng.randn(2, 4, 5).astype(f32)
    np.testing.assert_allclose(lax.batch_matmul(l, r), l @ r, rtol=1e-5)
    with pytest.raises(ValueError, match="same ndim"):
        lax.batch_matmul(l, r[0])
    e = lax.empty((2, 3), jnp.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32
    assert lax.dtype(1.0) == np.float32 and lax.dtype(np.int64) == np.int32
    assert lax.dtype(jnp.int8(1)) == np.int8


def test_conv_transpose():
    r = np.random.RandomState(1)
    x = r.randn(1, 5, 6, 2).astype(f32)  # NHWC
    k = r.randn(3, 3, 2, 4).astype(f32)  # HWIO
    xk = r.randn(1, 5, 6, 4).astype(f32)
    # (padding, transpose_kernel) -> shape, first values, sum: literals from JAX 0.10.2
    cases = {
        ("SAME", False): ((1, 10, 12, 4), [-2.2843, 1.4798, 2.7545, 0.9185], -15.155),
        ("SAME", True): ((1, 10, 12, 2), [2.2102, -0.693, -4.2876, 1.7967], 0.042),
        ("VALID", False): ((1, 11, 13, 4), [-2.2843, 1.4798, 2.7545, 0.9185], -6.428),
        ("VALID", True): ((1, 11, 13, 2), [2.2102, -0.693, -4.2876, 1.7967], 7.005),
        (((1, 2), (0, 1)), False): ((1, 10, 10, 4), [1.6585, -1.3262, -2.8305, 1.2098], -11.651),
        (((1, 2), (0, 1)), True): ((1, 10, 10, 2), [0.6208, 2.3627, 0.8787, -0.6935], 7.171),
    }
    for (pad, tk), (shape, first, total) in cases.items():
        out = np.asarray(lax.conv_transpose(xk if tk else x, k, (2, 2), pad, transpose_kernel=tk))
        assert out.shape == shape
        np.testing.assert_allclose(out.ravel()[:4], first, atol=1e-4)
        np.testing.assert_allclose(out.sum(), total, atol=2e-3)
    out = lax.conv_transpose(x, k, (2, 1), "SAME", rhs_dilation=(1, 2))
    assert out.shape == (1, 10, 6, 4)
    np.testing.assert_allclose(np.asarray(out).sum(), -37.266, atol=2e-3)


def test_axis_size():
    out = jax.vmap(lambda t: lax.axis_size("i") * t, axis_name="i")(jnp.ones(3))
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])
    seen = []
    jax.vmap(lambda t: seen.append(lax.axis_size("i")) or t, axis_name="i")(jnp.ones(4))
    assert seen == [4] and type(seen[0]) is int
    both = jax.vmap(jax.vmap(lambda t: t * lax.axis_size(("i", "j")), axis_name="j"),
                    axis_name="i")(jnp.ones((2, 3)))
    np.testing.assert_array_equal(both, np.full((2, 3), 6.0))
    np.testing.assert_array_equal(
        jax.vmap(jax.jit(lambda t: lax.axis_size("i") * t), axis_name="i")(jnp.ones(2)), [2, 2])


# ---------------------------------------------------------------- lax: special functions


def test_special_function_values():
    # literals from JAX 0.10.2
    a, x = A(0.5, 5, 30, 1e-3), A(0.1, 7, 25, 2)
    np.testing.assert_allclose(lax.igamma(a, x), [0.3452792, 0.8270085, 0.18210234, 0.999951],
                               rtol=2e-5)
    np.testing.assert_allclose(lax.igammac(a, x),
                               [0.65472078, 0.1729915, 0.81789768, 4.8976974e-05], rtol=2e-5)
    np.testing.assert_allclose(lax.betainc(A(0.5, 5, 30, 2), A(0.7, 2, 25, 40),
                                           A(0.1, 0.7, 0.55, 0.01)),
                               [0.25502515, 0.4201749, 0.5235973, 0.06343944], rtol=2e-5)
    np.testing.assert_allclose(lax.zeta(A(1.5, 3, 7.5, 2, 2), A(0.3, 2.5, 1, 100, -1.5)),
                               [8.237762, 0.11810203, 1.0058267, 0.01005017, 9.3792467], rtol=2e-5)
    t = np.array([0.1, 2.5, 7, 19, 21, 50, -3], f32)
    np.testing.assert_allclose(lax.bessel_i0e(t), np.i0(t.astype(np.float64)) * np.exp(-np.abs(t)), rtol=1e-6)
    np.testing.assert_allclose(lax.bessel_i1e(t), [0.04529845, 0.20658463, 0.14228928, 0.08968606, 0.0854776,
                                                   0.05599313, -0.19682671], rtol=2e-5)
    assert lax.igamma(1.0, 2.0).dtype == np.float32 and jax.typeof(lax.igamma(1.0, 2.0)).weak_type
    with pytest.raises(TypeError):
        lax.igamma(np.float32(1), np.float16(2))


def test_special_function_domain_edges():
    # literals from JAX 0.10.2
    nan, inf = np.nan, np.inf
    a = np.array([-1, 0, 0.5, 2, 2, 2, inf, 3, nan], f32)
    x = np.array([1, 1, 0, 0, -1, inf, 1, 1e3, 1], f32)
    np.testing.assert_array_equal(lax.igamma(a, x), [nan, 1, 0, 0, nan, 1, nan, 1, nan])
    np.testing.assert_array_equal(lax.igammac(a, x), [nan, 0, 1, 1, nan, 0, nan, 0, nan])
    np.testing.assert_array_equal(lax.zeta(A(1, 0.5, 3, 3, -2, 2), A(1, 1, 0, -1, 1, inf)),
                                  [inf, nan, nan, nan, nan, nan])
    np.testing.assert_array_equal(lax.betainc(A(0, -1, 2, 2, 2, 2, 2), A(1, 1, 3, 3, 3, 3, 0),
                                              A(0.5, 0.5, 0, 1, -0.1, 1.1, 0.5)),
                                  [1, nan, 0, 1, nan, nan, 0])
    np.testing.assert_array_equal(lax.bessel_i0e(np.array([0, inf, -inf, nan], f32)), [1, 0, 0, nan])
    np.testing.assert_array_equal(lax.bessel_i1e(np.array([0, inf, -inf, nan], f32)), [0, 0, -0.0, nan])


def test_special_function_gradients():
    a, x = f32(2.5), f32(1.5)
    # literals from JAX 0.10.2
    np.testing.assert_allclose(jax.grad(lax.igamma, 0)(a, x), -0.25217527, rtol=1e-5)
    np.testing.assert_allclose(jax.grad(lax.igamma, 1)(a, x), 0.30836064, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lax.igammac, 0)(a, x), 0.25217527, rtol=1e-5)
    np.testing.assert_allclose(jax.grad(lax.betainc, 2)(a, x, f32(0.3)), 0.7001663, rtol=1e-5)
    np.testing.assert_allclose(jax.grad(lax.bessel_i0e)(f32(1.3)), -0.18312736, rtol=1e-5)
    np.testing.assert_allclose(jax.grad(lax.bessel_i1e)(f32(1.3)), 0.015975356, rtol=1e-4)
    assert float(jax.grad(lax.bessel_i1e)(f32(0.0))) == 0.5
    np.testing.assert_allclose(jax.grad(jax.grad(lax.igamma, 1), 0)(a, x), -0.09179641, rtol=1e-4)
    with pytest.raises(ValueError, match="a and b not supported"):
        jax.grad(lax.betainc, 0)(a, x, f32(0.3))
    with pytest.raises(NotImplementedError):
        jax.grad(lax.zeta, 0)(a, x)
    check_grads_x64(lambda q: lax.zeta(3.0, q), [np.array([0.7, 1.4, 2.0])], 1)
    np.testing.assert_allclose(jax.vmap(jax.grad(lax.igamma))(np.array([1, 2], f32), np.array([1, 2], f32)),
                               [-0.4317297, -0.29400468], rtol=1e-4)
    # random_gamma_grad: dx/da of Gamma(a) samples, against the implicit-function formula
    g = lax.random_gamma_grad(f32(2.0), f32(1.5))
    h = 1e-3
    ia = lambda s: float(lax.igamma(np.float32(s), f32(1.5)))  # noqa: E731
    dens = 1.5 * np.exp(-1.5)  # x^(a-1) e^-x / Gamma(a) at a = 2
    np.testing.assert_allclose(g, -(ia(2 + h) - ia(2 - h)) / (2 * h) / dens, rtol=1e-3)


# ---------------------------------------------------------------- implicit solvers


def _newton(f, x0):
    x = x0
    for _ in range(30):
        x = x - f(x) / jax.grad(f)(x)
    return x


def test_custom_root():
    def sqrt_cubed(x):
        return lax.custom_root(lambda y: y ** 2 - x ** 3, 1.0, _newton, lambda g, y: y / g(1.0))

    np.testing.assert_allclose(sqrt_cubed(2.0), 2 ** 1.5, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(sqrt_cubed)(2.0), 1.5 * np.sqrt(2.0), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.grad(sqrt_cubed))(3.0), 1.5 * np.sqrt(3.0), rtol=1e-6)
    out, aux = lax.custom_root(lambda y: y - 4.0, 0.0, lambda f, g: (g - f(g), jnp.float32(7)),
                               lambda g, y: y / g(1.0), has_aux=True)
    assert float(out) == 4.0 and float(aux) == 7.0


def test_custom_linear_solve():
    A0 = np.array([[4.0, 1.0], [2.0, 3.0]], f32)
    b0 = np.array([1.0, 2.0], f32)

    def solve(A, b):
        return lax.custom_linear_solve(lambda v: A @ v, b, lambda mv, r: jnp.linalg.solve(A, r),
                                       lambda vm, r: jnp.linalg.solve(A.T, r))

    np.testing.assert_allclose(solve(A0, b0), np.linalg.solve(A0, b0), rtol=1e-5)
    gA, gb = jax.grad(lambda A, b: solve(A, b).sum(), (0, 1))(A0, b0)
    lam = np.linalg.solve(A0.T, np.ones(2))
    np.testing.assert_allclose(gb, lam, rtol=1e-5)
    np.testing.assert_allclose(gA, -np.outer(lam, np.linalg.solve(A0, b0)), rtol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda b: solve(A0, b).sum()))(b0), lam, rtol=1e-5)
    S = A0 + A0.T
    sym = lambda b: lax.custom_linear_solve(lambda v: S @ v, b, lambda mv, r: jnp.linalg.solve(S, r),  # noqa: E731
                                            symmetric=True)
    np.testing.assert_allclose(jax.grad(lambda b: sym(b)[0])(b0), np.linalg.solve(S, [1.0, 0.0]), rtol=1e-5)


# ---------------------------------------------------------------- nn


def _attention_oracle(q, k, v, bias=None, mask=None, scale=None):
    B, T, N, H = q.shape
    K = k.shape[2]
    G = N // K
    scale = 1 / np.sqrt(H) if scale is None else scale
    out = np.zeros_like(q)
    for b in range(B):
        for n in range(N):
            logits = q[b, :, n] @ k[b, :, n // G].T * scale
            if bias is not None:
                logits = logits + bias[b % bias.shape[0], n if bias.shape[1] > 1 else 0]
            if mask is not None:
                logits = np.where(mask[b % mask.shape[0], n if mask.shape[1] > 1 else 0], logits,
                                  -0.7 * np.finfo(np.float32).max)
            p = np.exp(logits - logits.max(-1, keepdims=True))
            out[b, :, n] = (p / p.sum(-1, keepdims=True)) @ v[b, :, n // G]
    return out


def test_dot_product_attention():
    B, T, S, N, K, H = 2, 3, 4, 4, 2, 5
    q = rng.randn(B, T, N, H).astype(f32)
    k = rng.randn(B, S, K, H).astype(f32)
    v = rng.randn(B, S, K, H).astype(f32)
    bias = rng.randn(B, 1, T, S).astype(f32)
    mask = rng.rand(B, N, T, S) > 0.3
    f = jax.nn.dot_product_attention
    np.testing.assert_allclose(f(q, k, v), _attention_oracle(q, k, v), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f(q, k, v, bias, mask), _attention_oracle(q, k, v, bias, mask),
                               rtol=1e-5, atol=1e-6)
    causal = np.tril(np.ones((T, S), bool))[None, None]
    np.testing.assert_allclose(f(q, k, v, is_causal=True, scale=0.3),
                               _attention_oracle(q, k, v, mask=causal, scale=0.3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f(q[0], k[0], v[0]), _attention_oracle(q[:1], k[:1], v[:1])[0],
                               rtol=1e-5, atol=1e-6)
    out = f(q, k, v, query_seq_lengths=np.array([2, 3], np.int32),
            key_value_seq_lengths=np.array([1, 4], np.int32))
    np.testing.assert_array_equal(out[0, 2], 0.0)  # queries past their length give zeros
    np.testing.assert_allclose(out[0, 0], np.repeat(v[0, 0], 2, axis=0), rtol=1e-6)  # one key
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        f(q[:, :, :3], k, v)
    check_grads_x64(lambda q_, k_, v_: f(q_, k_, v_, bias, is_causal=True), [q, k, v], 1,
                modes=("rev",), atol=2e-2, rtol=2e-2)
    from gpuarr.nn import initializers
    assert isinstance(initializers.glorot_normal(), initializers.Initializer)


def test_random_gamma_p_is_not_exported():
    # gpuarr samples gamma with a custom_jvp rejection loop, not a primitive of its own.
    assert not hasattr(jax.random, "random_gamma_p")
    assert "gpuarr.tree" in sys.modules


def test_device_class_is_exported():
    assert all(isinstance(d, jax.Device) for d in jax.devices())
    assert jax.Device.__name__ == "Device"


# ---------------------------------------------------------------- config options, processes and dtypes names
# (rjax is JAX itself; jax is gpuarr, as above)

rjax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")

from jax_compare import same_error  # noqa: E402

BOOL_OPTIONS = ["allow_f16_reductions", "debug_key_reuse", "enable_checks", "enable_custom_prng",
                "no_execution", "no_tracing", "softmax_custom_jvp", "threefry_partitionable",
                "thread_guard", "auto_pcast", "remove_size_one_mesh_axis_from_type",
                "jax2tf_associative_scan_reductions"]
ENUM_OPTIONS = {  # option -> valid values other than the default
    "array_garbage_collection_guard": ["allow", "log", "fatal", None],
    "default_prng_impl": ["threefry2x32"],
    "legacy_prng_key": ["warn", "error", "allow"],
    "transfer_guard_host_to_device": ["allow", "log", "disallow", "log_explicit",
                                      "disallow_explicit", None],
    "transfer_guard_device_to_device": ["log", "disallow_explicit"],
    "transfer_guard_device_to_host": ["disallow", "log_explicit"],
}
ALL_OPTIONS = BOOL_OPTIONS + list(ENUM_OPTIONS)


def _full(name):
    return name if name.startswith("jax2tf_") else "jax_" + name


def _read(module, name):
    return getattr(module.config, _full(name))


# ---------------------------------------------------------------- config options


def test_option_defaults_and_states_match_jax():
    for name in ALL_OPTIONS:
        ours, theirs = getattr(gpuarr, name), getattr(rjax, name)
        assert repr(_read(gpuarr, name)) == repr(_read(rjax, name)), name
        assert repr(ours.value) == repr(theirs.value), name
        assert ours.name == theirs.name == _full(name)
        assert ours.__name__ == theirs.__name__ == name
        assert gpuarr.config.read(_full(name)) == _read(rjax, name)
        same_error(lambda: bool(ours), lambda: bool(theirs))
    assert gpuarr.config.jax_transfer_guard is None is rjax.config.jax_transfer_guard
    # The legacy_prng_key value is an enum member equal to its string, as JAX's StrEnum.
    value = gpuarr.config.jax_legacy_prng_key
    assert value == "allow" and str(value) == str(rjax.config.jax_legacy_prng_key) == "allow"
    assert f"{value}" == "allow" and type(value).__name__ == "LegacyPrngKeyState"


def test_context_managers_set_restore_and_match_jax():
    for name in ALL_OPTIONS:
        ours, theirs = getattr(gpuarr, name), getattr(rjax, name)
        values = [not _read(rjax, name)] if name in BOOL_OPTIONS else ENUM_OPTIONS[name]
        for v in values:
            before = _read(gpuarr, name)
            with ours(v), theirs(v):
                assert repr(_read(gpuarr, name)) == repr(_read(rjax, name)), (name, v)
                assert repr(ours.value) == repr(theirs.value)
            assert _read(gpuarr, name) == before
    # Bool options default to True in a `with`; the others need a value, as in JAX.
    with gpuarr.enable_checks(), rjax.enable_checks():
        assert gpuarr.config.jax_enable_checks is True is rjax.config.jax_enable_checks
    for name in ENUM_OPTIONS:
        same_error(lambda: getattr(gpuarr, name)(), lambda: getattr(rjax, name)())

    @gpuarr.debug_key_reuse(True)  # a context manager doubles as a decorator
    def read():
        return gpuarr.config.jax_debug_key_reuse
    assert read() is True and gpuarr.config.jax_debug_key_reuse is False


def test_update_and_validation_errors_match_jax():
    bad = [("array_garbage_collection_guard", "nope"), ("array_garbage_collection_guard", 1),
           ("transfer_guard", "nope"), ("transfer_guard_host_to_device", "nope"),
           ("transfer_guard_device_to_host", 3), ("legacy_prng_key", "nope"),
           ("legacy_prng_key", 3), ("default_prng_impl", "nope"), ("default_prng_impl", 3)]
    for name, value in bad:
        before = _read(gpuarr, name)
        same_error(lambda: gpuarr.config.update("jax_" + name, value),
                   lambda: rjax.config.update("jax_" + name, value))
        assert _read(gpuarr, name) == before  # a rejected value changes nothing
        if name != "transfer_guard":  # the context manager checks when it is made
            same_error(lambda: getattr(gpuarr, name)(value), lambda: getattr(rjax, name)(value))
    with pytest.raises(ValueError, match="new enum value must be None or in"):
        with gpuarr.transfer_guard("nope"):
            pass
    gpuarr.config.update("jax_legacy_prng_key", "warn")
    assert repr(gpuarr.config.jax_legacy_prng_key) == "<LegacyPrngKeyState.WARN: 'warn'>"
    gpuarr.config.update("jax_legacy_prng_key", type(gpuarr.config.jax_legacy_prng_key).ERROR)
    assert gpuarr.config.jax_legacy_prng_key == "error"
    for name in BOOL_OPTIONS:
        gpuarr.config.update(_full(name), not _read(rjax, name))
        assert _read(gpuarr, name) is (not _read(rjax, name))


def test_default_prng_impl_supports_threefry_only():
    gpuarr.config.update("jax_default_prng_impl", "threefry2x32")
    for impl in ("rbg", "unsafe_rbg", "threefry4x32", "philox2x32"):
        with pytest.raises(NotImplementedError, match=f"jax_default_prng_impl='{impl}' is not "
                                                      "supported: gpuarr implements only"):
            gpuarr.config.update("jax_default_prng_impl", impl)
        with pytest.raises(NotImplementedError):
            gpuarr.default_prng_impl(impl)
    assert gpuarr.config.jax_default_prng_impl == "threefry2x32"


def test_transfer_guard_sets_every_direction_as_jax():
    directions = ["transfer_guard_host_to_device", "transfer_guard_device_to_device",
                  "transfer_guard_device_to_host"]

    def levels(module):
        return [_read(module, d) for d in directions]

    for module in (gpuarr, rjax):
        module.config.update("jax_transfer_guard_device_to_host", "log")
        with module.transfer_guard("disallow"):
            assert levels(module) == ["disallow"] * 3
            assert module.config.jax_transfer_guard == "disallow"
        assert levels(module) == [None, None, "log"] and module.config.jax_transfer_guard is None
        module.config.update("jax_transfer_guard", "log_explicit")
        assert levels(module) == ["log_explicit"] * 3
        module.config.update("jax_transfer_guard", None)
        assert levels(module) == [None] * 3
    x = gpuarr.numpy.arange(3.0)
    with gpuarr.transfer_guard("disallow"):  # stored only: gpuarr checks no transfers
        np.testing.assert_array_equal(np.asarray(x + np.ones(3, np.float32)), [1, 2, 3])


# ---------------------------------------------------------------- honoured options


def test_no_tracing_raises_on_retrace_as_jax():
    def f(x):
        return x * 2.0

    ours, theirs = gpuarr.jit(f), rjax.jit(f)
    x = np.arange(3, dtype=np.float32)
    ours(x), theirs(x)
    with gpuarr.no_tracing(True), rjax.no_tracing(True):
        np.testing.assert_array_equal(np.asarray(ours(x)), [0, 2, 4])  # cached: no trace
        y = np.ones(4, np.float32)
        same_error(lambda: ours(y), lambda: theirs(y))
        with pytest.raises(RuntimeError, match=r"re-tracing function f at .*test_api\.py:"
                                               r"\d+ for `jit`, but 'no_tracing' is set"):
            gpuarr.grad(lambda v: ours(v).sum())(x)  # jit under a transformation traces
    np.testing.assert_array_equal(np.asarray(ours(y)), [2, 2, 2, 2])


def test_no_execution_raises_when_jit_runs_as_jax():
    def g(x):
        return x + 1.0

    ours, theirs = gpuarr.jit(g), rjax.jit(g)
    x = jnp.arange(3.0)
    ours(x), ours(x)  # the second call fills the fast path
    compiled = gpuarr.jit(g).lower(x).compile()
    theirs_compiled = rjax.jit(g).lower(np.arange(3.0, dtype=np.float32)).compile()
    with gpuarr.no_execution(True), rjax.no_execution(True):
        xs = np.arange(3.0, dtype=np.float32)
        same_error(lambda: ours(x), lambda: theirs(xs))
        same_error(lambda: compiled(x), lambda: theirs_compiled(xs))
        same_error(lambda: gpuarr.vmap(ours)(x), lambda: rjax.vmap(theirs)(xs))
        with pytest.raises(RuntimeError, match=r"execute function jit\(g\), but the "
                                               "no_execution config option is set"):
            gpuarr.jit(g)(np.ones(5, np.float32))  # a new signature compiles, then refuses
    np.testing.assert_array_equal(np.asarray(ours(x)), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(compiled(x)), [1, 2, 3])


def test_threefry_partitionable_false_is_refused():
    key, jkey = gpuarr.random.key(7), rjax.random.key(7)
    want = np.asarray(rjax.random.uniform(jkey, (5,)))
    np.testing.assert_array_equal(np.asarray(gpuarr.random.uniform(key, (5,))), want)
    draw = gpuarr.jit(lambda k: gpuarr.random.uniform(k, (5,)))
    np.testing.assert_array_equal(np.asarray(draw(key)), want)
    with gpuarr.threefry_partitionable(False):
        for fn in (lambda: gpuarr.random.uniform(key, (5,)), lambda: gpuarr.random.split(key),
                   lambda: gpuarr.random.normal(key, ()), lambda: draw(key)):
            with pytest.raises(NotImplementedError, match="only the partitionable threefry "
                                                          "layout"):
                fn()
        # fold_in does not depend on the layout (as in JAX), so it still works.
        np.testing.assert_array_equal(
            np.asarray(gpuarr.random.key_data(gpuarr.random.fold_in(key, 3))),
            np.asarray(rjax.random.key_data(rjax.random.fold_in(jkey, 3))))
    np.testing.assert_array_equal(np.asarray(draw(key)), want)


def test_make_user_context_retraces_as_jax():
    counts = []
    for module in (gpuarr, rjax):
        traces = []

        @module.jit
        def f(x):
            traces.append(1)
            return x * 2.0

        ctx = module.make_user_context(None)
        seen = [ctx.value]
        f(1.0)
        for v in (1, 2, 1, None):
            with ctx(v):
                f(1.0)
                seen.append(ctx.value)
        seen.append(ctx.get_global())
        ctx.set_global(5)
        assert float(f(1.0)) == 2.0
        counts.append((len(traces), seen, ctx.value))
    assert counts[0] == counts[1] == (4, [None, 1, 2, 1, None, None], 5)


# ---------------------------------------------------------------- functions and modules


def test_effects_barrier_processes_and_host_ids_match_jax():
    printed = []
    gpuarr.jit(lambda x: gpuarr.debug.callback(printed.append, x) or x)(1.0)
    assert gpuarr.effects_barrier() is None is rjax.effects_barrier()
    assert len(printed) == 1  # callbacks have run before the call returns
    assert gpuarr.process_indices() == rjax.process_indices() == [0]
    for module in (gpuarr, rjax):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert module.host_ids() == [0]
        assert len(w) == 1 and w[0].category is UserWarning
        assert str(w[0].message) == ("jax.process_indexs has been renamed to "
                                     "jax.process_indices. This alias will eventually be "
                                     "removed; please update your code.")


def test_live_arrays():
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    b = a * 2
    live = gpuarr.live_arrays()
    assert isinstance(live, list) and all(type(x) is gpuarr.Array for x in live)
    assert any(x is a for x in live) and any(x is b for x in live)
    assert any(x is b for x in gpuarr.live_arrays(gpuarr.default_backend()))
    b_id = id(b)
    b.delete()
    assert not any(x is b for x in gpuarr.live_arrays())
    c = a + 1
    c_id = id(c)
    del b, c  # freed by reference counting
    assert not any(id(x) in (b_id, c_id) for x in gpuarr.live_arrays())
    with pytest.raises(RuntimeError):
        gpuarr.live_arrays("no_such_platform")


def test_copy_to_host_async_on_pytrees_as_jax():
    rng = np.random.default_rng(1)
    v = rng.standard_normal(4).astype(np.float32)
    tree = {"a": jnp.asarray(v), "b": [3, "text", None], "k": gpuarr.random.key(0)}
    assert gpuarr.copy_to_host_async(tree) is tree
    assert tree["a"].copy_to_host_async() is None
    jtree = {"a": jjnp.asarray(v), "b": [3, "text", None]}
    assert rjax.copy_to_host_async(jtree) is jtree and jtree["a"].copy_to_host_async() is None
    np.testing.assert_array_equal(np.asarray(tree["a"]), v)


def test_version_module():
    from gpuarr import version
    assert gpuarr.version is version
    assert version.__version__ == version._version == gpuarr.__version__
    assert gpuarr.__version_info__ == version.__version_info__
    assert version.__version_info__ == tuple(int(p) for p in version.__version__.split("."))
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == version.__version__
    # Same shape as jax.version.
    assert isinstance(rjax.version.__version__, str) and isinstance(rjax.__version_info__, tuple)


# ---------------------------------------------------------------- gpuarr.dtypes


def test_itemsize_bits_matches_jax():
    import ml_dtypes
    for dt in [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64,
               np.complex128, "int32", np.dtype("float16"), int, float]:
        assert dtypes.itemsize_bits(dt) == rjax.dtypes.itemsize_bits(dt), dt
    for bad in [None, dtypes.float0, "V8"]:
        same_error(lambda: dtypes.itemsize_bits(bad), lambda: rjax.dtypes.itemsize_bits(bad))
    same_error(lambda: dtypes.itemsize_bits(gpuarr.random.key(0).dtype),
               lambda: rjax.dtypes.itemsize_bits(rjax.random.key(0).dtype))


def test_scalar_type_of_matches_jax():
    import ml_dtypes
    rng = np.random.default_rng(2)
    values = [1, 1.5, True, 2j, np.int8(3), np.uint64(4), np.float16(2), np.complex64(1j),
              ml_dtypes.bfloat16(1), rng.standard_normal(3).astype(np.float32),
              np.ones(2, np.uint8), np.zeros(2, bool)]
    for v in values:
        assert dtypes.scalar_type_of(v) is rjax.dtypes.scalar_type_of(v), repr(v)
    for ours, theirs in [(jnp.ones(2, jnp.bfloat16), jjnp.ones(2, jjnp.bfloat16)),
                         (jnp.zeros((), jnp.complex64), jjnp.zeros((), jjnp.complex64)),
                         (jnp.arange(3), jjnp.arange(3))]:
        assert dtypes.scalar_type_of(ours) is rjax.dtypes.scalar_type_of(theirs)
    for bad in [np.array(["a"]), object()]:
        with pytest.raises(TypeError):
            dtypes.scalar_type_of(bad)
        with pytest.raises(TypeError):
            rjax.dtypes.scalar_type_of(bad)


def test_extended_and_prng_key_dtypes_match_jax():
    ours, theirs = gpuarr.random.key(0).dtype, rjax.random.key(0).dtype
    assert str(ours) == str(theirs) == "key<fry>"
    for a, b in [(dtypes.prng_key, rjax.dtypes.prng_key), (dtypes.extended, rjax.dtypes.extended),
                 (np.generic, np.generic), (np.integer, np.integer), (np.void, np.void),
                 (np.uint32, np.uint32)]:
        want = jjnp.issubdtype(theirs, b)
        assert jnp.issubdtype(ours, a) is want and dtypes.issubdtype(ours, a) is want, a
    pairs = [(np.float32, "extended"), ("prng_key", "extended"), ("extended", "prng_key"),
             ("prng_key", np.generic), (np.uint32, "prng_key")]
    for a, b in pairs:
        mine = [getattr(dtypes, t) if isinstance(t, str) else t for t in (a, b)]
        jaxs = [getattr(rjax.dtypes, t) if isinstance(t, str) else t for t in (a, b)]
        assert jnp.issubdtype(*mine) is bool(jjnp.issubdtype(*jaxs)), (a, b)
    assert issubclass(dtypes.prng_key, dtypes.extended) and issubclass(dtypes.extended,
                                                                       np.generic)
    same_error(dtypes.extended, rjax.dtypes.extended)


def test_listed_jax_names_are_all_present():
    names = {"allow_f16_reductions", "array_garbage_collection_guard", "debug_key_reuse",
             "default_prng_impl", "enable_checks", "enable_custom_prng", "legacy_prng_key",
             "no_execution", "no_tracing", "softmax_custom_jvp", "threefry_partitionable",
             "thread_guard", "auto_pcast", "remove_size_one_mesh_axis_from_type",
             "transfer_guard", "transfer_guard_device_to_device",
             "transfer_guard_device_to_host", "transfer_guard_host_to_device", "effects_barrier",
             "live_arrays", "copy_to_host_async", "process_indices", "host_ids",
             "make_user_context", "version", "__version_info__",
             "jax2tf_associative_scan_reductions"}
    assert names <= set(dir(rjax))
    assert not names - set(dir(gpuarr))
    assert not set(dir(rjax.dtypes)) - set(dir(dtypes))
