"""gpuarr.nn and gpuarr.scipy.special: values, shapes and dtypes against NumPy formulas (in
float64) and against JAX, gradients at the kinks, jit/vmap, and the initializers."""
import math

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import grad, jit, nn, vmap
from gpuarr.scipy import special

X = np.array([-7., -2., -0.5, 0., 0.5, 2., 6., 7.], np.float32)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(x, 0)


def _erf(x):
    return np.vectorize(math.erf)(x)


# name -> (gpuarr function, float64 NumPy reference)
REFERENCE = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (nn.sigmoid, _sig),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -_softplus(-x)),
    "softplus": (nn.softplus, _softplus),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1)),
    "silu": (nn.silu, lambda x: x * _sig(x)),
    "swish": (nn.swish, lambda x: x * _sig(x)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    "celu": (lambda x: nn.celu(x, 2.0),
             lambda x: np.maximum(x, 0) + 2.0 * np.expm1(np.minimum(x, 0) / 2.0)),
    "selu": (nn.selu, lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0)))),
    "gelu": (nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False),
                   lambda x: x * (1 + _erf(x / np.sqrt(2))) / 2),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x ** 2 + 4)) / 2),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hard_swish": (nn.hard_swish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "softmax": (nn.softmax, lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum()),
    "log_softmax": (nn.log_softmax, lambda x: x - x.max() - np.log(np.exp(x - x.max()).sum())),
    "logsumexp": (nn.logsumexp, lambda x: np.log(np.exp(x).sum())),
    "standardize": (nn.standardize, lambda x: (x - x.mean()) / np.sqrt(x.var() + 1e-5)),
    "expit": (special.expit, _sig),
    "erf": (special.erf, _erf),
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_values_shapes_dtypes(name):
    fun, ref = REFERENCE[name]
    out = fun(X)
    want = ref(X.astype(np.float64))
    assert out.shape == want.shape and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(np.asarray(jit(fun)(X)), want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_matches_jax_values_and_gradients(name):
    jax = pytest.importorskip("jax")
    jax_fun = {"gelu_exact": lambda x: jax.nn.gelu(x, approximate=False),
               "celu": lambda x: jax.nn.celu(x, 2.0),
               "expit": jax.scipy.special.expit, "erf": jax.scipy.special.erf}.get(
        name, getattr(jax.nn, name, None))
    fun, _ = REFERENCE[name]
    w = np.linspace(-1, 1, X.size).astype(np.float32)
    np.testing.assert_allclose(np.asarray(fun(X)), np.asarray(jax_fun(X)), rtol=1e-6, atol=1e-6)
    g = grad(lambda x: jnp.sum(fun(x) * w))(X)
    jg = jax.grad(lambda x: (jax_fun(x) * w).sum())(X)
    assert g.dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-5, atol=1e-6)


def test_gradients_at_kinks_follow_jax():
    assert float(grad(nn.relu)(0.)) == 0.0
    assert float(grad(nn.relu6)(0.)) == 0.0
    assert float(grad(nn.relu6)(6.)) == 0.0
    assert float(grad(nn.leaky_relu)(0.)) == 1.0
    assert float(grad(nn.hard_tanh)(1.)) == 1.0
    assert float(grad(nn.elu)(0.)) == 1.0
    # relu is a custom_jvp function, as in JAX
    assert "custom_jvp_call" in str(gpuarr.make_jaxpr(nn.relu)(1.))


def test_vmap_matches_loop():
    xs = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    for fun in (nn.softmax, nn.log_softmax, nn.gelu, nn.relu, nn.standardize):
        out = vmap(fun)(xs)
        loop = np.stack([np.asarray(fun(x)) for x in xs])
        np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-6, atol=1e-6)
        gout = vmap(grad(lambda x: jnp.sum(fun(x) ** 2)))(xs)
        gloop = np.stack([np.asarray(grad(lambda x: jnp.sum(fun(x) ** 2))(x)) for x in xs])
        np.testing.assert_allclose(np.asarray(gout), gloop, rtol=1e-5, atol=1e-6)


def test_softmax_axes_and_where():
    x = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)
    for axis in (0, 1, -1, (0, 2)):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        want = e / e.sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(np.asarray(nn.softmax(x, axis=axis)), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(nn.log_softmax(x, axis=axis)), np.log(want),
                                   rtol=1e-5, atol=1e-6)
    mask = np.array([True, False, True, True])
    out = np.asarray(nn.softmax(x[0, 0], where=mask))
    e = np.exp(x[0, 0][mask] - x[0, 0][mask].max())
    np.testing.assert_allclose(out[mask], e / e.sum(), rtol=1e-6)
    assert out[1] == 0.0


def test_logsumexp_options():
    x = np.random.RandomState(2).randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(np.asarray(special.logsumexp(x, axis=1)),
                               np.log(np.exp(x.astype(np.float64)).sum(1)), rtol=1e-6)
    out = special.logsumexp(x, axis=0, keepdims=True)
    assert out.shape == (1, 4)
    b = np.array([1., -1., 2., 0.5], np.float32)
    val, sign = special.logsumexp(x, axis=1, b=b, return_sign=True)
    s = (np.exp(x.astype(np.float64)) * b).sum(1)
    np.testing.assert_allclose(np.asarray(val), np.log(np.abs(s)), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(sign), np.sign(s))
    assert float(special.logsumexp(np.array([-np.inf, -np.inf], np.float32))) == -np.inf
    np.testing.assert_allclose(float(special.logit(0.25)), np.log(1 / 3), rtol=1e-6)


def test_one_hot_glu_standardize():
    oh = nn.one_hot(jnp.array([0, 2, 5, -1]), 3)
    assert oh.dtype == np.float32 and oh.shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(oh), [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    oh0 = nn.one_hot(jnp.array([1, 0]), 2, axis=0, dtype=jnp.int32)
    assert oh0.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(oh0), [[0, 1], [1, 0]])
    x = np.arange(8., dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(np.asarray(nn.glu(x)), x[:, :2] * _sig(x[:, 2:]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.glu(x, axis=0)), x[:1] * _sig(x[1:]), rtol=1e-6)
    s = nn.standardize(x, axis=1)
    np.testing.assert_allclose(np.asarray(s).mean(1), 0, atol=1e-6)


# ---------------------------------------------------------------- initializers


def test_constant_initializers():
    from gpuarr.nn import initializers as init
    z = init.zeros(None, (2, 3))
    assert z.shape == (2, 3) and z.dtype == np.float32 and not np.asarray(z).any()
    o = init.ones(None, (4,), jnp.int32)
    assert o.dtype == np.int32 and np.asarray(o).tolist() == [1, 1, 1, 1]
    c = init.constant(2.5)(None, (2,))
    assert np.asarray(c).tolist() == [2.5, 2.5]
    with pytest.raises(ValueError, match="at least 2D"):
        init.glorot_normal()(None, (3,))
    with pytest.raises(ValueError, match="invalid mode"):
        init.variance_scaling(1.0, "fan_bad", "normal")(None, (2, 2))


RANDOM_INITS = ["uniform", "normal", "truncated_normal", "glorot_uniform", "glorot_normal",
                "he_uniform", "he_normal", "lecun_uniform", "lecun_normal", "xavier_uniform",
                "kaiming_normal", "orthogonal"]


@pytest.mark.parametrize("name", RANDOM_INITS)
def test_random_initializers_match_jax(name):
    random = pytest.importorskip("gpuarr.random")
    jax = pytest.importorskip("jax")
    from gpuarr.nn import initializers as init
    if name == "orthogonal":
        pytest.importorskip("gpuarr.numpy.linalg")
    shape = (64, 32)
    out = getattr(init, name)()(random.PRNGKey(0), shape)
    ref = getattr(jax.nn.initializers, name)()(jax.random.PRNGKey(0), shape)
    assert out.shape == shape and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)


def test_delta_orthogonal_and_variance_scaling_axes_match_jax():
    random = pytest.importorskip("gpuarr.random")
    pytest.importorskip("gpuarr.numpy.linalg")
    jax = pytest.importorskip("jax")
    from gpuarr.nn import initializers as init
    out = init.delta_orthogonal()(random.PRNGKey(1), (3, 3, 4, 4))
    ref = jax.nn.initializers.delta_orthogonal()(jax.random.PRNGKey(1), (3, 3, 4, 4))
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)
    vs = init.variance_scaling(2.0, "fan_out", "normal", in_axis=0, out_axis=(1, 2))
    jvs = jax.nn.initializers.variance_scaling(2.0, "fan_out", "normal", in_axis=0,
                                               out_axis=(1, 2))
    np.testing.assert_allclose(np.asarray(vs(random.PRNGKey(2), (3, 4, 5))),
                               np.asarray(jvs(jax.random.PRNGKey(2), (3, 4, 5))),
                               rtol=1e-5, atol=1e-6)
