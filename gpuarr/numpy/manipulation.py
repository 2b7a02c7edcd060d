"""Shape manipulation: reshape, ravel, transpose, moveaxis, swapaxes, squeeze, expand_dims,
broadcast_to, concatenate, stack."""
from __future__ import annotations

import math

import numpy as np

from gpuarr import lax
from gpuarr.core import get_aval
from gpuarr.numpy._util import (
    broadcast_arrays as _broadcast_arrays,
    broadcast_to as _broadcast_to,
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    ensure_array,
    promote_dtypes,
)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """Give `a` a new shape; one dimension may be -1 (inferred)."""
    check_arraylike("reshape", a)
    if shape is None:
        shape = newshape
    a = ensure_array(a)
    size = get_aval(a).size
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape = tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise TypeError(f"cannot reshape array of shape {get_aval(a).shape} (size {size}) into "
                            f"shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise TypeError(f"cannot reshape array of shape {get_aval(a).shape} (size {size}) into shape "
                        f"{shape} (size {math.prod(shape)})")
    if order == "F":
        nd = get_aval(a).ndim
        t = lax.transpose(a, tuple(reversed(range(nd))))
        return lax.transpose(lax.reshape(t, tuple(reversed(shape))), tuple(reversed(range(len(shape)))))
    return lax.reshape(a, shape)


def ravel(a, order="C"):
    """Flatten to one dimension."""
    check_arraylike("ravel", a)
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    """Permute axes (reverse them by default)."""
    check_arraylike("transpose", a)
    a = ensure_array(a)
    nd = get_aval(a).ndim
    axes = tuple(reversed(range(nd))) if axes is None else tuple(canonicalize_axis(i, nd) for i in axes)
    return lax.transpose(a, axes)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    nd = get_aval(x).ndim
    return lax.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def moveaxis(a, source, destination):
    """Move axes `source` to positions `destination`."""
    check_arraylike("moveaxis", a)
    a = ensure_array(a)
    nd = get_aval(a).ndim
    src = canonicalize_axes(source, nd)
    dst = canonicalize_axes(destination, nd)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, tuple(order))


def swapaxes(a, axis1, axis2):
    """Interchange two axes."""
    check_arraylike("swapaxes", a)
    a = ensure_array(a)
    nd = get_aval(a).ndim
    perm = list(range(nd))
    i, j = canonicalize_axis(axis1, nd), canonicalize_axis(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, tuple(perm))


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those in `axis`)."""
    check_arraylike("squeeze", a)
    a = ensure_array(a)
    shape = get_aval(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = canonicalize_axes(axis, len(shape))
    return lax.squeeze(a, axes)


def expand_dims(a, axis):
    """Insert size-1 axes at `axis` (an int or tuple) of the result."""
    check_arraylike("expand_dims", a)
    a = ensure_array(a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = get_aval(a).ndim + len(axes)
    return lax.expand_dims(a, canonicalize_axes(axes, ndim))


def broadcast_to(array, shape):
    """Broadcast `array` to `shape` with NumPy's rules."""
    check_arraylike("broadcast_to", array)
    return _broadcast_to(ensure_array(array), (shape,) if isinstance(shape, int) else shape)


def broadcast_arrays(*args):
    """Broadcast all arguments to one shape."""
    check_arraylike("broadcast_arrays", *args)
    return [_broadcast_to(ensure_array(a), s) for a, s in
            zip(args, [np.broadcast_shapes(*[get_aval(ensure_array(a)).shape for a in args])] * len(args))]


def concatenate(arrays, axis=0, dtype=None):
    """Join a sequence of arrays along an existing axis (axis=None flattens first)."""
    if isinstance(arrays, (list, tuple)) and not arrays:
        raise ValueError("Need at least one array to concatenate.")
    arrays = [ensure_array(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        arrays = [a.astype(dtype) for a in arrays]
    nd = get_aval(arrays[0]).ndim
    if nd == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    return lax.concatenate(arrays, canonicalize_axis(axis, nd))


def stack(arrays, axis=0, out=None, dtype=None):
    """Join arrays along a new axis."""
    if not len(arrays):
        raise ValueError("Need at least one array to stack.")
    arrays = [ensure_array(a) for a in arrays]
    shapes = {get_aval(a).shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError("All input arrays must have the same shape.")
    nd = get_aval(arrays[0]).ndim + 1
    ax = canonicalize_axis(axis, nd)
    return concatenate([lax.expand_dims(a, (ax,)) for a in arrays], ax, dtype=dtype)


_ = _broadcast_arrays
