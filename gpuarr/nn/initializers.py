"""Parameter initializers (jax.nn.initializers): each factory returns `init(key, shape,
dtype)`; the random ones draw from gpuarr.random with JAX's formulas, so a key gives the
same parameters JAX gives."""
from __future__ import annotations

import math
import typing
from functools import partial

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import arguments as lax_arguments
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import creation, manipulation, ufuncs
from gpuarr.random import distributions
from gpuarr.random import keys as random_keys

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal",
    "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform",
    "normal", "ones", "orthogonal", "truncated_normal", "uniform", "variance_scaling",
    "xavier_normal", "xavier_uniform", "zeros",
]

@typing.runtime_checkable
class Initializer(typing.Protocol):
    """The type of an initializer: called as `init(key, shape, dtype)`, it returns an array of
    that shape and dtype (every factory of this module returns one)."""

    def __call__(self, key, shape, dtype=None, out_sharding=None):
        ...


_float = np.float64  # canonicalised to float32 unless x64 is on, as jnp.float_


def _dtype(dtype):
    """The dtype of an initializer's result: the default float type when None, as JAX."""
    return dtypes.canonicalize_dtype(_float if dtype is None else dtype)


def _init_sharding(name, out_sharding):
    lax_arguments.check_no_sharding(f"nn.initializers.{name}", out_sharding)


def _shape(shape):
    return tuple(int(s) for s in ((shape,) if isinstance(shape, int) else shape))


def zeros(key, shape, dtype=None, out_sharding=None):
    """All zeros (key unused)."""
    _init_sharding("zeros", out_sharding)
    return creation.zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None, out_sharding=None):
    """All ones (key unused)."""
    _init_sharding("ones", out_sharding)
    return creation.ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None):
    """An initializer filling with `value`."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _init_sharding("constant", out_sharding)
        return creation.full(_shape(shape), value, dtype=_dtype(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform on [0, scale)."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _init_sharding("uniform", out_sharding)
        dtype = _dtype(dtype)
        return distributions.uniform(key, _shape(shape), dtype) * creation.array(scale, dtype)
    return init


def normal(stddev=1e-2, dtype=None):
    """Normal with mean 0 and standard deviation `stddev`."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _init_sharding("normal", out_sharding)
        dtype = _dtype(dtype)
        return distributions.normal(key, _shape(shape), dtype) * creation.array(stddev, dtype)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """A standard normal truncated to [lower, upper], times `stddev`."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _init_sharding("truncated_normal", out_sharding)
        dtype = _dtype(dtype)
        sample = distributions.truncated_normal(key, lower, upper, _shape(shape), dtype)
        return sample * creation.array(stddev, dtype)
    return init


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis explicitly.")
    in_size = shape[in_axis] if isinstance(in_axis, int) else math.prod(shape[i] for i in in_axis)
    out_size = shape[out_axis] if isinstance(out_axis, int) else \
        math.prod(shape[i] for i in out_axis)
    batch_size = shape[batch_axis] if isinstance(batch_axis, int) else \
        math.prod(shape[i] for i in batch_axis)
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


def _complex_uniform(key, shape, dtype):
    """Uniform on the disk of radius sqrt(2) in the complex plane (zero mean, unit variance)."""
    key_r, key_theta = random_keys.split(key)
    real_dtype = np.array(0, dtype).real.dtype
    r = ufuncs.sqrt(2 * distributions.uniform(key_r, shape, real_dtype)).astype(dtype)
    theta = 2 * np.pi * distributions.uniform(key_theta, shape, real_dtype).astype(dtype)
    return r * ufuncs.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
    """A complex normal with its modulus truncated to `upper` (inverse-CDF sampling)."""
    key_r, key_theta = random_keys.split(key)
    real_dtype = np.array(0, dtype).real.dtype
    t = ((1 - ufuncs.exp(creation.array(-(upper ** 2), dtype)))
         * distributions.uniform(key_r, shape, real_dtype).astype(dtype))
    r = ufuncs.sqrt(-ufuncs.log(1 - t))
    theta = 2 * np.pi * distributions.uniform(key_theta, shape, real_dtype).astype(dtype)
    return r * ufuncs.exp(1j * theta)


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None):
    """Samples with variance `scale / n`, n the fan-in, fan-out, their average or their
    geometric mean (`mode`), from a "truncated_normal", "normal" or "uniform" `distribution`
    (complex dtypes: on a disk, or a modulus-truncated complex normal, as JAX)."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _init_sharding("variance_scaling", out_sharding)
        shape = _shape(shape)
        dtype = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = creation.array(scale / denominator, dtype=dtype)
        is_float = dtypes.is_float(dtype)
        if distribution == "truncated_normal":
            if not is_float:
                # .95311164380491208: stddev of a complex standard normal truncated to 2.
                stddev = ufuncs.sqrt(variance) / creation.array(.95311164380491208, dtype)
                return _complex_truncated_normal(key, 2, shape, dtype) * stddev
            # .87962566103423978 is the stddev of a standard normal truncated to (-2, 2).
            stddev = ufuncs.sqrt(variance) / creation.array(.87962566103423978, dtype)
            return distributions.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return distributions.normal(key, shape, dtype) * ufuncs.sqrt(variance)
        if distribution == "uniform":
            if not is_float:
                return _complex_uniform(key, shape, dtype) * ufuncs.sqrt(variance)
            return distributions.uniform(key, shape, dtype, -1) * ufuncs.sqrt(3 * variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
    return init


glorot_uniform = partial(variance_scaling, 1.0, "fan_avg", "uniform")
glorot_normal = partial(variance_scaling, 1.0, "fan_avg", "truncated_normal")
lecun_uniform = partial(variance_scaling, 1.0, "fan_in", "uniform")
lecun_normal = partial(variance_scaling, 1.0, "fan_in", "truncated_normal")
he_uniform = partial(variance_scaling, 2.0, "fan_in", "uniform")
he_normal = partial(variance_scaling, 2.0, "fan_in", "truncated_normal")
xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def _qr(a):
    try:
        from gpuarr.numpy import linalg
    except ImportError as e:
        raise NotImplementedError("orthogonal needs gpuarr.numpy.linalg.qr") from e
    return linalg.qr(a)


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A (scaled) matrix with orthonormal columns or rows, from the QR decomposition of a
    normal sample with the signs of R's diagonal folded in, as JAX does."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _init_sharding("orthogonal", out_sharding)
        shape = _shape(shape)
        dtype = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if 0 in shape:  # nothing to orthogonalise (and no key drawn), as in JAX
            return creation.zeros(shape, dtype)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        a = distributions.normal(key, matrix_shape, dtype)
        q, r = _qr(a)
        k = min(matrix_shape)
        diag = manipulation.stack([r[i, i] for i in range(k)]) if k else r.reshape(0)
        q = q * lax_shape_ops.broadcast_in_dim(ufuncs.sign(diag), q.shape, (1,))
        if n_rows < n_cols:
            q = q.T
        q = manipulation.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        q = manipulation.moveaxis(q, -1, column_axis)
        return scale * q
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """For 3-5D convolution kernels: zero except an orthogonal matrix at the spatial centre."""
    def init(key, shape, dtype=dtype, out_sharding=None):
        _init_sharding("delta_orthogonal", out_sharding)
        shape = _shape(shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((s - 1) // 2 for s in shape[:-2])  # JAX's centre rounds down
        w = creation.zeros(shape, _dtype(dtype))
        return w.at[centre].set(ortho)
    return init
