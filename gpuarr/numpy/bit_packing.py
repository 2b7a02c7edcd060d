"""packbits and unpackbits: booleans packed eight to a uint8, in big or little bit order."""
from __future__ import annotations

import operator

import numpy as np

from gpuarr import dtypes
from gpuarr.core import get_aval
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import manipulation, reductions
from gpuarr.numpy.arguments import canonicalize_axis, check_arraylike, ensure_array, static_hashable


def packbits(a, axis=None, bitorder="big"):
    """Pack the truthiness of elements into uint8 bytes along `axis` (flattened by default)."""
    check_arraylike("packbits", a)
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    a = ensure_array(a)
    if not (dtypes.is_int(get_aval(a).dtype) or get_aval(a).dtype == np.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    if axis is None:
        a, axis = manipulation.ravel(a), 0
    ax = canonicalize_axis(axis, get_aval(a).ndim)
    bits = lax_conversions.convert_element_type(lax.ne(a, lax_shape_ops.full_like(a, 0)), np.uint8)
    n = get_aval(bits).shape[ax]
    pad_to = -(-n // 8) * 8
    cfg = [(0, 0, 0)] * get_aval(bits).ndim
    cfg[ax] = (0, pad_to - n, 0)
    bits = lax.pad(bits, np.uint8(0), cfg)
    shape = list(get_aval(bits).shape)
    shape[ax:ax + 1] = [pad_to // 8, 8]
    bits = lax_shape_ops.reshape(bits, tuple(shape))
    weights = np.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else
                       [1, 2, 4, 8, 16, 32, 64, 128], np.uint8)
    wshape = [1] * len(shape)
    wshape[ax + 1] = 8
    return reductions.sum(lax.mul(bits, weights.reshape(wshape)), axis=ax + 1, dtype=np.uint8)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of uint8 elements as a uint8 array of 0s and 1s along `axis`."""
    check_arraylike("unpackbits", a)
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    a = ensure_array(a)
    if get_aval(a).dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    for static in (axis, count):  # static in JAX's unpackbits: arrays are unhashable
        static_hashable(static)
    if axis is None:
        a, axis = manipulation.ravel(a), 0
    # JAX swaps `axis` with the last one in a NumPy permutation: its bad axes give NumPy's
    # indexing errors, the last axis (-1) being indexed first.
    perm = np.arange(get_aval(a).ndim)
    _, ax = perm[-1], int(perm[axis])
    shifts = np.arange(7, -1, -1, dtype=np.uint8) if bitorder == "big" else np.arange(8, dtype=np.uint8)
    x = lax_shape_ops.reshape(a, get_aval(a).shape[:ax + 1] + (1,) + get_aval(a).shape[ax + 1:])
    sshape = [1] * get_aval(x).ndim
    sshape[ax + 1] = 8
    bits = lax.bitwise_and(lax.shift_right_logical(
        x, lax_shape_ops.broadcast_in_dim(shifts.reshape(sshape), get_aval(x).shape[:ax + 1] + (8,) +
                                          get_aval(x).shape[ax + 2:], tuple(range(len(sshape))))),
        np.uint8(1))
    shape = list(get_aval(a).shape)
    shape[ax] *= 8
    out = lax_shape_ops.reshape(bits, tuple(shape))
    if count is not None:
        count = operator.index(count)
        if count > shape[ax]:  # padded with zero bits, as in JAX and NumPy
            widths = [(0, 0, 0)] * len(shape)
            widths[ax] = (0, count - shape[ax], 0)
            return lax.pad(out, np.uint8(0), widths)
        out = lax.slice_in_dim(out, 0, len(range(shape[ax])[:count]), axis=ax)
    return out
