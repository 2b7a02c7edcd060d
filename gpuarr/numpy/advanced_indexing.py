"""NumPy advanced indexing (integer arrays mixed with ints, slices, None and Ellipsis) as one gather.

`to_gather(shape, idx)` turns an index tuple into an `Indexer`: the gather indices, dimension
numbers and slice sizes that read `x[idx]`. The same Indexer drives `.at[idx]` scatters, whose
updates have the shape of `x[idx]`. NumPy's rules apply: integer arrays (and ints next to them)
broadcast together; their dimensions replace the indexed axes where they are adjacent in the
index, and go first when a slice or None separates them.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.core import Tracer, get_aval
from gpuarr.errors import NonConcreteBooleanIndexError
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import lax, slicing
from gpuarr.lax import shape_ops as lax_shape_ops

_ARRAYS = (Array, Tracer, np.ndarray, np.generic)


class Indexer(NamedTuple):
    indices: object                 # int32[batch..., k]
    dnums: slicing.GatherDimensionNumbers
    slice_sizes: tuple
    slice_shape: tuple              # the shape of x[idx]
    unique_indices: bool
    indices_are_sorted: bool


def _is_int(i):
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _index_error_type(i, pos):
    dt = get_aval(i).dtype if isinstance(i, _ARRAYS) else np.result_type(i)
    return TypeError(f"Indexer must have integer or boolean type, got indexer with type {dt} at "
                     f"position {pos}, indexer value {i}")


class _Separator:
    """An Ellipsis that stands for no axes between advanced indices: it takes no axis but,
    as in NumPy, keeps the indices on its two sides apart (their axes then go first)."""

    def __repr__(self):
        return "..."


SEPARATOR = _Separator()


def normalize_index(idx, shape):
    """Index tuple with lists made arrays, concrete boolean masks made integer arrays and the
    Ellipsis expanded; entries are ints, slices, None, integer arrays/tracers, or SEPARATOR
    where an Ellipsis covering no axes sits among array indices."""
    if isinstance(idx, list):  # ambiguous in NumPy (a tuple or an array?): refused, as in JAX
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not allowed; "
                        "use `arr[array(seq)]` instead of `arr[seq]`.")
    if not isinstance(idx, tuple):
        idx = (idx,)
    ndim = len(shape)
    out = []
    for pos, i in enumerate(idx):
        if isinstance(i, list):
            i = np.asarray(i) if i else np.zeros((0,), np.int32)
        if isinstance(i, (bool, np.bool_)) or (isinstance(i, _ARRAYS) and get_aval(i).dtype == np.bool_):
            if isinstance(i, Tracer):
                concrete = i.to_concrete_value()  # known under grad, abstract under jit/vmap
                if concrete is None:
                    raise NonConcreteBooleanIndexError(i)
                i = concrete
            mask = np.asarray(i)
            if mask.ndim == 0:
                raise IndexError("Scalar boolean indices are not supported; use x[None] to add an "
                                 "axis or jnp.where(cond, x, y) to select.")
            if Ellipsis not in out:  # the axes it covers are known: check them, as JAX
                dim = sum(1 for j in out if j is not None and j is not SEPARATOR)
                expected = shape[dim:dim + mask.ndim]
                # JAX lets a mask's axis of size 0 stand for any axis (it selects nothing);
                # one with more axes than are left is "Too many indices", raised below.
                if len(expected) == mask.ndim and not all(
                        m in (0, s) for m, s in zip(mask.shape, expected)):
                    raise IndexError(f"boolean index did not match shape of indexed array in index "
                                     f"{dim}: got {mask.shape}, expected "
                                     f"{list(shape[dim:dim + mask.ndim])}")
            out.extend(np.nonzero(mask))
            continue
        if i is None or i is Ellipsis or i is SEPARATOR or isinstance(i, slice) or _is_int(i):
            out.append(i)
            continue
        if isinstance(i, _ARRAYS):
            if not dtypes.is_int(get_aval(i).dtype):
                raise _index_error_type(i, pos)
            out.append(i)
            continue
        if isinstance(i, float):
            raise _index_error_type(i, pos)
        if isinstance(i, str):
            raise TypeError(f"gpuarr does not support string indexing; got idx={i!r}")
        raise IndexError(f"Indexing with {type(i).__name__} at position {pos} is not supported; use "
                         "ints, slices, None, Ellipsis, integer arrays or boolean masks.")
    n_ell = sum(1 for i in out if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for i in out if i is not None and i is not Ellipsis and i is not SEPARATOR)
    if n_real > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {n_real} were "
                         "indexed")
    if n_ell:
        pos = next(k for k, i in enumerate(out) if i is Ellipsis)
        advanced = [i is not None and not isinstance(i, slice) for i in out]
        apart = any(advanced[:pos]) and any(advanced[pos + 1:]) and any(
            isinstance(i, _ARRAYS) for i in out)
        fill = [slice(None)] * (ndim - n_real) or ([SEPARATOR] if apart else [])
        out = out[:pos] + fill + out[pos + 1:]
    else:
        out = out + [slice(None)] * (ndim - n_real)
    return tuple(out)


def _as_index_array(i, size, wrap_negative):
    """An integer index as int32, negative entries counted from the end."""
    if isinstance(i, (np.ndarray, np.generic)) or _is_int(i):
        arr = np.asarray(i).astype(np.int64)
        if wrap_negative:
            arr = np.where(arr < 0, arr + size, arr)
        return np.clip(arr, np.iinfo(np.int32).min, np.iinfo(np.int32).max).astype(np.int32)
    aval = get_aval(i)
    i = lax_conversions.convert_element_type(i, np.int32) if aval.dtype != np.int32 else i
    if wrap_negative and not dtypes.is_unsigned_int(aval.dtype):
        # Scalar constants, which lax broadcasts (JAX's _normalize_index prints them so).
        i = lax.select(lax.lt(i, np.int32(0)), lax.add(i, np.int32(size)), i)
    return i


def to_gather(shape, idx, wrap_negative=True) -> Indexer:
    """The gather that reads `x[idx]` for `x` of `shape` (idx already normalized)."""
    adv_pos = [k for k, i in enumerate(idx)
               if i is not None and i is not SEPARATOR and not isinstance(i, slice)]
    has_arrays = any(not _is_int(idx[k]) for k in adv_pos)
    if not has_arrays:
        adv_pos = [k for k in adv_pos if not _is_int(idx[k])]
    adv_shapes = [get_aval(idx[k]).shape if isinstance(idx[k], _ARRAYS) else () for k in adv_pos]
    try:
        adv_shape = np.broadcast_shapes(*adv_shapes) if adv_pos else ()
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with "
                         f"shapes {' '.join(map(str, adv_shapes))}") from None
    contiguous = bool(adv_pos) and adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))

    # Output layout: ("win", dim, size) window dims, ("bat", key, size) batch dims.
    items, dim = [], 0
    starts, sizes = {}, [1] * len(shape)
    strided = {}
    adv_dims = {}
    for k, i in enumerate(idx):
        if i is None:
            items.append(("bat", ("new", k), 1))
            continue
        if i is SEPARATOR:
            continue
        n = shape[dim]
        if k in adv_pos:
            adv_dims[dim] = i
        elif _is_int(i):
            starts[dim] = int(i) + n if (int(i) < 0 and wrap_negative) else int(i)
        else:
            start, stop, step = i.indices(n)
            count = max(0, -(-(stop - start) // step)) if step > 0 else max(0, -(-(start - stop) // -step))
            if step == 1:
                starts[dim] = start
                sizes[dim] = count
                items.append(("win", dim, count))
            else:
                strided[dim] = start + step * np.arange(count)
                items.append(("bat", ("strided", dim), count))
        dim += 1
    if adv_pos:
        block = [("bat", ("adv", j), s) for j, s in enumerate(adv_shape)]
        if contiguous:
            before = sum(1 for k in range(adv_pos[0]) if idx[k] is None or isinstance(idx[k], slice))
            items = items[:before] + block + items[before:]
        else:
            items = block + items
    batch_items = [it for it in items if it[0] == "bat"]
    batch_shape = tuple(it[2] for it in batch_items)
    nb = len(batch_shape)
    adv_at = [p for p, it in enumerate(batch_items) if it[1][0] == "adv"]

    win_dims = {it[1] for it in items if it[0] == "win"}
    comps, start_index_map = [], []
    for d in range(len(shape)):
        if d in adv_dims:
            a = _as_index_array(adv_dims[d], shape[d], wrap_negative)
            a_shape = get_aval(a).shape if not isinstance(a, np.ndarray) else a.shape
            lead = len(adv_shape) - len(a_shape)
            view = [1] * nb
            for j, s in enumerate(a_shape):
                view[adv_at[lead + j]] = s
            comps.append((a, tuple(view)))
        elif d in strided:
            p = next(q for q, it in enumerate(batch_items) if it[1] == ("strided", d))
            view = [1] * nb
            view[p] = batch_shape[p]
            comps.append((strided[d].astype(np.int32), tuple(view)))
        elif d in starts and (starts[d] != 0 or d not in win_dims):
            comps.append((np.asarray(starts[d], np.int32), (1,) * nb))
        else:
            continue
        start_index_map.append(d)
    collapsed = tuple(d for d in start_index_map if d not in win_dims)
    offset_dims = tuple(p for p, it in enumerate(items) if it[0] == "win")
    slice_sizes = tuple(sizes[d] if d in win_dims else 1 for d in range(len(shape)))
    indices = _stack_components(comps, batch_shape)
    dnums = slicing.GatherDimensionNumbers(offset_dims, tuple(sorted(collapsed)), tuple(start_index_map))
    slice_shape = tuple(it[2] for it in items)
    unique = not adv_pos
    return Indexer(indices, dnums, slice_sizes, slice_shape, unique, unique)


def _stack_components(comps, batch_shape):
    """Broadcast each (values, view) to `batch_shape` and stack them along a new last axis."""
    nb = len(batch_shape)
    if all(isinstance(v, np.ndarray) for v, _ in comps):
        cols = [np.broadcast_to(np.reshape(v, view), batch_shape) for v, view in comps]
        return np.stack(cols, -1).astype(np.int32) if cols else np.zeros(batch_shape + (0,), np.int32)
    if len(comps) == 1 and get_aval(comps[0][0]).shape == batch_shape:
        return lax_shape_ops.expand_dims(comps[0][0], (nb,))  # as JAX's one gather index
    cols = []
    for v, view in comps:  # each into its axes of batch_shape + (1,), as JAX's
        v_shape = np.shape(v)
        dims = tuple(p for p, n in enumerate(view) if n != 1 or len(v_shape) == nb)
        if len(dims) != len(v_shape):  # unit axes of the index: place them by reshaping
            v, dims = lax_shape_ops.reshape(v, view), tuple(range(nb))
        cols.append(lax_shape_ops.broadcast_in_dim(v, batch_shape + (1,), dims))
    return lax.concatenate(cols, nb)


def _static_scalar_starts(idx):
    """True when every entry is a slice with step 1, None or a scalar int/traced int (no arrays):
    then the read is a dynamic_slice rather than a gather."""
    for i in idx:
        if i is None or i is SEPARATOR or _is_int(i):
            continue
        if isinstance(i, slice):
            if i.step not in (None, 1):
                return False
            continue
        if isinstance(i, _ARRAYS) and get_aval(i).shape == ():
            continue
        return False
    return True


def _dynamic_slice_read(x, idx, wrap_negative):
    """`x[idx]` for scalar (some traced) indices and unit-step slices, as JAX's dynamic-slice
    indexing traces it: one dynamic_slice (starts of one integer type when there are several),
    then a squeeze of the indexed axes and an expand_dims for the None entries."""
    shape = get_aval(x).shape
    starts, sizes, squeezed, new_axes, dim = [], [], [], [], 0
    for i in idx:
        if i is SEPARATOR:
            continue
        if i is None:
            new_axes.append(dim - len(squeezed) + len(new_axes))
            continue
        if isinstance(i, slice):
            start, stop, _ = i.indices(shape[dim])
            starts.append(start)
            sizes.append(max(0, stop - start))
        else:
            starts.append(i)
            sizes.append(1)
            squeezed.append(dim)
        dim += 1
    if len(starts) > 1:
        starts = [lax_conversions.convert_element_type(s, np.int32) for s in starts]
    out = slicing.dynamic_slice(x, starts, sizes, allow_negative_indices=wrap_negative) \
        if starts else x
    if squeezed:
        out = lax_shape_ops.squeeze(out, tuple(squeezed))
    return lax_shape_ops.expand_dims(out, tuple(new_axes)) if new_axes else out


def getitem(x, idx, *, mode=None, fill_value=None, wrap_negative_indices=True,
            indices_are_sorted=False, unique_indices=False):
    """`x[idx]` for any NumPy index, with JAX's out-of-bounds rules (clamp unless mode='fill')."""
    aval = get_aval(x)
    idx = normalize_index(idx, aval.shape)
    parsed = slicing.GatherScatterMode.from_any(
        slicing.GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    if aval.size and parsed is not slicing.GatherScatterMode.FILL_OR_DROP and _static_scalar_starts(idx):
        return _dynamic_slice_read(x, idx, wrap_negative_indices)
    ix = to_gather(aval.shape, idx, wrap_negative_indices)
    if 0 in ix.slice_shape:
        return lax_shape_ops.full(ix.slice_shape, 0, aval.dtype)
    for d, (k, n) in enumerate(zip(ix.slice_sizes, aval.shape)):
        if k > n:
            raise IndexError(f"index is out of bounds for axis {d} with size {n}")
    return slicing.gather(x, ix.indices, ix.dnums, ix.slice_sizes, mode=parsed, fill_value=fill_value,
                          indices_are_sorted=indices_are_sorted or ix.indices_are_sorted,
                          unique_indices=unique_indices or ix.unique_indices)


def scatter_update(x, idx, values, scatter_fn, *, mode=None, wrap_negative_indices=True,
                   indices_are_sorted=False, unique_indices=False, **kw):
    """`x` with `values` combined by `scatter_fn` into the positions `x[idx]` reads."""
    aval = get_aval(x)
    idx = normalize_index(idx, aval.shape)
    ix = to_gather(aval.shape, idx, wrap_negative_indices)
    if 0 in ix.slice_shape or aval.size == 0:
        return x
    vals = _broadcast_values(values, ix.slice_shape)
    dn = ix.dnums
    sdn = slicing.ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map)
    return scatter_fn(x, ix.indices, vals, sdn,
                      indices_are_sorted=indices_are_sorted or ix.indices_are_sorted,
                      unique_indices=unique_indices or ix.unique_indices, mode=mode, **kw)


def _broadcast_values(values, shape):
    vshape = get_aval(values).shape
    while len(vshape) > len(shape) and vshape[0] == 1:
        values = lax_shape_ops.reshape(values, vshape[1:])
        vshape = vshape[1:]
    try:
        target = np.broadcast_shapes(vshape, shape)
    except ValueError:
        target = None
    if target != tuple(shape):
        raise ValueError(f"Incompatible shapes for broadcasting: the update values of shape {vshape} "
                         f"cannot be broadcast to the indexed shape {tuple(shape)}.")
    if vshape == tuple(shape):
        return values
    lead = len(shape) - len(vshape)
    return lax_shape_ops.broadcast_in_dim(values, tuple(shape), tuple(range(lead, len(shape))))
