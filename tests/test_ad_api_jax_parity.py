"""Autodiff, gpuarr.nn and initializers where they used to differ from JAX: error classes
and messages, Jacobian dtypes, weak types, derivatives at kinks and ties. Oracles are NumPy in
float64, finite differences, or values JAX gives (noted where used)."""
import math

import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import nn

X3 = np.array([1.0, -2.0, 3.0], np.float32)
Z2 = np.array([1 + 2j, 3 - 1j], np.complex64)


def check(x, expected, dtype, weak=False, rtol=1e-6, atol=1e-6):
    assert x.dtype == np.dtype(dtype), (x.dtype, dtype)
    assert x.shape == np.shape(expected)
    assert bool(getattr(x, "weak_type", False)) == weak
    np.testing.assert_allclose(np.asarray(x, np.float64 if x.dtype.kind != "c" else None),
                               expected, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- grad, jvp, vjp checks


def test_grad_nonscalar_and_tuple_messages():
    with pytest.raises(TypeError, match=r"^Gradient only defined for scalar-output functions\. "
                                        r"Output had shape: \(3,\)\.$"):
        jax.grad(lambda x: x * 2)(X3)
    with pytest.raises(TypeError, match=r"Output was \("):
        jax.grad(lambda x: (x, x))(1.0)


def test_grad_complex_output_needs_holomorphic():
    with pytest.raises(TypeError, match="requires real-valued outputs .* but got complex64. "
                                        "For holomorphic differentiation, pass holomorphic=True"):
        jax.grad(lambda x: x * 1j)(2.0)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with "
                                        "complex dtype, but got float32"):
        jax.grad(lambda x: x * x, holomorphic=True)(2.0)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires outputs with "
                                        "complex dtype, but got float32"):
        jax.grad(lambda z: jnp.abs(z), holomorphic=True)(Z2[0])
    g = jax.grad(lambda z: z * z, holomorphic=True)(Z2[0])
    check(g, 2 * Z2[0], np.complex64)


def test_jvp_tangent_dtype_must_match():
    with pytest.raises(TypeError, match=r"tangent dtype must be float0\.Got primal dtype int32 "
                                        r"and so expected tangent dtype \[\('float0', 'V'\)\], "
                                        "but got tangent dtype int32 instead"):
        jax.jvp(lambda n: n * 2, (3,), (1,))
    with pytest.raises(TypeError, match="expected tangent dtype float16"):
        jax.jvp(lambda x: x * 2, (np.float16(1),), (np.float32(1),))


def test_vjp_cotangent_tree_message():
    _, f_vjp = jax.vjp(lambda x: x * 2, X3)
    with pytest.raises(ValueError, match="^unexpected tree structure"):
        f_vjp((X3,))


def test_linearize_keeps_weak_type():
    # JAX: f_jvp(1.0, 2.0) -> Array(10., dtype=float32, weak_type=True)
    _, f_jvp = jax.linearize(lambda x, y: x * y, 3.0, 4.0)
    check(f_jvp(1.0, 2.0), 10.0, np.float32, weak=True)


# ---------------------------------------------------------------- Jacobians


@pytest.mark.parametrize("fn,dfdx", [
    (lambda x: x ** 3, lambda x: 3 * x ** 2),
    (lambda x: jax.lax.integer_pow(x, 2), lambda x: 2 * x),
    (jnp.sqrt, lambda x: 0.5 / math.sqrt(x)),
    (jax.lax.rsqrt, lambda x: -0.5 * x ** -1.5),
    (jnp.cbrt, lambda x: x ** (-2 / 3) / 3),
])
def test_tangents_of_weak_inputs_stay_weak(fn, dfdx):
    """A rule's constants (the 3 in 3 x^2) do not strengthen a weak tangent (JAX's values)."""
    primal, tangent = jax.jvp(fn, (2.0,), (1.0,))
    assert primal.weak_type
    check(tangent, dfdx(2.0), np.float32, weak=True, rtol=1e-5)
    check(jax.grad(fn)(2.0), dfdx(2.0), np.float32, weak=True, rtol=1e-5)


def test_jacfwd_input_checks():
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs .* but got int32"):
        jax.jacfwd(lambda x: x * 2)(np.arange(3))
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs .* complex64"):
        jax.jacfwd(lambda z: z * z)(Z2)
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires outputs"):
        jax.jacfwd(lambda z: jnp.abs(z), holomorphic=True)(Z2)
    check(jax.jacfwd(lambda z: z * z, holomorphic=True)(Z2), np.diag(2 * Z2), np.complex64)


def test_jacrev_output_checks():
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs .* complex64"):
        jax.jacrev(lambda x: x * 1j)(X3)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs .* int32"):
        jax.jacrev(lambda x: (x, jnp.int32(1)))(X3)
    with pytest.raises(TypeError, match="jacrev with holomorphic=True requires outputs"):
        jax.jacrev(lambda z: jnp.abs(z), holomorphic=True)(Z2)


def test_jacrev_allow_int_blocks_have_the_input_dtype():
    # JAX gives int32 zeros (the input's dtype) for the integer argument's block.
    jx, jn = jax.jacrev(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(X3, np.arange(3))
    check(jx, np.diag([0.0, 1.0, 2.0]), np.float32)
    check(jn, np.zeros((3, 3)), np.int32)


def test_jacobian_blocks_take_example_dtype_and_weak_type():
    # jacfwd blocks follow the output leaf, jacrev blocks the input leaf (both weak here).
    check(jax.jacfwd(lambda x: x ** 3)(2.0), 12.0, np.float32, weak=True)
    check(jax.jacrev(lambda x: x ** 3)(2.0), 12.0, np.float32, weak=True)
    check(jax.jacfwd(lambda v: v.astype(jnp.float16))(X3), np.eye(3), np.float16)
    check(jax.jacrev(lambda v: v.astype(jnp.float16))(X3), np.eye(3), np.float32)


# ---------------------------------------------------------------- kinks and ties


def test_abs_derivative_at_zero_is_one():
    x = np.array([0.0, -0.0, 1.0, -2.0], np.float32)
    expected = [1.0, 1.0, 1.0, -1.0]  # JAX: select(x >= 0, g, -g)
    check(jax.vmap(jax.grad(jnp.abs))(x), expected, np.float32)
    check(jax.jit(jax.vmap(jax.grad(jnp.abs)))(x), expected, np.float32)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_weigh_tangents_as_jax(name):
    # JAX's rule: x's weight is (x == out) / (1 + (y == out)): ties split evenly, and a NaN
    # result (NaN == NaN is False) passes no tangent to either operand.
    vals = np.array([np.nan, -np.inf, -1.0, 0.0, -0.0, 1.0, np.inf], np.float32)
    x, y = (a.ravel() for a in np.meshgrid(vals, vals))
    out = getattr(np, f"{name}imum")(x, y)
    gx, gy = jax.vmap(jax.grad(getattr(jax.lax, name), (0, 1)))(x, y)
    check(gx, (x == out) / (1.0 + (y == out)), np.float32)
    check(gy, (y == out) / (1.0 + (x == out)), np.float32)
    clip_grad = jax.jit(jax.vmap(jax.grad(lambda v: jnp.clip(v, -1.0, 1.0))))(vals)
    check(clip_grad, [0, 0, 0.5, 1, 1, 0.5, 0], np.float32)


def test_logaddexp_tie_and_softplus_at_zero():
    x = np.array([0.0, 1.0, 5.0], np.float32)
    y = np.array([0.0, -2.0, 5.0], np.float32)
    gx, gy = jax.vmap(jax.grad(jnp.logaddexp, argnums=(0, 1)))(x, y)
    sx = 1 / (1 + np.exp(y.astype(np.float64) - x))
    check(gx, sx, np.float32)
    check(gy, 1 - sx, np.float32)
    check(jnp.logaddexp(x, y), np.logaddexp(x.astype(np.float64), y), np.float32)
    check(jax.grad(nn.softplus)(0.0), 0.5, np.float32, weak=True)


@pytest.mark.parametrize("base", [math.e, 2.0])
def test_logaddexp_second_derivatives_follow_its_custom_rule(base):
    # JAX's custom JVP weights each tangent by base ** (x - out): the second derivative at a
    # tie is s (1 - s) log(base) with s = 1/2 (differentiating max and abs would give 0).
    fn = jnp.logaddexp if base == math.e else jnp.logaddexp2
    x = np.array([0.0, 1.0, -3.0, 5.0], np.float32)
    y = np.array([0.0, -2.0, 2.0, np.inf], np.float32)
    s = 1 / (1 + base ** (y.astype(np.float64) - x))
    # With y = inf the rule reads the infinite output as 0, so the weight of x is base ** x.
    want = np.where(np.isinf(y), base ** x.astype(np.float64), s * (1 - s)) * np.log(base)
    check(jax.vmap(jax.grad(jax.grad(fn)))(x, y), want, np.float32)
    check(jax.jit(jax.vmap(jax.hessian(fn)))(x, y), want, np.float32)


def test_relu_tangent_keeps_weak_type():
    _, t = jax.jvp(nn.relu, (0.0,), (1.0,))
    check(t, 0.0, np.float32, weak=True)
    check(jax.lax.full_like(1.0, 0), 0.0, np.float32, weak=True)


def test_integer_array_with_python_float_is_weak():
    check(jnp.arange(3) * 2.0, [0.0, 2.0, 4.0], np.float32, weak=True)
    check(jnp.multiply(np.arange(3), 2.0), [0.0, 2.0, 4.0], np.float32, weak=True)
    check(jnp.arange(3) + np.float32(2), [2.0, 3.0, 4.0], np.float32)


# ---------------------------------------------------------------- gpuarr.nn

XS = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 6.0], np.float32)


def _fd(f, x, eps=1e-4):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def _softplus(x):
    return np.logaddexp(x, 0.0)


NEW_FUNCTIONS = {
    "identity": lambda x: x,
    "tanh": np.tanh,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "sparse_plus": lambda x: np.where(x <= -1, 0.0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: 0.5 * np.clip(x + 1, 0, 2),
}


@pytest.mark.parametrize("name", sorted(NEW_FUNCTIONS))
def test_new_activations_values_and_grads(name):
    ref = NEW_FUNCTIONS[name]
    x64 = XS.astype(np.float64)
    check(getattr(nn, name)(XS), ref(x64), np.float32)
    grads = jax.vmap(jax.grad(getattr(nn, name)))(XS)
    smooth = np.abs(np.abs(x64) - 1) > 1e-3  # the sparse_* kinks are at +-1
    np.testing.assert_allclose(np.asarray(grads)[smooth], _fd(ref, x64)[smooth], rtol=1e-4,
                               atol=1e-5)


def test_log1mexp_and_logmeanexp():
    x = np.array([0.1, 0.5, 0.69, 0.7, 2.0, 10.0], np.float32)
    x64 = x.astype(np.float64)
    check(nn.log1mexp(x), np.log(-np.expm1(-x64)), np.float32, rtol=1e-5)
    check(jax.vmap(jax.grad(nn.log1mexp))(x), 1 / np.expm1(x64), np.float32, rtol=1e-5)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    ref = np.log(np.mean(np.exp(a.astype(np.float64)), axis=1))
    check(nn.logmeanexp(a, axis=1), ref, np.float32, rtol=1e-6)
    where = np.array([[True, False, True], [True, True, True]])
    ref_w = [np.log((np.exp(0.0) + np.exp(2.0)) / 2), ref[1]]
    check(nn.logmeanexp(a, axis=1, where=where), ref_w, np.float32, rtol=1e-6)


def test_gelu_integer_input_and_exact_form():
    n = np.arange(-2, 4)
    expected = [0.5 * k * math.erfc(-k / math.sqrt(2)) for k in n]
    check(nn.gelu(n, approximate=False), expected, np.float32)
    x = np.float64(-5.0)  # erfc keeps precision where 1 + erf(x / sqrt 2) cancels
    check(nn.gelu(np.float32(x), approximate=False), 0.5 * x * math.erfc(-x / math.sqrt(2)),
          np.float32, rtol=1e-5, atol=0)
    c = math.sqrt(2 / math.pi)
    approx = [0.5 * k * (1 + math.tanh(c * (k + 0.044715 * k ** 3))) for k in n]
    check(nn.gelu(n), approx, np.float32)


def test_sigmoid_rejects_integers():
    with pytest.raises(TypeError):
        nn.sigmoid(np.arange(3))
    with pytest.raises(TypeError):
        nn.silu(np.arange(3))


def test_softmax_axis_none_and_signature():
    a = np.array([[1.0, 2.0, 3.0], [4.0, -1.0, 0.0]], np.float32)
    e = np.exp(a.astype(np.float64) - 4)
    check(nn.softmax(a, axis=None), e / e.sum(), np.float32)
    check(nn.log_softmax(a, axis=None), np.log(e / e.sum()), np.float32, rtol=1e-5)
    with pytest.raises(TypeError):
        nn.softmax(a, initial=0.0)  # not a jax.nn.softmax argument
    # integer input: the result is float32 and not weakly typed, as in JAX
    s = nn.softmax(np.arange(3))
    check(s, np.exp(np.arange(3)) / np.exp(np.arange(3)).sum(), np.float32)


def test_standardize_scalars_clip_and_stable():
    a = np.array([[1.0, 2.0, 3.0], [4.0, -1.0, 0.0]], np.float32)
    check(nn.standardize(a, mean=1.0, variance=2.0), (a - 1.0) / np.sqrt(2.0 + 1e-5), np.float32,
          rtol=1e-5)
    # E[x^2] - E[x]^2 rounds to -0.5 here; clipped at 0 it gives finite values, not NaN.
    close = np.array([[2698.598, 2698.5974, 2698.597, 2698.5977, 2698.5986, 2698.5984,
                       2698.5967]], np.float32)
    assert np.all(np.isfinite(np.asarray(nn.standardize(close, epsilon=1e-6))))
    a64 = a.astype(np.float64)
    ref = (a64 - a64.mean(1, keepdims=True)) / np.sqrt(a64.var(1, keepdims=True) + 1e-5)
    check(nn.standardize(a, algorithm="stable"), ref, np.float32, rtol=1e-5)
    with pytest.raises(ValueError, match="Unknown algorithm"):
        nn.standardize(a, algorithm="slow")


# ---------------------------------------------------------------- initializers

init = nn.initializers


def test_variance_scaling_fan_geo_avg():
    w = np.asarray(init.variance_scaling(2.0, "fan_geo_avg", "normal")(
        jax.random.PRNGKey(0), (400, 100)), np.float64)
    assert w.dtype == np.float64 and w.shape == (400, 100)
    np.testing.assert_allclose(w.var(), 2.0 / math.sqrt(400 * 100), rtol=0.05)


@pytest.mark.parametrize("factory", [init.glorot_uniform, init.he_normal, init.lecun_uniform])
def test_variance_scaling_complex(factory):
    w = factory()(jax.random.PRNGKey(1), (300, 200), jnp.complex64)
    assert w.dtype == np.complex64 and w.shape == (300, 200)
    v = np.asarray(w)
    scale, fan = {init.glorot_uniform: (1.0, 250), init.he_normal: (2.0, 300),
                  init.lecun_uniform: (1.0, 300)}[factory]
    np.testing.assert_allclose(np.mean(np.abs(v) ** 2), scale / fan, rtol=0.05)
    assert abs(v.mean()) < 0.01


def test_variance_scaling_small_shapes():
    w = init.variance_scaling(1.0, "fan_in", "uniform", in_axis=0, out_axis=0)(
        jax.random.PRNGKey(0), (4,))
    # fan_in = 4 * (4 / 4 / 4) = 1; JAX gives these values for PRNGKey(0).
    check(w, [1.550764, 1.6578493, -0.5809593, -0.10853563], np.float32, rtol=1e-5)
    with pytest.raises(ValueError, match="with default in_axis. Must be at least 2D or specify "
                                         "in_axis explicitly"):
        init.lecun_normal()(jax.random.PRNGKey(0), (3,))
