"""Samplers built on rejection loops (lax.while_loop): the gamma family (Marsaglia and Tsang's
method, one loop per element under vmap, as JAX runs it) and Poisson (Knuth's method below
lam = 10, Hormann's transformed rejection above), plus what is built on gamma draws: beta,
dirichlet, t, chi-square, F, generalised normal and ball."""
from __future__ import annotations

import math

import numpy as np

from gpuarr.core import get_aval
from gpuarr.custom_derivatives import custom_jvp
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.lax.arguments import check_no_sharding
from gpuarr.lax.control_flow import while_loop
from gpuarr.numpy import creation, key_functions, reductions, ufuncs
from gpuarr.random.distributions import (
    _check_all_safe_to_cast,
    _check_broadcast_shapes,
    _check_shape,
    _concrete_index,
    _const,
    _convert,
    _exponential,
    _float_dtype,
    _fma,
    _int_dtype,
    _normal,
    _normal_real,
    _rademacher,
    _shape_of,
    _to_shape,
    _uniform,
    _via_float64,
)
from gpuarr.random.gamma_grad import random_gamma_grad
from gpuarr.random.keys import canonicalize_shape, check_key, split_n, split_raw
from gpuarr.random.xla_math import xla_log, xla_rsqrt
from gpuarr.vmap_api import vmap

# ---------------------------------------------------------------- gamma family


def _exp(x):
    return _via_float64(lax.exp, x)


def _gamma_one(data, alpha, log_space):
    """One Gamma(alpha) sample by Marsaglia and Tsang's rejection method (JAX's _gamma_one);
    alpha < 1 is boosted to alpha + 1 and corrected by u ** (1 / alpha)."""
    dtype = get_aval(alpha).dtype
    zero, one = _const(dtype, 0), _const(dtype, 1)
    half, third = _const(dtype, 0.5), _const(dtype, 1. / 3.)
    squeeze = _const(dtype, 0.0331)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, third)
    c = lax.mul(third, xla_rsqrt(d))  # XLA's rewrite of third / sqrt(d), and its rsqrt

    def cond_fn(state):
        _, X, V, U = state
        return lax.bitwise_and(
            lax.ge(U, lax.sub(one, lax.mul(squeeze, lax.mul(X, X)))),
            lax.ge(xla_log(U), lax.add(lax.mul(X, half),
                                       lax.mul(d, lax.add(lax.sub(one, V), xla_log(V))))))

    def next_xv(state):
        k, sub = split_n(state[0], 2)
        x = _normal_real(sub, (), dtype)
        return k, x, _fma(x, c, one)  # XLA fuses this multiply-add

    def body_fn(state):
        k, x_key, u_key = split_n(state[0], 3)
        _, x, v = while_loop(lambda s: lax.le(s[2], zero), next_xv,
                             (x_key, lax_shape_ops.full((), 0, dtype), lax_shape_ops.full((), -1, dtype)))
        X = lax.mul(x, x)
        V = lax.mul(lax.mul(v, v), v)
        U = _uniform(u_key, 0., 1., (), dtype)
        return k, X, V, U

    k, sub = split_n(data, 2)
    init = (k, lax_shape_ops.full((), 0, dtype), lax_shape_ops.full((), 1, dtype), lax_shape_ops.full((), 2,
                                                                                                      dtype))
    _, _, V, _ = while_loop(cond_fn, body_fn, init)
    if log_space:
        log_samples = lax.neg(_exponential(sub, (), dtype))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(xla_log(d), xla_log(V)), log_boost)
    samples = lax.sub(one, _uniform(sub, 0., 1., (), dtype))
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _gamma_samples(log_space, data, a):
    """Each element of `a` gets its own subkey (split(key, a.size)) and its own rejection loop,
    vectorised with vmap as JAX does on every backend."""
    shape = _shape_of(a)
    n = math.prod(shape)
    if n == 0:
        return creation.zeros(shape, get_aval(a).dtype)
    keys = split_raw(data, (n,))
    samples = vmap(lambda k, x: _gamma_one(k, x, log_space))(keys, lax_shape_ops.reshape(a, (n,)))
    return lax_shape_ops.reshape(samples, shape)


# The samples' derivative in `a` is the implicit reparameterisation gradient, as JAX's
# random_gamma_p defines it (see gpuarr/random/gamma_grad.py).
gamma_with_grad = custom_jvp(_gamma_samples, nondiff_argnums=(0,))


@gamma_with_grad.defjvp
def _gamma_jvp(log_space, primals, tangents):
    data, a = primals
    _, a_dot = tangents
    out = gamma_with_grad(log_space, data, a)
    a_nd = lax.stop_gradient(a)
    if log_space:
        # d log x / da = (dx/da) / x, with x = exp(log x) kept above zero.
        x = lax.exp(lax.stop_gradient(out))
        tiny = np.finfo(x.dtype).tiny
        x = lax.max(x, lax_shape_ops.full_like(x, tiny))
        grad = lax.div(random_gamma_grad(a_nd, x), x)
    else:
        grad = random_gamma_grad(a_nd, lax.stop_gradient(out))
    return out, lax.mul(a_dot, grad)


def _gamma(data, a, shape, dtype, log_space=False):
    if shape is None:
        shape = _shape_of(a)
    else:
        _check_shape("gamma", shape, _shape_of(a))
    a = _to_shape(_convert(a, dtype), shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # a = 0 gives 0 (or -inf), silently
        return gamma_with_grad(log_space, data, a)


def _gamma_args(name, key, dtype, shape):
    data, _ = check_key(name, key)
    dtype = _float_dtype("gamma", dtype)  # JAX's loggamma message also names gamma
    if shape is not None:
        shape = canonicalize_shape(shape)
    return data, dtype, shape


def gamma(key, a, shape=None, dtype=None, *, out_sharding=None):
    """Gamma(a, 1) values (shape `a.shape` unless given), by Marsaglia and Tsang's method."""
    check_no_sharding("random.gamma", out_sharding)
    data, dtype, shape = _gamma_args("gamma", key, dtype, shape)
    return _gamma(data, a, shape, dtype)


def loggamma(key, a, shape=None, dtype=None, *, out_sharding=None):
    """log of Gamma(a, 1) values, computed in log space (accurate for small `a`)."""
    check_no_sharding("random.loggamma", out_sharding)
    data, dtype, shape = _gamma_args("loggamma", key, dtype, shape)
    return _gamma(data, a, shape, dtype, log_space=True)


def beta(key, a, b, shape=None, dtype=None, *, out_sharding=None):
    """Beta(a, b) values as G_a / (G_a + G_b) of two log-space gamma draws."""
    check_no_sharding("random.beta", out_sharding)
    data, _ = check_key("beta", key)
    dtype = _float_dtype("beta", dtype)
    _check_all_safe_to_cast("beta", dtype, a, b)
    shape = _check_broadcast_shapes("beta", shape, a, b)
    a, b = _to_shape(_convert(a, dtype), shape), _to_shape(_convert(b, dtype), shape)
    key_a, key_b = split_n(data, 2)
    log_ga = _gamma(key_a, a, shape, dtype, log_space=True)
    log_gb = _gamma(key_b, b, shape, dtype, log_space=True)
    log_max = lax.max(log_ga, log_gb)
    ga, gb = _exp(log_ga - log_max), _exp(log_gb - log_max)
    return ga / (ga + gb)


def dirichlet(key, alpha, shape=None, dtype=None, *, out_sharding=None):
    """Dirichlet(alpha) vectors along the last axis: the softmax of log-space gamma draws."""
    check_no_sharding("random.dirichlet", out_sharding)
    data, _ = check_key("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    if shape is not None:
        shape = canonicalize_shape(shape)
    alpha_shape = _shape_of(alpha)
    if not len(alpha_shape) >= 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(alpha_shape)}")
    if shape is None:
        shape = alpha_shape[:-1]
    else:
        _check_shape("dirichlet", shape, alpha_shape[:-1])
    alpha = _convert(alpha, dtype)
    log_g = _gamma(data, alpha, shape + alpha_shape[-1:], dtype, log_space=True)
    # The softmax, as jax.nn.softmax computes it (an empty last axis gives an empty result).
    log_max = reductions.max(log_g, axis=-1, keepdims=True, initial=-np.inf)
    unnormalized = _exp(log_g - lax.stop_gradient(log_max))
    return unnormalized / reductions.sum(unnormalized, axis=-1, keepdims=True)


def t(key, df, shape=None, dtype=None, *, out_sharding=None):
    """Student's t values with `df` degrees of freedom: N * sqrt(df / (2 G)) with G ~ Gamma(df/2)."""
    check_no_sharding("random.t", out_sharding)
    data, _ = check_key("t", key)
    dtype = _float_dtype("t", dtype)
    shape = _check_broadcast_shapes("t", shape, df)
    _check_all_safe_to_cast("t", dtype, df)
    df = _convert(df, dtype)
    key_n, key_g = split_n(data, 2)
    n = _normal(key_n, shape, dtype)
    half_df = lax.div(df, _const(dtype, 2))
    g = _gamma(key_g, half_df, shape, dtype)
    return n * ufuncs.sqrt(half_df / g)


def chisquare(key, df, shape=None, dtype=None, *, out_sharding=None):
    """Chi-square values with `df` degrees of freedom: 2 * Gamma(df / 2)."""
    check_no_sharding("random.chisquare", out_sharding)
    data, _ = check_key("chisquare", key)
    dtype = _float_dtype("chisquare", dtype)
    shape = _check_broadcast_shapes("chisquare", shape, df)
    _check_all_safe_to_cast("chisquare", dtype, df)
    half_df = lax.div(_convert(df, dtype), _const(dtype, 2))
    log_g = _gamma(data, half_df, shape, dtype, log_space=True)
    return lax.mul(_exp(log_g), _const(dtype, 2))


# ---------------------------------------------------------------- poisson


def _poisson_knuth(data, lam, shape, dtype, max_iters):

    def body_fn(carry):
        i, k, rng, log_prod = carry
        rng, sub = split_n(rng, 2)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, _const(dtype, 1)), k)
        u = _uniform(sub, 0., 1., shape, np.dtype(np.float32))
        return lax.add(i, np.int32(1)), k, rng, lax.add(log_prod, xla_log(u))

    def cond_fn(carry):
        i, log_prod = carry[0], carry[3]
        return lax.bitwise_and(reductions.any(lax.gt(log_prod, lax.neg(lam))), lax.lt(i, max_iters))

    init = (np.int32(0), lax_shape_ops.full(shape, 0, dtype), data, lax_shape_ops.full(shape, 0, np.float32))
    k = while_loop(cond_fn, body_fn, init)[1]
    return lax.sub(k, _const(dtype, 1))


def _poisson_rejection(data, lam, shape, dtype, max_iters):
    log_lam = xla_log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body_fn(carry):
        i, k_out, accepted, rng = carry
        rng, sub0, sub1 = split_n(rng, 3)
        u = _uniform(sub0, 0., 1., shape, lam.dtype) - 0.5
        v = _uniform(sub1, 0., 1., shape, lam.dtype)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = xla_log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t_ = -lam + k * log_lam - lax_special.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t_))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, rng

    def cond_fn(carry):
        i, _, accepted, _ = carry
        return lax.bitwise_and(reductions.any(lax.bitwise_not(accepted)), lax.lt(i, max_iters))

    init = (np.int32(0), lax_shape_ops.full(shape, -1, lam.dtype), lax_shape_ops.full(shape, False,
                                                                                      np.bool_), data)
    k = while_loop(cond_fn, body_fn, init)[1]
    return lax_conversions.convert_element_type(k, dtype)


def poisson(key, lam, shape=None, dtype=None, *, out_sharding=None):
    """Poisson(lam) counts of integer `dtype` (default int32): Knuth's method for lam < 10,
    Hormann's transformed rejection above, as in JAX (and NumPy, TensorFlow)."""
    check_no_sharding("random.poisson", out_sharding)
    data, _ = check_key("poisson", key)
    dtype = _int_dtype("poisson", dtype)
    shape = canonicalize_shape(shape) if shape is not None else _shape_of(lam)
    lam = lax_conversions.convert_element_type(key_functions.broadcast_to(lam, shape), np.float32)
    use_knuth = ufuncs.isnan(lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, lax_shape_ops.full_like(lam, 0.0))
    lam_rejection = lax.select(use_knuth, lax_shape_ops.full_like(lam, 1e5), lam)
    max_iters = _const(np.int32, np.iinfo(np.int32).max)
    result = lax.select(use_knuth, _poisson_knuth(data, lam_knuth, shape, dtype, max_iters),
                        _poisson_rejection(data, lam_rejection, shape, dtype, max_iters))
    return lax.select(lam == 0, key_functions.zeros_like(result), result)


def ball(key, d, p=2, shape=(), dtype=None, *, out_sharding=None):
    """Points uniform in the unit p-norm ball of dimension `d` (generalised normal direction,
    radius u ** (1/d))."""
    check_no_sharding("random.ball", out_sharding)
    data, _ = check_key("ball", key)
    dtype = _float_dtype("gamma", dtype)  # JAX's message names gamma, which checks it
    shape = canonicalize_shape(shape)
    d = _concrete_index(d, "The error occurred in jax.random.ball()")
    p = key_functions.asarray(p)  # a weakly typed array, as JAX's jitted sampler sees a Python p
    k1, k2 = split_n(data, 2)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = _exponential(k2, shape, dtype)
    return g / (((ufuncs.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


def _generalized_normal(data, p, shape, dtype):
    k1, k2 = split_n(data, 2)
    # JAX's sampler is jitted: a Python p is a weakly typed array, so 1 / p rounds in its dtype.
    inv_p = 1 / key_functions.asarray(p)
    g = _gamma(k1, inv_p, shape, dtype)
    r = _rademacher(k2, shape, dtype)
    return r * g ** inv_p


def generalized_normal(key, p, shape=(), dtype=None, *, out_sharding=None):
    """Generalised normal values with density proportional to exp(-|x|**p)."""
    check_no_sharding("random.generalized_normal", out_sharding)
    data, _ = check_key("generalized_normal", key)
    dtype = _float_dtype("gamma", dtype)  # JAX's message names gamma, which checks it
    return _generalized_normal(data, p, canonicalize_shape(shape), dtype)


def f(key, dfnum, dfden, shape=None, dtype=None, *, out_sharding=None):
    """F(dfnum, dfden) values: the ratio of two scaled chi-square draws."""
    check_no_sharding("random.f", out_sharding)
    data, _ = check_key("f", key)
    dtype = _float_dtype("f", dtype)
    shape = _check_broadcast_shapes("f", shape, dfnum, dfden)
    _check_all_safe_to_cast("f", dtype, dfnum, dfden)
    dfnum, dfden = _convert(dfnum, dtype), _convert(dfden, dtype)
    key_dfd, key_dfn = split_n(data, 2)

    def chi2(k, df):
        half = lax.div(df, _const(dtype, 2))
        return lax.mul(_exp(_gamma(k, half, shape, dtype, log_space=True)), _const(dtype, 2))

    return lax.div(lax.div(chi2(key_dfn, dfnum), dfnum), lax.div(chi2(key_dfd, dfden), dfden))
