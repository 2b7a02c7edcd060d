"""The buffer of an Array split over several GPUs of this process: each device keeps its own
piece, and no device holds the whole value.

`shard_map` (and `addressable_shards`) read the pieces where they are. Any other operation
reads `assemble()`: the global value put together on the first device of the sharding for
that operation only, then dropped, so the pieces stay the only copy between operations.
"""
from __future__ import annotations

import numpy as np


class DeviceShards:
    """`shards`: device -> the platform's buffer of that device's piece, for every device of
    the NamedSharding `sharding` (replicated pieces are held by each of their devices, as
    JAX holds them); `shape` and `dtype` are the global value's."""

    __slots__ = ("shards", "shape", "dtype", "sharding", "platform")
    made = False  # whether any was made: eager dispatch looks for them only then

    def __init__(self, shards: dict, shape, dtype, sharding, platform):
        DeviceShards.made = True
        self.shards = shards
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.platform = platform

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @classmethod
    def from_host(cls, value: np.ndarray, sharding, platform) -> DeviceShards:
        """`value` split by `sharding`, each device's piece copied to it from the host."""
        value = np.asarray(value)
        shards = {d: platform.from_host(np.require(value[index], requirements="C"), d)
                  for d, index in sharding.devices_indices_map(value.shape).items()}
        return cls(shards, value.shape, value.dtype, sharding, platform)

    def __array__(self, dtype=None, copy=None):
        out = self.to_host()
        return out if dtype is None else out.astype(dtype)

    def first_device(self):
        return next(iter(self.shards))

    def to_host(self) -> np.ndarray:
        """The global value on the host, from each distinct piece once."""
        out = np.empty(self.shape, self.dtype)
        done = set()
        for d, index in self.sharding.devices_indices_map(self.shape).items():
            key = tuple((i.start, i.stop, i.step) for i in index)
            if key not in done:
                done.add(key)
                out[index] = self.platform.to_host(self.shards[d])
        return out

    def assemble(self):
        """The global value as one buffer on the first device (made for one operation)."""
        return self.platform.from_host(self.to_host(), self.first_device())

    def piece(self, device, index):
        """This device's piece when it is the block `index` of the global value, else None."""
        if device not in self.shards:
            return None
        mine = self.sharding.devices_indices_map(self.shape)[device]
        norm = [tuple(s.indices(n)) for s, n in zip(index, self.shape)]
        if [tuple(s.indices(n)) for s, n in zip(mine, self.shape)] != norm:
            return None
        return self.shards[device]
