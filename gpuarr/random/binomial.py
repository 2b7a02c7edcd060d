"""Binomial and multinomial counts, with JAX's algorithms (which follow TensorFlow's): below
n * p = 10 the inversion method (count geometric waiting times until they pass n), above it
Hormann's BTRS transformed rejection ("The generation of binomial random variates", 1993).
Both loops run over the whole array at once (lax.while_loop), as JAX runs them, so the same key
gives JAX's counts. A multinomial draw is a scan of binomial draws over the categories."""
from __future__ import annotations

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import cumulative as lax_cumulative
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.lax.control_flow import scan, while_loop
from gpuarr.numpy import creation, key_functions, reductions, ufuncs
from gpuarr.numpy.arguments import check_arraylike, promote_dtypes_inexact
from gpuarr.random.distributions import _check_broadcast_shapes, _float_dtype, _uniform
from gpuarr.random.keys import canonicalize_shape, check_key, split_n, split_raw
from gpuarr.random.xla_math import xla_log, xla_log1p

# log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2] for k = 0..9; above, its series.
_STIRLING_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                           0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                           0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                           0.00833056343336287])


def _stirling_approx_tail(k):
    table = key_functions.asarray(_STIRLING_TAIL.astype(k.dtype))
    use_table = k <= 9
    k = lax_special.clamp(lax_shape_ops.full((), 0.0, k.dtype), k, lax_shape_ops.full((), 9.0, k.dtype))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return lax.select(use_table, table[ufuncs.floor(k).astype("int32")], approx)


def _binomial_inversion(data, count, prob, shape, dtype):
    """Count geometric(prob) waiting times until their sum passes `count`."""
    log1minusprob = xla_log1p(-prob)

    def body_fn(carry):
        i, num_geom, geom_sum, key = carry
        sub, key = split_n(key, 2)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform(sub, 0., 1., shape, prob.dtype)
        geom = ufuncs.ceil(xla_log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, key

    def cond_fn(carry):
        i, geom_sum = carry[0], carry[2]
        return reductions.any(geom_sum <= count) & (i < np.iinfo(np.int32).max)

    zeros = lax_shape_ops.full(shape, 0, prob.dtype)
    k = while_loop(cond_fn, body_fn, (np.int32(0), zeros, zeros, data))[1]
    return (k - 1).astype(dtype)


def _btrs(data, count, prob, shape, dtype):
    """Hormann's transformed rejection with squeeze, for count * prob >= 10 (prob <= 1/2)."""
    stddev = ufuncs.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = ufuncs.floor((count + 1) * prob)

    def body_fn(carry):
        i, k_out, accepted, key = carry
        key, sub0, sub1 = split_n(key, 3)
        u = _uniform(sub0, 0., 1., shape, prob.dtype) - 0.5
        v = _uniform(sub1, 0., 1., shape, prob.dtype)
        us = 0.5 - ufuncs.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = ufuncs.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = xla_log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * xla_log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * xla_log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * xla_log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, key

    def cond_fn(carry):
        i, accepted = carry[0], carry[2]
        return reductions.any(~accepted) & (i < np.iinfo(np.int32).max)

    init = (np.int32(0), lax_shape_ops.full(shape, -1, prob.dtype), lax_shape_ops.full(shape, False,
                                                                                       np.bool_), data)
    return while_loop(cond_fn, body_fn, init)[1].astype(dtype)


def _binomial(data, count, prob, shape, dtype):
    shape = _check_broadcast_shapes("binomial", shape, count, prob)
    (prob,) = promote_dtypes_inexact(prob)
    count = key_functions.broadcast_to(lax_conversions.convert_element_type(count, prob.dtype), shape)
    prob = key_functions.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = (count != count) | (count < 0.0)
    count_inf = ufuncs.isinf(count)
    q_is_nan = q != q
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, lax_shape_ops.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = ufuncs.floor(count)  # as NumPy does for float counts
    count_inv = lax.select(use_inversion, count, lax_shape_ops.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax_shape_ops.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax_shape_ops.full_like(q, 0.5), q)
    samples = lax.select(use_inversion, _binomial_inversion(data, count_inv, q, shape, dtype),
                         _btrs(data, count_btrs, q_btrs, shape, dtype))
    # NaN for a NaN or negative p or count, inf for an infinite count; p >= 1/2 counts failures.
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, creation.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, creation.full_like(samples, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats of `dtype` (default float32): the number of successes
    in `n` trials of probability `p` (both broadcast to `shape`)."""
    data, _ = check_key("binomial", key)
    check_arraylike("binomial", n, p)
    dtype = _float_dtype("binomial", dtype)
    with np.errstate(divide="ignore", invalid="ignore"):  # lanes the selects discard
        return _binomial(data, n, p, shape, dtype)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts of `dtype` (default float32; any dtype, as in JAX), categories
    along the last axis of `p`: one binomial draw per category for the trials left over.
    `shape` is the shape of the result (categories last), default `p.shape`; `n` broadcasts
    to shape[:-1]."""
    data, _ = check_key("multinomial", key)
    check_arraylike("multinomial", n, p)
    dtype = dtypes.check_user_dtype(float if dtype is None else dtype, "multinomial")
    n, p = promote_dtypes_inexact(n, p)
    shape = p.shape if shape is None else canonicalize_shape(shape)
    n = key_functions.broadcast_to(n, shape[:-1])
    p = key_functions.moveaxis(key_functions.broadcast_to(p, shape), -1, 0)
    remaining = lax_cumulative.cumsum(p, 0, reverse=True)
    ratios = p / key_functions.where(remaining == 0, 1, remaining)
    keys = split_raw(data, (ratios.shape[0],))

    def step(left, ratio_key):
        ratio, k = ratio_key
        count = _binomial(k, left, ufuncs.clip(ratio, 0, 1), None, np.dtype(left.dtype))
        return left - count, count

    with np.errstate(divide="ignore", invalid="ignore"):  # lanes the selects discard
        _, counts = scan(step, n, (ratios, keys), unroll=unroll)
    return key_functions.moveaxis(counts, 0, -1).astype(dtype)

