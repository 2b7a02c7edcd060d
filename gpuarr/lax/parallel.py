"""Collectives over a named mapped axis: reductions (`psum`, `pmean`, `pmax`, `pmin`),
`axis_index`, and the data movements `all_gather`, `psum_scatter`, `all_to_all`/`pswapaxes`,
`ppermute`/`pshuffle` and `pbroadcast`.

An axis gets its name from `vmap(..., axis_name=...)` (or `pmap`). Each collective is a
primitive whose batching rule does the work on the batch dimension of the named axis: a
reduction reduces over it (a value that does not vary along the axis counts `axis_size` times
in a sum), a gather moves it into a positional axis, a permutation reorders it. Names of other
(outer) vmaps are passed on to them; a name no vmap binds is a NameError, as in JAX.
"""
from __future__ import annotations

import contextlib

import numpy as np

from gpuarr import core, pytrees
from gpuarr.backends import device_group
from gpuarr.core import Primitive, ShapedArray, Tracer, abstract_eval_rules, get_aval, pvary_p
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.batching import batch_rules, collective_prims, not_mapped
from gpuarr.lax import arguments, conversions, lax, shape_ops
from gpuarr.lax.slicing import (
    dynamic_index_in_dim,
    dynamic_slice_in_dim,
    index_in_dim,
    index_take,
)


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _unbound_rule(api=None):
    """The host step of a collective left outside every vmap binding its axis: JAX's
    NameError, which for the collectives it checks when bound names the api (`psum` for
    every reduction) and otherwise is the bare `unbound axis name`."""
    def unbound(*args, axis_name, **params):
        if api is None:
            raise NameError(f"unbound axis name: {axis_name[0]}")
        raise NameError(f"Found an unbound axis name: {axis_name[0]}. To fix this, please call "
                        f"{api} under `jax.shard_map`.")
    return unbound


def _combine_by_vmap(prim, params, names, sizes):
    """The results of `prim` at every position of the axes `names`, from the operands
    stacked along one leading axis per name: the named-vmap rule itself, so devices get
    bit for bit what the one-device path computes."""
    def combine(stacked):
        def level(i, v):
            if i == len(names):
                return [prim.bind(v, **params)]
            outs, dims = batching.batch_flat(lambda u: level(i + 1, u), sizes[i], [v], [0],
                                             names[i])
            return [batching.move_to(outs[0], dims[0], 0, sizes[i])]
        return np.asarray(level(0, stacked)[0])
    return combine


def _device_rule(prim, api=None, total=None):
    """The host step of a collective: on a device of a mesh (inside shard_map or pmap on
    several devices) it meets the other devices; elsewhere the axis is unbound."""
    unbound = _unbound_rule(api)

    def rule(x, *, axis_name, **params):
        here = device_group.current()
        if here is None:
            return unbound(x, axis_name=axis_name, **params)
        group, flat = here
        group.check_axes(axis_name, api or prim.name)
        x = np.asarray(x)
        sizes = [group.axis_sizes[group.axis_names.index(n)] for n in axis_name]
        params = dict(params, axis_name=axis_name)
        signature = f"{prim.name} over {axis_name} of {x.dtype}{list(x.shape)}"
        return group.collective(flat, x, axis_name, signature,
                                _combine_by_vmap(prim, params, axis_name, sizes), total)
    return rule


def _reducer_rule(prim, reduce, repeat):
    """Batch rule of a reducing collective: `reduce(x, axes)` over the batch dimension of the
    named axis; `repeat(x, n)` for a value that is the same at all n positions."""

    def rule(axis_size, vals, dims, *, axis_name):
        (x,), (d,) = vals, dims
        name = batching.current_axis_name()
        if name not in axis_name:  # an outer vmap's axis: act on each element of this one
            return prim.bind(x, axis_name=axis_name), d
        out = repeat(x, axis_size) if d is not_mapped else reduce(x, (d,))
        rest = tuple(n for n in axis_name if n != name)
        return (prim.bind(out, axis_name=rest) if rest else out), not_mapped
    return rule


def _collective(name, reduce, repeat, total=None) -> Primitive:
    prim = Primitive(name)
    impl_rules[prim] = _device_rule(prim, "psum", total)
    abstract_eval_rules[prim] = lambda x, *, axis_name: [x]
    batch_rules[prim] = _reducer_rule(prim, reduce, repeat)
    collective_prims.add(prim)
    return prim


def _psum_transpose(ct, x, *, axis_name):
    """Typed by check_vma (its operand varies along the axes: JAX's psum_invariant), psum's
    transpose is pvary, a per-device no-op; untyped (check_vma=False, pmap, vmap) it is a
    psum, JAX's psum_p read as psum followed by a broadcast."""
    if ad.is_undefined(x) and set(axis_name) <= x.aval.vma:
        missing = tuple(n for n in axis_name if n not in core.vma_of(ct))
        return [pvary_p.bind(ct, axes=missing) if missing else ct]
    return [psum_p.bind(ct, axis_name=axis_name)]


def _vma_removed(in_avals, *, axis_name):  # a reduction is the same along its axes
    return [in_avals[0].vma - set(axis_name)]


def _vma_added(in_avals, *, axis_name, **params):  # varies along its axes
    return [frozenset(in_avals[0].vma if in_avals else ()) | set(axis_name)]


psum_p = _collective("psum", shape_ops.reduce_sum,
                     lambda x, n: lax.mul(x, shape_ops.full_like(x, n)), total="sum")
ad.deflinear(psum_p, _psum_transpose)
pmax_p = _collective("pmax", lax.reduce_max, lambda x, n: x)
pmin_p = _collective("pmin", lax.reduce_min, lambda x, n: x)
ad.defjvp_zero(pmax_p)  # JAX does not differentiate these either; their tangents are zero
ad.defjvp_zero(pmin_p)
for _p in (psum_p, pmax_p, pmin_p):
    core.vma_rules[_p] = _vma_removed

axis_index_p = Primitive("axis_index")


def _axis_index_host(*, axis_name):
    here = device_group.current()
    if here is None:
        return _unbound_rule("axis_index")(axis_name=axis_name)
    group, flat = here
    group.check_axes(axis_name, "axis_index")
    return np.int32(group.axis_position(flat, axis_name))


impl_rules[axis_index_p] = _axis_index_host
abstract_eval_rules[axis_index_p] = lambda *, axis_name: [ShapedArray((), np.dtype(np.int32))]
collective_prims.add(axis_index_p)
ad.defjvp_zero(axis_index_p)
core.vma_rules[axis_index_p] = _vma_added


def _axis_index_batch(axis_size, vals, dims, *, axis_name):
    if batching.current_axis_name() != axis_name[0]:
        return axis_index_p.bind(axis_name=axis_name), not_mapped
    return shape_ops.iota(np.int32, axis_size), 0


batch_rules[axis_index_p] = _axis_index_batch


# ---------------------------------------------------------------- axis_index_groups
#
# As in JAX, only pmap's axes take axis_index_groups (vmap and shard_map raise JAX's
# NotImplementedError). A grouped collective is the whole axis's all_gather, of which each
# position combines the rows of its own group: the same values on the vectorised pmap and on
# a program per device.

_pmap_axes: list = []  # the names of the pmaps being traced


@contextlib.contextmanager
def pmap_axis(name):
    """Collectives traced inside name the pmap axis `name` (they may take axis_index_groups)."""
    _pmap_axes.append(name)
    try:
        yield
    finally:
        _pmap_axes.pop()


def _groups(axis_index_groups, names, api):
    """axis_index_groups checked as JAX checks them: a tuple of tuples of positions, or None."""
    if axis_index_groups is None:
        return None
    if any(n not in _pmap_axes for n in names):
        from gpuarr.sharding.mesh_context import get_abstract_mesh
        mesh = get_abstract_mesh()
        if any(n in getattr(mesh, "manual_axes", ()) for n in names):
            raise NotImplementedError(
                f"axis_index_groups is not supported in shard_map ({api} over {names}): "
                "split the mesh axis into two axes and reduce over one of them.")
        raise NotImplementedError("axis_index_groups not supported in vmap collectives. Please "
                                  "open a feature request!" if api != "all_gather" else
                                  "axis_index_groups not supported in vmap")
    if len(names) != 1:
        raise NotImplementedError(f"{api}: axis_index_groups over several axis names at once "
                                  "is not supported; group the positions of one axis.")
    groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
    if sorted(i for g in groups for i in g) != list(range(_axis_size_of(names))):
        raise ValueError("axis_index_groups must cover all indices exactly once")
    return groups


def _group_table(groups, size, pad_with_self):
    """Row k: the positions of k's group (in group order), padded to the longest group with
    k itself (harmless for max and min) or with -1."""
    width = max(len(g) for g in groups)
    table = np.empty((size, width), np.int32)
    for g in groups:
        for k in g:
            table[k] = list(g) + [k if pad_with_self else -1] * (width - len(g))
    return table


def _my_row(table, name):
    row = dynamic_index_in_dim(table, axis_index_p.bind(axis_name=(name,)), 0, keepdims=False)
    return row


def _grouped_reduce(prim, v, name, groups):
    size = _axis_size_of((name,))
    gathered = all_gather_p.bind(v, all_gather_dimension=0, axis_name=(name,),
                                 axis_index_groups=None, axis_size=size, tiled=False)
    if prim is psum_p:  # positions outside the group count as zeros
        member = np.zeros((size, size), bool)
        for g in groups:
            member[np.ix_(g, g)] = True
        keep = shape_ops.broadcast_in_dim(_my_row(member, name), get_aval(gathered).shape, (0,))
        return shape_ops.reduce_sum(lax.select(keep, gathered, shape_ops.full_like(gathered, 0)),
                                    (0,))
    rows = index_take(gathered, [_my_row(_group_table(groups, size, True), name)], (0,))
    return (lax.reduce_max if prim is pmax_p else lax.reduce_min)(rows, (0,))


def _bind_leaves(prim, x, axis_name, axis_index_groups):
    """`prim` on each leaf of the pytree `x` (Python scalars as weakly typed 0-d arrays)."""
    names = _names(axis_name)
    groups = _groups(axis_index_groups, names, prim.name)

    def one(v):
        (v,) = arguments._coerce_scalars(prim.name, v)
        if groups is None:
            return prim.bind(_varying(v, names), axis_name=names)
        return _grouped_reduce(prim, v, names[0], groups)
    return pytrees.tree_map(one, x)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum each leaf of the pytree `x` over the mapped axis (or axes) `axis_name`; the result is
    the same at every position of the axis (JAX's lax.psum under vmap). Under pmap,
    `axis_index_groups` (lists of axis positions covering each once) sums within each group.
    When no leaf is traced, the value is the same at every position and the sum is the value
    times the axis (or group) size, with no collective, as JAX folds it (`psum(1, 'i')` is
    the axis size, a Python int)."""
    leaves = pytrees.tree_leaves(x)
    if leaves and not any(isinstance(v, Tracer) for v in leaves):
        return _psum_of_constants(x, axis_name, axis_index_groups)
    return _bind_leaves(psum_p, x, axis_name, axis_index_groups)


def _psum_of_constants(x, axis_name, axis_index_groups):
    names = _names(axis_name)
    groups = _groups(axis_index_groups, names, "psum")
    size = len(groups[0]) if groups is not None else _axis_size_of(names)

    def times_size(v):
        if get_aval(v).dtype == np.bool_:
            v = conversions.convert_element_type(v, np.int32)
        if type(v) in (int, float, complex):  # JAX keeps a Python number's type
            return type(v)(size) * v
        return np.asarray(size, get_aval(v).dtype) * v
    return pytrees.tree_map(times_size, x)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of each leaf of `x` over the mapped axis (or axes) `axis_name` (lax.pmean), or
    within each of pmap's `axis_index_groups`; integer leaves give floats, as true division
    does."""
    size = psum(1, axis_name, axis_index_groups=axis_index_groups)  # the size, no collective
    return pytrees.tree_map(
        lambda v: psum(v, axis_name, axis_index_groups=axis_index_groups) / size, x)


def pmax(x, axis_name, *, axis_index_groups=None):
    """Elementwise maximum of each leaf of `x` over the mapped axis `axis_name` (lax.pmax),
    or within each of pmap's `axis_index_groups`."""
    return _bind_leaves(pmax_p, x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Elementwise minimum of each leaf of `x` over the mapped axis `axis_name` (lax.pmin),
    or within each of pmap's `axis_index_groups`."""
    return _bind_leaves(pmin_p, x, axis_name, axis_index_groups)


def axis_index(axis_name):
    """The position along the mapped axis `axis_name`, an int32 that varies along it
    (lax.axis_index)."""
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError("axis_index of several axes at once is not supported; "
                                  "combine axis_index of each name.")
    return axis_index_p.bind(axis_name=names)


# ---------------------------------------------------------------- moving data along the axis
#
# As in JAX's batching rules: the named axis is the batch dimension `d` of the operand (None
# when the value is the same at every position). Outer names leave the work to the outer vmap,
# with positional parameters shifted past this vmap's batch dimension.


def _single_name(prim_name, axis_name, axis_index_groups):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{prim_name}: axis_index_groups is not supported in vmap.")
    if len(axis_name) != 1:
        raise NotImplementedError(f"{prim_name} over several axis names at once is not "
                                  "supported; nest one collective per name.")


def _take(x, d, sources, axis_size):
    """x with its batch dimension (at `d`, maybe None) reordered so that position i holds
    position sources[i]; a source of None gives zeros. The result is batched at 0."""
    x = batching.move_to(x, d, 0, axis_size)
    picked = [0 if src is None else src for src in sources]
    if picked != list(range(axis_size)):
        x = index_take(x, [np.array(picked, np.int32)], (0,))
    if None in sources:
        shape = get_aval(x).shape
        keep = shape_ops.broadcast_in_dim(np.array([src is not None for src in sources]), shape, (0,))
        x = lax.select(keep, x, shape_ops.full_like(x, 0))
    return x


def _fold(x, axis):
    """Merge dimensions axis and axis + 1."""
    shape = list(get_aval(x).shape)
    shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
    return shape_ops.reshape(x, tuple(shape))


def _split(x, axis, factor):
    """Split dimension `axis` into (factor, size // factor)."""
    shape = list(get_aval(x).shape)
    shape[axis:axis + 1] = [factor, shape[axis] // factor]
    return shape_ops.reshape(x, tuple(shape))


def _axis_size_of(axis_name) -> int:
    size = 1
    for name in axis_name:
        size *= batching.bound_axis_size(name)
    return size


def _moving_collective(name: str, abstract_eval, batch_rule, api=None) -> Primitive:
    """A collective that moves data along the named axis: all its work is `batch_rule`; left
    in a program outside every vmap, its host step raises JAX's NameError."""
    prim = Primitive(name)
    impl_rules[prim] = _device_rule(prim, api)
    abstract_eval_rules[prim] = abstract_eval
    batch_rules[prim] = batch_rule
    collective_prims.add(prim)
    return prim


# all_gather: every position receives the values of all positions, stacked (or concatenated
# when tiled) along `all_gather_dimension`.

def _all_gather_abstract(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                         tiled):
    shape = list(x.shape)
    if tiled:
        shape[all_gather_dimension] *= axis_size
    else:
        shape.insert(all_gather_dimension, axis_size)
    return [x.update(shape=tuple(shape), weak_type=False)]


def _all_gather_batch(frame_size, vals, dims, *, all_gather_dimension, axis_name,
                      axis_index_groups, axis_size, tiled):
    (x,), (d,) = vals, dims
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups,
                  axis_size=axis_size, tiled=tiled)
    if batching.current_axis_name() not in axis_name:
        if d is not not_mapped:
            if d <= all_gather_dimension:
                all_gather_dimension += 1
            elif not tiled:
                d += 1
        return all_gather_p.bind(x, all_gather_dimension=all_gather_dimension, **params), d
    _single_name("all_gather", axis_name, axis_index_groups)
    y = batching.move_to(x, d, all_gather_dimension, frame_size)
    return (_fold(y, all_gather_dimension) if tiled else y), not_mapped


all_gather_p = _moving_collective("all_gather", _all_gather_abstract, _all_gather_batch)


# psum_scatter (JAX's reduce_scatter primitive): psum, then position i keeps chunk i of
# `scatter_dimension`.

def _reduce_scatter_abstract(x, *, scatter_dimension, axis_name, axis_index_groups, axis_size,
                             tiled):
    shape = list(x.shape)
    size = shape[scatter_dimension]
    if tiled:
        if size % axis_size:
            raise ValueError(f"tiled reduce_scatter operand scatter dimension size {size} must "
                             f"be divisible by shard_count {axis_size}")
        shape[scatter_dimension] = size // axis_size
    else:
        if size != axis_size:
            raise ValueError(f"reduce_scatter operand scatter dimension size {size} must match "
                             f"shard count {axis_size}")
        del shape[scatter_dimension]
    return [x.update(shape=tuple(shape))]


def _reduce_scatter_batch(frame_size, vals, dims, *, scatter_dimension, axis_name,
                          axis_index_groups, axis_size, tiled):
    (x,), (d,) = vals, dims
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups,
                  axis_size=axis_size, tiled=tiled)
    if batching.current_axis_name() not in axis_name:
        if d is not not_mapped:
            if d <= scatter_dimension:
                scatter_dimension += 1
            elif not tiled:
                d -= 1  # the scatter dimension before it is dropped
        return reduce_scatter_p.bind(x, scatter_dimension=scatter_dimension, **params), d
    _single_name("psum_scatter", axis_name, axis_index_groups)
    _reduce_scatter_abstract(get_aval(x) if d is not_mapped else _unbatched_aval(x, d),
                             scatter_dimension=scatter_dimension, **params)
    total = (lax.mul(x, shape_ops.full_like(x, frame_size)) if d is not_mapped
             else shape_ops.reduce_sum(x, (d,)))
    return (_split(total, scatter_dimension, frame_size) if tiled else total), scatter_dimension


def _unbatched_aval(x, d):
    """The per-position aval of `x` batched at `d`."""
    aval = get_aval(x)
    return aval.update(shape=aval.shape[:d] + aval.shape[d + 1:])


reduce_scatter_p = _moving_collective("reduce_scatter", _reduce_scatter_abstract,
                                      _reduce_scatter_batch)


# all_to_all: split `split_axis` into axis_size chunks, send chunk j to position j, and
# concatenate what arrives along `concat_axis` (the wrapper adds/removes the unit axes of the
# untiled form, as JAX's does).

def _all_to_all_abstract(x, *, axis_name, split_axis, concat_axis, axis_index_groups,
                         axis_size, tiled):
    shape = list(x.shape)
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return [x.update(shape=tuple(shape), weak_type=False)]


def _swap(x, a, b):
    perm = list(range(get_aval(x).ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return shape_ops.transpose(x, perm)


def _all_to_all_batch(frame_size, vals, dims, *, axis_name, split_axis, concat_axis,
                      axis_index_groups, axis_size, tiled):
    (x,), (d,) = vals, dims
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups,
                  axis_size=axis_size, tiled=tiled)
    if batching.current_axis_name() not in axis_name:
        if d is not not_mapped:
            split_axis += d <= split_axis
            concat_axis += d <= concat_axis
        return all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis,
                                 **params), d
    _single_name("all_to_all", axis_name, axis_index_groups)
    if d is not_mapped:
        x, d = batching.move_to(x, d, 0, frame_size), 0
    if split_axis == concat_axis:  # swap the batch dimension with the chunk index
        axis = split_axis + (d <= split_axis)
        out_d = d
        x = _split(x, axis, frame_size)
        d += axis <= d
        return _fold(_swap(x, d, axis), axis), out_d
    x = _fold(batching.moveaxis(x, d, concat_axis), concat_axis)
    return _split(x, split_axis, frame_size), split_axis


all_to_all_p = _moving_collective("all_to_all", _all_to_all_abstract, _all_to_all_batch)


# ppermute: position dst receives position src's value for each (src, dst) pair; positions
# no pair sends to get zeros.

def _ppermute_batch(frame_size, vals, dims, *, axis_name, perm):
    (x,), (d,) = vals, dims
    if batching.current_axis_name() not in axis_name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    _single_name("ppermute", axis_name, None)
    sources = [None] * frame_size
    for src, dst in perm:
        if not (0 <= src < frame_size and 0 <= dst < frame_size):
            raise ValueError(f"ppermute perm {list(perm)} has indices outside the axis "
                             f"{axis_name[0]!r} of size {frame_size}.")
        sources[dst] = src
    if d is not_mapped and sources == list(range(frame_size)):
        return x, not_mapped
    return _take(x, d, sources, frame_size), 0


ppermute_p = _moving_collective("ppermute", lambda x, *, axis_name, perm: [x], _ppermute_batch,
                                "ppermute")


# pbroadcast: every position receives position `source`'s value.

def _pbroadcast_batch(frame_size, vals, dims, *, axis_name, source):
    (x,), (d,) = vals, dims
    if batching.current_axis_name() not in axis_name:
        return pbroadcast_p.bind(x, axis_name=axis_name, source=source), d
    _single_name("pbroadcast", axis_name, None)
    if not 0 <= source < frame_size:
        raise ValueError(f"pbroadcast source {source} is outside the axis {axis_name[0]!r} of "
                         f"size {frame_size}.")
    if d is not_mapped:
        return x, not_mapped
    return index_in_dim(x, source, d, keepdims=False), not_mapped


pbroadcast_p = _moving_collective("pbroadcast", lambda x, *, axis_name, source: [x],
                                  _pbroadcast_batch)


# Each of these is linear in its operand; its transpose is the movement back.
ad.deflinear(all_gather_p, lambda ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
             axis_size, tiled: [reduce_scatter_p.bind(
                 ct, scatter_dimension=all_gather_dimension, axis_name=axis_name,
                 axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)])
ad.deflinear(reduce_scatter_p, lambda ct, x, *, scatter_dimension, axis_name,
             axis_index_groups, axis_size, tiled: [all_gather_p.bind(
                 ct, all_gather_dimension=scatter_dimension, axis_name=axis_name,
                 axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)])
ad.deflinear(all_to_all_p, lambda ct, x, *, split_axis, concat_axis, **params: [
    all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis, **params)])
ad.deflinear(ppermute_p, lambda ct, x, *, axis_name, perm: [
    ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((dst, src) for src, dst in perm))])


def _pbroadcast_transpose(ct, x, *, axis_name, source):
    # Every position's cotangent flows back to the source position.
    shape = get_aval(ct).shape
    at_source = shape_ops.broadcast_in_dim(
        lax.eq(axis_index_p.bind(axis_name=axis_name), np.int32(source)), shape, ())
    return [lax.select(at_source, psum_p.bind(ct, axis_name=axis_name), shape_ops.full_like(ct, 0))]


ad.deflinear(pbroadcast_p, _pbroadcast_transpose)


for _p in (all_gather_p, reduce_scatter_p, all_to_all_p, ppermute_p, pbroadcast_p):
    core.vma_rules[_p] = _vma_added


def _leafwise(fn, x, names=()):
    """`fn` on each leaf of `x`, which with check_vma first varies along `names` (JAX's
    implicit pvary before a collective over them)."""
    return pytrees.tree_map(
        lambda v: fn(_varying(arguments._coerce_scalars("collective", v)[0], names)), x)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False, to="varying"):
    """Each leaf of `x` gathered from every position of the mapped axis `axis_name`: stacked
    along a new positional axis `axis` (or concatenated along the existing axis `axis` when
    `tiled`); every position gets the same result (lax.all_gather). Under pmap,
    `axis_index_groups` (groups of equal size) gathers from the positions of each group, in
    the group's order."""
    if to not in ("varying", "invarying"):
        raise NotImplementedError(f"all_gather(to={to!r}) is not supported; use 'varying'.")
    names = _names(axis_name)
    groups = _equal_groups(axis_index_groups, names, "all_gather")

    def bind(v):
        ndim = get_aval(v).ndim + (not tiled)
        if not -ndim <= axis < ndim:
            raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
        if groups is None:
            return all_gather_p.bind(v, all_gather_dimension=axis % ndim, axis_name=names,
                                     axis_index_groups=None, axis_size=_axis_size_of(names),
                                     tiled=tiled)
        size = _axis_size_of(names)
        gathered = all_gather_p.bind(v, all_gather_dimension=0, axis_name=names,
                                     axis_index_groups=None, axis_size=size, tiled=False)
        rows = index_take(gathered, [_my_row(_group_table(groups, size, True), names[0])], (0,))
        out = batching.moveaxis(rows, 0, axis % ndim)
        return _fold(out, axis % ndim) if tiled else out
    return _leafwise(bind, x, names)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """psum of each leaf of `x` over the mapped axis `axis_name`, of which position i keeps
    only chunk i along `scatter_dimension` (that dimension is dropped unless `tiled`). Under
    pmap, `axis_index_groups` (groups of equal size) sums within each group, whose i-th member
    keeps chunk i."""
    names = _names(axis_name)
    groups = _equal_groups(axis_index_groups, names, "psum_scatter")
    if groups is not None:
        return _leafwise(lambda v: _grouped_scatter(v, names[0], groups, scatter_dimension,
                                                    tiled), x)
    return _leafwise(lambda v: reduce_scatter_p.bind(
        v, scatter_dimension=scatter_dimension, axis_name=names,
        axis_index_groups=None, axis_size=_axis_size_of(names), tiled=tiled), x, names)


def _equal_groups(axis_index_groups, names, api):
    groups = _groups(axis_index_groups, names, api)
    if groups is not None and len({len(g) for g in groups}) != 1:
        raise ValueError(f"{api}: axis_index_groups must all have the same size, got "
                         f"{[list(g) for g in groups]}.")
    return groups


def _my_place(groups, name):
    """This position's index within its group."""
    place = np.empty(sum(len(g) for g in groups), np.int32)
    for g in groups:
        place[list(g)] = np.arange(len(g), dtype=np.int32)
    return _my_row(place, name)


def _grouped_scatter(v, name, groups, scatter_dimension, tiled):
    m = len(groups[0])
    total = _grouped_reduce(psum_p, v, name, groups)
    _reduce_scatter_abstract(get_aval(total), scatter_dimension=scatter_dimension,
                             axis_name=(name,), axis_index_groups=None, axis_size=m,
                             tiled=tiled)  # JAX's errors for a dimension that does not split
    chunk = get_aval(total).shape[scatter_dimension] // m
    start = lax.mul(_my_place(groups, name), np.int32(chunk))
    out = dynamic_slice_in_dim(total, start, chunk, scatter_dimension)
    return out if tiled else shape_ops.squeeze(out, (scatter_dimension,))


def _grouped_all_to_all(v, name, groups, split_axis, concat_axis):
    """Member p of each group receives chunk p of every member's `split_axis`, in group
    order along `concat_axis` (the tiled form)."""
    m, size = len(groups[0]), _axis_size_of((name,))
    gathered = all_gather_p.bind(v, all_gather_dimension=0, axis_name=(name,),
                                 axis_index_groups=None, axis_size=size, tiled=False)
    rows = index_take(gathered, [_my_row(_group_table(groups, size, True), name)], (0,))
    chunk = get_aval(v).shape[split_axis] // m
    pieces = dynamic_slice_in_dim(rows, lax.mul(_my_place(groups, name), np.int32(chunk)),
                                  chunk, split_axis + 1)
    return _fold(batching.moveaxis(pieces, 0, concat_axis), concat_axis)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Materialise the mapped axis `axis_name` at position `concat_axis` of each leaf of `x`
    and map its axis `split_axis` instead: position j receives chunk j of every position's
    `split_axis` (lax.all_to_all). Untiled, `split_axis` must have the mapped axis's size."""
    names = _names(axis_name)
    groups = _equal_groups(axis_index_groups, names, "all_to_all")

    def bind(v, split_axis=split_axis, concat_axis=concat_axis):
        size = _axis_size_of(names) if groups is None else len(groups[0])
        shape = get_aval(v).shape
        if tiled and shape[split_axis] % size:
            raise ValueError(f"The size of all_to_all split_axis ({shape[split_axis]}) has to "
                             f"be divisible by the size of the named axis {axis_name} ({size})")
        if not tiled:
            if size != shape[split_axis]:
                raise ValueError("all_to_all requires the size of the mapped axis axis_name to "
                                 "equal x.shape[split_axis], but they are "
                                 f"{size} and {shape[split_axis]} respectively.")
            if split_axis < concat_axis:
                concat_axis += 1  # a position after split_axis is removed
                v = shape_ops.expand_dims(v, (concat_axis,))
            elif concat_axis < split_axis:
                v = shape_ops.expand_dims(v, (concat_axis,))
                split_axis += 1
        if groups is not None:
            out = _grouped_all_to_all(v, names[0], groups, split_axis, concat_axis)
        else:
            out = all_to_all_p.bind(v, split_axis=split_axis, concat_axis=concat_axis,
                                    axis_name=names, axis_index_groups=None, axis_size=size,
                                    tiled=tiled)
        if not tiled and split_axis != concat_axis:
            out = shape_ops.squeeze(out, (split_axis,))
        return out
    return _leafwise(bind, x, names)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the mapped axis `axis_name` with the positional axis `axis` of each leaf of `x`
    (all_to_all with split_axis = concat_axis = axis)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def ppermute(x, axis_name, perm):
    """Each leaf of `x` permuted along the mapped axis `axis_name`: for each (source,
    destination) pair in `perm`, position destination receives position source's value;
    positions no pair names as a destination get zeros (lax.ppermute)."""
    names = _names(axis_name)
    perm = tuple((int(src), int(dst)) for src, dst in perm)
    return _leafwise(lambda v: ppermute_p.bind(v, axis_name=names, perm=perm), x, names)


def pshuffle(x, axis_name, perm):
    """Each leaf of `x` reordered along the mapped axis `axis_name` so that position i
    receives position perm[i]'s value; `perm` must be a permutation of range(axis size)."""
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pbroadcast(x, axis_name, source):
    """Each leaf of `x` replaced at every position of the mapped axis `axis_name` by its
    value at position `source` (lax.pbroadcast)."""
    names = _names(axis_name)
    return _leafwise(lambda v: pbroadcast_p.bind(v, axis_name=names, source=int(source)), x,
                     names)


# ---------------------------------------------------------------- pvary and pcast
#
# With check_vma a shard_map body types each value with the manual axes it varies along
# (core.ShapedArray.vma). pvary makes a value that is the same on every device of some axes
# vary along them: nothing changes on a device, but its transpose sums the cotangents over
# those axes (a psum), which is how grad of an unvarying value sums over the devices.

impl_rules[pvary_p] = lambda x, *, axes: x
abstract_eval_rules[pvary_p] = lambda x, *, axes: [x.update(vma=x.vma | set(axes))]
core.vma_rules[pvary_p] = lambda in_avals, *, axes: [in_avals[0].vma | set(axes)]
ad.deflinear(pvary_p, lambda ct, x, *, axes: [psum_p.bind(ct, axis_name=axes)])


def _pvary_batch(axis_size, vals, dims, *, axes):
    """Under the named vmap of one of its axes (shard_map on one device) a value varies along
    the axis by being mapped along it: an unmapped one is broadcast, so its transpose sums
    over the axis as the psum does."""
    (x,), (d,) = vals, dims
    name = batching.current_axis_name()
    if name in axes and d is not_mapped:
        x, d = batching.move_to(x, d, 0, axis_size), 0
    rest = tuple(a for a in axes if a != name)
    return (pvary_p.bind(x, axes=rest) if rest else x), d


batch_rules[pvary_p] = _pvary_batch
collective_prims.add(pvary_p)


def _varying(v, names):
    """`v` made to vary along the axes of `names` it does not vary along yet (check_vma)."""
    if not core.vma_checked() or not isinstance(v, Tracer):
        return v
    missing = tuple(n for n in names if n not in core.vma_of(v))
    return pvary_p.bind(v, axes=missing) if missing else v


def _pvary(x, axes):
    """JAX's core.pvary: a no-op inside a shard_map body with check_vma=False."""
    if core.vma_checked():
        return pvary_p.bind(x, axes=core.ordered_axes(axes))
    from gpuarr.sharding.mesh_context import get_abstract_mesh
    if all(a in get_abstract_mesh().manual_axes for a in axes):
        return x
    raise ValueError("pvary should be called under jax.shard_map.")


def _pcast_from(aval, axes, name) -> str:
    states = {"varying" if a in aval.vma else "invarying" for a in axes}
    if len(states) > 1:
        raise ValueError(
            f"{name} can only accept axis_name which corresponds to one of varying, unreduced, "
            f"reduced or invarying state of the input. Got input type: {aval}, axes: {axes} "
            f"and input state: {states}")
    return states.pop()


_PCAST_TO = {"unreduced", "reduced", "varying"}  # printed as JAX prints its set


def pcast(x, axis_name, *, to: str):
    """Cast each leaf of `x` between the manual-axis states of a shard_map body with
    check_vma: `to='varying'` makes a value that is the same on every device of the mesh axes
    `axis_name` vary along them (no data moves; the transpose sums cotangents over them).
    gpuarr's types carry no reduced or unreduced axes, so those casts are not supported."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
    axes = (axis_name,) if not isinstance(axis_name, tuple) else axis_name
    if not axis_name:
        return x
    if to not in _PCAST_TO:
        raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {_PCAST_TO}")

    def cast(leaf):
        from_ = _pcast_from(get_aval(leaf), axes, "jax.lax.pcast")
        if (from_, to) == ("invarying", "varying"):
            return _pvary(leaf, axes)
        if (from_, to) in (("invarying", "reduced"), ("varying", "unreduced")):
            raise NotImplementedError(f"pcast from={from_}, to={to!r}: gpuarr's types carry "
                                      "no reduced or unreduced mesh axes.")
        raise ValueError(f"Unsupported pcast from={from_}, to={to!r}")
    return pytrees.tree_map(cast, x)
