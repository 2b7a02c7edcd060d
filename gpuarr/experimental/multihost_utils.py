"""Utilities for programs run as several processes (JAX's `jax.experimental.multihost_utils`):
gather host data or global arrays from every process, broadcast from one, wait for all.

Each call is a collective: every process must make it, in the same order, with operands of
the same structure; data moves over MPI (gpuarr.process_group). With one process each is the
identity (or a stack of one).
"""
from __future__ import annotations

import pickle

import numpy as np

from gpuarr import process_group, pytrees
from gpuarr.array import Array
from gpuarr.backends.device_shards import DeviceShards
from gpuarr.dispatch import as_array

__all__ = ["assert_equal", "broadcast_one_to_all", "process_allgather", "sync_global_devices"]


def _host(x) -> np.ndarray:
    return np.asarray(x)


def _gather_global(x: Array) -> np.ndarray:
    """The whole value of an Array spanning processes, from every process's pieces."""
    buf = x._stored
    host = buf.platform.to_host if type(buf) is DeviceShards else np.asarray
    index = x.sharding.devices_indices_map(x.shape)
    mine = [(index[d], np.asarray(host(p))) for d, p in buf.shards.items()]
    out = np.empty(buf.shape, buf.dtype)
    for blob in process_group.allgather_bytes(pickle.dumps(mine), "process_allgather"):
        for idx, piece in pickle.loads(blob):
            out[idx] = piece
    return out


def process_allgather(in_tree, tiled: bool = False):
    """Every process's value of each leaf of `in_tree`, as NumPy arrays. A global Array
    (one spanning processes) gives its whole value. Host data and other Arrays are stacked
    along a new leading axis in process order (concatenated along axis 0 when `tiled`)."""
    def gather(x):
        if type(x) is Array and type(x._value) is DeviceShards and x._value.spans_processes:
            return _gather_global(x)
        local = _host(x)
        if process_group.state.comm is None:
            return local if tiled else local[None]
        stacked = process_group.allgather_array(
            local, "process_allgather",
            signature=f"process_allgather of {local.dtype}{list(local.shape)}")
        return np.concatenate(list(stacked), axis=0) if tiled else stacked
    return pytrees.tree_map(gather, in_tree)


def sync_global_devices(name: str) -> None:
    """Wait until every process reaches this call with the same `name` (a barrier that
    checks the processes agree where they are); ValueError when the names differ."""
    if process_group.state.comm is None:
        return
    process_group.check_same(f"sync_global_devices({name!r})", "sync_global_devices")


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """Process 0's value of each leaf of `in_tree` (or that of the process passing
    `is_source=True`; exactly one must), as Arrays on every process."""
    if is_source is None:
        is_source = process_group.state.process_index == 0
    if process_group.state.comm is None:
        return pytrees.tree_map(lambda x: as_array(_host(x)), in_tree)
    leaves, treedef = pytrees.tree_flatten(in_tree)
    data = pickle.dumps([_host(x) for x in leaves]) if is_source else b""
    sent = [b for b in process_group.allgather_bytes(data, "broadcast_one_to_all") if b]
    if len(sent) != 1:
        raise ValueError(f"broadcast_one_to_all: {len(sent)} processes passed "
                         "is_source=True; exactly one must.")
    return pytrees.tree_unflatten(treedef, [as_array(x) for x in pickle.loads(sent[0])])


def assert_equal(in_tree, fail_message: str = "") -> None:
    """AssertionError (with `fail_message`) unless every process has the same `in_tree`."""
    gathered = process_allgather(in_tree)
    for x in pytrees.tree_leaves(gathered):
        if not all(np.array_equal(x[0], y) for y in x[1:]):
            raise AssertionError(f"{fail_message} Expected equal values on all processes, "
                                 f"got {x}.")
