"""Eager operations along the split dimension of an Array split over several devices of this
process, with the sharding JAX reports for each (XLA's propagation over Auto mesh axes).

Two kinds of rule, one per primitive:

- Regions (`slice`, `rev`, `concatenate`, `dynamic_slice`): each device's block of the result
  is read from the pieces that hold it, each piece giving only the part of it that the block
  needs (a replicated result is read once and copied to each device), so nothing else moves.
- Joined (`sort` and the cumulative operations along a split dimension, gathers, scatters,
  `dynamic_update_slice`): the primitive runs on the operands put together on the first
  device, and its result is cut into the pieces of the sharding JAX reports. (A gather
  taking the split dimensions whole, or a scatter into unsplit ones, runs on each device's
  blocks before it gets here: data_parallel.py's rules.)

Either way the values are bit for bit the one-device computation's. Over Explicit mesh axes,
where JAX types the result's sharding or raises ShardingTypeError, only `rev` and
`concatenate` run here (their specs written out per dimension, as JAX's typed shardings
print); the others keep the caller's joined path.
"""
from __future__ import annotations

import numpy as np

from gpuarr import core, dispatch
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards, own_copy
from gpuarr.lax import cumulative, lax, shape_ops, slicing, sorting
from gpuarr.sharding import global_value
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shardings import NamedSharding
from gpuarr.sharding.tree_shardings import with_sharding

SCATTERS = (slicing.scatter_p, slicing.scatter_add_p, slicing.scatter_sub_p,
            slicing.scatter_mul_p, slicing.scatter_min_p, slicing.scatter_max_p)
SCATTER_NAMES = tuple(p.name for p in SCATTERS)
_SCATTERS = {*SCATTERS, slicing.scatter_apply_p, slicing.dynamic_update_slice_p}
_ALONG = {sorting.sort_p, cumulative.cumsum_p, cumulative.cumprod_p, cumulative.cummax_p,
          cumulative.cummin_p, cumulative.cumlogsumexp_p}


def run(prim, args, params):
    """`prim` on `args` (some split over several devices of this process) as JAX runs it
    along a split dimension, or None where no rule here applies (the caller then reads the
    operands joined and reports the first device)."""
    if prim not in _REGIONS and prim not in _ALONG and prim not in _SCATTERS \
            and prim is not slicing.gather_p:
        return None
    split = [a._value for a in _split(args)]
    if not split:
        return None
    mesh = split[0].sharding.mesh
    if any(s.sharding.mesh != mesh for s in split):
        return None
    typed = mesh._any_axis_explicit
    if global_value.spans_processes(args):
        return _across_processes(prim, args, params, split[0], typed)
    if prim in _REGIONS and (not typed or prim in (shape_ops.rev_p, lax.concatenate_p)):
        return _REGIONS[prim](args, params, split[0], typed)
    if typed:
        return None
    spec = _joined_spec(prim, args, params)
    if spec is None:
        return None
    return _joined(prim, args, params, split[0], spec)


# ---------------------------------------------------------------- reading pieces


def _entries(a) -> list:
    """`a`'s spec entry per dimension (None: unsplit), or all None when `a` is not split."""
    if type(a) is Array and type(a._value) is DeviceShards:
        return list(a._value.sharding.spec._normalized_spec_for_aval(a.ndim).partitions)
    return [None] * np.ndim(a)


def _split(args) -> list:
    return [a for a in args if type(a) is Array and type(a._value) is DeviceShards]


def _ways(mesh, entry) -> int:
    names = () if entry is None else entry if isinstance(entry, tuple) else (entry,)
    return int(np.prod([mesh.shape[n] for n in names], dtype=np.int64))


def _as_index(coords: np.ndarray):
    """`coords` as a basic slice when they step evenly (a view, no copy), else as they are."""
    if len(coords) == 1 or (len(coords) > 1 and np.all(np.diff(coords) == coords[1] - coords[0])
                            and coords[1] != coords[0]):
        step = int(coords[1] - coords[0]) if len(coords) > 1 else 1
        stop = int(coords[-1]) + step
        return slice(int(coords[0]), stop if stop >= 0 else None, step)
    return coords


def _read(a, coords) -> np.ndarray:
    """`a`'s global value at `coords` (one array of indices per dimension: the value's
    `[np.ix_(*coords)]`) on the host, each piece of a split `a` giving only the bounding box
    of the coordinates it holds."""
    v = a._value if type(a) is Array else None
    if type(v) is not DeviceShards:
        host = a._host() if type(a) is Array else np.asarray(a)
        return _take(host, coords)
    out = np.empty([len(c) for c in coords], v.dtype)
    done = set()
    for device, index in v.sharding.devices_indices_map(v.shape).items():
        bounds = tuple(s.indices(n)[:2] for s, n in zip(index, v.shape))
        if bounds in done or device not in v.shards:
            continue  # a replicated block is read from one of its devices
        done.add(bounds)
        at, local = [], []
        for c, (lo, hi) in zip(coords, bounds):
            hit = np.flatnonzero((c >= lo) & (c < hi))
            if not hit.size:
                break
            at.append(hit)
            local.append(c[hit] - lo)
        else:
            # evenly spaced coordinates: that view of the piece; else its bounding box
            box = [_as_index(k) for k in local]
            if not all(type(b) is slice and b.step > 0 for b in box):
                box = [slice(int(k.min()), int(k.max()) + 1, 1) for k in local]
            piece = v.shards[device]  # a GPU's buffer, or a cpu device's NumPy array
            part = np.asarray(v.platform.to_host(
                piece.region(tuple(box)) if hasattr(piece, "region") else piece[tuple(box)]))
            _put(out, at, _take(part, [(k - b.start) // b.step for k, b in zip(local, box)]))
    return out


def _take(value: np.ndarray, coords) -> np.ndarray:
    index = [_as_index(c) for c in coords]
    if all(type(i) is slice for i in index):
        return value[tuple(index)]
    return value[np.ix_(*[np.arange(*i.indices(n)) if type(i) is slice else i
                          for i, n in zip(index, value.shape)])]


def _put(out: np.ndarray, at, part) -> None:
    index = [_as_index(c) for c in at]
    if all(type(i) is slice for i in index):
        out[tuple(index)] = part
    else:
        out[np.ix_(*[np.arange(*i.indices(n)) if type(i) is slice else i
                     for i, n in zip(index, out.shape)])] = part


def _result(first: DeviceShards, shape, dtype, entries, typed, weak, block, args) -> Array:
    """An Array of pieces over `first`'s mesh with spec `entries`: each device's piece is
    `block(index)` (index: the device's block of the result, one range per dimension), read
    once per distinct block and copied to the other devices holding it. `args`: the
    operands (a split one's spec may be reported: `_shown`)."""
    mesh = first.sharding.mesh
    sharding = NamedSharding(mesh, _shown(mesh, entries, typed, _split(args)))
    made: dict = {}
    shards = {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        if device not in first.shards:
            continue
        ranges = tuple(np.arange(*s.indices(n)) for s, n in zip(index, shape))
        key = tuple((int(r[0]), len(r)) if len(r) else (0, 0) for r in ranges)
        if key in made:
            host = own_copy(made[key])
        else:
            host = made[key] = np.asarray(block(ranges), dtype)
            if not host.flags.owndata or not host.flags.c_contiguous:
                host = made[key] = own_copy(host)
        shards[device] = first.platform.from_host(host, device)
    out = Array(DeviceShards(shards, shape, dtype, sharding, first.platform), weak,
                device=first.first_device(), committed=True, platform=first.array_platform)
    out._sharding = sharding
    return out


def _shown(mesh, entries, typed: bool, like=()) -> PartitionSpec:
    """A spec as JAX prints it: one entry per dimension over Explicit axes; else the spec of
    an operand in `like` that places the pieces the same way (JAX keeps an input's sharding
    when XLA's equals it), or as XLA's propagation gives it back (axes of size 1 and trailing
    unsplit dimensions dropped)."""
    if typed:
        return PartitionSpec(*entries)
    placed = _placed(mesh, entries)
    for a in like:
        if a.ndim == len(entries) and _placed(mesh, _entries(a)) == placed:
            return a.sharding.spec
    while placed and placed[-1] is None:
        placed.pop()
    return PartitionSpec(*placed)


def _placed(mesh, entries) -> list:
    """`entries` without the mesh axes of size 1 (which split nothing)."""
    out = []
    for e in entries:
        names = tuple(n for n in (() if e is None else e if isinstance(e, tuple) else (e,))
                      if mesh.shape[n] > 1)
        out.append(None if not names else names[0] if len(names) == 1 else names)
    return out


def _weak(prim, args, params) -> bool:
    weak = core.weak_type_rules.get(prim, core.default_weak_type_rule)(*args, **params)
    return weak[0] if isinstance(weak, list) else weak


# ---------------------------------------------------------------- regions


def _across_processes(prim, args, params, first, typed):
    """`prim` on operands split over devices of several processes: computed on the operands
    made replicated (global_value.py), the result laid out by the spec the rules here give,
    or None where none applies (the caller's rules then run it the same way)."""
    if prim in _REGIONS and (not typed or prim in (shape_ops.rev_p, lax.concatenate_p)):
        entries = _REGION_ENTRIES[prim](args, params, first)
    elif not typed:
        entries = _joined_spec(prim, args, params)
    else:
        return None
    if entries is None:
        return None
    mesh = first.sharding.mesh
    like = () if prim in _SCATTERS else _split(args)
    return global_value.run(prim, args, params, lambda ndim: NamedSharding(
        mesh, _shown(mesh, entries, typed, like)))


def _slice_entries(args, params, first) -> list:
    (x,) = args
    starts, limits = params["start_indices"], params["limit_indices"]
    strides = params["strides"] or (1,) * x.ndim
    return [e if (lo, hi, st) == (0, n, 1) else None
            for e, lo, hi, st, n in zip(_entries(x), starts, limits, strides, x.shape)]


def _slice(args, params, first, typed):
    """A slice (steps included) along a split dimension: replicated along it, as XLA
    propagates it (`x[1:5]` of `P('i')` is `P()`); dimensions taken whole keep their split."""
    (x,) = args
    starts, limits = params["start_indices"], params["limit_indices"]
    strides = params["strides"] or (1,) * x.ndim
    shape = tuple(max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(starts, limits, strides))
    entries = _slice_entries(args, params, first)
    return _result(first, shape, x.dtype, entries, typed, _weak(lax.slice_p, args, params),
                   lambda ranges: _read(x, [lo + st * r for lo, st, r in
                                            zip(starts, strides, ranges)]), args)


def _rev(args, params, first, typed):
    """Reversed along some dimensions: the split kept, each device's block read from the
    piece(s) mirroring it."""
    (x,) = args
    dims = set(params["dimensions"])
    return _result(first, x.shape, x.dtype, _entries(x), typed,
                   _weak(shape_ops.rev_p, args, params),
                   lambda ranges: _read(x, [n - 1 - r if d in dims else r
                                            for d, (r, n) in enumerate(zip(ranges, x.shape))]),
                   args)


def _dynamic_slice_entries(args, params, first) -> list:
    x, sizes = args[0], params["slice_sizes"]
    return [e if k == n else None for e, k, n in zip(_entries(x), sizes, x.shape)]


def _dynamic_slice(args, params, first, typed):
    """A dynamic slice at concrete start indices (clamped into the operand, as XLA clamps
    them): dimensions taken whole keep their split, the others are replicated."""
    x, *starts = args
    sizes = params["slice_sizes"]
    starts = [min(max(int(_read(s, [])) if type(s) is Array else int(s), 0), n - k)
              for s, n, k in zip(starts, x.shape, sizes)]
    entries = _dynamic_slice_entries(args, params, first)
    return _result(first, tuple(sizes), x.dtype, entries, typed,
                   _weak(slicing.dynamic_slice_p, args, params),
                   lambda ranges: _read(x, [s + r for s, r in zip(starts, ranges)]), args)


def _concatenate_entries(args, params, first) -> list | None:
    axis = params["dimension"]
    specs = [_entries(a) for a in _split(args)]
    if any(s[:axis] + s[axis + 1:] != specs[0][:axis] + specs[0][axis + 1:] for s in specs):
        return None  # split otherwise along other dimensions: XLA reshards, gpuarr joins
    entries = list(next((s for s in specs if s[axis] is not None), specs[0]))
    if sum(np.shape(a)[axis] for a in args) % _ways(first.sharding.mesh, entries[axis]):
        if first.sharding.mesh._any_axis_explicit:
            return None  # JAX's ValueError over Explicit axes: the joined path says it
        entries[axis] = None
    return entries


def _concatenate(args, params, first, typed):
    """Concatenation along a split dimension: the split operands' spec, the concatenated
    dimension keeping its split where the devices divide it (else replicated, as XLA
    propagates it); each device's block read from the operands' pieces covering it."""
    axis = params["dimension"]
    entries = _concatenate_entries(args, params, first)
    if entries is None:
        return None
    shape = list(args[0].shape)
    shape[axis] = sum(np.shape(a)[axis] for a in args)
    offsets = np.cumsum([0] + [np.shape(a)[axis] for a in args])

    def block(ranges):
        out = np.empty([len(r) for r in ranges], first.dtype)
        r = ranges[axis]
        for a, lo, hi in zip(args, offsets[:-1], offsets[1:]):
            hit = np.flatnonzero((r >= lo) & (r < hi))
            if hit.size:
                coords = list(ranges)
                coords[axis] = r[hit] - lo
                _put(out, [np.arange(len(c)) for c in ranges[:axis]] + [hit]
                     + [np.arange(len(c)) for c in ranges[axis + 1:]], _read(a, coords))
        return out

    return _result(first, tuple(shape), first.dtype, entries, typed,
                   _weak(lax.concatenate_p, args, params), block, args)


_REGIONS = {lax.slice_p: _slice, shape_ops.rev_p: _rev, lax.concatenate_p: _concatenate,
            slicing.dynamic_slice_p: _dynamic_slice}
_REGION_ENTRIES = {lax.slice_p: _slice_entries, shape_ops.rev_p: lambda a, p, f: _entries(a[0]),
                   lax.concatenate_p: _concatenate_entries,
                   slicing.dynamic_slice_p: _dynamic_slice_entries}


# ---------------------------------------------------------------- joined, then cut


def _joined_spec(prim, args, params) -> list | None:
    """The spec entries JAX gives the result of `prim` (a joined rule), or None."""
    if prim in _ALONG or prim in _SCATTERS:
        operand = args[0] if prim in _SCATTERS else next(
            a for a in args if type(a) is Array and type(a._value) is DeviceShards)
        return _entries(operand) if type(operand) is Array and \
            type(operand._value) is DeviceShards else None
    if prim is slicing.gather_p:
        return _gather_entries(args, params)
    return None


def _gather_entries(args, params) -> list | None:
    """A gather's result spec: an offset dimension keeps the operand's split when the gather
    takes that dimension whole, a batch dimension keeps the indices' split (as XLA
    propagates them: `x[idx]` of `P('i')` is `P()`, `jnp.take(x, idx, 1)` is `P('i')`)."""
    operand, indices = args
    dn = params["dimension_numbers"]
    sizes = params["slice_sizes"]
    skipped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offset = [e if sizes[d] == n else None for d, (e, n) in
              enumerate(zip(_entries(operand), operand.shape)) if d not in skipped]
    batch = iter(_entries(indices)[:-1])
    offsets = iter(offset)
    rank = len(offset) + np.ndim(indices) - 1
    entries = [next(offsets) if d in dn.offset_dims else next(batch) for d in range(rank)]
    named = [e for e in entries if e is not None]
    return entries if len(named) == len(set(named)) else None


def _joined(prim, args, params, first, entries):
    """`prim` on the operands put together on the first device, each result cut into the
    pieces of the sharding JAX reports."""
    joined = [Array(a._value.assemble(), a.weak_type, device=a._value.first_device(),
                    committed=True, platform=a._value.array_platform)
              if type(a) is Array and type(a._value) is DeviceShards else a for a in args]
    outs = dispatch.eval_trace.process_primitive(prim, joined, params)
    mesh = first.sharding.mesh
    # a scatter's sharding is reported as XLA gives it back, never as its operand's
    like = () if prim in _SCATTERS else _split(args)
    sharding = NamedSharding(mesh, _shown(mesh, entries, False, like))
    placed = [with_sharding(o, sharding) for o in (outs if prim.multiple_results else [outs])]
    return placed if prim.multiple_results else placed[0]
