"""The mesh in context: set_mesh, use_abstract_mesh, get_mesh and their queries, make_mesh."""
from __future__ import annotations

import math

import numpy as np

from gpuarr import core
from gpuarr.dispatch import eval_trace
from gpuarr.sharding.mesh import (
    AbstractMesh,
    AxisType,
    Mesh,
    _state,
    empty_abstract_mesh,
    empty_concrete_mesh,
)


def _physical_mesh() -> Mesh:
    """The mesh of the innermost `with mesh:` block (the empty mesh outside one)."""
    stack = _state.resources
    return stack[-1] if stack else empty_concrete_mesh


def _trace_state_clean() -> bool:
    return core.current_trace() is eval_trace


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in context (from `set_mesh` or `use_abstract_mesh`), or the empty
    one."""
    mesh = _state.abstract
    return empty_abstract_mesh if mesh is None else mesh


def get_concrete_mesh() -> Mesh:
    """The Mesh given to `set_mesh` (the empty Mesh when none is), also inside jit."""
    mesh = _state.concrete
    return empty_concrete_mesh if mesh is None else mesh


def get_mesh() -> Mesh:
    """The Mesh set with `set_mesh` (the empty Mesh when none is); only outside jit."""
    if not _trace_state_clean():
        raise ValueError("`get_mesh` can only be used outside of `jax.jit`. Maybe you want "
                         "`jax.sharding.get_abstract_mesh()`?")
    return get_concrete_mesh()


class set_mesh:
    """Make `mesh` the mesh in context: bare PartitionSpecs given to jit, device_put, reshard,
    shard_map and with_sharding_constraint refer to its axes. Works as a global setter
    (`gpuarr.set_mesh(mesh)`) and as a context manager (`with gpuarr.set_mesh(mesh):`), which
    restores the previous mesh on exit. Only outside jit, and not with Manual axes."""

    __slots__ = ("prev_abstract_mesh", "prev_mesh")

    def __init__(self, mesh: Mesh | None):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        if not _trace_state_clean():
            raise ValueError("`set_mesh` can only be used outside of `jax.jit`.")
        if mesh is not None and mesh._any_axis_manual:
            raise ValueError(
                f"mesh {mesh} contains manual axes which is not allowed when using "
                "`jax.set_mesh`. Please use `jax.shard_map` to enter into `Manual` mode instead.")
        self.prev_abstract_mesh = _state.abstract
        self.prev_mesh = _state.concrete
        _state.abstract = None if mesh is None else mesh.abstract_mesh
        _state.concrete = mesh

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, tb):
        _state.abstract = self.prev_abstract_mesh
        _state.concrete = self.prev_mesh


class use_abstract_mesh:
    """Context manager: make `mesh` (an AbstractMesh) the abstract mesh in context; it may
    not change the size of a mesh already in context."""

    __slots__ = ("mesh", "prev")

    def __init__(self, mesh: AbstractMesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError("Expected mesh of type `jax.sharding.AbstractMesh`. Got type: "
                             f"{type(mesh)}")
        self.mesh = mesh

    def __enter__(self):
        self.prev = _state.abstract
        prev = self.prev
        if prev is not None and not prev.empty and not self.mesh.empty \
                and prev.size != self.mesh.size:
            raise ValueError(
                f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
                f"{self.mesh} with size={self.mesh.size} and prev mesh: {prev} with "
                f"size={prev.size}")
        _state.abstract = self.mesh

    def __exit__(self, exc_type, exc_value, tb):
        _state.abstract = self.prev


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A Mesh of shape `axis_shapes` with names `axis_names` over `devices` (default: the
    default platform's). As in JAX the axes are Explicit unless `axis_types` says otherwise,
    and the product of the shape may not exceed the number of devices (set the cpu device
    count with `config.update("jax_num_cpu_devices", n)`)."""
    if devices is None:
        from gpuarr.device_api import devices as _devices
        devices = _devices()
    try:
        shape = tuple(int(s) for s in axis_shapes)
    except ValueError:
        raise ValueError("`axis_shapes` passed to `make_mesh` should be a sequence of ints. "
                         f"Got {axis_shapes}") from None
    size = math.prod(shape)
    if size > len(devices):
        raise ValueError(f"Number of devices {len(devices)} must be >= the product of "
                         f"mesh_shape {shape}")
    mesh_devices = np.empty(size, dtype=object)
    mesh_devices[:] = list(devices)[:size]
    mesh_devices = mesh_devices.reshape(shape)
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(shape)
    return Mesh(mesh_devices, axis_names, axis_types=axis_types)
