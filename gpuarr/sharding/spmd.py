"""One program per device: the `shard_map` primitive of meshes with several devices.

`f` is traced once for one device's shard of each input (a Program whose collectives name the
mesh axes); running it splits each input by its PartitionSpec, runs the compiled Program on a
thread per device of this process (backends/device_group.py: the collectives meet there, and
over MPI with the devices of other processes), and puts the outputs together by their
out_specs. An input or output spanning processes is held as the pieces of this process
(`ProcessShards`).
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from gpuarr import core, impls
from gpuarr.backends.device_group import DeviceGroup, ProcessShards
from gpuarr.core import Primitive, ShapedArray
from gpuarr.interpreters import ad, batching, partial_eval
from gpuarr.sharding.shardings import NamedSharding

shard_map_p = Primitive("shard_map")
shard_map_p.multiple_results = True
_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _entry_axes(entry) -> tuple:
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


def _index(mesh, spec, ndim: int, flat: int) -> tuple:
    """The slices of a global array of rank `ndim` that mesh position `flat` holds."""
    where = dict(zip(mesh.axis_names, np.unravel_index(flat, mesh.axis_sizes)))
    parts = spec._normalized_spec_for_aval(ndim).partitions
    index = []
    for entry in parts:
        k, ways = 0, 1
        for a in _entry_axes(entry):
            k, ways = k * mesh.shape[a] + int(where[a]), ways * mesh.shape[a]
        index.append((k, ways))
    return tuple(index)


def _slices(index, shape) -> tuple:
    return tuple(slice(None) if ways == 1 else slice(k * (n // ways), (k + 1) * (n // ways))
                 for (k, ways), n in zip(index, shape))


def shard_aval(aval: ShapedArray, spec, mesh) -> ShapedArray:
    """The aval of one device's piece of `aval` split by `spec`."""
    parts = spec._normalized_spec_for_aval(aval.ndim).partitions
    shape = tuple(n // math.prod(mesh.shape[a] for a in _entry_axes(e))
                  for n, e in zip(aval.shape, parts))
    return aval.update(shape=shape)


def global_aval(aval: ShapedArray, spec, mesh) -> ShapedArray:
    """The aval of the array put together from each device's `aval` by `spec`."""
    parts = spec._normalized_spec_for_aval(aval.ndim).partitions
    shape = tuple(n * math.prod(mesh.shape[a] for a in _entry_axes(e))
                  for n, e in zip(aval.shape, parts))
    return aval.update(shape=shape, weak_type=False)


def trace_per_device(fun, avals, mesh, names):
    """`fun` staged for one device's shard avals, with the mesh axes bound so collectives
    know their sizes; consts that are tracers of an enclosing trace become leading inputs."""
    for n in names:
        batching._axis_env.append((n, mesh.shape[n]))
    try:
        closed = partial_eval.trace_to_program(fun, avals)
    finally:
        del batching._axis_env[len(batching._axis_env) - len(names):]
    return partial_eval.hoist_tracer_consts(closed)


def _abstract_eval(*avals, closed, mesh, in_specs, out_specs):
    return [global_aval(a, s, mesh) for a, s in zip(closed.out_avals, out_specs)]


def _piece(buf, spec, mesh, flat):
    device = mesh.devices.flat[flat]
    if isinstance(buf, ProcessShards):
        if device not in buf.shards:
            raise ValueError(f"shard_map: an input spanning processes holds no piece for "
                             f"{device!r}; make it with the mesh passed to shard_map.")
        piece = buf.shards[device]
        want = _slices(_index(mesh, spec, buf.ndim, flat), buf.shape)
        expect = tuple(len(range(*s.indices(n))) for s, n in zip(want, buf.shape))
        if piece.shape != expect:
            raise ValueError(f"shard_map: the input's piece on {device!r} has shape "
                             f"{piece.shape}, but its in_spec {spec} gives {expect}: pass "
                             "data sharded as the in_specs say.")
        return piece
    buf = np.asarray(buf)
    return buf[_slices(_index(mesh, spec, buf.ndim, flat), buf.shape)]


def _assemble(pieces: dict, spec, mesh, aval):
    """The global value from each local device's output piece: a NumPy array when this
    process's devices hold all of it, else ProcessShards."""
    every = {f: _index(mesh, spec, aval.ndim, f) for f in range(mesh.size)}
    covered = {every[f] for f in pieces}
    if covered != set(every.values()):
        devices = mesh.devices.flat
        return ProcessShards({devices[f]: np.asarray(p) for f, p in pieces.items()},
                             aval.shape, aval.dtype, NamedSharding(mesh, spec))
    whole = tuple((0, 1) for _ in aval.shape)
    for f, p in pieces.items():
        if every[f] == whole:  # a replicated output: any device's piece is the value
            return np.asarray(p)
    out = np.empty(aval.shape, aval.dtype)
    done = set()
    for f, p in pieces.items():
        if every[f] not in done:
            done.add(every[f])
            out[_slices(every[f], aval.shape)] = p
    return out


def _impl(*bufs, closed, mesh, in_specs, out_specs):
    fn = _compiled.get(closed)
    if fn is None:
        fn = _compiled[closed] = impls.compile_closed(closed)
    group = DeviceGroup(mesh.axis_names, mesh.axis_sizes,
                        [d.process_index for d in mesh.devices.flat])
    args = {f: [_piece(b, s, mesh, f) for b, s in zip(bufs, in_specs)] for f in group.local}
    results = group.run(lambda *xs: list(fn(*xs)), args)
    out_avals = _abstract_eval(closed=closed, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    return [_assemble({f: results[f][i] for f in group.local}, s, mesh, a)
            for i, (s, a) in enumerate(zip(out_specs, out_avals))]


def _no_transformation(what):
    def rule(*args, **params):
        raise NotImplementedError(
            f"{what} of a shard_map over several devices is not supported: apply it inside "
            "the shard_map (e.g. value_and_grad in each device's function, then pmean of the "
            "gradients, as data-parallel training does).")
    return rule


core.abstract_eval_rules[shard_map_p] = _abstract_eval
impls.impl_rules[shard_map_p] = _impl
ad.jvp_rules[shard_map_p] = _no_transformation("Differentiation")
batching.batch_rules[shard_map_p] = _no_transformation("vmap")
