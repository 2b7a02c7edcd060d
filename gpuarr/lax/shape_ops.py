"""Shape operations: broadcast_in_dim, reshape, transpose, squeeze, expand_dims and rev, and
the arrays made from a shape (iota, broadcasted_iota, full, full_like, the empty2
placeholder). reduce_sum lives here with the rules the reducer family shares, because it and
broadcast_in_dim are each other's transpose; the other reductions are in lax.py.
lax.py's elementwise rules are written with these operations, so this module does not import
it. Each primitive is a short stanza registering its rules right after its definition.
"""
from __future__ import annotations

import builtins
import enum
import math
import operator
from functools import partial

import numpy as np

from gpuarr import core, dtypes, narrow_types
from gpuarr.backends.host_threads import submit
from gpuarr.core import (
    Primitive,
    ShapedArray,
    abstract_eval_rules,
    get_aval,
    is_extended_dtype,
    physical_element_aval,
    weak_type_rules,
)
from gpuarr.impls import axis_reduction_prims, fresh_output_prims, impl_rules, narrow_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero, deflinear
from gpuarr.interpreters.batching import batch_rules
from gpuarr.interpreters.physical import physical_rules
from gpuarr.lax.arguments import _SCALARS, _as_operand, _check_kind, _dtype_of, _never_weak, check_no_sharding
from gpuarr.lax.conversions import _convert_weak

# ---------------------------------------------------------------- shape operations


def _broadcast_in_dim_impl(x, shape, broadcast_dimensions):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = x.shape[src]
    return np.broadcast_to(x.reshape(expanded), shape)


def _check_broadcast_nonnegative(shape, broadcast_dimensions):
    for arg, value in (("shape", shape), ("broadcast_dimensions", broadcast_dimensions)):
        if builtins.any(d < 0 for d in value):
            raise TypeError(f"broadcast_in_dim {arg} must have every element be nonnegative, "
                            f"got {value}.")


def _broadcast_in_dim_abstract(x, shape, broadcast_dimensions):
    _check_broadcast_nonnegative(shape, broadcast_dimensions)
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to operand "
                        f"ndim; got broadcast_dimensions {broadcast_dimensions} for operand ndim "
                        f"{x.ndim}.")
    for src, dst in enumerate(broadcast_dimensions):
        if not (0 <= dst < len(shape)) or x.shape[src] not in (1, shape[dst]):
            raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                            f"equal to their corresponding dimensions in the target broadcast "
                            f"shape; got operand of shape {x.shape}, target broadcast shape "
                            f"{shape}, broadcast_dimensions {broadcast_dimensions}")
    return [x.update(shape=shape)]


def _broadcast_in_dim_transpose(ct, x, shape, broadcast_dimensions):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    # As JAX: sum over the new axes and those broadcast from size 1, then put the unit axes back.
    unit_dims = tuple(i for i, n in enumerate(x.aval.shape) if n == 1)
    kept = {d for i, d in enumerate(broadcast_dimensions) if i not in unit_dims}
    summed = reduce_sum(ct, tuple(i for i in range(len(shape)) if i not in kept))
    return [expand_dims(summed, unit_dims)]


def _broadcast_in_dim_batch(axis_size, vals, dims, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0) if d != 0 else x
    # np.add, as JAX's rule: the shifted dimensions print as NumPy integers.
    return broadcast_in_dim(x, (axis_size,) + tuple(shape),
                            (0,) + tuple(np.add(1, broadcast_dimensions))), 0


broadcast_in_dim_p = Primitive("broadcast_in_dim")
impl_rules[broadcast_in_dim_p] = _broadcast_in_dim_impl
abstract_eval_rules[broadcast_in_dim_p] = _broadcast_in_dim_abstract
deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
batch_rules[broadcast_in_dim_p] = _broadcast_in_dim_batch


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
    """Broadcast `operand` to `shape`, its axis i landing on `broadcast_dimensions[i]`."""
    if out_sharding is not None:
        check_no_sharding("lax.broadcast_in_dim", out_sharding)
    shape = tuple(int(d) for d in shape)
    # NumPy integers stay as given: JAX prints them as such.
    broadcast_dimensions = tuple(d if isinstance(d, (int, np.integer)) else int(d)
                                 for d in broadcast_dimensions)
    if broadcast_dimensions and builtins.min(broadcast_dimensions) < 0:
        # NumPy would index from the end: eager calls never reach the abstract rule's check
        _check_broadcast_nonnegative(shape, broadcast_dimensions)
    if get_aval(operand).shape == shape and broadcast_dimensions == tuple(range(len(shape))):
        return _as_operand(operand)
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=broadcast_dimensions)


def broadcast(operand, sizes, *, out_sharding=None):
    """Add leading dimensions of the given sizes."""
    if out_sharding is not None:
        check_no_sharding("lax.broadcast", out_sharding)
    shape = tuple(sizes) + get_aval(operand).shape
    return broadcast_in_dim(operand, shape, tuple(range(len(sizes), len(shape))))


def _reshape_abstract(x, new_sizes, dimensions=None):
    if math.prod(new_sizes) != x.size:
        raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} for "
                        f"shape {x.shape}.")
    return [x.update(shape=new_sizes)]


def _reshape_impl(x, new_sizes, dimensions=None):
    if type(x) is not np.ndarray:
        x = np.asarray(x)
    if dimensions is not None:
        x = x.transpose(dimensions)
    return x.reshape(new_sizes)


def _reshape_batch(axis_size, vals, dims, new_sizes, dimensions=None):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0) if d != 0 else x
    if dimensions is not None:
        x = transpose(x, (0,) + tuple(i + 1 for i in dimensions))
    return reshape(x, (axis_size,) + tuple(new_sizes)), 0


reshape_p = Primitive("reshape")
impl_rules[reshape_p] = _reshape_impl
abstract_eval_rules[reshape_p] = _reshape_abstract
deflinear(reshape_p, lambda ct, x, new_sizes, dimensions=None: [
    Zero(x.aval) if type(ct) is Zero else
    (reshape(ct, x.aval.shape) if dimensions is None else
     transpose(reshape(ct, tuple(x.aval.shape[i] for i in dimensions)), tuple(np.argsort(dimensions))))])
batch_rules[reshape_p] = _reshape_batch


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """Reshape to `new_sizes` (after transposing by `dimensions`, if given)."""
    if out_sharding is not None:
        check_no_sharding("lax.reshape", out_sharding)
    new_sizes = tuple(int(d) for d in new_sizes)
    operand = _as_operand(operand)
    if dimensions is not None:
        dimensions = tuple(int(d) for d in dimensions)
        if sorted(dimensions) != list(range(get_aval(operand).ndim)):
            raise TypeError(f"reshape dimensions must be a permutation of operand dimensions, got "
                            f"dimensions {dimensions} for shape {get_aval(operand).shape}.")
        if dimensions == tuple(range(len(dimensions))):
            dimensions = None
    if dimensions is None and get_aval(operand).shape == new_sizes:
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dimensions)


def _transpose_abstract(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {permutation} for operand shape {x.shape}.")
    return [x.update(shape=tuple(x.shape[i] for i in permutation))]


transpose_p = Primitive("transpose")
impl_rules[transpose_p] = lambda x, permutation: np.transpose(x, permutation)
abstract_eval_rules[transpose_p] = _transpose_abstract
deflinear(transpose_p, lambda ct, x, permutation: [
    Zero(x.aval) if type(ct) is Zero else transpose(ct, tuple(np.argsort(permutation)))])


def _transpose_batch(axis_size, vals, dims, permutation):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0) if d != 0 else x
    return transpose(x, (0,) + tuple(p + 1 for p in permutation)), 0


batch_rules[transpose_p] = _transpose_batch


def transpose(operand, permutation):
    """Permute the axes of `operand`."""
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return operand
    return transpose_p.bind(operand, permutation=permutation)


# ---- on the physical data of an extended dtype, whose element may have axes of its own:
# they trail the array's axes and stay in place.

def _trailing(aval, start: int) -> tuple:
    """The element axes of `aval`'s extended dtype, numbered from `start`."""
    return tuple(range(start, start + len(physical_element_aval(aval.dtype).shape)))


def _broadcast_in_dim_physical(in_avals, out_avals, x, shape, broadcast_dimensions):
    elt = physical_element_aval(out_avals[0].dtype).shape
    return [broadcast_in_dim_p.bind(
        x, shape=(*shape, *elt),
        broadcast_dimensions=(*broadcast_dimensions, *_trailing(out_avals[0], len(shape))))]


def _reshape_physical(in_avals, out_avals, x, new_sizes, dimensions=None):
    elt = physical_element_aval(out_avals[0].dtype).shape
    if dimensions is not None:
        dimensions = (*dimensions, *_trailing(in_avals[0], len(dimensions)))
    return [reshape_p.bind(x, new_sizes=(*new_sizes, *elt), dimensions=dimensions)]


def _transpose_physical(in_avals, out_avals, x, permutation):
    return [transpose_p.bind(
        x, permutation=(*permutation, *_trailing(in_avals[0], len(permutation))))]


physical_rules[transpose_p] = _transpose_physical
physical_rules[broadcast_in_dim_p] = _broadcast_in_dim_physical
physical_rules[reshape_p] = _reshape_physical


def _canonical_axis(axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _squeeze_shape(shape, dimensions):
    for d in dimensions:
        if shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                             f"one, got shape={shape} and dimensions={dimensions}")
    return tuple(s for i, s in enumerate(shape) if i not in dimensions)


def _squeeze_batch(axis_size, vals, dims, dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0) if d != 0 else x
    return squeeze(x, tuple(i + 1 for i in dimensions)), 0


squeeze_p = Primitive("squeeze")
impl_rules[squeeze_p] = lambda x, dimensions: np.asarray(x).reshape(
    _squeeze_shape(np.shape(x), dimensions))
abstract_eval_rules[squeeze_p] = lambda x, dimensions: [
    x.update(shape=_squeeze_shape(x.shape, dimensions))]
deflinear(squeeze_p, lambda ct, x, dimensions: [
    Zero(x.aval) if type(ct) is Zero else expand_dims(ct, dimensions)])
batch_rules[squeeze_p] = _squeeze_batch


def squeeze(array, dimensions):
    """Remove the given size-1 dimensions."""
    ndim = get_aval(array).ndim
    dimensions = tuple(sorted(_canonical_axis(d, ndim) for d in dimensions))
    if not dimensions:
        return _as_operand(array)
    return squeeze_p.bind(array, dimensions=dimensions)


def expand_dims(array, dimensions):
    """Insert size-1 dimensions at the given positions of the result (a broadcast_in_dim)."""
    shape = list(get_aval(array).shape)
    ndim = len(shape) + len(dimensions)
    dims = [_canonical_axis(d, ndim) for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
    for d in sorted(dims):
        shape.insert(d, 1)
    return broadcast_in_dim(array, tuple(shape), tuple(i for i in range(ndim) if i not in dims))


def _moveaxis(x, src, dst):
    ndim = get_aval(x).ndim
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def _broadcast_batched(x, axis_size, dst):
    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(dst, axis_size)
    # np.delete, as JAX's batching.broadcast: the dimensions print as NumPy integers.
    return broadcast_in_dim(x, shape, tuple(np.delete(np.arange(len(shape)), dst)))


batching.moveaxis = _moveaxis
batching.broadcast_batched = _broadcast_batched


# ---------------------------------------------------------------- reduce_sum, the reducers


def _reduce_abstract(name, kind=None, out_dtype=None):
    def rule(x, axes):
        if kind is not None:
            _check_kind(name, kind, x)
        if any(not 0 <= a < x.ndim for a in axes):
            raise ValueError(f"reduction axes {tuple(axes)} contains out-of-bounds indices for "
                             f"{x.dtype.name}[{','.join(map(str, x.shape))}].")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, out_dtype or x.dtype, x.weak_type and out_dtype is None)]
    return rule


def _reduce_batch(prim, axis_size, vals, dims, axes, **params):
    (x,), (d,) = vals, dims
    # np.where, as JAX's rule: the shifted axes print as NumPy integers.
    new_axes = tuple(np.where(np.less(axes, d), axes, np.add(axes, 1))) if axes else ()
    out_d = d - builtins.sum(a < d for a in axes)
    return prim.bind(x, axes=new_axes, **params), out_d


def reducer(name, impl, kind=None, out_dtype=None) -> Primitive:
    prim = Primitive(name)
    impl_rules[prim] = impl
    fresh_output_prims.add(prim)  # ufunc.reduce never returns a view of its operand
    axis_reduction_prims.add(prim)
    abstract_eval_rules[prim] = _reduce_abstract(name, kind, out_dtype)
    batch_rules[prim] = partial(_reduce_batch, prim)
    return prim


def _ufunc_reduce(ufunc):
    """`ufunc.reduce` over `axes` keeping the dtype; max/min of nothing give their identity
    (-inf/+inf or the integer range's end), as XLA does, where NumPy would raise."""
    bounded = ufunc in (np.maximum, np.minimum)

    def impl(x, axes):
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        if bounded and x.size == 0:
            return np.asarray(ufunc.reduce(x, axis=axes, initial=_reduce_identity(ufunc, x.dtype)))
        if ufunc is np.add and in_order_sum(x, axes):
            return sum_in_order(x, axes)
        if x.size >= _PARALLEL_REDUCE_SIZE and axes and x.shape[0] > 1:
            if 0 not in axes:
                return _reduce_in_halves(ufunc, x, axes)
            return np.asarray(ufunc(*_reduce_in_halves(ufunc, x, axes, combine=False)))
        return np.asarray(ufunc.reduce(x, axis=axes, dtype=x.dtype))
    return impl


# Large reductions split their leading axis between two threads (NumPy releases the GIL
# inside reductions). When the leading axis is kept, every output element is computed exactly
# as in one call; when it is reduced, two partial results are combined (sums round differently
# from one NumPy call, as any other summation order would).
_PARALLEL_REDUCE_SIZE = 1 << 20


# XLA's CPU backend sums a floating-point reduction of at most this many elements per output
# (so no axis longer than its window, see narrow_types._WINDOW) one element after the other
# from +0.0, in row-major order of the reduced indices, when the operand has fewer than
# _LIBRARY_MIN elements (from there a YNNPACK fusion reduces, in an order of its own). NumPy's
# pairwise sum adds 8 or more contiguous elements in eight interleaved partial sums, which
# rounds differently in float32 (chex's numerical gradient of a 15-element sum fell outside its
# tolerance). docs/ecosystem.md lists the small shapes XLA's vectorizer orders otherwise.
IN_ORDER_MAX = 32
_IN_ORDER_MIN = 8  # below this NumPy's inner loop adds in order already
_LIBRARY_MIN = 4096


def in_order_sum(x, axes) -> bool:
    """Whether a sum of `x` over `axes` takes XLA's in-order path (see IN_ORDER_MAX)."""
    if x.dtype.kind not in "fc" or not axes or not 0 < x.size < _LIBRARY_MIN:
        return False
    return _IN_ORDER_MIN <= math.prod(x.shape[a] for a in axes) <= IN_ORDER_MAX


def sum_in_order(x, axes):
    """The sum of `x` over `axes` adding the reduced elements one after the other from +0.0,
    in row-major order of the reduced indices, as XLA's CPU backend does for short sums."""
    axes = sorted(axes)
    keep = [i for i in range(x.ndim) if i not in axes]
    rows = np.transpose(x, axes + keep).reshape(math.prod(x.shape[a] for a in axes), -1)
    acc = np.add.accumulate(rows, axis=0, dtype=x.dtype)[-1]
    np.add(acc, 0, out=acc)  # XLA starts from +0.0: a sum of -0.0s is +0.0
    return acc.reshape([x.shape[i] for i in keep])


def _reduce_in_halves(ufunc, x, axes, combine=True):
    half = x.shape[0] // 2
    first = submit(ufunc.reduce, x[:half], axes, x.dtype)
    second = ufunc.reduce(x[half:], axis=axes, dtype=x.dtype)
    return np.concatenate([first.result(), second]) if combine else (first.result(), second)


def _reduce_identity(ufunc, dtype):
    lowest = ufunc is np.maximum
    if dtype == np.bool_:
        return not lowest
    if dtypes.is_int(dtype):
        info = dtypes.iinfo(dtype)
        return info.min if lowest else info.max
    return -np.inf if lowest else np.inf


reduce_sum_p = reducer("reduce_sum", _ufunc_reduce(np.add), "number")
deflinear(reduce_sum_p, lambda ct, x, axes: [
    Zero(x.aval) if type(ct) is Zero else
    # NumPy integers, as JAX computes them (np.delete), so printed programs match.
    broadcast_in_dim(ct, x.aval.shape, tuple(np.delete(np.arange(x.aval.ndim), axes)))])
narrow_rules[reduce_sum_p] = partial(narrow_types.reduce, np.add)  # XLA's order and rounding


def _axes(axes):
    return tuple(sorted(int(a) for a in axes))


def reduce_sum(operand, axes, *, out_sharding=None):
    """Sum over `axes`."""
    if out_sharding is not None:
        check_no_sharding("lax.reduce_sum", out_sharding)
    return reduce_sum_p.bind(operand, axes=_axes(axes))


# ---------------------------------------------------------------- iota and full


def _iota_impl(dtype, shape, dimension):
    if np.dtype(dtype) in narrow_types.NARROW:  # each index converted (ml_dtypes' arange accumulates)
        idx = narrow_types.convert(np.arange(shape[dimension]), dtype)
    else:
        idx = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(idx.reshape(view), shape)


iota_p = Primitive("iota")
impl_rules[iota_p] = _iota_impl
abstract_eval_rules[iota_p] = lambda dtype, shape, dimension: [ShapedArray(shape, dtype)]
weak_type_rules[iota_p] = _never_weak


def iota(dtype, size: int):
    """[0, 1, ..., size - 1] of `dtype`."""
    return broadcasted_iota(dtype, (int(size),), 0)


def broadcasted_iota(dtype, shape, dimension: int, *, out_sharding=None):
    """An array of `shape` whose values count along `dimension`."""
    if out_sharding is not None:
        check_no_sharding("lax.broadcasted_iota", out_sharding)
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=tuple(map(int, shape)),
                       dimension=int(dimension))


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of `shape` filled with `fill_value` (a broadcast of a scalar)."""
    if sharding is not None:
        check_no_sharding("lax.full", sharding, "sharding")
    if dtype is None:
        return _full(shape, fill_value, _dtype_of(fill_value), dtypes.is_weakly_typed(fill_value))
    return _full(shape, fill_value, dtypes.canonicalize_dtype(dtype), False)


def _full(shape, fill_value, dtype, weak):
    """`full` with the result's dtype and weak type given."""
    shape = tuple(int(d) for d in shape)
    if isinstance(fill_value, (_SCALARS, np.generic, np.ndarray)):
        scalar = (None if np.ndim(fill_value) != 0 else
                  narrow_types.convert(np.asarray(fill_value), dtype)[()]
                  if np.dtype(dtype) in narrow_types.NARROW
                  else np.asarray(fill_value).astype(dtype)[()])
        if scalar is None:
            raise TypeError(f"full requires a scalar fill_value, got shape {np.shape(fill_value)}")
        from gpuarr.core import current_trace
        from gpuarr.dispatch import eval_trace, wrap
        if current_trace() is eval_trace or not shape:  # 0-d: a literal when staged, as in JAX
            return wrap(np.broadcast_to(scalar, shape), weak)
        # A 0-d Array keeps the weak type when staged (it becomes a weak literal).
        value = wrap(np.asarray(scalar), weak) if weak else scalar
    else:
        if get_aval(fill_value).shape != ():
            raise TypeError(f"full requires a scalar fill_value, got shape {get_aval(fill_value).shape}")
        value = _convert_weak(fill_value, dtype, weak)
        if not shape:
            return value
    return broadcast_in_dim_p.bind(value, shape=shape, broadcast_dimensions=())


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """`full` with the shape and dtype of `x` unless given; without `dtype` the result keeps
    the weak type of `x`, as in JAX."""
    if sharding is not None:
        check_no_sharding("lax.full_like", sharding, "sharding")
    aval = get_aval(x)
    shape = aval.shape if shape is None else shape
    if dtype is None and aval.weak_type:  # one weak broadcast, not a broadcast and a convert
        out = _full(shape, fill_value, dtypes.canonicalize_dtype(aval.dtype), True)
        return _convert_weak(out, aval.dtype, True)  # a no-op unless x has a 64-bit dtype, x64 off
    return full(shape, fill_value, aval.dtype if dtype is None else dtype)


class MemorySpace(enum.Enum):
    """Where an array lives, as JAX's core.MemorySpace (gpuarr keeps every array on its
    device); printed `MemorySpace.Device`."""
    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self):
        return f"MemorySpace.{self.name}"


# A scalar whose value does not matter, broadcast to fill an output slot nobody reads: JAX's
# placeholder for the residuals a cond branch does not compute. Every backend makes it zero.
empty2_p = Primitive("empty2")
impl_rules[empty2_p] = lambda *, dtype, memory_space: np.zeros((), dtype)
abstract_eval_rules[empty2_p] = lambda *, dtype, memory_space: [ShapedArray((), dtype)]


def empty_like_aval(aval):
    """An array of `aval`'s type whose contents do not matter (zeros): `empty2` broadcast to
    the shape, as JAX's ad_util.empty_like_aval."""
    scalar = empty2_p.bind(dtype=np.dtype(aval.dtype), memory_space=MemorySpace.Device)
    if not aval.shape:
        return scalar
    return broadcast_in_dim_p.bind(scalar, shape=tuple(aval.shape), broadcast_dimensions=())


def _zeros_like_aval(aval):
    # Instantiated zeros keep the weak type, as JAX's zeros_like_shaped_array does.
    if is_extended_dtype(aval.dtype):  # the dtype's own zero (fm32's is -inf), broadcast
        zero = aval.dtype._rules.zero(aval.dtype)
        return broadcast_in_dim_p.bind(zero, shape=tuple(aval.shape), broadcast_dimensions=())
    zeros = _full(aval.shape, 0, dtypes.canonicalize_dtype(aval.dtype), aval.weak_type)
    if aval.vma and core.vma_checked():  # of the type asked for, as JAX's: varying like it
        return core.pvary_p.bind(zeros, axes=core.ordered_axes(aval.vma))
    return zeros


ad.zeros_like_aval = _zeros_like_aval


# ---------------------------------------------------------------- rev

rev_p = Primitive("rev")
impl_rules[rev_p] = lambda x, dimensions: np.flip(x, dimensions) if dimensions else x


def _rev_abstract(x, dimensions):
    if builtins.any(d < 0 for d in dimensions):
        raise TypeError(f"rev dimensions must have every element be nonnegative, got "
                        f"{dimensions}.")
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
    if dimensions and not builtins.max(dimensions) < x.ndim:
        raise TypeError(f"rev dimensions must all be less than operand ndim, got dimensions "
                        f"{dimensions} for operand ndim {x.ndim}.")
    return [x]


abstract_eval_rules[rev_p] = _rev_abstract
deflinear(rev_p, lambda ct, x, dimensions: [
    Zero(x.aval) if type(ct) is Zero else rev(ct, dimensions)])


def _rev_batch(axis_size, vals, dims, dimensions):
    (x,), (d,) = vals, dims
    return rev(x, tuple(a + (a >= d) for a in dimensions)), d


batch_rules[rev_p] = _rev_batch


def rev(operand, dimensions):
    """Reverse the order of elements along `dimensions` (kept in the order given, and bound
    even when empty, as JAX binds them)."""
    return rev_p.bind(operand, dimensions=tuple(dimensions))
