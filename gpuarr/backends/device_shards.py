"""The buffer of an Array split over several devices (GPUs, or cpu devices): each device
keeps its own piece, and no device holds the whole value. Over the devices of several
processes each process holds the pieces of its own devices only.

`shard_map`, `jit`'s per-device path and eager per-piece operations (and
`addressable_shards`) read the pieces where they are. Any other operation reads `assemble()`:
the global value put together on the first device of the sharding for that operation only,
then dropped, so the pieces stay the only copy between operations. On cpu devices each piece
is a NumPy array of its own (never a view of another device's memory), as each XLA cpu
device owns its buffers.
"""
from __future__ import annotations

import numpy as np

from gpuarr.backends import host_memory
from gpuarr.process_group import state as process_state

NOT_ADDRESSABLE = (
    "Fetching value for `jax.Array` that spans non-addressable (non process local) "
    "devices is not possible. You can use "
    "`jax.experimental.multihost_utils.process_allgather` to print the global array, "
    "or compute on it inside shard_map.")


class DeviceShards:
    """`shards`: device -> the platform's buffer of that device's piece, for every device of
    the NamedSharding `sharding` that this process holds (replicated pieces are held by each
    of their devices, as JAX holds them); `shape` and `dtype` are the global value's.
    `borrowed`: the pieces are views of the caller's host memory (a pmap's NumPy batch, for
    that call only), so no result may keep one as its own."""

    __slots__ = ("shards", "shape", "dtype", "sharding", "platform", "borrowed")
    made = False  # whether any was made: eager dispatch looks for them only then

    def __init__(self, shards: dict, shape, dtype, sharding, platform, borrowed=False):
        DeviceShards.made = True
        self.shards = shards
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.platform = platform
        self.borrowed = borrowed

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def array_platform(self):
        """The platform an Array of these pieces names: None for host buffers (cpu devices),
        as every Array on the cpu platform."""
        return self.platform if getattr(self.platform, "device_buffers", False) else None

    @classmethod
    def from_host(cls, value: np.ndarray, sharding, platform) -> DeviceShards:
        """`value` split by `sharding`, each device of this process receiving its piece from
        the host (a fresh NumPy array per cpu device)."""
        value = np.asarray(value)
        host = not getattr(platform, "device_buffers", False)
        shards = {d: platform.from_host(own_copy(value[index]) if host else
                                        np.require(value[index], requirements="C"), d)
                  for d, index in sharding.devices_indices_map(value.shape).items()
                  if d.process_index == process_state.process_index}
        return cls(shards, value.shape, value.dtype, sharding, platform)

    def __array__(self, dtype=None, copy=None):
        out = self.to_host()
        return out if dtype is None else out.astype(dtype)

    def first_device(self):
        return next(iter(self.shards))

    @property
    def spans_processes(self) -> bool:
        """Whether other processes hold some of the pieces."""
        return len(self.shards) != self.sharding.num_devices

    def program_buffer(self):
        """What a compiled program takes: the global value on the first device, or, for host
        pieces spanning processes (not replicated), these pieces, which only a shard_map in
        the program reads (anything else reading them raises JAX's error)."""
        if (self.spans_processes and not self.sharding.is_fully_replicated
                and not getattr(self.platform, "device_buffers", False)):
            return self
        return self.assemble()

    def to_host(self) -> np.ndarray:
        """The global value on the host, from each distinct piece once. Spanning processes,
        only a replicated value can be read (from a piece of this process), as in JAX."""
        if self.spans_processes and not self.sharding.is_fully_replicated:
            raise RuntimeError(NOT_ADDRESSABLE)
        out = np.empty(self.shape, self.dtype)
        done = set()
        for d, index in self.sharding.devices_indices_map(self.shape).items():
            key = tuple((i.start, i.stop, i.step) for i in index)
            if key not in done and d in self.shards:
                done.add(key)
                out[index] = self.platform.to_host(self.shards[d])
        return out

    def assemble(self):
        """The global value as one buffer on the first device (made for one operation)."""
        return self.platform.from_host(self.to_host(), self.first_device())

    def relabelled(self, sharding) -> DeviceShards | None:
        """The same pieces reporting `sharding` when it places every piece where this one
        does (`P('i')` and `P('i', None)`, one mesh object or another of the same devices),
        else None."""
        if sharding == self.sharding:
            return self
        try:
            theirs = sharding.devices_indices_map(self.shape)
        except (ValueError, TypeError):
            return None
        mine = self.sharding.devices_indices_map(self.shape)
        if set(theirs) != set(mine) or any(
                _normalized(theirs[d], self.shape) != _normalized(i, self.shape)
                for d, i in mine.items()):
            return None
        return DeviceShards(self.shards, self.shape, self.dtype, sharding, self.platform,
                            self.borrowed)

    def piece(self, device, index):
        """This device's piece when it is the block `index` of the global value, else None."""
        if device not in self.shards:
            return None
        mine = self.sharding.devices_indices_map(self.shape)[device]
        if _normalized(mine, self.shape) != _normalized(index, self.shape):
            return None
        return self.shards[device]


def _normalized(index, shape) -> list:
    return [tuple(s.indices(n)) for s, n in zip(index, shape)]


def own_copy(value) -> np.ndarray:
    """A C-ordered NumPy array owning its memory, equal to `value`."""
    return np.array(value, order="C", copy=True)


def owned_pieces(results: dict, inputs: dict) -> dict:
    """Per-device host results (flat position -> list of NumPy values) with every piece owning
    its memory: a piece that is a view (a collective's rows of one array), the same object as
    another device's piece or an input not held by its device, is copied. A whole block of
    `host_memory`'s cache (an MPI sum's result) is the result's own and is kept, once: the
    cache hands a block out again only when nothing refers to it. `inputs`: flat position ->
    (the pieces that device holds itself, the other operands it read)."""
    foreign = {id(b) for _, others in inputs.values() for b in others}
    # ids of the objects (and cache blocks) some piece or input already holds
    seen: set = {id(host_memory.cached_block(b)) for held, others in inputs.values()
                 for b in (*held, *others)} - {id(None)}
    out: dict = {}
    for f, values in results.items():
        own = {id(b) for b in inputs[f][0]}
        kept = []
        for v in values:
            v = np.asarray(v)
            block = None if id(v) in own else host_memory.cached_block(v)
            if block is not None and id(block) not in seen:
                seen.add(id(block))
            elif id(v) in seen or id(v) in foreign or (
                    id(v) not in own and (v.base is not None or not v.flags.owndata)):
                v = own_copy(v)
            seen.add(id(v))
            kept.append(v)
        out[f] = kept
    return out
