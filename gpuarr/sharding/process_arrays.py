"""An array of this process's positions and the global array over every process's devices
(GPUs or cpu devices), each made from the other without moving a piece (JAX's
multi-controller `pmap`: each process passes its local batch, the collectives span every
process's devices, and each process gets back its own positions).

The global array of a one-axis mesh spanning processes holds position k of the mapped axis on
the mesh's k-th device; this process's positions are its devices' pieces, in mesh order, which
a local array over the same devices (`P(name)` on a mesh of those devices) holds as well.
"""
from __future__ import annotations

import numpy as np

from gpuarr import core, dispatch, dtypes, placement
from gpuarr.array import Array
from gpuarr.array_assembly import make_array_from_process_local_data
from gpuarr.backends.device_shards import DeviceShards
from gpuarr.process_group import state as process_state
from gpuarr.sharding.mesh import Mesh
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shardings import NamedSharding


def _local_devices(mesh) -> list:
    return [d for d in mesh.devices.flat if d.process_index == process_state.process_index]


def _of_pieces(shards: DeviceShards, weak_type: bool) -> Array:
    out = Array(shards, weak_type, device=shards.first_device(), committed=True,
                platform=shards.array_platform)
    out._sharding = shards.sharding
    return out


def global_from_local(x, mesh) -> Array:
    """The global array over one-axis `mesh` (spanning processes) whose positions held by
    this process are the leading axis of `x`: `x`'s own pieces when it is split over this
    process's devices of the mesh, one position each, else each position copied from the
    host to its device."""
    local = _local_devices(mesh)
    sharding = NamedSharding(mesh, PartitionSpec(mesh.axis_names[0]))
    stored = x._stored if type(x) is Array else None
    shape = tuple(np.shape(stored if stored is not None else x))
    if not shape or shape[0] != len(local):
        raise ValueError(f"pmap across {process_state.process_count} processes: each process "
                         f"passes its own positions, a leading axis of {len(local)} (its "
                         f"local device count), but got an argument of shape {shape}.")
    global_shape = (mesh.size * shape[0] // len(local), *shape[1:])
    if type(stored) is DeviceShards:
        rest = (slice(None),) * (len(shape) - 1)
        pieces = {d: stored.piece(d, (slice(i, i + 1), *rest)) for i, d in enumerate(local)}
        if all(p is not None for p in pieces.values()):
            return _of_pieces(DeviceShards(pieces, global_shape, stored.dtype, sharding,
                                           stored.platform), x.weak_type)
    return batch_from_host(x, sharding, global_shape)


def batch_from_host(x, sharding, global_shape) -> Array:
    """The global array over `sharding` (one position per local device) of this process's
    host batch `x`. A C-ordered, aligned NumPy array of a canonical dtype passed eagerly is
    lent, each device reading its position as a view for this call (a result the program
    returns unchanged is copied out, spmd.run_per_device); anything else is copied in, as
    make_array_from_process_local_data copies it."""
    local = _local_devices(sharding.mesh)
    platform = placement.platform_of(local[0])
    if (type(x) is np.ndarray and x.flags.c_contiguous and x.flags.aligned
            and x.dtype == dtypes.canonicalize_dtype(x.dtype)
            and not getattr(platform, "device_buffers", False)
            and core.current_trace() is dispatch.eval_trace):
        pieces = {d: x[i:i + 1] for i, d in enumerate(local)}
        return _of_pieces(DeviceShards(pieces, global_shape, x.dtype, sharding, platform,
                                       borrowed=True), False)
    return make_array_from_process_local_data(sharding, np.asarray(x), global_shape)


def local_from_global(out, positions: int) -> Array:
    """This process's part of `out`, an output of a shard_map over a one-axis mesh spanning
    processes: its devices' pieces as an array over a mesh of those devices (a leading axis
    of `positions` when `out` is split over the mesh, else the replicated value)."""
    stored = out._stored
    if type(stored) is not DeviceShards:
        return out
    mesh, spec = stored.sharding.mesh, stored.sharding.spec
    local = _local_devices(mesh)
    local_mesh = Mesh(np.array(local, dtype=object), mesh.axis_names, mesh.axis_types)
    split = any(p is not None for p in spec)
    shape = (positions, *stored.shape[1:]) if split else stored.shape
    return _of_pieces(DeviceShards(dict(stored.shards), shape, stored.dtype,
                                   NamedSharding(local_mesh, spec), stored.platform),
                      out.weak_type)
