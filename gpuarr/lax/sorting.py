"""Sorting primitives: multi-operand `sort` (lexicographic on the first `num_keys` operands) and
`top_k`. Floats sort with NaNs last and -0.0 equal to 0.0, as in JAX."""
from __future__ import annotations

import math

import numpy as np

from gpuarr import dtypes
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules, get_aval, weak_type_rules
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import batch_rules
from gpuarr.lax import shape_ops, slicing
from gpuarr.lax.slicing import checked_impl


def _sort_keys(x):
    """NumPy lexsort keys (least significant first) ordering `x` as XLA's total order does."""
    if dtypes.is_complex(x.dtype):
        return [np.imag(x), np.real(x)]
    if dtypes.is_float(x.dtype) or x.dtype.name == "bfloat16":
        xf = x.astype(np.float64)
        nan = np.isnan(xf)
        return [np.where(nan, 0.0, xf) + 0.0, nan]
    return [x]


def _lex_order(keys, axis):
    """The stable permutation sorting the `keys` (most significant first) along `axis`."""
    moved = [np.moveaxis(k, axis, -1) for k in keys]
    flat = []
    for k in reversed(moved):
        flat.extend(_sort_keys(k))
    if len(flat) == 1:
        order = np.argsort(flat[0], axis=-1, kind="stable")
    else:
        order = _lexsort_nd(flat)
    return np.moveaxis(order, -1, axis)


def _lexsort_nd(keys):
    shape = np.broadcast_shapes(*[k.shape for k in keys])
    return np.lexsort([np.broadcast_to(k, shape) for k in keys], axis=-1)


def _sort_impl(*operands, dimension, is_stable, num_keys):
    operands = [np.asarray(o) for o in operands]
    order = _lex_order(operands[:num_keys], dimension)
    return [np.take_along_axis(o, order, axis=dimension) for o in operands]


def _sort_abstract(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort requires at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands):
        raise TypeError(f"sort operands must all have the same shape, got "
                        f"{[o.shape for o in operands]}.")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort num_keys={num_keys} must be between 1 and the number of operands "
                         f"({len(operands)}).")
    if not 0 <= dimension < max(len(shape), 1):
        raise ValueError(f"sort dimension {dimension} is out of bounds for operands of shape {shape}.")
    return list(operands)


def _sort_jvp(primals, tangents, dimension, is_stable, num_keys):
    # As JAX's: the permutation as unsigned indices, gathered along `dimension` with every
    # other axis a batch axis.
    shape = get_aval(primals[0]).shape
    index_dtype = np.uint32 if math.prod(shape) < 1 << 32 else np.uint64
    outs = sort_p.bind(*primals, shape_ops.broadcasted_iota(index_dtype, shape, dimension),
                       dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    batch = tuple(np.delete(np.arange(len(shape), dtype=np.int64), dimension))
    dnums = slicing.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(dimension,),
                                           start_index_map=(dimension,),
                                           operand_batching_dims=batch,
                                           start_indices_batching_dims=batch)
    idx = shape_ops.expand_dims(outs[-1], (len(shape),))
    out_t = [Zero.from_primal(o) if type(t) is Zero else slicing.gather(
        t, idx, dnums, (1,) * len(shape), mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS)
        for o, t in zip(outs[:-1], tangents)]
    return outs[:-1], out_t


def _sort_batch(axis_size, vals, dims, dimension, is_stable, num_keys):
    vals = [batching.move_to(v, d, 0, axis_size) for v, d in zip(vals, dims)]
    outs = sort_p.bind(*vals, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


sort_p = Primitive("sort", multiple_results=True)
impl_rules[sort_p] = _sort_impl
abstract_eval_rules[sort_p] = _sort_abstract
checked_impl(sort_p)
weak_type_rules[sort_p] = lambda *ops, **params: [bool(getattr(o, "weak_type", False)) for o in ops]
ad.jvp_rules[sort_p] = _sort_jvp
batch_rules[sort_p] = _sort_batch


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort along `dimension`. A sequence of operands sorts lexicographically by the first
    `num_keys` of them and permutes the rest alike (returning a tuple)."""
    single = not isinstance(operand, (tuple, list))
    ops = [operand] if single else list(operand)
    nd = get_aval(ops[0]).ndim
    if not -max(nd, 1) <= dimension < max(nd, 1):
        raise ValueError(f"sort dimension {dimension} is out of bounds for an array of rank {nd}.")
    dim = int(dimension) % nd if nd else 0
    outs = sort_p.bind(*ops, dimension=dim, is_stable=bool(is_stable), num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sort `keys` along `dimension` and apply the same permutation to `values`."""
    k, v = sort([keys, values], dimension, is_stable, 1)
    return k, v


# ---------------------------------------------------------------- top_k


def _descending_key(x):
    if dtypes.is_float(x.dtype) or x.dtype.name == "bfloat16":
        xf = x.astype(np.float64)
        return [np.where(np.isnan(xf), -np.inf, -xf), ~np.isnan(xf)]  # NaN ranks highest
    if x.dtype == np.bool_:
        return [~x]
    return [~x] if dtypes.is_int(x.dtype) else [-x]


def _top_k_impl(operand, k, axis):
    operand = np.asarray(operand)
    moved = np.moveaxis(operand, axis, -1)
    keys = _descending_key(moved)
    order = np.argsort(keys[0], axis=-1, kind="stable") if len(keys) == 1 else _lexsort_nd(keys)
    order = order[..., :k]
    vals = np.take_along_axis(moved, order, axis=-1)
    return [np.moveaxis(vals, -1, axis), np.moveaxis(order.astype(np.int32), -1, axis)]


def _top_k_abstract(operand, k, axis):
    if operand.ndim == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got shape ()")
    if dtypes.is_complex(operand.dtype):
        raise TypeError("top_k does not accept complex operands")
    if not 0 <= k <= operand.shape[axis]:
        raise ValueError(f"k argument to top_k must be between 0 and the size of axis {axis} "
                         f"({operand.shape[axis]}), got k={k}.")
    shape = list(operand.shape)
    shape[axis] = k
    return [operand.update(shape=tuple(shape)), ShapedArray(tuple(shape), np.int32)]


def _top_k_jvp(primals, tangents, k, axis):
    (x,), (t,) = primals, tangents
    vals, idx = top_k_p.bind(x, k=k, axis=axis)
    if type(t) is Zero:
        return [vals, idx], [Zero.from_primal(vals), Zero.from_primal(idx)]
    return [vals, idx], [slicing.take_along_axis(t, idx, axis), Zero.from_primal(idx)]


def _top_k_batch(axis_size, vals, dims, k, axis):
    (x,), (d,) = vals, dims
    new_axis = axis + (d <= axis)
    return top_k_p.bind(x, k=k, axis=new_axis), [d, d]


top_k_p = Primitive("top_k", multiple_results=True)
impl_rules[top_k_p] = _top_k_impl
abstract_eval_rules[top_k_p] = _top_k_abstract
checked_impl(top_k_p)
weak_type_rules[top_k_p] = lambda x, **params: [bool(getattr(x, "weak_type", False)), False]
ad.jvp_rules[top_k_p] = _top_k_jvp
batch_rules[top_k_p] = _top_k_batch


def top_k(operand, k: int, *, axis: int = -1):
    """The `k` largest entries along `axis` (descending; ties keep the lower index first) and
    their int32 indices, as a list `[values, indices]` (as JAX returns them)."""
    nd = get_aval(operand).ndim
    if nd == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got shape ()")
    if not -nd <= axis < nd:
        raise ValueError(f"top_k axis {axis} is out of bounds for an array of rank {nd}.")
    vals, idx = top_k_p.bind(operand, k=int(k), axis=int(axis) % nd)
    return [vals, idx]
