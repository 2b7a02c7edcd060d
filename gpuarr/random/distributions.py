"""Samplers with JAX's signatures, dtypes and algorithms (jax/_src/random.py), so that the same
key gives the same numbers. Everything is written with lax / gpuarr.numpy operations, so every
sampler traces under jit, vmap and grad, and runs eagerly on the NumPy backend.

Each public sampler checks its arguments (key, shape, dtype) and calls a private `_name` that
takes raw key data (uint32[2]) and does the arithmetic. Samplers built on rejection loops
(gamma and what uses it, poisson) are in gpuarr/random/rejection.py.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Tracer, get_aval
from gpuarr.errors import ConcretizationTypeError
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.lax import special as lax_special
from gpuarr.lax.arguments import check_no_sharding
from gpuarr.lax.sorting import sort_key_val, top_k
from gpuarr.numpy import creation, key_functions, reductions, selection, ufuncs
from gpuarr.numpy import linalg as jnp_linalg
from gpuarr.numpy.arguments import check_arraylike, promote_dtypes_inexact
from gpuarr.numpy.einsum import einsum
from gpuarr.prng import UINT_DTYPES
from gpuarr.random.keys import (
    canonicalize_shape,
    check_key,
    random_bits,
    split_n,
)
from gpuarr.random.xla_math import erf_inv_giles, xla_fma, xla_log, xla_log1p

# ---------------------------------------------------------------- argument helpers


def _float_dtype(name: str, dtype, kinds=("float",)):
    # No function name in the truncation warning: JAX's samplers give none.
    dt = dtypes.check_user_dtype(float if dtype is None else dtype)
    ok = dtypes.is_float(dt) or ("complex" in kinds and dtypes.is_complex(dt))
    if not ok:
        what = "a float or complex" if "complex" in kinds else "a float"
        raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dt}")
    return dt


def _int_dtype(name: str, dtype):
    dt = dtypes.check_user_dtype(int if dtype is None else dtype)
    if not dtypes.is_int(dt):
        raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dt}")
    return dt


def _shape_of(x):
    return tuple(x.shape) if isinstance(x, Tracer) or hasattr(x, "shape") else np.shape(x)


def _broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}") from None


def _check_shape(name: str, shape, *param_shapes):
    if param_shapes:
        result = _broadcast_shapes(shape, *param_shapes)
        if result != tuple(shape):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                             "argument, and the result of broadcasting the shapes must equal the "
                             f"shape argument, but got result {result} for shape argument {shape}.")


def _check_broadcast_shapes(name, shape, *args):
    arg_shapes = [_shape_of(a) for a in args]
    if shape is None:
        return _broadcast_shapes(*arg_shapes) if arg_shapes else ()
    shape = canonicalize_shape(shape)
    _check_shape(name, shape, *arg_shapes)
    return shape


def _const(dtype, value):
    return np.asarray(value, dtype)[()]


def _convert(x, dtype):
    """`x` (array, tracer or Python number) as `dtype`, strongly typed."""
    if isinstance(x, (bool, int, float)):
        return _const(dtype, x)
    return lax_conversions.convert_element_type(x, dtype)


def _to_rank(x, rank: int):
    shape = _shape_of(x)
    if len(shape) == rank:
        return x
    return lax_shape_ops.reshape(x, (1,) * (rank - len(shape)) + tuple(shape))


def _to_shape(x, shape):
    return x if _shape_of(x) == tuple(shape) else key_functions.broadcast_to(x, shape)


# ---------------------------------------------------------------- uniform and integers


def uniform(key, shape=(), dtype=None, minval=0., maxval=1., *, out_sharding=None):
    """Uniform floats in [minval, maxval) of `shape` and float `dtype` (default float32, float64
    with x64); the mantissa bits of each value are random bits, as in JAX."""
    check_no_sharding("random.uniform", out_sharding)
    data, _ = check_key("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    shape = canonicalize_shape(shape)
    _check_uniform_bounds(shape, minval, maxval)
    return _uniform(data, minval, maxval, shape, dtype)


def _check_uniform_bounds(shape, minval, maxval):
    """JAX's errors for bounds that are not arrays or do not broadcast to `shape`: TypeErrors,
    from its arithmetic on them."""
    for name, bound in (("minval", minval), ("maxval", maxval)):
        if bound is None:
            raise ValueError(f"Invalid argument to dtype: None. Pass a number or an array as "
                             f"{name}.")
        if isinstance(bound, (str, bytes)):
            raise TypeError(f"Error interpreting argument to uniform as an abstract array. The "
                            f"problematic value is of type {type(bound)} and was passed to the "
                            f"function at path {name}.")
    lo, hi = _shape_of(minval), _shape_of(maxval)
    try:
        span = tuple(np.broadcast_shapes(hi, lo))
    except ValueError:
        raise TypeError(f"sub got incompatible shapes for broadcasting: {hi}, {lo}.") from None
    try:
        result = tuple(np.broadcast_shapes(shape, span))
    except ValueError:
        raise TypeError(f"mul got incompatible shapes for broadcasting: {shape}, {span}.") from None
    if result != shape:
        raise TypeError("uniform parameter shapes must be broadcast-compatible with shape "
                        "argument, and the result of broadcasting the shapes must equal the shape "
                        f"argument, but got result {result} for shape argument {shape}.")


def _is_const(x, value) -> bool:
    return isinstance(x, (int, float, np.number)) and x == value


def _uniform(data, minval, maxval, shape, dtype):
    _check_shape("uniform", shape, _shape_of(minval), _shape_of(maxval))
    unit = _is_const(minval, 0) and _is_const(maxval, 1)
    exact_scale = _power_of_two_span(minval, maxval, dtype)
    minval, maxval = (_bound(v, dtype, len(shape)) for v in (minval, maxval))
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    if nbits not in (8, 16, 32, 64):  # float4_e2m1fn; JAX's message, missing space and all
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypesgot {dtype}.")
    rng_bits = 8 if nmant < 8 else nbits
    uint = UINT_DTYPES[nbits]
    bits = random_bits(data, rng_bits, shape)
    if rng_bits != nbits:
        bits = lax_conversions.convert_element_type(bits, uint)
    # Random mantissa under the exponent of 1.0 gives a float in [1, 2); shift it to [0, 1).
    float_bits = lax.bitwise_or(lax.shift_right_logical(bits, _const(uint, rng_bits - nmant)),
                                np.array(1.0, dtype).view(uint)[()])
    floats = lax.sub(lax_special.bitcast_convert_type(float_bits, dtype), _const(dtype, 1))
    if unit:
        return floats  # [0, 1): scaling by 1, adding 0 and clamping at 0 change no bit
    span = lax.sub(maxval, minval)
    if exact_scale:
        # The product is exact, so the fused multiply-add rounds as a plain add does.
        scaled = lax.add(lax.mul(floats, span), minval)
    else:
        # XLA contracts this multiply-add into one fused op: round once, as it does.
        scaled = _fma(floats, span, minval)
    return lax.max(minval, lax_shape_ops.reshape(scaled, shape))


def _bound(x, dtype, rank: int):
    """A uniform bound as `dtype` at `rank`. A bound known now and scalar stays a scalar
    constant, so the compiler folds the span and fuses the scaling with the draw."""
    if isinstance(x, (bool, int, float, np.number)) or (isinstance(x, np.ndarray)
                                                       and x.ndim == 0):
        return _const(dtype, x)
    return _to_rank(_convert(x, dtype), rank)


def _power_of_two_span(minval, maxval, dtype) -> bool:
    """Whether maxval - minval (in `dtype`) is known now to be one power of two, so that
    multiplying by it is exact; traced bounds are not known."""
    if isinstance(minval, Tracer) or isinstance(maxval, Tracer):
        return False
    lo, hi = np.asarray(minval).astype(dtype), np.asarray(maxval).astype(dtype)
    if lo.size != 1 or hi.size != 1:
        return False
    with np.errstate(all="ignore"):
        span = (hi - lo).astype(np.float64).reshape(())
    return bool(np.isfinite(span) and span > 0 and np.frexp(span)[0] == 0.5)


def _convert_and_clip_integer(val, dtype):
    """Convert the integer array `val` to `dtype`, clipping to its range instead of wrapping."""
    src = get_aval(val).dtype
    lo = _const(src, max(np.iinfo(dtype).min, np.iinfo(src).min))
    hi = _const(src, min(np.iinfo(dtype).max, np.iinfo(src).max))
    return lax_conversions.convert_element_type(lax_special.clamp(lo, val, hi), dtype)


def randint(key, shape, minval, maxval, dtype=None, *, out_sharding=None):
    """Uniform integers in [minval, maxval) of `shape` and integer `dtype` (default int32);
    2 * nbits random bits per value reduced modulo the span, as in JAX."""
    check_no_sharding("random.randint", out_sharding)
    data, _ = check_key("randint", key)
    dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
    if not dtypes.is_int(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = canonicalize_shape(shape)
    check_arraylike("randint", minval, maxval)
    default_int = np.iinfo(dtypes.default_int_dtype())
    for bound in (minval, maxval):
        # As JAX, which takes Python ints as the default int type (int32 without x64).
        if isinstance(bound, int) and not default_int.min <= bound <= default_int.max:
            raise OverflowError(f"Python int {bound} too large to convert to {default_int.dtype}. "
                                "Pass bounds within its range (or enable x64 for 64-bit bounds).")
    info = dtypes.iinfo(dtype)  # ml_dtypes' iinfo knows int4 and uint4
    if info.bits < 32:
        # Sample in 32 bits to avoid bias, then cast.
        minval = ufuncs.clip(key_functions.asarray(minval).astype("int32"), int(info.min), int(info.max))
        maxval = ufuncs.clip(key_functions.asarray(maxval).astype("int32"), int(info.min), int(info.max) + 1)
        return _randint(data, minval, maxval, shape, np.dtype(np.int32)).astype(dtype)
    return _randint(data, minval, maxval, shape, dtype)


def _randint(data, minval, maxval, shape, dtype):
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    minval, maxval = key_functions.asarray(minval), key_functions.asarray(maxval)
    if not dtypes.is_int(minval.dtype):
        minval = minval.astype(int)
    if not dtypes.is_int(maxval.dtype):
        maxval = maxval.astype(int)
    # maxval beyond the dtype's range (randint(key, s, 0, 256, uint8)) needs a span one larger.
    top = _convert_and_clip_integer(np.array(np.iinfo(dtype).max, dtype), maxval.dtype)
    maxval_out_of_range = lax.gt(maxval, top)
    minval = _to_shape(_convert_and_clip_integer(minval, dtype), shape)
    maxval = _to_shape(_convert_and_clip_integer(maxval, dtype), shape)
    maxval_out_of_range = _to_shape(maxval_out_of_range, shape)
    nbits = np.iinfo(dtype).bits
    k1, k2 = split_n(data, 2)
    higher, lower = random_bits(k1, nbits, shape), random_bits(k2, nbits, shape)
    udt = UINT_DTYPES[nbits]
    one = lax_shape_ops.full(shape, 1, udt)
    span = lax_conversions.convert_element_type(lax.sub(maxval, minval), udt)
    span = lax.select(lax.le(maxval, minval), one, span)  # an empty range always gives minval
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                      lax.add(span, one), span)
    # (hi * 2**nbits + lo) % span, with 2**nbits % span computed without overflow.
    multiplier = lax.rem(_const(udt, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax_conversions.convert_element_type(offset, dtype))


# ---------------------------------------------------------------- shuffles and choices


def _shuffle(data, x, axis):
    """Shuffle `x` along `axis` by sorting on fresh 32-bit keys, repeated enough rounds that
    key collisions are negligible (JAX's algorithm)."""
    size = math.prod(_shape_of(x))
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        data, sub = split_n(data, 2)
        sort_keys = random_bits(sub, 32, _shape_of(x))
        _, x = sort_key_val(sort_keys, x, axis)
    return x


def permutation(key, x, axis=0, independent=False, *, out_sharding=None):
    """A random permutation of `jnp.arange(x)` (an int) or of `x` along `axis`; with
    `independent=True` every slice along `axis` is shuffled on its own."""
    check_no_sharding("random.permutation", out_sharding)
    data, _ = check_key("permutation", key)
    check_arraylike("permutation", x)
    ndim = len(_shape_of(x))
    axis = _canonical_axis(axis, ndim or 1)
    if not ndim:
        if not dtypes.is_int(dtypes.dtype(x)):
            raise TypeError("x must be an integer or at least 1-dimensional")
        n = _concrete_int(x, "argument x of jax.random.permutation()")
        return _shuffle(data, creation.arange(n), axis)
    x = key_functions.asarray(x)
    if independent or ndim == 1:
        return _shuffle(data, x, axis)
    ind = _shuffle(data, creation.arange(x.shape[axis]), 0)
    return _take(x, ind, axis)


def _concrete_int(x, context: str) -> int:
    """`x` as a Python int; JAX's ConcretizationTypeError when it is traced."""
    if isinstance(x, Tracer):
        raise ConcretizationTypeError(x, context + "\n")
    return operator.index(x) if isinstance(x, (int, np.integer)) else int(x)


def _concrete_index(x, context: str) -> int:
    """`operator.index(x)` (floats refused), with JAX's error for a traced `x`."""
    if isinstance(x, Tracer):
        raise ConcretizationTypeError(x, context + "\n")
    return operator.index(x)


def _canonical_axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _take(arr, ind, axis):
    idx = (slice(None),) * axis + (ind,)
    return arr[idx]


def shuffle(key, x, axis=0):
    """Shuffle the elements of `x` along `axis` (deprecated in JAX for `permutation`)."""
    data, _ = check_key("shuffle", key)
    x = key_functions.asarray(x)
    return _shuffle(data, x, _canonical_axis(axis, max(x.ndim, 1)))


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random samples from `a` (an array, or an int meaning arange(a)) along `axis`, with or
    without replacement, optionally with probabilities `p`."""
    data, _ = check_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    shape = canonicalize_shape(shape)
    check_arraylike("choice", a)
    arr = key_functions.asarray(a)
    if arr.ndim == 0:
        n_inputs = _concrete_int(a, "The error occurred in jax.random.choice()")
    else:
        axis = _canonical_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return creation.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else _take(arr, ind, axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = perm[(slice(None),) * axis + (slice(n_draws),)]
    else:
        check_arraylike("choice", p)
        (p_arr,) = promote_dtypes_inexact(p)
        if p_arr.shape != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = selection.cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(key, shape, dtype=p_cuml.dtype))
            # searchsorted(p_cuml, r, side='left') is the count of entries below r.
            ind = reductions.sum(p_cuml < r[..., None], axis=-1).astype(int)
        else:
            g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + xla_log(p_arr)
            ind = top_k(g, k=n_draws)[1].astype(int)
        result = ind if arr.ndim == 0 else _take(arr, ind, axis)
    return result.reshape(shape if arr.ndim == 0 else
                          arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


# ---------------------------------------------------------------- normal family


def normal(key, shape=(), dtype=None, *, out_sharding=None):
    """Standard normal values: sqrt(2) * erf_inv(u) for u uniform in (-1, 1), with erf_inv
    evaluated as XLA evaluates it, so the values are JAX's bit for bit in float32 (complex
    dtypes: independent real and imaginary parts with variance 1/2 each)."""
    check_no_sharding("random.normal", out_sharding)
    data, _ = check_key("normal", key)
    shape = canonicalize_shape(shape)
    dtype = _float_dtype("normal", dtype, ("float", "complex"))
    return _normal(data, shape, dtype)


def _normal(data, shape, dtype):
    if dtypes.is_complex(dtype):
        key_re, key_im = split_n(data, 2)
        real = np.dtype(dtypes.to_floating_dtype(dtype))
        re = _normal_real(key_re, shape, real).astype(dtype)
        im = _normal_real(key_im, shape, real).astype(dtype)
        return (re + 1j * im) / _const(dtype, np.sqrt(2))
    return _normal_real(data, shape, dtype)


def _normal_real(data, shape, dtype):
    lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
    u = _uniform(data, lo, _const(dtype, 1), shape, dtype)
    return lax.mul(_const(dtype, np.sqrt(2)), erf_inv_giles(u))


def _to(x, dtype):
    # Direct bind: float64 is wanted here even with x64 off (it only emulates a fused op).
    return lax_conversions.convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def _via_float64(fn, x):
    """fn(x) for a float array, evaluated in float64 below float64 and rounded as XLA rounds its
    float32 result (float16 and bfloat16 through float32). XLA's float32 exp and tan are within
    about an ulp, where NumPy's vectorised float32 ones stray by up to 2.4 and 3 ulp."""
    dtype = get_aval(x).dtype
    if dtype.itemsize == 8:
        return fn(x)
    return _to(_to(fn(_to(x, np.float64)), np.float32), dtype)


def _fma(a, b, c):
    """a * b + c for float arrays of one dtype, rounded as XLA's CPU code rounds it: fused (once)
    for float32 and float64, twice for float16 and bfloat16 (which it does not fuse)."""
    if get_aval(a).dtype.name in ("float16", "bfloat16"):
        return lax.add(lax.mul(a, b), c)
    return xla_fma(a, b, c)


def truncated_normal(key, lower, upper, shape=None, dtype=None, *, out_sharding=None):
    """Standard normal values truncated to (lower, upper), by inverting the CDF of a uniform
    draw between erf(lower/sqrt 2) and erf(upper/sqrt 2)."""
    check_no_sharding("random.truncated_normal", out_sharding)
    if shape is not None:
        shape = canonicalize_shape(shape)
    data, _ = check_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = _broadcast_shapes(_shape_of(lower), _shape_of(upper))
    else:
        _check_shape("truncated_normal", shape, _shape_of(lower), _shape_of(upper))
    sqrt2 = _const(dtype, np.sqrt(2))
    lower, upper = _convert(lower, dtype), _convert(upper, dtype)
    a = _erf_xla(lax.div(lower, sqrt2))
    b = _erf_xla(lax.div(upper, sqrt2))
    u = _uniform(data, a, b, shape, dtype)
    out = lax.mul(sqrt2, erf_inv_giles(u))
    # Clamp to the open interval: rounding (or u == a) must not leave it.
    return ufuncs.clip(out, lax.nextafter(lax.stop_gradient(lower), _const(dtype, np.inf)),
                       lax.nextafter(lax.stop_gradient(upper), _const(dtype, -np.inf)))


# XLA's float32 erf: Eigen's rational interpolant x P(x^2) / Q(x^2), each polynomial a chain
# of fused multiply-adds, and +-1 from |x| >= 3.8325 on. Coefficients from the highest power.
_ERF_P = tuple(np.float32(c) for c in (0.00022905065861350646, 0.0034082910107109506,
                                       0.050955695062380861, 0.18520832239976145,
                                       1.128379143519084))
_ERF_Q = tuple(np.float32(c) for c in (-1.1791602954361697e-7, 0.000023547966471313185,
                                       0.0010179625278914885, 0.014070470171167667,
                                       0.11098505178285362, 0.49746925110067538, 1.0))


def _erf_xla(x):
    """erf as XLA evaluates it on the CPU (float16 and bfloat16 through float32). The bounds
    of truncated_normal go through erf, and near +-1 one ulp of erf moves the samples by
    thousands of ulps, so lax.erf (correctly rounded) would not give JAX's numbers."""
    dtype = get_aval(x).dtype
    if dtype.itemsize == 8:
        return lax_special.erf(x)
    x = _to(x, np.float32)
    limit = lax_shape_ops.full_like(x, np.float32(3.832506856900711))
    clamped = lax.ge(lax.abs(x), limit)
    x = lax.select(clamped, lax.mul(lax.sign(x), limit), x)  # keeps inf out of the ratio
    x2 = lax.mul(x, x)
    p = _fma(x2, lax_shape_ops.full_like(x2, _ERF_P[0]), _ERF_P[1])
    for c in _ERF_P[2:]:
        p = _fma(x2, p, c)
    q = _fma(x2, lax_shape_ops.full_like(x2, _ERF_Q[0]), _ERF_Q[1])
    for c in _ERF_Q[2:]:
        q = _fma(x2, q, c)
    ratio = lax.div(lax.mul(x, p), q)
    return _to(lax.select(clamped, lax.sign(x), ratio), dtype)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky", *, out_sharding=None):
    """Samples of N(mean, cov) for mean (..., n) and cov (..., n, n): mean + factor @ z with
    factor from a Cholesky ('cholesky'), eigen ('eigh') or singular value ('svd') decomposition."""
    check_no_sharding("random.multivariate_normal", out_sharding)
    data, _ = check_key("multivariate_normal", key)
    check_arraylike("multivariate_normal", mean, cov)
    mean, cov = promote_dtypes_inexact(mean, cov)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    # As JAX: `dtype` (default: that of mean and cov) is the dtype of the normal draws only;
    # the result takes the promoted dtype of mean, the factor and the draws.
    dtype = mean.dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    if shape is not None:
        shape = canonicalize_shape(shape)
    if not mean.ndim >= 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}")
    if not cov.ndim >= 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cov.shape}.")
    if shape is None:
        shape = _broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    else:
        _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    linalg = jnp_linalg
    if method == "svd":
        u, s, _ = linalg.svd(cov)
        factor = u * ufuncs.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = linalg.eigh(cov)
        factor = v * ufuncs.sqrt(w[..., None, :])
    else:
        factor = linalg.cholesky(cov)
    z = _normal(data, shape + mean.shape[-1:], dtype)
    return mean + einsum("...ij,...j->...i", factor, z)


_ONE = np.float32(1)  # lognormal's default sigma, as JAX's


def lognormal(key, sigma=_ONE, shape=None, dtype=None, *, out_sharding=None):
    """exp(sigma * N(0, 1))."""
    check_no_sharding("random.lognormal", out_sharding)
    data, _ = check_key("lognormal", key)
    dtype = _float_dtype("lognormal", dtype, ("float", "complex"))
    shape = _check_broadcast_shapes("lognormal", shape, sigma)
    _check_all_safe_to_cast("lognormal", dtype, sigma)
    sigma = _to_rank(_convert(sigma, dtype), len(shape))
    return lax.exp(lax.mul(_normal(data, shape, dtype), sigma))


# ---------------------------------------------------------------- booleans and signs


def bernoulli(key, p=0.5, shape=None, mode="low", *, out_sharding=None):
    """Booleans that are True with probability `p` (a float); mode 'high' uses two uniforms
    for resolution below 2**-nmant."""
    check_no_sharding("random.bernoulli", out_sharding)
    if shape is not None:
        shape = canonicalize_shape(shape)
    if mode not in ("high", "low"):
        raise ValueError(f"got {mode=}, expected 'high' or 'low'")
    data, _ = check_key("bernoulli", key)
    dtype = dtypes.dtype(p, canonicalize=True)
    if not dtypes.is_float(dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    p = _convert(p, dtype)
    if shape is None:
        shape = _shape_of(p)
    else:
        _check_shape("bernoulli", shape, _shape_of(p))
    if mode == "high":
        u = _uniform(data, 0., 1., (2, *shape), dtype)
        u1, u2 = u[0], u[1] * _const(dtype, 2.0 ** -dtypes.finfo(dtype).nmant)
        return u2 < p - u1
    return lax.lt(_uniform(data, 0., 1., shape, dtype), _to_rank(p, len(shape)))


def rademacher(key, shape=(), dtype=None, *, out_sharding=None):
    """-1 or +1 with equal probability, of integer `dtype` (default int32)."""
    check_no_sharding("random.rademacher", out_sharding)
    data, _ = check_key("rademacher", key)
    dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
    return _rademacher(data, canonicalize_shape(shape), dtype)


def _rademacher(data, shape, dtype):
    # JAX draws bernoulli(key, 0.5): a uniform of the default float dtype (float64 with x64).
    real = np.dtype(dtypes.default_float_dtype())
    b = lax.lt(_uniform(data, 0., 1., shape, real), _const(real, 0.5))
    if dtype == np.bool_:
        # JAX computes 2 * b - 1 in int32 here: both -1 and 1 become True.
        return lax_shape_ops.full(shape, True, np.bool_)
    b = lax_conversions.convert_element_type(b, dtype)
    return lax.sub(lax.mul(_const(dtype, 2), b), _const(dtype, 1))


# ---------------------------------------------------------------- inverse-CDF samplers


def _simple(name, body):
    """A sampler `f(key, shape=(), dtype=None)` computing `body(data, shape, dtype)`."""

    def sampler(key, shape=(), dtype=None, *, out_sharding=None):
        check_no_sharding(f"random.{name}", out_sharding)
        data, _ = check_key(name, key)
        dtype = _float_dtype(name, dtype)
        return body(data, canonicalize_shape(shape), dtype)

    sampler.__name__ = sampler.__qualname__ = name
    return sampler


def _exponential(data, shape, dtype):
    u = _uniform(data, 0., 1., shape, dtype)
    return lax.neg(xla_log1p(lax.neg(u)))  # log(1 - u): u in [0, 1) never reaches log(0)


def _laplace(data, shape, dtype):
    u = _uniform(data, -1. + dtypes.finfo(dtype).epsneg, 1., shape, dtype)
    return lax.mul(lax.sign(u), xla_log1p(lax.neg(lax.abs(u))))


def _logistic(data, shape, dtype):
    x = _uniform_from_tiny(data, shape, dtype)
    return lax.sub(xla_log(x), xla_log1p(lax.neg(x)))


def _cauchy(data, shape, dtype):
    u = _uniform(data, dtypes.finfo(dtype).eps, 1., shape, dtype)
    x = lax.mul(_const(dtype, np.pi), lax.sub(u, _const(dtype, 0.5)))
    return _via_float64(lax.tan, x)  # NumPy's float32 tan is up to 3 ulp off near the poles


exponential = _simple("exponential", _exponential)
exponential.__doc__ = "Exponential(1) values: -log1p(-u)."
laplace = _simple("laplace", _laplace)
laplace.__doc__ = "Laplace(0, 1) values: sign(u) * log1p(-|u|) for u uniform in (-1, 1)."
logistic = _simple("logistic", _logistic)
logistic.__doc__ = "Logistic(0, 1) values: log(u) - log1p(-u)."
cauchy = _simple("cauchy", _cauchy)
cauchy.__doc__ = "Standard Cauchy values: tan(pi * (u - 1/2))."


def gumbel(key, shape=(), dtype=None, mode=None, *, out_sharding=None):
    """Standard Gumbel values -log(-log(u)); mode 'high' draws two uniforms to resolve
    probabilities below 2**-nmant, and 'highest' (float32; other dtypes as 'high') makes u
    from 64 random bits with the full exponent range."""
    check_no_sharding("random.gumbel", out_sharding)
    data, _ = check_key("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    shape = canonicalize_shape(shape)
    return _gumbel(data, shape, dtype, _gumbel_mode(mode))


def _gumbel_mode(mode):
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}. Pass 'low', 'high' "
                         "or 'highest'.")
    return mode


def _bits_to_unit_float32(hi, lo):
    """The 64-bit fixed-point fraction hi:lo (nonzero) as a float32 in (0, 1), truncated: the
    leading one sets the exponent and the next 23 bits the mantissa (JAX's _safe_int_to_float)."""
    u32 = np.uint32
    hiclz, loclz = lax_special.clz(hi), lax_special.clz(lo)
    hi_empty = lax.eq(hiclz, lax_shape_ops.full_like(hiclz, 32))
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        lax.select(hi_empty, lax.shift_left(lo, loclz),
                   lax.shift_right_logical(lo, lax.sub(lax_shape_ops.full_like(hiclz, 32), hiclz))))
    mantissa = lax.bitwise_and(lax.shift_right_logical(mantissa, u32(8)), u32((1 << 23) - 1))
    lead = lax.select(hi_empty, lax.add(loclz, lax_shape_ops.full_like(loclz, 32)), hiclz)
    exp = lax.shift_left(lax.sub(lax_shape_ops.full_like(lead, 126), lead), u32(23))
    exp = lax.bitwise_and(exp, u32((1 << 30) - (1 << 22)))
    return lax_special.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.dtype(np.float32))


def _gumbel_highest(data, shape):
    """float32 Gumbel values from 64 random bits per value: u below 1/2 (log1p(-u) branch) or
    1 - u (log branch), so both tails keep their full resolution."""
    bits = random_bits(data, 32, (2, *shape))
    hi, lo = bits[0], bits[1]
    one, top = lax_shape_ops.full_like(lo, 1), lax_shape_ops.full_like(lo, 0xFFFFFFFF)
    # 1 - hi:lo in 64-bit fixed point: the complement plus one, carrying into the high word.
    neg_hi, neg_lo = lax.bitwise_not(hi), lax.bitwise_not(lo)
    neg_hi = lax.add(neg_hi, lax_conversions.convert_element_type(lax.eq(neg_lo, top), np.uint32))
    neg_lo = lax.add(neg_lo, one)
    flip = lax.lt(hi, lax_shape_ops.full_like(hi, 1 << 31))
    x = _bits_to_unit_float32(lax.select(flip, hi, neg_hi), lax.select(flip, lo, neg_lo))
    return key_functions.where(flip, -xla_log(-xla_log1p(-x)), -xla_log(-xla_log(x)))


def _gumbel(data, shape, dtype, mode):
    info = dtypes.finfo(dtype)
    if mode == "highest" and dtype == np.float32:
        return _gumbel_highest(data, shape)
    if mode in ("high", "highest"):
        u = _uniform(data, 0., 1., (2, *shape), dtype)
        high, low = u[0], u[1]
        x = key_functions.where(high >= 0.5, high,
                                high + _const(dtype, 2.0 ** -info.nmant) * low + _const(dtype, info.tiny))
        return -xla_log(-xla_log1p(-x))
    # XLA's log, not NumPy's: the two differ in the last bit for one float in thirty.
    return lax.neg(xla_log(lax.neg(xla_log(_uniform_from_tiny(data, shape, dtype)))))


def _uniform_from_tiny(data, shape, dtype):
    """JAX's uniform(key, shape, dtype, minval=tiny, maxval=1.) as it runs inside a jitted
    sampler: XLA folds (bits - 1) * 1 + tiny into bits + (-1 + tiny) = bits - 1, so only the
    final max with tiny remains. It differs from adding tiny only in float16."""
    return lax.max(_const(dtype, dtypes.finfo(dtype).tiny), _uniform(data, 0., 1., shape, dtype))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None, *, out_sharding=None):
    """Indices drawn from the categorical distribution with unnormalised log-probabilities
    `logits` along `axis` (the Gumbel-max trick; without replacement, Gumbel top-k)."""
    check_no_sharding("random.categorical", out_sharding)
    data, _ = check_key("categorical", key)
    check_arraylike("categorical", logits)
    logits = key_functions.asarray(logits)
    if not -logits.ndim <= axis < logits.ndim:
        # JAX's np.delete(logits.shape, axis) raises IndexError here.
        raise IndexError(f"axis {axis} is out of bounds for logits of dimension {logits.ndim}; "
                         "pass the axis that holds the categories.")
    axis = axis % logits.ndim - logits.ndim
    batch_shape = tuple(np.delete(logits.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = canonicalize_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    mode = _gumbel_mode(mode)
    if not dtypes.is_float(logits.dtype):  # JAX draws gumbel noise of the logits' dtype
        raise ValueError(f"dtype argument to `gumbel` must be a float dtype, got {logits.dtype}")
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % logits.ndim, logits.shape[axis])
        g = _gumbel(data, (*prefix, *logits_shape), logits.dtype, mode)
        return reductions.argmax(g + lax_shape_ops.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
    logits = logits + _gumbel(data, logits.shape, logits.dtype, mode)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits.shape[axis]}).")
    _, indices = top_k(key_functions.moveaxis(logits, axis, -1), k)
    dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax_shape_ops.reshape(indices, shape, dimensions)


# ---------------------------------------------------------------- on spheres and groups


def orthogonal(key, n, shape=(), dtype=None, m=None, *, out_sharding=None):
    """Haar-random (n, m) matrices with orthonormal columns (rows if m < n): the Q of a QR
    decomposition of a normal matrix, with signs fixed by R's diagonal."""
    check_no_sharding("random.orthogonal", out_sharding)
    data, _ = check_key("orthogonal", key)
    dtype = _float_dtype("normal", dtype, ("float", "complex"))  # JAX's message names normal
    shape = canonicalize_shape(shape)
    n = _concrete_index(n, "The error occurred in jax.random.orthogonal()")
    m = n if m is None else _concrete_index(m, "The error occurred in jax.random.orthogonal()")
    z = _normal(data, (*shape, max(n, m), min(n, m)), dtype)
    q, r = jnp_linalg.qr(z)
    d = reductions.sum(r * creation.eye(r.shape[-1], dtype=r.dtype), axis=-2)  # diag(r), exactly
    q = q * key_functions.expand_dims(ufuncs.sign(d), -2)
    return q if n >= m else key_functions.swapaxes(q, -1, -2)


# ---------------------------------------------------------------- more closed-form samplers


def pareto(key, b, shape=None, dtype=None, *, out_sharding=None):
    """Pareto(b) values on [1, inf): exp(E / b) for E ~ Exponential(1)."""
    check_no_sharding("random.pareto", out_sharding)
    data, _ = check_key("pareto", key)
    dtype = _float_dtype("pareto", dtype)
    shape = _check_broadcast_shapes("pareto", shape, b)
    _check_all_safe_to_cast("pareto", dtype, b)
    return lax.exp(lax.div(_exponential(data, shape, dtype), _to_rank(_convert(b, dtype), len(shape))))


def rayleigh(key, scale, shape=None, dtype=None, *, out_sharding=None):
    """Rayleigh(scale) values: scale * sqrt(-2 log u)."""
    check_no_sharding("random.rayleigh", out_sharding)
    data, _ = check_key("rayleigh", key)
    dtype = _float_dtype("rayleigh", dtype)
    shape = _check_broadcast_shapes("rayleigh", shape, scale)
    _check_all_safe_to_cast("rayleigh", dtype, scale)
    u = _uniform(data, 0., 1., shape, dtype)
    scale = _to_shape(_convert(scale, dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(xla_log(u), _const(dtype, -2))))


def maxwell(key, shape=(), dtype=None, *, out_sharding=None):
    """Maxwell values: the norm of a 3-vector of standard normals."""
    check_no_sharding("random.maxwell", out_sharding)
    data, _ = check_key("maxwell", key)
    dtype = _float_dtype("maxwell", dtype)
    return _maxwell(data, canonicalize_shape(shape), dtype)


def _maxwell(data, shape, dtype):
    z = _normal(data, shape + (3,), dtype)
    return ufuncs.sqrt(reductions.sum(z * z, axis=-1))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull values: (-log1p(-u)) ** (1 / concentration) * scale."""
    data, _ = check_key("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    u = _uniform(data, 0., 1., canonicalize_shape(shape), dtype)
    # As JAX: the parameters are not cast to `dtype`; they promote with the draws.
    return ufuncs.power(-xla_log1p(-u),
                        1.0 / key_functions.asarray(concentration)) * key_functions.asarray(scale)


def geometric(key, p, shape=None, dtype=None, *, out_sharding=None):
    """Geometric(p) counts >= 1 of integer `dtype` (default int32): floor(log u / log1p(-p)) + 1."""
    check_no_sharding("random.geometric", out_sharding)
    data, _ = check_key("geometric", key)
    dtype = _int_dtype("geometric", dtype)
    shape = _check_broadcast_shapes("geometric", shape, p)
    p = key_functions.asarray(p)
    if not dtypes.is_inexact(p.dtype):
        p = p.astype(dtypes.to_inexact_dtype(p.dtype))
    u = _uniform(data, 0., 1., shape, p.dtype)
    u = key_functions.where(u == 0, 1, u)  # as JAX: u = 0 maps to 1, avoiding log(0)
    g = lax.floor(lax.div(xla_log(u), key_functions.broadcast_to(xla_log1p(-p), shape))) + 1
    return g.astype(dtype)


def _check_all_safe_to_cast(name: str, dtype, *args):
    """JAX's TypePromotionError for parameters that `dtype` cannot hold (complex into float)."""
    for arg in args:
        src = dtypes.dtype(arg, canonicalize=True)
        if src != dtype and dtypes.result_type(arg, dtype) != dtype:
            raise dtypes.TypePromotionError(f"In arguments to {name}, cannot safely cast argument "
                                            f"of type {src} to {dtype}")


def _param(x, dtype, shape):
    """A sampler parameter as `dtype`, broadcast to `shape`."""
    return _to_shape(_convert(x, dtype), shape)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell values (density proportional to z**2 exp(-z**2 / 2) for
    z = (x - loc) / scale): a Maxwell draw with a random sign, scaled and shifted. `shape` is
    prepended to the broadcast shape of `loc` and `scale`, as in JAX."""
    data, _ = check_key("double_sided_maxwell", key)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    shape = canonicalize_shape(shape)
    params_shape = _broadcast_shapes(_shape_of(loc), _shape_of(scale))
    shape = (shape or params_shape) + params_shape
    maxwell_key, sign_key = split_n(data, 2)
    magnitude = _maxwell(maxwell_key, shape, dtype)
    sign = _rademacher(sign_key, shape, dtype)
    return _fma(lax.mul(sign, magnitude), _param(scale, dtype, shape), _param(loc, dtype, shape))


def wald(key, mean, shape=None, dtype=None, *, out_sharding=None):
    """Wald (inverse Gaussian) values with mean `mean` and shape parameter 1, by Michael,
    Schucany and Haas' transformation of a chi-square(1) draw with a uniform acceptance."""
    check_no_sharding("random.wald", out_sharding)
    data, _ = check_key("wald", key)
    dtype = _float_dtype("wald", dtype)
    shape = _check_broadcast_shapes("wald", shape, mean)
    _check_all_safe_to_cast("wald", dtype, mean)
    k1, k2 = split_n(data, 2)
    mean = _param(mean, dtype, shape)
    v = _normal(k1, shape, dtype)
    z = _uniform(k2, 0., 1., shape, dtype)
    y = lax.mul(v, v)
    mean_sq = lax.mul(mean, mean)
    sqrt_term = lax.sqrt(_fma(lax.mul(_const(dtype, 4), mean), y,
                              lax.mul(mean_sq, lax.mul(y, y))))
    x = lax.add(mean, lax.div(lax.mul(mean_sq, y), _const(dtype, 2)))
    x = _fma(lax.neg(lax.div(mean, _const(dtype, 2))), sqrt_term, x)
    return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))


def triangular(key, left, mode, right, shape=None, dtype=None, *, out_sharding=None):
    """Triangular values on [left, right] peaking at `mode`, by inverting the CDF of one
    uniform draw on each side of the mode."""
    check_no_sharding("random.triangular", out_sharding)
    data, _ = check_key("triangular", key)
    dtype = _float_dtype("triangular", dtype)
    shape = _check_broadcast_shapes("triangular", shape, left, mode, right)
    _check_all_safe_to_cast("triangular", dtype, left, mode, right)
    left, mode, right = (_param(v, dtype, shape) for v in (left, mode, right))
    width = lax.sub(right, left)
    fc = lax.div(lax.sub(mode, left), width)
    u = _uniform(data, 0., 1., shape, dtype)
    below = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(mode, left))))
    above = lax.sub(right, lax.sqrt(lax.mul(lax.mul(lax.sub(_const(dtype, 1), u), width),
                                            lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), below, above)
