"""gpuarr.ops: segment reductions (`segment_sum`, `segment_max`, `segment_min`,
`segment_prod`), as `jax.ops`.

Each is one scatter into an array of the reduction's identity, with JAX's defaults: ids
outside [0, num_segments) are dropped (mode FILL_OR_DROP, negative ids are not wrapped), and
`bucket_size` reduces buckets of `bucket_size` consecutive elements separately before
combining them (for accuracy of long sums and products).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import slicing as lax_slicing
from gpuarr.lax.arguments import check_no_sharding
from gpuarr.lax.slicing import GatherScatterMode, ScatterDimensionNumbers
from gpuarr.numpy import creation, manipulation, reductions
from gpuarr.numpy.arguments import check_arraylike, concrete_int, concrete_value


def _identity(name: str, dtype) -> np.ndarray:
    """The value the reduction `name` starts from, in `dtype`."""
    if name in ("segment_sum", "segment_prod"):
        return np.array(name == "segment_prod", dtype)
    lowest = name == "segment_max"
    if dtype == np.bool_:
        return np.array(not lowest, dtype)
    if dtypes.is_int(dtype):
        info = dtypes.iinfo(dtype)
        return np.array(info.min if lowest else info.max, dtype)
    return np.array(-np.inf if lowest else np.inf, dtype)


def _segment_update(name: str, scatter: Callable, reducer: Callable, data, segment_ids,
                    num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                    out_sharding):
    check_arraylike(name, data, segment_ids)
    check_no_sharding(f"ops.{name}", out_sharding)
    data, segment_ids = creation.asarray(data), creation.asarray(segment_ids)
    if data.dtype == np.bool_ and name in ("segment_sum", "segment_prod"):
        op = "add" if name == "segment_sum" else "mul"
        raise TypeError(f"{op} does not accept dtype bool at position 0. Accepted dtypes at "
                        "position 0 are subtypes of integer, floating, complexfloating.")
    if segment_ids.ndim != 1 or data.ndim == 0 or segment_ids.shape[0] != data.shape[0]:
        raise ValueError(f"{name} takes one segment id per row of data (along its leading "
                         f"axis): got segment_ids of shape {segment_ids.shape} for data of "
                         f"shape {data.shape}.")
    mode = GatherScatterMode.FILL_OR_DROP if mode is None else GatherScatterMode.from_any(mode)
    if num_segments is None:  # needs the ids' values: under jit, pass num_segments
        ids = concrete_value(segment_ids, f"{name}() `num_segments` argument.")
        num_segments = np.max(np.asarray(ids)) + 1  # ValueError when there are no ids
    num_segments = concrete_int(num_segments, f"{name}() `num_segments` argument.")
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    ids = [segment_ids]
    shape = (num_segments, *data.shape[1:])
    if bucket_size is not None:  # one row of partial results per bucket, combined below
        ids = [creation.arange(segment_ids.shape[0]) // bucket_size, segment_ids]
        shape = (-(-segment_ids.shape[0] // bucket_size), *shape)
    out = creation.full(shape, _identity(name, data.dtype), data.dtype)
    indices = manipulation.stack([i.astype(np.int32) for i in ids], axis=-1)
    dnums = ScatterDimensionNumbers(
        update_window_dims=tuple(range(1, data.ndim)),
        inserted_window_dims=tuple(range(len(ids))),
        scatter_dims_to_operand_dims=tuple(range(len(ids))))
    out = scatter(out, indices, data, dnums, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    return out if bucket_size is None else reducer(out, axis=0).astype(data.dtype)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """Sum of the rows of `data` in each segment: out[i] adds every data[j] with
    segment_ids[j] == i (0 for an empty segment). `num_segments` defaults to max(ids) + 1
    (which needs concrete ids); ids outside the range are dropped unless `mode` says
    otherwise."""
    return _segment_update("segment_sum", lax_slicing.scatter_add, reductions.sum, data, segment_ids,
                           num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                           out_sharding)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """Product of the rows of `data` in each segment (1 for an empty segment); arguments as
    `segment_sum`."""
    return _segment_update("segment_prod", lax_slicing.scatter_mul, reductions.prod, data, segment_ids,
                           num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                           out_sharding)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """Maximum of the rows of `data` in each segment (the dtype's lowest value, -inf for
    floats, for an empty segment); arguments as `segment_sum`."""
    return _segment_update("segment_max", lax_slicing.scatter_max, reductions.max, data, segment_ids,
                           num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                           out_sharding)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
    """Minimum of the rows of `data` in each segment (the dtype's highest value, inf for
    floats, for an empty segment); arguments as `segment_sum`."""
    return _segment_update("segment_min", lax_slicing.scatter_min, reductions.min, data, segment_ids,
                           num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                           out_sharding)
