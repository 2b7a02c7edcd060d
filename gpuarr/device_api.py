"""Devices and data movement: device_put, device_get, devices, default_backend, block_until_ready."""
from __future__ import annotations

import logging

from gpuarr import core, placement, tree_util
from gpuarr.config import config
from gpuarr.core import ShapedArray, Tracer
from gpuarr.dispatch import as_array as _as_array  # noqa: F401

logger = logging.getLogger("gpuarr")
_flags = config._values
_SCALARS = (bool, int, float, complex)


# ---------------------------------------------------------------- devices and data


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Put a pytree of arrays on `device`. With a Device the results are committed to it (later
    computations run there); with `device=None` they go, uncommitted, to the default device.
    Host data (NumPy arrays, Python scalars) is copied; an Array already in place is reused."""
    def put(leaf):
        if isinstance(leaf, Tracer):
            return leaf
        return placement.put(leaf, device)
    return tree_util.tree_map(put, x)


def device_get(x):
    """A pytree of NumPy arrays (copied to host) from a pytree of Arrays; other leaves pass
    through. Each leaf waits only for its own buffer."""
    return tree_util.tree_map(placement.get, x)


def block_until_ready(x):
    """Wait for every Array in the pytree `x`; returns `x`."""
    for leaf in tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def devices(backend: str | None = None):
    """The devices of `backend` ('cpu', 'gpu'/'cuda', 'opencl'; default: the default platform),
    e.g. `[CudaDevice(id=0)]` or `[CpuDevice(id=0)]`."""
    from gpuarr import platforms
    plat = platforms.get_platform(backend) if backend else platforms.default_platform()
    return list(plat.devices())


def local_devices(process_index=None, backend=None, host_id=None):
    """The devices attached to this process (every device: gpuarr runs in one process)."""
    return devices(backend)


def device_count(backend=None) -> int:
    """How many devices `backend` (default: the default platform) has."""
    return len(devices(backend))


def local_device_count(backend=None) -> int:
    """How many devices this process can use (same as `device_count`)."""
    return device_count(backend)


def default_backend() -> str:
    """The name of the default platform: 'gpu' for cuda (as JAX), 'opencl' or 'cpu'."""
    from gpuarr import platforms
    name = platforms.default_platform().name
    return "gpu" if name == "cuda" else name


default_device = placement.default_device



def typeof(x) -> ShapedArray:
    return core.get_aval(x)
