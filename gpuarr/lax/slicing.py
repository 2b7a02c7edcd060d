"""Gather, scatter and dynamic slicing: the primitives behind indexing and `.at` updates.

Index semantics follow XLA (and JAX): `start_indices` carries the index vector in its last
dimension; every other dimension of it is a batch dimension. Out-of-bounds behaviour is chosen by
`GatherScatterMode`: reads clamp (CLIP, PROMISE_IN_BOUNDS) or fill (FILL_OR_DROP); writes clamp
(CLIP) or drop the whole window (FILL_OR_DROP, PROMISE_IN_BOUNDS).
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from gpuarr import dtypes
from gpuarr.core import (
    Eqn,
    ParamPrinting,
    Primitive,
    Program,
    ShapedArray,
    Tracer,
    Var,
    abstract_eval_rules,
    get_aval,
    param_printing,
    weak_type_rules,
)
from gpuarr.impls import compile_closed, impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.ad import Zero, is_undefined
from gpuarr.interpreters.batching import batch_rules, not_mapped
from gpuarr.lax import arguments, conversions, lax, shape_ops

# ---------------------------------------------------------------- modes and dimension numbers


class GatherScatterMode(enum.Enum):
    """How gather and scatter treat out-of-bounds indices.

    CLIP clamps indices so the whole window is in bounds; FILL_OR_DROP fills a gathered window
    that is partly out of bounds with a constant and drops such a scattered window;
    PROMISE_IN_BOUNDS trusts the indices (gathers clamp and scatters drop, as XLA does).
    """

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s) -> GatherScatterMode:
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}"')


class GatherDimensionNumbers(NamedTuple):
    """How a gather's operand, start indices and output dimensions correspond (XLA's Gather)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter's operand, indices and updates dimensions correspond (XLA's Scatter)."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def _tuple_fields(nt):
    # NumPy integers stay as given: JAX keeps them, and its programs print them so.
    return type(nt)(*(tuple(i if isinstance(i, (int, np.integer)) else int(i) for i in f)
                      for f in nt))


def _gather_dnums_of(sdn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    return GatherDimensionNumbers(sdn.update_window_dims, sdn.inserted_window_dims,
                                  sdn.scatter_dims_to_operand_dims, sdn.operand_batching_dims,
                                  sdn.scatter_indices_batching_dims)


def _scatter_dnums_of(gdn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(gdn.offset_dims, gdn.collapsed_slice_dims, gdn.start_index_map,
                                   gdn.operand_batching_dims, gdn.start_indices_batching_dims)


def _shift(dims, k=1):
    return tuple(d + k for d in dims)


def default_fill_value(dtype):
    """JAX's fill for out-of-bounds reads: NaN, the most negative int, the largest uint, True."""
    dtype = np.dtype(dtype)
    if dtypes.is_inexact(dtype):
        return float("nan")
    if dtypes.is_signed_int(dtype):
        return int(dtypes.iinfo(dtype).min)
    if dtypes.is_unsigned_int(dtype):
        return int(dtypes.iinfo(dtype).max)
    if dtype == np.bool_:
        return True
    raise ValueError(f"Unsupported dtype for gather fill_value {dtype}")


def checked_impl(prim):
    """Run `prim`'s abstract evaluation before its NumPy implementation, so eager calls raise the
    same errors (with the same messages) as traced ones."""
    impl, rule = impl_rules[prim], abstract_eval_rules[prim]

    def run(*args, **params):
        rule(*[get_aval(a) for a in args], **params)
        return impl(*args, **params)

    impl_rules[prim] = run


# ---------------------------------------------------------------- shared index arithmetic


def _window_dims(ndim, dropped):
    return [d for d in range(ndim) if d not in dropped]


def _locate(operand_shape, indices, slice_sizes, start_index_map, operand_batching_dims,
            indices_batching_dims, window, clamp_only, skip=()):
    """Per-operand-dimension index arrays (broadcastable to batch + window sizes) and the
    in-bounds mask; dims in `skip` (taken whole) get None.

    Starts are clamped so the window fits; `valid` says which windows were in bounds before.
    """
    batch_shape = indices.shape[:-1]
    nb, nw = len(batch_shape), len(window)
    starts = [None] * len(operand_shape)
    valid = np.ones(batch_shape, bool)
    for k, d in enumerate(start_index_map):
        s = indices[..., k].astype(np.int64)
        hi = operand_shape[d] - slice_sizes[d]
        if not clamp_only:
            valid &= (s >= 0) & (s <= hi)
        starts[d] = np.clip(s, 0, max(hi, 0))
    for od, idim in zip(operand_batching_dims, indices_batching_dims):
        shape = [1] * nb
        shape[idim] = batch_shape[idim]
        starts[od] = np.arange(batch_shape[idim]).reshape(shape)
    idx = []
    for d in range(len(operand_shape)):
        if d in skip:
            idx.append(None)
            continue
        st = np.zeros((1,) * nb, np.int64) if starts[d] is None else starts[d]  # nb dims
        s = st.reshape(st.shape + (1,) * nw)
        if d in window:
            shape = [1] * (nb + nw)
            shape[nb + window.index(d)] = slice_sizes[d]
            s = s + np.arange(slice_sizes[d]).reshape(shape)
        idx.append(s)
    return tuple(idx), valid


def _check_indices(name, indices):
    if not dtypes.is_int(indices.dtype):
        raise TypeError(f"{name} indices must have an integer type, got {indices.dtype.name}. "
                        "Cast them with indices.astype(jnp.int32).")
    if indices.ndim < 1:
        raise TypeError(f"{name} indices must have rank >= 1 (the index vector is the last "
                        f"dimension), got shape {indices.shape}.")


def _check_dims(name, what, dims, bound):
    if tuple(sorted(set(dims))) != tuple(dims):
        raise TypeError(f"{name} {what} must be sorted and unique, got {dims}.")
    if any(not 0 <= d < bound for d in dims):
        raise TypeError(f"{name} {what} {dims} are out of range for rank {bound}.")


# ---------------------------------------------------------------- gather


def _split_dims(operand_shape, slice_sizes, start_index_map, window):
    """Operand dims that need index arrays, and window dims taken whole (plain slices)."""
    full = [d for d in window if d not in start_index_map and slice_sizes[d] == operand_shape[d]]
    return [d for d in range(len(operand_shape)) if d not in full], full


def _indexed_view(operand, idx, indexed, full, window, nb):
    """`operand` transposed to (indexed..., full...) and the index arrays for the indexed dims,
    each of shape batch + (windows among the indexed dims)."""
    f_axes = tuple(nb + window.index(d) for d in full)
    sel = tuple(np.squeeze(idx[d], axis=f_axes) for d in indexed)
    return np.transpose(operand, indexed + full), sel


def _gather_impl(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                 unique_indices, mode, fill_value):
    dn = dimension_numbers
    operand = np.asarray(operand)
    window = _window_dims(operand.ndim, dn.collapsed_slice_dims + dn.operand_batching_dims)
    batch_shape = indices.shape[:-1]
    nb, nw = len(batch_shape), len(window)
    indexed, full = _split_dims(operand.shape, slice_sizes, dn.start_index_map, window)
    idx, valid = _locate(operand.shape, np.asarray(indices), slice_sizes, dn.start_index_map,
                         dn.operand_batching_dims, dn.start_indices_batching_dims, window,
                         mode is not GatherScatterMode.FILL_OR_DROP, full)
    op_t, sel = _indexed_view(operand, idx, indexed, full, window, nb)
    if operand.size == 0:
        out = np.zeros(batch_shape + tuple(slice_sizes[d] for d in window), operand.dtype)
    else:
        # Whole-window dims are sliced, not indexed: out is batch + (indexed windows) + full.
        out = op_t[sel] if sel else np.broadcast_to(op_t, batch_shape + op_t.shape)
        current = [d for d in window if d in indexed] + full
        out = np.transpose(out, list(range(nb)) + [nb + current.index(d) for d in window])
    if mode is GatherScatterMode.FILL_OR_DROP and not valid.all():
        fill = np.asarray(fill_value).astype(operand.dtype)
        out = np.where(valid.reshape(batch_shape + (1,) * nw), out, fill)
    batch_pos = [i for i in range(nb + nw) if i not in dn.offset_dims]
    perm = [0] * (nb + nw)
    for w, p in enumerate(dn.offset_dims):
        perm[p] = nb + w
    for j, p in enumerate(batch_pos):
        perm[p] = j
    return np.require(np.transpose(out, perm), requirements="C")


def _gather_abstract(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                     unique_indices, mode, fill_value):
    dn = dimension_numbers
    _check_indices("gather", indices)
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"gather slice_sizes must have one entry per operand dimension; got "
                        f"slice_sizes {slice_sizes} for operand shape {operand.shape}.")
    for s, n in zip(slice_sizes, operand.shape):
        if not 0 <= s <= n:
            raise TypeError(f"gather slice_sizes must be between 0 and the operand's dimension "
                            f"sizes; got slice_sizes {slice_sizes} for operand shape {operand.shape}.")
    if indices.shape[-1] != len(dn.start_index_map):
        raise TypeError(f"gather start_index_map {dn.start_index_map} must have one entry per "
                        f"index in the last dimension of indices of shape {indices.shape}.")
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if not 0 <= d < operand.ndim or slice_sizes[d] > 1:
            raise TypeError(f"gather collapsed_slice_dims/operand_batching_dims {d} must be operand "
                            f"dimensions of slice size <= 1; got slice_sizes {slice_sizes}.")
    window = _window_dims(operand.ndim, dn.collapsed_slice_dims + dn.operand_batching_dims)
    batch_shape = indices.shape[:-1]
    rank = len(batch_shape) + len(window)
    _check_dims("gather", "offset_dims", dn.offset_dims, rank)
    if len(dn.offset_dims) != len(window):
        raise TypeError(f"gather offset_dims {dn.offset_dims} must have one entry per window "
                        f"dimension of the operand ({len(window)}).")
    out = [0] * rank
    batch_iter = iter(batch_shape)
    for i in range(rank):
        out[i] = slice_sizes[window[dn.offset_dims.index(i)]] if i in dn.offset_dims \
            else next(batch_iter)
    return [ShapedArray(out, operand.dtype, operand.weak_type)]


def _operand_weak(operand, *args, **params):
    return bool(getattr(operand, "weak_type", False))


gather_p = Primitive("gather")
impl_rules[gather_p] = _gather_impl
abstract_eval_rules[gather_p] = _gather_abstract
checked_impl(gather_p)
weak_type_rules[gather_p] = _operand_weak


def _gather_jvp(primals, tangents, **params):
    operand, indices = primals
    out = gather_p.bind(operand, indices, **params)
    if type(tangents[0]) is Zero:
        return out, Zero.from_primal(out)
    tparams = dict(params, fill_value=0 if params["mode"] is GatherScatterMode.FILL_OR_DROP else None)
    return out, gather_p.bind(tangents[0], indices, **tparams)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                      unique_indices, mode, fill_value):
    aval = operand.aval
    if type(ct) is Zero:
        return [Zero(aval), None]
    zeros = shape_ops.full(aval.shape, 0, aval.dtype)
    out = scatter_add_p.bind(zeros, indices, ct, dimension_numbers=_scatter_dnums_of(dimension_numbers),
                             indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                             mode=mode)
    return [out, None]


def _gather_batch(axis_size, vals, dims, *, dimension_numbers, slice_sizes, **params):
    operand, indices = vals
    od, idd = dims
    dn = dimension_numbers
    if idd is not_mapped:
        operand = batching.move_to(operand, od, 0, axis_size)
        dn = GatherDimensionNumbers((0,) + _shift(dn.offset_dims), _shift(dn.collapsed_slice_dims),
                                    _shift(dn.start_index_map), _shift(dn.operand_batching_dims),
                                    dn.start_indices_batching_dims)
        slice_sizes = (axis_size,) + tuple(slice_sizes)
    elif od is not_mapped:
        indices = batching.move_to(indices, idd, 0, axis_size)
        dn = GatherDimensionNumbers(_shift(dn.offset_dims), dn.collapsed_slice_dims, dn.start_index_map,
                                    dn.operand_batching_dims, _shift(dn.start_indices_batching_dims))
    else:
        operand = batching.move_to(operand, od, 0, axis_size)
        indices = batching.move_to(indices, idd, 0, axis_size)
        if axis_size == 0:  # size-1 slices of the empty batch axis would be out of bounds
            (one,) = _gather_abstract(
                ShapedArray(get_aval(operand).shape[1:], get_aval(operand).dtype),
                ShapedArray(get_aval(indices).shape[1:], get_aval(indices).dtype),
                dimension_numbers=dn, slice_sizes=tuple(slice_sizes), **params)
            return shape_ops.full((0,) + one.shape, 0, one.dtype), 0
        dn = GatherDimensionNumbers(_shift(dn.offset_dims), _shift(dn.collapsed_slice_dims),
                                    _shift(dn.start_index_map), (0,) + _shift(dn.operand_batching_dims),
                                    (0,) + _shift(dn.start_indices_batching_dims))
        slice_sizes = (1,) + tuple(slice_sizes)
    return gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=tuple(slice_sizes),
                         **params), 0


ad.jvp_rules[gather_p] = _gather_jvp
ad.transpose_rules[gather_p] = _gather_transpose
batch_rules[gather_p] = _gather_batch


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes, *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode=None,
           fill_value=None):
    """XLA's Gather: slices of `slice_sizes` from `operand` starting at each index vector.

    `mode` (a GatherScatterMode or 'clip' / 'fill' / 'drop' / 'promise_in_bounds') chooses the
    out-of-bounds behaviour; the default, PROMISE_IN_BOUNDS, clamps. With 'fill' an out-of-bounds
    window is filled with `fill_value` (NaN for inexact types, the most negative value for signed
    integers, the largest for unsigned ones, True for booleans).
    """
    parsed = GatherScatterMode.from_any(GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    if parsed is GatherScatterMode.FILL_OR_DROP:
        dt = get_aval(operand).dtype
        fill_value = default_fill_value(dt) if fill_value is None else np.asarray(fill_value).item()
    else:
        fill_value = None
    if not isinstance(dimension_numbers, GatherDimensionNumbers):
        raise TypeError("gather dimension_numbers must be a lax.GatherDimensionNumbers, got "
                        f"{type(dimension_numbers).__name__}.")
    return gather_p.bind(operand, start_indices, dimension_numbers=_tuple_fields(dimension_numbers),
                         slice_sizes=tuple(int(s) for s in slice_sizes),
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices), mode=parsed, fill_value=fill_value)


# ---------------------------------------------------------------- scatter family


def _scatter_slice_sizes(operand_ndim, updates_shape, dn):
    window = _window_dims(operand_ndim, dn.inserted_window_dims + dn.operand_batching_dims)
    sizes = [1] * operand_ndim
    for w, d in enumerate(window):
        sizes[d] = updates_shape[dn.update_window_dims[w]]
    return tuple(sizes), window


_COMBINE = {"scatter": None, "scatter_add": np.add, "scatter_sub": np.add,
            "scatter_mul": np.multiply, "scatter_min": np.minimum, "scatter_max": np.maximum}


def _combine_rows(out, r, u, reduce, apply):
    """out[r[i]] = apply(out[r[i]], u[i]) for every i in order, repeated rows included.

    Rows are visited in rounds: round k applies the k-th update of every row at once (rows are
    unique within a round), so the work is vectorized and the order of updates is kept. A row
    repeated very often is first reduced with a segmented `reduce`.
    """
    order = np.argsort(r, kind="stable")
    rs = r[order]
    first = np.empty(rs.shape, bool)
    first[0] = True
    np.not_equal(rs[1:], rs[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, rs.size))
    if counts.max() > 32:
        reduced = reduce.reduceat(u[order], starts, axis=0)
        out[rs[starts]] = apply(out[rs[starts]], reduced)
        return
    pos = np.arange(rs.size) - np.repeat(starts, counts)
    for k in range(int(counts.max())):
        sel = order[pos == k]
        rows = r[sel]
        out[rows] = apply(out[rows], u[sel])


def _scatter_impl(name, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                  unique_indices, mode):
    dn = dimension_numbers
    operand, indices, updates = np.asarray(operand), np.asarray(indices), np.asarray(updates)
    if operand.size == 0 or updates.size == 0:
        return operand.copy()
    sizes, window = _scatter_slice_sizes(operand.ndim, updates.shape, dn)
    batch_shape = indices.shape[:-1]
    nb = len(batch_shape)
    indexed, full = _split_dims(operand.shape, sizes, dn.scatter_dims_to_operand_dims, window)
    idx, valid = _locate(operand.shape, indices, sizes, dn.scatter_dims_to_operand_dims,
                         dn.operand_batching_dims, dn.scatter_indices_batching_dims, window,
                         mode is GatherScatterMode.CLIP, full)
    op_t, sel = _indexed_view(operand, idx, indexed, full, window, nb)
    # Updates as batch + (indexed windows) + full, matching the rows of a 2-D view of op_t.
    scatter_dims = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
    current = [d for d in window if d in indexed] + full
    upd = np.transpose(updates, scatter_dims + [dn.update_window_dims[window.index(d)] for d in current])
    i_shape, f_shape = op_t.shape[:len(indexed)], op_t.shape[len(indexed):]
    n_rows, n_cols = int(np.prod(i_shape, dtype=np.int64)), int(np.prod(f_shape, dtype=np.int64))
    lead = upd.shape[:upd.ndim - len(full)]
    rows = np.ravel_multi_index(np.broadcast_arrays(*sel), i_shape) if sel else np.zeros(lead, np.int64)
    rows = np.broadcast_to(rows, lead)
    if valid.all():
        r, u = rows.reshape(-1), upd.reshape(-1, n_cols)
    else:
        mask = np.broadcast_to(valid.reshape(batch_shape + (1,) * (len(lead) - nb)), lead)
        r, u = rows[mask], upd[mask].reshape(-1, n_cols)
    out = np.array(op_t, order="C").reshape(n_rows, n_cols)
    combine = _COMBINE[name]
    if operand.dtype == np.bool_ and combine is np.add:
        combine = np.logical_or
    if combine is None:
        out[r] = u  # repeated rows: the last update wins
    elif r.size:
        with np.errstate(over="ignore", invalid="ignore"):
            _combine_rows(out, r, u, combine, np.subtract if name == "scatter_sub" else combine)
    inv = np.argsort(indexed + full)
    return np.ascontiguousarray(np.transpose(out.reshape(op_t.shape), inv))


_ARITHMETIC_COMBINERS = {"scatter_add": "add", "scatter_sub": "sub", "scatter_mul": "mul"}


def _scatter_abstract(name):
    def rule(operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices,
             mode):
        dn = dimension_numbers
        _check_indices(name, indices)
        if updates.dtype != operand.dtype:
            raise TypeError(f"{name} requires the updates to have the operand's dtype; got operand "
                            f"{operand.dtype.name} and updates {updates.dtype.name}.")
        if name in _ARITHMETIC_COMBINERS and operand.dtype == np.bool_:
            # JAX traces the combiner (lax.add, lax.sub, lax.mul), which refuses booleans.
            combiner = _ARITHMETIC_COMBINERS[name]
            raise TypeError(f"{combiner} does not accept dtype bool at position 0. Accepted dtypes at "
                            f"position 0 are subtypes of integer, floating, complexfloating.")
        if indices.shape[-1] != len(dn.scatter_dims_to_operand_dims):
            raise TypeError(f"{name} scatter_dims_to_operand_dims {dn.scatter_dims_to_operand_dims} "
                            f"must have one entry per index in the last dimension of indices of "
                            f"shape {indices.shape}.")
        _check_dims(name, "update_window_dims", dn.update_window_dims, updates.ndim)
        window = _window_dims(operand.ndim, dn.inserted_window_dims + dn.operand_batching_dims)
        batch_shape = indices.shape[:-1]
        if len(dn.update_window_dims) != len(window) or \
                updates.ndim != len(window) + len(batch_shape):
            raise TypeError(f"{name}: updates of shape {updates.shape} do not match operand shape "
                            f"{operand.shape} and indices shape {indices.shape} with "
                            f"dimension_numbers {dn}.")
        scatter_shape = tuple(s for i, s in enumerate(updates.shape) if i not in dn.update_window_dims)
        if scatter_shape != batch_shape:
            raise TypeError(f"{name}: the scatter dimensions of updates {updates.shape} must equal "
                            f"the batch dimensions of indices {indices.shape}.")
        for w, d in enumerate(window):
            if updates.shape[dn.update_window_dims[w]] > operand.shape[d]:
                raise TypeError(f"{name}: update window of shape {updates.shape} is larger than "
                                f"operand of shape {operand.shape}.")
        return [operand]
    return rule


def _inst(t, like):
    """A dense tangent: zeros shaped like the primal `like` for a symbolic Zero."""
    if type(t) is Zero:
        aval = get_aval(like)
        return shape_ops.full(aval.shape, 0, aval.dtype)
    return t


def _scatter_prim(name):
    prim = Primitive(name)
    impl_rules[prim] = lambda *args, **params: _scatter_impl(name, *args, **params)
    abstract_eval_rules[prim] = _scatter_abstract(name)
    weak_type_rules[prim] = _operand_weak
    batch_rules[prim] = lambda axis_size, vals, dims, **params: _scatter_batch(
        prim, axis_size, vals, dims, **params)
    checked_impl(prim)
    return prim


def _scatter_batch(prim, axis_size, vals, dims, *, dimension_numbers, **params):
    operand, indices, updates = vals
    od, idd, ud = dims
    dn = dimension_numbers
    operand = batching.move_to(operand, od, 0, axis_size)
    updates = batching.move_to(updates, ud, 0, axis_size)
    if idd is not_mapped:
        dn = ScatterDimensionNumbers((0,) + _shift(dn.update_window_dims), _shift(dn.inserted_window_dims),
                                     _shift(dn.scatter_dims_to_operand_dims),
                                     _shift(dn.operand_batching_dims), dn.scatter_indices_batching_dims)
    else:
        indices = batching.move_to(indices, idd, 0, axis_size)
        dn = ScatterDimensionNumbers(_shift(dn.update_window_dims), _shift(dn.inserted_window_dims),
                                     _shift(dn.scatter_dims_to_operand_dims),
                                     (0,) + _shift(dn.operand_batching_dims),
                                     (0,) + _shift(dn.scatter_indices_batching_dims))
    return prim.bind(operand, indices, updates, dimension_numbers=dn, **params), 0


scatter_p = _scatter_prim("scatter")
scatter_add_p = _scatter_prim("scatter_add")
scatter_sub_p = _scatter_prim("scatter_sub")
scatter_mul_p = _scatter_prim("scatter_mul")
scatter_min_p = _scatter_prim("scatter_min")
scatter_max_p = _scatter_prim("scatter_max")


def _update_program(combine):
    """JAX's scatter parameters `update_consts` and `update_jaxpr`: the scalar program that
    combines an operand element with an update (None for a plain scatter)."""
    def extra(eqn):
        if combine is None:
            return {"update_consts": (), "update_jaxpr": None}
        a, b = (Var(ShapedArray((), eqn.inputs[0].aval.dtype)) for _ in range(2))
        out = Var(ShapedArray((), eqn.inputs[0].aval.dtype))
        return {"update_consts": (),
                "update_jaxpr": Program([], [a, b], [Eqn(combine, [a, b], {}, [out])], [out])}
    return extra


# Printed as JAX prints its scatters: hyphenated names and the update program.
param_printing["scatter"] = ParamPrinting(extra=_update_program(None))
for _prim, _combine in ((scatter_add_p, lax.add_p), (scatter_sub_p, lax.sub_p),
                        (scatter_mul_p, lax.mul_p), (scatter_min_p, lax.min_p),
                        (scatter_max_p, lax.max_p)):
    param_printing[_prim.name] = ParamPrinting(name=_prim.name.replace("_", "-"),
                                               extra=_update_program(_combine))


def _gather_updates(ct, indices, updates_aval, operand_ndim, dimension_numbers, mode,
                    indices_are_sorted=False, unique_indices=False):
    """The entries of `ct` each update was scattered to (the transpose of scattering updates)."""
    sizes, _ = _scatter_slice_sizes(operand_ndim, updates_aval.shape, dimension_numbers)
    gmode = GatherScatterMode.CLIP if mode is GatherScatterMode.CLIP else GatherScatterMode.FILL_OR_DROP
    return gather_p.bind(ct, indices, dimension_numbers=_gather_dnums_of(dimension_numbers),
                         slice_sizes=sizes, indices_are_sorted=indices_are_sorted,
                         unique_indices=unique_indices, mode=gmode,
                         fill_value=0 if gmode is GatherScatterMode.FILL_OR_DROP else None)


def _linear_scatter_jvp(prim):
    def rule(primals, tangents, **params):
        operand, indices, updates = primals
        out = prim.bind(operand, indices, updates, **params)
        t_op, _, t_up = tangents
        if type(t_op) is Zero and type(t_up) is Zero:
            return out, Zero.from_primal(out)
        return out, prim.bind(_inst(t_op, operand), indices, _inst(t_up, updates), **params)
    return rule


def _scatter_add_transpose(negate, ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode):
    if type(ct) is Zero:
        return [Zero(operand.aval) if is_undefined(operand) else None, None,
                Zero(updates.aval) if is_undefined(updates) else None]
    ct_op = ct if is_undefined(operand) else None
    ct_up = None
    if is_undefined(updates):
        ct_up = _gather_updates(ct, indices, updates.aval, len(get_aval(ct).shape), dimension_numbers,
                                mode, indices_are_sorted, unique_indices)
        if negate:
            ct_up = lax.neg(ct_up)
    return [ct_op, None, ct_up]


ad.jvp_rules[scatter_add_p] = _linear_scatter_jvp(scatter_add_p)
ad.transpose_rules[scatter_add_p] = lambda ct, *args, **params: _scatter_add_transpose(
    False, ct, *args, **params)
ad.jvp_rules[scatter_sub_p] = _linear_scatter_jvp(scatter_sub_p)
ad.transpose_rules[scatter_sub_p] = lambda ct, *args, **params: _scatter_add_transpose(
    True, ct, *args, **params)


def _scatter_jvp(primals, tangents, **params):
    # The NumPy backend applies repeated indices in order (the last write wins), so scattering
    # the tangents with the same indices picks each output's tangent from the winning update.
    return _linear_scatter_jvp(scatter_p)(primals, tangents, **params)


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                       unique_indices, mode):
    if type(ct) is Zero:
        return [Zero(operand.aval) if is_undefined(operand) else None, None,
                Zero(updates.aval) if is_undefined(updates) else None]
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    up_aval = updates.aval if is_undefined(updates) else get_aval(updates)
    ct_op = ct_up = None
    if is_undefined(operand):
        ct_op = scatter_p.bind(ct, indices, shape_ops.full(up_aval.shape, 0, up_aval.dtype), **params)
    if is_undefined(updates):
        nd = len(get_aval(ct).shape)
        gathered = _gather_updates(ct, indices, up_aval, nd, dimension_numbers, mode)
        # Only the update that won a location (the last one written) receives its cotangent.
        ids = shape_ops.reshape(shape_ops.iota(np.int32, int(np.prod(up_aval.shape))), up_aval.shape)
        owner = scatter_p.bind(shape_ops.full(get_aval(ct).shape, -1, np.int32), indices, ids, **params)
        won = lax.eq(_gather_updates(owner, indices, up_aval, nd, dimension_numbers, mode), ids)
        ct_up = lax.select(won, gathered, shape_ops.full(up_aval.shape, 0, up_aval.dtype))
    return [ct_op, None, ct_up]


ad.jvp_rules[scatter_p] = _scatter_jvp
ad.transpose_rules[scatter_p] = _scatter_transpose


def _scatter_mul_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    out = scatter_mul_p.bind(operand, indices, updates, **params)
    if type(t_up) is not Zero and not params["unique_indices"]:
        raise NotImplementedError("scatter_mul gradients are only implemented if "
                                  "`unique_indices=True`")
    t = Zero.from_primal(out)
    if type(t_op) is not Zero:
        t = scatter_mul_p.bind(t_op, indices, updates, **params)
    if type(t_up) is not Zero:
        zeros = shape_ops.full(get_aval(operand).shape, 0, get_aval(operand).dtype)
        t = ad.add_tangents(t, lax.mul(operand, scatter_add_p.bind(zeros, indices, t_up, **params)))
    return out, t


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    if is_undefined(updates):
        raise NotImplementedError("scatter_mul is not linear in its updates")
    if type(ct) is Zero:
        return [Zero(operand.aval), None, None]
    ones = shape_ops.full(operand.aval.shape, 1, operand.aval.dtype)
    return [lax.mul(ct, scatter_mul_p.bind(ones, indices, updates, **params)), None, None]


ad.jvp_rules[scatter_mul_p] = _scatter_mul_jvp
ad.transpose_rules[scatter_mul_p] = _scatter_mul_transpose


def _scatter_extremal_jvp(prim, primals, tangents, *, dimension_numbers, indices_are_sorted,
                          unique_indices, mode):
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    out = prim.bind(operand, indices, updates, **params)
    # The tangent comes from whichever inputs attain the extremum; ties share it evenly.
    aval = get_aval(operand)
    dt = aval.dtype
    zeros = shape_ops.full(aval.shape, 0, dt)
    nd = aval.ndim
    op_wins = conversions.convert_element_type(lax.eq(operand, out), dt)
    gathered = _gather_updates(out, indices, get_aval(updates), nd, dimension_numbers, mode)
    up_wins = conversions.convert_element_type(lax.eq(updates, gathered), dt)
    count = lax.add(op_wins, scatter_add_p.bind(zeros, indices, up_wins, **params))
    total = lax.mul(_inst(t_op, operand), op_wins)
    total = lax.add(total, scatter_add_p.bind(zeros, indices, lax.mul(_inst(t_up, updates), up_wins),
                                              **params))
    return out, lax.div(total, lax.max(count, shape_ops.full(aval.shape, 1, dt)))


ad.jvp_rules[scatter_min_p] = lambda p, t, **kw: _scatter_extremal_jvp(scatter_min_p, p, t, **kw)
ad.jvp_rules[scatter_max_p] = lambda p, t, **kw: _scatter_extremal_jvp(scatter_max_p, p, t, **kw)


def _scatter_wrapper(prim, doc):
    def fn(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
           indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
        if not isinstance(dimension_numbers, ScatterDimensionNumbers):
            raise TypeError(f"{prim.name} dimension_numbers must be a lax.ScatterDimensionNumbers, "
                            f"got {type(dimension_numbers).__name__}.")
        updates = arguments._coerce_scalars(prim.name, operand, updates)[1] \
            if isinstance(updates, (bool, int, float, complex)) else updates
        return prim.bind(operand, scatter_indices, updates,
                         dimension_numbers=_tuple_fields(dimension_numbers),
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode))
    fn.__name__ = fn.__qualname__ = prim.name
    fn.__doc__ = doc
    return fn


_SCATTER_DOC = ("XLA's Scatter with {what}: `updates` windows are combined into `operand` at "
                "`scatter_indices` per `dimension_numbers`; repeated indices all apply. "
                "Out-of-bounds windows are dropped unless `mode='clip'`.")
scatter = _scatter_wrapper(scatter_p, _SCATTER_DOC.format(what="replacement (the last write wins)"))
scatter_add = _scatter_wrapper(scatter_add_p, _SCATTER_DOC.format(what="addition"))
scatter_sub = _scatter_wrapper(scatter_sub_p, _SCATTER_DOC.format(what="subtraction"))
scatter_mul = _scatter_wrapper(scatter_mul_p, _SCATTER_DOC.format(what="multiplication"))
scatter_min = _scatter_wrapper(scatter_min_p, _SCATTER_DOC.format(what="minimum"))
scatter_max = _scatter_wrapper(scatter_max_p, _SCATTER_DOC.format(what="maximum"))


# ---------------------------------------------------------------- scatter_apply


def _scalar_fn_program(func, dtype):
    from gpuarr.interpreters import partial_eval as pe
    return pe.trace_to_program(lambda x: [func(x)], [ShapedArray((), dtype)])


def _apply_impl(operand, indices, *, func_program, dimension_numbers, update_shape,
                indices_are_sorted, unique_indices, mode):
    operand = np.asarray(operand)
    counts = _scatter_impl("scatter_add", np.zeros(operand.shape, np.int64), indices,
                           np.ones(update_shape, np.int64), dimension_numbers=dimension_numbers,
                           indices_are_sorted=False, unique_indices=False, mode=mode)
    n = operand.size
    if n == 0 or counts.max() == 0:
        return operand.copy()
    vec = batching.batch_program(func_program, n, (0,))
    run = compile_closed(vec)
    out = operand.reshape(-1).copy()
    flat_counts = counts.reshape(-1)
    for k in range(int(flat_counts.max())):  # duplicate indices apply `func` repeatedly
        applied = np.asarray(run(out)[0]).astype(operand.dtype)
        out = np.where(flat_counts > k, applied, out)
    return out.reshape(operand.shape)


def _apply_abstract(operand, indices, *, func_program, dimension_numbers, update_shape, **params):
    _check_indices("scatter_apply", indices)
    return [operand]


def _apply_batch(axis_size, vals, dims, *, dimension_numbers, update_shape, **params):
    operand, indices = vals
    od, idd = dims
    dn = dimension_numbers
    operand = batching.move_to(operand, od, 0, axis_size)
    if idd is not_mapped:
        dn = ScatterDimensionNumbers((0,) + _shift(dn.update_window_dims), _shift(dn.inserted_window_dims),
                                     _shift(dn.scatter_dims_to_operand_dims),
                                     _shift(dn.operand_batching_dims), dn.scatter_indices_batching_dims)
    else:
        indices = batching.move_to(indices, idd, 0, axis_size)
        dn = ScatterDimensionNumbers(_shift(dn.update_window_dims), _shift(dn.inserted_window_dims),
                                     _shift(dn.scatter_dims_to_operand_dims),
                                     (0,) + _shift(dn.operand_batching_dims),
                                     (0,) + _shift(dn.scatter_indices_batching_dims))
    return scatter_apply_p.bind(operand, indices, dimension_numbers=dn,
                                update_shape=(axis_size,) + tuple(update_shape), **params), 0


def _apply_jvp(primals, tangents, **params):
    raise NotImplementedError("scatter_apply is not differentiable (as in JAX); use "
                              ".at[...].set(func(x[...])) to differentiate through the update.")


scatter_apply_p = Primitive("scatter_apply")
impl_rules[scatter_apply_p] = _apply_impl
abstract_eval_rules[scatter_apply_p] = _apply_abstract
checked_impl(scatter_apply_p)
weak_type_rules[scatter_apply_p] = _operand_weak
batch_rules[scatter_apply_p] = _apply_batch
ad.jvp_rules[scatter_apply_p] = _apply_jvp


def scatter_apply(operand, scatter_indices, func, dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape=(), indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode=None):
    """Replace `operand` at `scatter_indices` by `func(operand)`; a repeated index applies `func`
    once per occurrence. `update_shape` is the shape the updates would have (as for `scatter`);
    `func` is an elementwise function of one scalar. Not differentiable, as in JAX."""
    prog = _scalar_fn_program(func, get_aval(operand).dtype)
    return scatter_apply_p.bind(operand, scatter_indices, func_program=prog,
                                dimension_numbers=_tuple_fields(dimension_numbers),
                                update_shape=tuple(int(s) for s in update_shape),
                                indices_are_sorted=bool(indices_are_sorted),
                                unique_indices=bool(unique_indices),
                                mode=GatherScatterMode.from_any(mode))


# ---------------------------------------------------------------- dynamic_slice


def _clamped_starts(shape, sizes, starts):
    return tuple(int(min(max(int(s), 0), n - k)) for s, n, k in zip(starts, shape, sizes))


def _dynamic_slice_impl(operand, *starts, slice_sizes):
    operand = np.asarray(operand)
    st = _clamped_starts(operand.shape, slice_sizes, starts)
    return operand[tuple(slice(s, s + k) for s, k in zip(st, slice_sizes))].copy()


def _check_starts(name, operand, starts):
    if len(starts) != operand.ndim:
        raise ValueError(f"{name}: the number of start indices ({len(starts)}) must equal the rank of "
                         f"the operand of shape {operand.shape}.")
    for s in starts:
        if s.shape != () or not dtypes.is_int(s.dtype):
            raise TypeError(f"{name}: start indices must be integer scalars, got "
                            f"{s.dtype.name}{list(s.shape)}.")


def _dynamic_slice_abstract(operand, *starts, slice_sizes):
    _check_starts("dynamic_slice", operand, starts)
    if len(slice_sizes) != operand.ndim:
        raise ValueError(f"dynamic_slice slice_sizes {slice_sizes} must have one entry per operand "
                         f"dimension, for operand shape {operand.shape}.")
    if any(not 0 <= k <= n for k, n in zip(slice_sizes, operand.shape)):
        raise TypeError(f"slice slice_sizes must be less than or equal to operand shape, got "
                        f"slice_sizes {slice_sizes} for operand shape {operand.shape}.")
    return [operand.update(shape=tuple(slice_sizes))]


def _dynamic_slice_jvp(primals, tangents, slice_sizes):
    operand, *starts = primals
    out = dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes)
    if type(tangents[0]) is Zero:
        return out, Zero.from_primal(out)
    return out, dynamic_slice_p.bind(tangents[0], *starts, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
    aval = operand.aval
    if type(ct) is Zero:
        return [Zero(aval)] + [None] * len(starts)
    zeros = shape_ops.full(aval.shape, 0, aval.dtype)
    return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


def _starts_as_indices(axis_size, starts, sdims):
    """Batched start scalars stacked into a (batch, rank) int32 index array."""
    cols = []
    for s, d in zip(starts, sdims):
        s = conversions.convert_element_type(s, np.int32)
        s = batching.move_to(s, d, 0, axis_size)
        cols.append(shape_ops.reshape(s, (axis_size, 1)))
    if not cols:
        return shape_ops.full((axis_size, 0), 0, np.int32)
    return lax.concatenate(cols, 1)


def _dynamic_slice_batch(axis_size, vals, dims, slice_sizes):
    operand, *starts = vals
    od, *sdims = dims
    if all(d is not_mapped for d in sdims):
        starts = list(starts)
        starts.insert(od, np.zeros((), np.int32))
        sizes = list(slice_sizes)
        sizes.insert(od, axis_size)
        return dynamic_slice_p.bind(operand, *starts, slice_sizes=tuple(sizes)), od
    idx = _starts_as_indices(axis_size, starts, sdims)
    nd = len(slice_sizes)
    dn = GatherDimensionNumbers(tuple(range(nd)), (), tuple(range(nd)))
    return _gather_batch(axis_size, [operand, idx], [od, 0], dimension_numbers=dn,
                         slice_sizes=tuple(slice_sizes), indices_are_sorted=False,
                         unique_indices=False, mode=GatherScatterMode.CLIP, fill_value=None)


dynamic_slice_p = Primitive("dynamic_slice")
impl_rules[dynamic_slice_p] = _dynamic_slice_impl
abstract_eval_rules[dynamic_slice_p] = _dynamic_slice_abstract
checked_impl(dynamic_slice_p)
weak_type_rules[dynamic_slice_p] = _operand_weak
ad.jvp_rules[dynamic_slice_p] = _dynamic_slice_jvp
ad.transpose_rules[dynamic_slice_p] = _dynamic_slice_transpose
batch_rules[dynamic_slice_p] = _dynamic_slice_batch


def _normalize_starts(name, operand, start_indices, allow_negative_indices=True):
    """Start indices as scalars; negative ones count from the end (then clamped by the op)
    along the axes where `allow_negative_indices` (a bool, or one per axis) holds. Elsewhere a
    static negative start is a ValueError and a traced one is clamped to 0, as in XLA."""
    shape = get_aval(operand).shape
    if isinstance(start_indices, (Tracer,)) or hasattr(start_indices, "aval") or \
            isinstance(start_indices, np.ndarray):
        aval = get_aval(start_indices)
        if aval.ndim != 1:
            raise TypeError(f"{name} start_indices must be a sequence of scalars or a 1-D array, got "
                            f"shape {aval.shape}.")
        start_indices = [start_indices[i] for i in range(aval.shape[0])]
    start_indices = list(start_indices)
    if len(start_indices) != len(shape):
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {shape})")
    if isinstance(allow_negative_indices, (bool, np.bool_)):
        allow_negative_indices = (bool(allow_negative_indices),) * len(shape)
    out = []
    for s, n, allow_negative in zip(start_indices, shape, allow_negative_indices, strict=True):
        if isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)):
            s = int(s)
            if s < 0 and not allow_negative:
                raise ValueError(f"Index {s} is out of bounds for dimension {n} if "
                                 "allow_negative_indices=False")
            out.append(np.asarray(s + n if s < 0 else s, np.int32)[()])
            continue
        aval = get_aval(s)
        if aval.shape != () or not dtypes.is_int(aval.dtype):
            raise TypeError(f"{name} start indices must be integer scalars, got "
                            f"{aval.dtype.name}{list(aval.shape)}.")
        if allow_negative and not dtypes.is_unsigned_int(aval.dtype):
            zero = np.zeros((), aval.dtype)[()]
            s = lax.select(lax.lt(s, zero), lax.add(s, np.asarray(n, aval.dtype)[()]), s)
        out.append(s)
    return out


def dynamic_slice(operand, start_indices, slice_sizes, *,
                  allow_negative_indices: bool | Sequence[bool] = True):
    """The slice of static size `slice_sizes` starting at (possibly traced) `start_indices`.

    Negative starts count from the end; starts are then clamped so the slice stays in bounds,
    as in XLA.
    """
    starts = _normalize_starts("dynamic_slice", operand, start_indices, allow_negative_indices)
    sizes = tuple(int(k) for k in slice_sizes)
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)


# ---------------------------------------------------------------- dynamic_update_slice


def _dus_impl(operand, update, *starts):
    operand, update = np.asarray(operand), np.asarray(update)
    st = _clamped_starts(operand.shape, update.shape, starts)
    out = operand.copy()
    out[tuple(slice(s, s + k) for s, k in zip(st, update.shape))] = update
    return out


def _dus_abstract(operand, update, *starts):
    _check_starts("dynamic_update_slice", operand, starts)
    if update.dtype != operand.dtype:
        raise TypeError(f"dynamic_update_slice update dtype {update.dtype.name} must match operand "
                        f"dtype {operand.dtype.name}.")
    if update.ndim != operand.ndim:
        raise TypeError(f"dynamic_update_slice update must have the same rank as operand, got "
                        f"update shape {update.shape} for operand shape {operand.shape}.")
    if any(u > n for u, n in zip(update.shape, operand.shape)):
        raise TypeError(f"dynamic_update_slice update shape must be smaller than operand shape, got "
                        f"update shape {update.shape} for operand shape {operand.shape}.")
    return [operand]


def _dus_jvp(primals, tangents):
    operand, update, *starts = primals
    out = dynamic_update_slice_p.bind(operand, update, *starts)
    t_op, t_up = tangents[:2]
    if type(t_op) is Zero and type(t_up) is Zero:
        return out, Zero.from_primal(out)
    return out, dynamic_update_slice_p.bind(_inst(t_op, operand), _inst(t_up, update), *starts)


def _dus_transpose(ct, operand, update, *starts):
    up_aval = update.aval if is_undefined(update) else get_aval(update)
    none = [None] * len(starts)
    if type(ct) is Zero:
        return [Zero(operand.aval) if is_undefined(operand) else None,
                Zero(up_aval) if is_undefined(update) else None] + none
    ct_op = ct_up = None
    if is_undefined(operand):
        ct_op = dynamic_update_slice_p.bind(ct, shape_ops.full(up_aval.shape, 0, up_aval.dtype), *starts)
    if is_undefined(update):
        ct_up = dynamic_slice_p.bind(ct, *starts, slice_sizes=up_aval.shape)
    return [ct_op, ct_up] + none


def _dus_batch(axis_size, vals, dims):
    operand, update, *starts = vals
    od, ud, *sdims = dims
    operand = batching.move_to(operand, od, 0, axis_size)
    if all(d is not_mapped for d in sdims):
        update = batching.move_to(update, ud, 0, axis_size)
        return dynamic_update_slice_p.bind(operand, update, np.zeros((), np.int32), *starts), 0
    idx = _starts_as_indices(axis_size, starts, sdims)
    nd = len(starts)
    dn = ScatterDimensionNumbers(tuple(range(nd)), (), tuple(range(nd)))
    return _scatter_batch(scatter_p, axis_size, [operand, idx, update], [0, 0, ud],
                          dimension_numbers=dn, indices_are_sorted=True, unique_indices=True,
                          mode=GatherScatterMode.CLIP)


dynamic_update_slice_p = Primitive("dynamic_update_slice")
impl_rules[dynamic_update_slice_p] = _dus_impl
abstract_eval_rules[dynamic_update_slice_p] = _dus_abstract
checked_impl(dynamic_update_slice_p)
weak_type_rules[dynamic_update_slice_p] = _operand_weak
ad.jvp_rules[dynamic_update_slice_p] = _dus_jvp
ad.transpose_rules[dynamic_update_slice_p] = _dus_transpose
batch_rules[dynamic_update_slice_p] = _dus_batch


def dynamic_update_slice(operand, update, start_indices, *,
                         allow_negative_indices: bool | Sequence[bool] = True):
    """`operand` with `update` written at (possibly traced) `start_indices`, clamped to fit."""
    starts = _normalize_starts("dynamic_update_slice", operand, start_indices, allow_negative_indices)
    if isinstance(update, (bool, int, float, complex)):
        update = arguments._coerce_scalars("dynamic_update_slice", operand, update)[1]
    return dynamic_update_slice_p.bind(operand, update, *starts)


# ---------------------------------------------------------------- in-dim helpers


def _index_list(operand, axis, index, zero=0):
    nd = get_aval(operand).ndim
    starts = [zero] * nd
    starts[axis] = index
    return starts


def _allow_negative_at(ndim, axis, allow_negative_indices):
    """Per-axis flags: only `axis` has a start of the caller's (the others start at 0)."""
    flags = [False] * ndim
    flags[axis] = bool(allow_negative_indices)
    return flags


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True):
    """`dynamic_slice` along one axis, the others kept whole. A negative `start_index` counts
    from the end unless `allow_negative_indices` is False."""
    shape = get_aval(operand).shape
    axis = int(axis) % len(shape)
    sizes = list(shape)
    sizes[axis] = int(slice_size)
    return dynamic_slice(operand, _index_list(operand, axis, start_index), sizes,
                         allow_negative_indices=_allow_negative_at(len(shape), axis,
                                                                   allow_negative_indices))


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True):
    """The slice at (possibly traced) `index` along `axis`; `keepdims=False` drops the axis."""
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    if keepdims:
        return out
    shape = get_aval(operand).shape
    axis = int(axis) % len(shape)
    return shape_ops.reshape(out, shape[:axis] + shape[axis + 1:])


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *,
                                allow_negative_indices: bool = True):
    """`dynamic_update_slice` with a start only along `axis` (0 elsewhere)."""
    ndim = get_aval(operand).ndim
    axis = int(axis) % ndim
    return dynamic_update_slice(operand, update, _index_list(operand, axis, start_index),
                                allow_negative_indices=_allow_negative_at(ndim, axis,
                                                                          allow_negative_indices))


def dynamic_update_index_in_dim(operand, update, index, axis: int, *,
                                allow_negative_indices: bool = True):
    """Write `update` (with or without the size-1 axis) at `index` along `axis`."""
    axis = int(axis) % get_aval(operand).ndim
    if get_aval(update).ndim == get_aval(operand).ndim - 1:
        update = shape_ops.expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """The static slice at `index` along `axis` (negative counts from the end)."""
    shape = get_aval(operand).shape
    axis = int(axis) % len(shape)
    index = int(index)
    if not -shape[axis] <= index < shape[axis]:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {shape[axis]}")
    index %= shape[axis]
    out = lax.slice_in_dim(operand, index, index + 1, axis=axis)
    return out if keepdims else shape_ops.squeeze(out, (axis,))


def index_take(src, idxs, axes):
    """Gather `src` at the integer index rows `idxs` for the listed `axes` (lax.index_take)."""
    idxs = [conversions.convert_element_type(i, np.int32) for i in idxs]
    n = get_aval(idxs[0]).shape[0]
    indices = lax.concatenate([shape_ops.reshape(i, (n, 1)) for i in idxs], 1)
    axes = tuple(int(a) for a in axes)
    shape = get_aval(src).shape
    slice_sizes = tuple(1 if i in axes else d for i, d in enumerate(shape))
    offset = tuple(range(1, len(shape) - len(axes) + 1))
    dn = GatherDimensionNumbers(offset, tuple(sorted(axes)), axes)
    return gather(src, indices, dn, slice_sizes)


def take_along_axis(arr, indices, axis: int, mode=GatherScatterMode.PROMISE_IN_BOUNDS,
                    fill_value=None):
    """`arr` gathered at `indices` along `axis`; every other dimension is matched one to one
    (the shapes must be equal apart from `axis`)."""
    shape = get_aval(arr).shape
    nd = len(shape)
    axis = int(axis) % nd
    others = tuple(d for d in range(nd) if d != axis)
    idx = shape_ops.reshape(indices, get_aval(indices).shape + (1,))
    dn = GatherDimensionNumbers((), (axis,), (axis,), others, others)
    return gather(arr, idx, dn, (1,) * nd, mode=mode, fill_value=fill_value)


def _tracer_iter(self):
    """Iterating over a tracer yields its rows (core defines Tracer, below lax)."""
    if not self.aval.shape:
        raise TypeError("iteration over a 0-d array")
    return (index_in_dim(self, i, keepdims=False) for i in range(self.aval.shape[0]))


Tracer.__iter__ = _tracer_iter
