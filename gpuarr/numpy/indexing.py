"""NumPy-style indexing (`x[idx]`) built from static slices, squeezes and (for arrays) gathers."""
from __future__ import annotations

import numpy as np

from gpuarr.core import get_aval
from gpuarr.errors import ConcretizationTypeError
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops


def _is_int_index(i):
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def getitem(x, idx):
    """`x[idx]` with JAX's semantics: out-of-bounds integer reads clamp.

    Ints, slices, None and Ellipsis become static slices, squeezes and broadcasts; integer arrays, traced
    indices and (concrete) boolean masks go through `advanced_indexing`, one gather in all.
    """
    from gpuarr.numpy import advanced_indexing
    scalar_mask = _scalar_bool_position(idx)
    if scalar_mask is not None:
        return _scalar_bool_getitem(x, idx, *scalar_mask)
    norm = advanced_indexing.normalize_index(idx, get_aval(x).shape)
    if all(i is None or isinstance(i, slice) or _is_int_index(i) for i in norm):
        return basic_getitem(x, norm)
    return advanced_indexing.getitem(x, norm)


def _scalar_bool_position(idx):
    """(position, value) of the one concrete scalar boolean in an index of ints, slices, None
    and Ellipsis (as `x[True]` or `x[..., False, 0]`); None for any other index."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    found = None
    for pos, i in enumerate(idx):
        if isinstance(i, (bool, np.bool_)) or (
                hasattr(i, "dtype") and getattr(i, "shape", None) == () and i.dtype == np.bool_
                and not hasattr(i, "_trace")):
            if found is not None:
                return None
            found = (pos, bool(i))
        elif not (i is None or i is Ellipsis or isinstance(i, slice) or _is_int_index(i)):
            return None
    return found


def _scalar_bool_getitem(x, idx, pos, value):
    """A scalar boolean index adds an axis of length 1 (True) or 0 (False) where it stands, as a
    0-d mask does in NumPy and JAX."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    ndim = get_aval(x).ndim
    n_real = sum(1 for k, i in enumerate(idx) if k != pos and i is not None and i is not Ellipsis)
    axis = sum(1 for i in idx[:pos] if i is None or isinstance(i, slice))
    if any(i is Ellipsis for i in idx[:pos]):
        axis += ndim - n_real
    out = getitem(x, idx[:pos] + (None,) + idx[pos + 1:])
    return out if value else lax.slice_in_dim(out, 0, 0, axis=axis)


def basic_getitem(x, idx):
    """Indexing with ints, slices, None and Ellipsis only."""
    shape = get_aval(x).shape
    n_ellipsis = sum(1 for i in idx if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if n_real > len(shape):
        raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but {n_real} "
                         "were indexed")
    if n_ellipsis:
        pos = next(k for k, i in enumerate(idx) if i is Ellipsis)
        idx = idx[:pos] + (slice(None),) * (len(shape) - n_real) + idx[pos + 1:]
    else:
        idx = idx + (slice(None),) * (len(shape) - n_real)
    starts, limits, strides, out_shape, flips, squeezed, kept = [], [], [], [], [], [], []
    dim = 0
    for pos, i in enumerate(idx):
        if i is None:
            out_shape.append(1)
            continue
        size = shape[dim]
        if _is_int_index(i) or (isinstance(i, np.ndarray) and i.ndim == 0):
            i = int(i)
            if size == 0:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size 0")
            if not -size <= i < size:
                # Read through a gather: it clamps as JAX does, and checkify's index checks
                # see it, as they do in JAX.
                from gpuarr.numpy import advanced_indexing
                return advanced_indexing.getitem(x, idx)
            i = i % size
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
            squeezed.append(dim)
        elif isinstance(i, slice):
            try:
                start, stop, step = i.indices(size)
            except ConcretizationTypeError:  # a traced bound: JAX's IndexError
                raise IndexError(f"Slice entries must be static integers. Got {i} at position "
                                 f"{pos}") from None
            if step > 0:
                n = max(0, -(-(stop - start) // step))
                starts.append(start)
                limits.append(start + (n - 1) * step + 1 if n else start)
                strides.append(step)
            else:
                n = max(0, -(-(start - stop) // -step))
                lo = start + (n - 1) * step if n else 0
                starts.append(lo)
                limits.append(start + 1 if n else 0)
                strides.append(-step)
                flips.append(dim)
            kept.append(len(out_shape))
            out_shape.append(n)
        else:
            raise IndexError(f"Indexing with {type(i).__name__} is not supported; use ints, "
                             "slices, None, Ellipsis, integer arrays or boolean masks.")
        dim += 1
    out = x
    if tuple(starts) != (0,) * len(shape) or tuple(limits) != shape or any(s != 1 for s in strides):
        out = lax.slice(out, starts, limits, strides if any(s != 1 for s in strides) else None)
    # JAX's order: reverse, drop the int-indexed axes, then insert the None axes.
    if flips:
        out = lax_shape_ops.rev(out, tuple(flips))
    if squeezed:
        out = lax_shape_ops.squeeze(out, tuple(squeezed))
    if len(kept) != len(out_shape):
        out = lax_shape_ops.broadcast_in_dim(out, tuple(out_shape), tuple(kept))
    return out


def _set_last(x, value):
    """x with its first-axis last entry replaced by `value` (used by linspace endpoints)."""
    n = get_aval(x).shape[0]
    head = lax.slice_in_dim(x, 0, n - 1, axis=0)
    value = lax_shape_ops.broadcast_in_dim(lax_conversions.convert_element_type(value, get_aval(x).dtype),
                                           (1,) + get_aval(x).shape[1:], tuple(range(1, get_aval(x).ndim)))
    return lax.concatenate([head, value], 0)


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements, one array per axis (see gpuarr.numpy.selection)."""
    from gpuarr.numpy.selection import nonzero as _nonzero
    return _nonzero(a, size=size, fill_value=fill_value)
