"""Eager operations that need the global value of an Array split over the devices of several
processes (a dot contracting the split dimension, `jnp.stack` of split operands, a pad, a
sort or a slice along the split dimension, ...), run as JAX runs them: the operands are
resharded to replicated (piece_exchange.py: each device receives the blocks it lacks, over
MPI between cpu devices, over NCCL between GPUs), every process computes the primitive on
its copy, and the result is cut into this process's pieces of the sharding JAX reports, so
no further exchange is needed. Reading such an Array to the host (`np.asarray`, `float`,
printing) still raises JAX's error.
"""
from __future__ import annotations

import numpy as np

from gpuarr import dispatch, impls
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards
from gpuarr.lax import dot_products, extras, lax, shape_ops
from gpuarr.process_group import state as process_state
from gpuarr.sharding import piece_exchange
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shardings import NamedSharding
from gpuarr.sharding.tree_shardings import with_sharding


def spans_processes(args) -> bool:
    """Whether an operand is split over devices of several processes (not replicated)."""
    return any(type(a) is Array and type(a._value) is DeviceShards and a._value.spans_processes
               and not a._value.sharding.is_fully_replicated for a in args)


def replicated(a: Array) -> Array:
    """`a`, split over devices of several processes, held whole by every device of its mesh."""
    stored = a._value
    target = NamedSharding(stored.sharding.mesh, PartitionSpec())
    shards = piece_exchange.reshard(stored, target)
    out = Array(shards, a.weak_type, device=shards.first_device(), committed=True,
                platform=shards.array_platform)
    out._sharding = target
    return out


def _local(a):
    """An operand as one Array on this process's first device of its sharding."""
    if type(a) is not Array or type(a._value) is not DeviceShards:
        return a
    stored = a._value
    if stored.spans_processes and not stored.sharding.is_fully_replicated:
        stored = replicated(a)._value
    if stored.spans_processes:  # replicated: this process's first piece is the whole value
        device = stored.first_device()
        buf = stored.shards[device]
    else:
        device, buf = stored.first_device(), stored.assemble()
    return Array(buf, a.weak_type, device=device, committed=True,
                 platform=stored.array_platform)


def run(prim, args, params, sharding_of=None):
    """`prim` on `args` (some split over devices of several processes) computed on the
    operands made replicated, each result laid out by `sharding_of(its ndim)` (a
    NamedSharding; by default by the spec `result_spec` gives) as this process's pieces."""
    first = next(a._value for a in args if type(a) is Array and type(a._value) is DeviceShards
                 and a._value.spans_processes)
    outs = dispatch.eval_trace.process_primitive(prim, [_local(a) for a in args], params)
    mesh = first.sharding.mesh
    placed = []
    for i, o in enumerate(outs if prim.multiple_results else [outs]):
        s = sharding_of(o.ndim) if sharding_of is not None else NamedSharding(
            mesh, result_spec(prim, args, params, i, o.shape))
        placed.append(_laid_out(o, s) if first.array_platform is not None
                      else with_sharding(o, s))
    return placed if prim.multiple_results else placed[0]


def _laid_out(o: Array, s) -> Array:
    """`o`, whole on a GPU of this process, as this process's pieces of sharding `s`: each
    GPU's block copied from it on the GPUs (no piece through the host)."""
    platform, data = o._platform, o._stored
    shards = {}
    for d, index in s.devices_indices_map(o.shape).items():
        if d.process_index == process_state.process_index:
            ctx = platform.context(d.local_hardware_id)
            data.synchronize()
            shards[d] = ctx.buffer(ctx.as_device(data.data[index]), ctx.record())
    stored = DeviceShards(shards, o.shape, o.dtype, s, platform)
    out = Array(stored, o.weak_type, device=stored.first_device(), committed=True,
                platform=platform)
    out._sharding = s
    return out


def _entries(a) -> list:
    if type(a) is Array and type(a._value) is DeviceShards:
        return list(a._value.sharding.spec._normalized_spec_for_aval(a.ndim).partitions)
    return [None] * getattr(a, "ndim", 0)


def result_spec(prim, args, params, index: int, shape) -> PartitionSpec:
    """The spec XLA's propagation gives the result of `prim` where no rule of
    split_dimension.py applies: a dot keeps the splits of its operands' batch and free
    dimensions (the left's first; a contraction's split is summed away), an elementwise
    result the splits of its operands' dimensions of its size (the first operand's first:
    `x[:, None] * y[None, :]` of split vectors is split as `x`), a stack its operands'
    splits around the new dimension, a pad its operand's where the devices divide the
    padded size, a broadcast its operand's along the dimensions it keeps whole, a result of
    the shape of its one split operand that operand's spec (an FFT along the split
    dimension, a sort), and any other result is replicated. A mesh axis splits one
    dimension at most."""
    split = [a for a in args if type(a) is Array and type(a._value) is DeviceShards]
    mesh = split[0]._value.sharding.mesh
    typed = mesh._any_axis_explicit
    if prim is dot_products.dot_general_p:
        entries = _once(_dot_entries(args, params))
    elif prim in impls.elementwise_prims:
        entries = _once([next((_entries(a)[d] for a in args if np.ndim(a) == len(shape)
                               and np.shape(a)[d] == n and _entries(a)[d] is not None), None)
                         for d, n in enumerate(shape)])
    elif prim is extras.stack_p:  # a new unsplit dimension, the operands' splits kept
        entries = _once([next((_entries(a)[d] for a in split if _entries(a)[d] is not None),
                              None) for d in range(len(shape) - 1)])
        entries.insert(params["axis"], None)
    elif prim is lax.pad_p:  # a padded dimension keeps its split where the devices divide it
        entries = [e if e is not None and n % _ways(mesh, e) == 0 else None
                   for e, n in zip(_entries(args[0]), shape)]
    elif prim is shape_ops.broadcast_in_dim_p:
        (x, *_), entries = args, [None] * len(shape)
        for e, d, n in zip(_entries(x), params["broadcast_dimensions"], np.shape(x)):
            entries[d] = e if n == shape[d] else None
    elif len(split) == 1 and index == 0 and tuple(shape) == split[0].shape:
        entries = _entries(split[0])
    else:
        entries = [None] * len(shape)
    if not typed:
        while entries and entries[-1] is None:
            entries.pop()
    return PartitionSpec(*entries)


def _ways(mesh, entry) -> int:
    names = entry if isinstance(entry, tuple) else (entry,)
    return int(np.prod([mesh.shape[n] for n in names], dtype=np.int64))


def _dot_entries(args, params) -> list:
    """dot_general's result spec: batch dimensions, then the left's free dimensions, then
    the right's, each keeping its operand's split."""
    lhs, rhs = args
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    le, re_ = _entries(lhs), _entries(rhs)
    out = [le[d] if le[d] is not None else re_[e] for d, e in zip(lb, rb)]
    out += [le[d] for d in range(len(le)) if d not in lc and d not in lb]
    return out + [re_[d] for d in range(len(re_)) if d not in rc and d not in rb]


def _once(entries) -> list:
    """`entries` with each mesh axis kept where it first splits a dimension."""
    used: set = set()
    kept = []
    for e in entries:
        names = () if e is None else e if isinstance(e, tuple) else (e,)
        if e is None or used & set(names):
            kept.append(None)
        else:
            used |= set(names)
            kept.append(e)
    return kept
