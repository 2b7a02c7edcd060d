"""Device meshes as arrays of devices (JAX's `jax.experimental.mesh_utils`): the devices of a
`Mesh`, laid out in row-major order, and, for several processes, one block per process."""
from __future__ import annotations

import itertools
import math

import numpy as np

from gpuarr.device_api import devices as _devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """An array of shape `mesh_shape` holding `devices` (default: every device of the default
    platform) in order; their number must equal the product of `mesh_shape`. gpuarr's devices
    have no physical topology, so the two layout options change nothing."""
    devices = list(_devices() if devices is None else devices)
    shape = tuple(int(d) for d in mesh_shape)
    if math.prod(shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                         f"mesh_shape {shape}")
    grid = np.empty(len(devices), dtype=object)
    grid[:] = devices
    return grid.reshape(shape)


def create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A mesh of meshes: each process's devices form a `mesh_shape` block, and the blocks are
    arranged in a `dcn_mesh_shape` grid (the result's axis i has mesh_shape[i] *
    dcn_mesh_shape[i] devices)."""
    devices = list(_devices() if devices is None else devices)
    if len(mesh_shape) != len(dcn_mesh_shape):
        raise ValueError(f"mesh_shape {tuple(mesh_shape)} and dcn_mesh_shape "
                         f"{tuple(dcn_mesh_shape)} must have the same length")
    by_process = [list(g) for _, g in itertools.groupby(
        sorted(devices, key=lambda d: d.process_index), key=lambda d: d.process_index)]
    if math.prod(dcn_mesh_shape) != len(by_process):
        raise ValueError(f"Number of slices {len(by_process)} must equal the product of "
                         f"dcn_mesh_shape {tuple(dcn_mesh_shape)}")
    blocks = np.stack([create_device_mesh(mesh_shape, g) for g in by_process])
    ndim = len(mesh_shape)
    blocks = blocks.reshape(tuple(dcn_mesh_shape) + tuple(mesh_shape))
    order = [axis for i in range(ndim) for axis in (i, ndim + i)]
    return blocks.transpose(order).reshape(
        tuple(d * m for d, m in zip(dcn_mesh_shape, mesh_shape, strict=True)))
