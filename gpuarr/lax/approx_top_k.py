"""`approx_max_k` and `approx_min_k`: the approximate top-k of XLA's ApproxTopK, as JAX runs it
off TPU. There the result is exact: the operand is sorted along the reduction dimension (the
largest or smallest first, ties in index order) and cut to `k`, or, with
`aggregate_to_topk=False`, to the reduction output size XLA's `ApproxTopKReductionOutputSize`
gives (`reduction_output_size` below), which a TPU would fill with approximate candidates.
"""
from __future__ import annotations

import math

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval, weak_type_rules
from gpuarr.errors import JaxRuntimeError
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import slicing
from gpuarr.lax.slicing import checked_impl

_LANE_TILING = 128    # XLA's TPU tiling of the reduction dimension for operands of rank >= 2
_CHUNK_TILING = 1024  # and for rank-1 operands


def _log2_floor(n: int) -> int:
    return n.bit_length() - 1 if n > 0 else 0


def _log2_ceil(n: int) -> int:
    return (n - 1).bit_length() if n > 0 else 0


def reduction_output_size(input_size: int, rank: int, k: int, recall_target: float,
                          aggregate_to_topk: bool, input_size_override: int = -1) -> int:
    """The size of the reduction dimension of approx_top_k's results (XLA's
    ApproxTopKReductionOutputSize): `k` when aggregating, else the number of windows needed
    for the recall target, in whole tiles, never more than the input size."""
    if aggregate_to_topk:
        return k
    tiling = _CHUNK_TILING if rank == 1 else _LANE_TILING
    if input_size <= tiling:
        return input_size
    if 0 <= input_size_override < input_size:
        raise JaxRuntimeError(
            f"INVALID_ARGUMENT: reduction_input_size_override: {input_size_override} should be "
            f"greater equals to operands[reduction_dim]: {input_size}")
    logical = input_size_override if input_size_override >= 0 else input_size
    if k == 1:
        return tiling
    recall = float(np.float32(recall_target))  # XLA takes the target as a C float
    if recall == 1.0:
        return input_size
    if not 0.0 < recall <= 1.0:
        raise JaxRuntimeError("INVALID_ARGUMENT: recall_target should range in (0,1]")
    # Expected recall with M windows is about exp((1 - k) / M): M = (1 - k) / log(recall).
    windows = min(max(int((1.0 - k) / math.log(recall)), tiling), logical)
    log2_reduction = _log2_floor(logical // windows)
    if log2_reduction == 0:
        return input_size
    log2_reduction = min(log2_reduction, _log2_ceil(input_size // tiling))
    tiles = -(-input_size // tiling)
    return -(-tiles // (1 << log2_reduction)) * tiling


def _check_options(recall_target, reduction_input_size_override, input_size):
    # What XLA's verifier of the ApproxTopK call rejects, whether or not it aggregates.
    if not 0.0 < float(np.float32(recall_target)) <= 1.0:
        raise JaxRuntimeError(f"approx_top_k: recall_target out of range: expected a value in "
                              f"(0, 1], got {recall_target}")
    if 0 <= reduction_input_size_override < input_size:
        raise JaxRuntimeError(
            f"approx_top_k: reduction_input_size_override out of range: it must be -1 or at "
            f"least the size of the reduction dimension ({input_size}), got "
            f"{reduction_input_size_override}")


def _approx_top_k_abstract(operand, *, aggregate_to_topk, is_max_k, k, recall_target,
                           reduction_dimension, reduction_input_size_override):
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if operand.ndim == 0:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {operand.shape}")
    if not -operand.ndim <= reduction_dimension < operand.ndim:
        raise IndexError(f"approx_top_k reduction_dimension {reduction_dimension} is out of "
                         f"range for an operand of rank {operand.ndim}")
    dims = list(operand.shape)
    size = dims[reduction_dimension]
    if size < k:
        raise ValueError(f"k must be smaller than the size of reduction_dim {size}, got {k}")
    if not dtypes.is_float(operand.dtype):
        raise ValueError("operand must be a floating type")
    _check_options(recall_target, reduction_input_size_override, size)
    dims[reduction_dimension] = reduction_output_size(
        size, len(dims), k, recall_target, aggregate_to_topk, reduction_input_size_override)
    shape = tuple(dims)
    return [ShapedArray(shape, operand.dtype, operand.weak_type), ShapedArray(shape, np.int32)]


def _approx_top_k_impl(operand, *, aggregate_to_topk, is_max_k, k, recall_target,
                       reduction_dimension, reduction_input_size_override):
    operand = np.asarray(operand)
    axis = reduction_dimension % operand.ndim
    size = reduction_output_size(operand.shape[axis], operand.ndim, k, recall_target,
                                 aggregate_to_topk, reduction_input_size_override)
    moved = np.moveaxis(operand, axis, -1)
    wide = moved.astype(np.float64)
    nan = np.isnan(wide)
    # NaNs first, then the largest (smallest) values; -0.0 ties with 0.0; ties by index.
    key = np.where(nan, 0.0, -wide if is_max_k else wide)
    order = np.lexsort((key, ~nan), axis=-1)[..., :size]
    values = np.take_along_axis(moved, order, axis=-1)
    return [np.moveaxis(values, -1, axis), np.moveaxis(order.astype(np.int32), -1, axis)]


def _approx_top_k_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    values, indices = approx_top_k_p.bind(x, **params)
    if type(t) is Zero:
        return [values, indices], [Zero.from_primal(values), Zero.from_primal(indices)]
    axis = params["reduction_dimension"] % get_aval(x).ndim
    return [values, indices], [slicing.take_along_axis(t, indices, axis),
                               Zero.from_primal(indices)]


def _approx_top_k_batch(axis_size, vals, dims, *, reduction_dimension, **params):
    (x,), (d,) = vals, dims
    unbatched = [i for i in range(get_aval(x).ndim) if i != d]
    outs = approx_top_k_p.bind(x, reduction_dimension=unbatched[reduction_dimension], **params)
    return outs, [d, d]


approx_top_k_p = Primitive("approx_top_k", multiple_results=True)
impl_rules[approx_top_k_p] = _approx_top_k_impl
abstract_eval_rules[approx_top_k_p] = _approx_top_k_abstract
checked_impl(approx_top_k_p)
weak_type_rules[approx_top_k_p] = lambda x, **params: [bool(getattr(x, "weak_type", False)),
                                                       False]
ad.jvp_rules[approx_top_k_p] = _approx_top_k_jvp
batch_rules[approx_top_k_p] = _approx_top_k_batch


def _bind(operand, k, reduction_dimension, recall_target, is_max_k, reduction_input_size_override,
          aggregate_to_topk):
    values, indices = approx_top_k_p.bind(
        operand, aggregate_to_topk=bool(aggregate_to_topk), is_max_k=is_max_k, k=int(k),
        recall_target=float(recall_target), reduction_dimension=int(reduction_dimension),
        reduction_input_size_override=int(reduction_input_size_override))
    return values, indices


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The `k` largest values of a floating-point `operand` along `reduction_dimension` and
    their int32 indices, largest first (exact here, as JAX off TPU). With
    `aggregate_to_topk=False` the results keep `reduction_output_size(...)` entries instead."""
    return _bind(operand, k, reduction_dimension, recall_target, True,
                 reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The `k` smallest values of a floating-point `operand` along `reduction_dimension` and
    their int32 indices, smallest first; otherwise as `approx_max_k`."""
    return _bind(operand, k, reduction_dimension, recall_target, False,
                 reduction_input_size_override, aggregate_to_topk)
