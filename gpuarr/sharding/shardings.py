"""Shardings: the Sharding base class, SingleDeviceSharding and NamedSharding (a mesh and a
PartitionSpec), with JAX's validation of specs against meshes."""
from __future__ import annotations

import functools
import math

import numpy as np

from gpuarr.sharding.mesh import AbstractMesh, AxisType, Mesh, show_axes
from gpuarr.sharding.partition_spec import _UNCONSTRAINED, PartitionSpec

_MEMORY_KINDS = {"cpu": ("device", "pinned_host", "unpinned_host")}


def _memory_kind(device, kind):
    """`kind` checked against what `device` can address; None means its default memory."""
    kinds = _MEMORY_KINDS.get(device.platform, ("device", "pinned_host"))
    if kind is None:
        return kinds[0]
    if kind not in kinds:
        raise ValueError(f"Could not find memory addressable by device {device.device_kind}. "
                         f"Device {device.device_kind} can address the following memory kinds: "
                         f"{', '.join(kinds)}. Got memory kind: {kind}")
    return kind


class IndivisibleError(ValueError):
    pass


class Sharding:
    """How an Array is laid out across devices (JAX's `jax.sharding.Sharding`)."""

    __slots__ = ()

    @property
    def device_set(self) -> set:
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def is_fully_addressable(self) -> bool:
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def num_devices(self) -> int:
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def memory_kind(self) -> str | None:
        raise NotImplementedError("Subclasses should implement this method.")

    def with_memory_kind(self, kind: str) -> Sharding:
        raise NotImplementedError("Subclasses should implement this method")

    @property
    def _device_assignment(self) -> tuple:
        raise NotImplementedError("Subclasses should implement this method.")

    def _tiling(self, ndim: int) -> tuple:
        """How many ways each dimension is split (mesh axes of size 1 left out), as the
        ((axis position, size), ...) per dimension: equal tilings place equal data."""
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def _is_concrete(self) -> bool:
        return True

    @property
    def addressable_devices(self) -> set:
        """The devices of this sharding that this process addresses."""
        from gpuarr.process_group import state
        return {d for d in self.device_set if d.process_index == state.process_index}

    @property
    def has_addressable_devices(self) -> bool:
        return len(self.addressable_devices) > 0

    @property
    def _addressable_device_assignment(self) -> tuple:
        return self._device_assignment

    def devices_indices_map(self, global_shape) -> dict:
        """Device -> the slices of an array of `global_shape` that it holds."""
        global_shape = tuple(global_shape)
        self.shard_shape(global_shape)  # raises a good error message
        return _indices_map(self, global_shape)

    def addressable_devices_indices_map(self, global_shape) -> dict:
        here = self.addressable_devices
        return {d: i for d, i in self.devices_indices_map(global_shape).items() if d in here}

    def shard_shape(self, global_shape) -> tuple:
        """The shape of the piece of an array of `global_shape` on each device."""
        global_shape = tuple(global_shape)
        out = []
        for dim, (s, split) in enumerate(zip(global_shape, self._tiling(len(global_shape)))):
            p = math.prod(size for _, size in split)
            quotient, remainder = divmod(s, p)
            if remainder:
                factors = [math.prod(n for _, n in t) for t in self._tiling(len(global_shape))]
                raise IndivisibleError(
                    f"Sharding {self} implies that array axis {dim} is partitioned {p} times, "
                    f"but the dimension size is {s} (full shape: {global_shape}, per-dimension "
                    f"tiling factors: {factors} should evenly divide the shape)")
            out.append(quotient)
        return tuple(out)

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether the two shardings place the same pieces of an array on the same devices."""
        return (self._tiling(ndim) == other._tiling(ndim)
                and self.memory_kind == other.memory_kind
                and self._device_assignment == other._device_assignment)


def _indices_map(sharding, global_shape) -> dict:
    """Device -> index tuple; a dimension split n > 1 ways gets slice(start, stop)."""
    devices = sharding._device_assignment  # raises for an AbstractMesh, as in JAX
    if not isinstance(sharding, NamedSharding) or sharding.mesh.size == 1:
        return {d: (slice(None),) * len(global_shape) for d in devices}
    mesh = sharding.mesh
    pos = {name: i for i, name in enumerate(mesh.axis_names)}
    parts = sharding.spec._normalized_spec_for_aval(len(global_shape)).partitions
    out = {}
    for where in np.ndindex(*mesh.axis_sizes):
        index = []
        for n, entry in zip(global_shape, parts):
            axes = () if entry is None else entry if isinstance(entry, tuple) else (entry,)
            ways, k = 1, 0
            for a in axes:
                k = k * mesh.shape[a] + where[pos[a]]
                ways *= mesh.shape[a]
            chunk = n // ways
            index.append(slice(None) if ways == 1 else slice(k * chunk, (k + 1) * chunk))
        out.setdefault(mesh.devices[where], tuple(index))
    return out


class SingleDeviceSharding(Sharding):
    """The whole array on one device (how every unsharded Array is placed)."""

    __slots__ = ("_device", "_memory_kind", "_hash")

    def __init__(self, device, *, memory_kind: str | None = None):
        self._device = device
        self._memory_kind = _memory_kind(device, memory_kind)
        self._hash = None

    def __reduce__(self):
        return (_single_device_sharding, (self._device, self._memory_kind))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self._device, self._memory_kind))
        return self._hash

    def __eq__(self, other):
        if not isinstance(other, SingleDeviceSharding):
            return False
        return self is other or (self._device == other._device
                                 and self._memory_kind == other._memory_kind)

    @property
    def num_devices(self) -> int:
        return 1

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def memory_kind(self) -> str:
        return self._memory_kind

    def with_memory_kind(self, kind: str) -> SingleDeviceSharding:
        return SingleDeviceSharding(self._device, memory_kind=kind)

    @property
    def _device_assignment(self) -> tuple:
        return (self._device,)

    def _tiling(self, ndim: int) -> tuple:
        return ((),) * ndim

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def is_fully_addressable(self) -> bool:
        return True

    def check_compatible_aval(self, aval_shape) -> None:
        return None


def _single_device_sharding(device, memory_kind=None):
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
    """`SingleDeviceSharding(device, memory_kind=memory_kind)`."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


@functools.lru_cache(maxsize=64)
def default_sharding(device) -> SingleDeviceSharding:
    """The Sharding of an Array placed on `device` without one (cached: Arrays build theirs
    only when asked)."""
    return SingleDeviceSharding(device)


class DuplicateSpecError(Exception):
    def __init__(self, message, mesh, pspec):
        super().__init__(message)
        self.message = message
        self.mesh = mesh
        self.pspec = pspec

    def __str__(self):
        return f"{self.message}"


def _check_unique_resources(pspec, arg_name: str, mesh=None) -> None:
    counts: dict = {}
    for d in pspec.partitions:
        if d is _UNCONSTRAINED or d is None:
            continue
        for resource in d if isinstance(d, tuple) else (d,):
            counts[resource] = counts.get(resource, 0) + 1
    multiple = [r for r, c in counts.items() if c > 1]
    if multiple:
        raise DuplicateSpecError(
            message=(f"A single {arg_name} specification can map every mesh axis to at most one "
                     f"positional dimension, but {pspec} has duplicate entries for "
                     f"{show_axes(multiple)}"),
            mesh=mesh, pspec=pspec)


def _check_mesh_resource_axis(mesh, pspec) -> None:
    for p in pspec.partitions:
        if p is _UNCONSTRAINED or p is None:
            continue
        for r in p if isinstance(p, tuple) else (p,):
            if r not in mesh.axis_names:
                raise ValueError(f"Resource axis: {r} of {pspec} is not found in mesh: "
                                 f"{tuple(mesh.shape.keys())}.")
    if AxisType.Auto not in mesh.axis_types and _UNCONSTRAINED in pspec.partitions:
        raise ValueError(f"{pspec} cannot contain `P.UNCONSTRAINED` when no mesh axis_types are "
                         f"`Auto`. Got mesh axis_types: {mesh.axis_types}")


def _check_mesh_unreduced(mesh, pspec) -> None:
    for what, axes in (("Unreduced", pspec.unreduced), ("Reduced", pspec.reduced)):
        for u in axes:
            if u not in mesh.axis_names:
                raise ValueError(f"{what} axes {u} is not found in {mesh.axis_names=}. "
                                 f"Got {pspec=}")
            if mesh._name_to_type[u] in (AxisType.Auto, AxisType.Manual):
                raise ValueError(
                    f"{what} axes can only refer to mesh axes that is of type `Explicit`. Got "
                    f"{what.lower()} axes: {axes} and mesh: {mesh}")


def _flatten_spec(spec) -> list:
    out = []
    for s in spec.partitions if isinstance(spec, PartitionSpec) else spec:
        out.extend(s if isinstance(s, tuple) else (s,))
    return out


class NamedSharding(Sharding):
    """A Mesh plus a PartitionSpec saying how each array dimension is split over its named
    axes (JAX's `jax.sharding.NamedSharding`). With one device the whole array sits on it
    whatever the spec; over several cpu devices each holds the piece the spec gives it."""

    __slots__ = ("mesh", "spec", "_memory_kind", "_logical_device_ids", "_hash", "__dict__")

    def __init__(self, mesh, spec, *, memory_kind: str | None = None,
                 _logical_device_ids=None):
        self.mesh = mesh
        self.spec = spec
        if isinstance(mesh, Mesh) and not mesh.empty:
            memory_kind = _memory_kind(mesh.devices.flat[0], memory_kind)
        self._memory_kind = memory_kind
        self._logical_device_ids = _logical_device_ids
        self._hash = None
        _check_unique_resources(spec, "NamedSharding spec", mesh)
        _check_mesh_resource_axis(mesh, spec)
        _check_mesh_unreduced(mesh, spec)

    def __repr__(self):
        mem = "" if self._memory_kind is None else f", memory_kind={self._memory_kind}"
        ldi = ("" if self._logical_device_ids is None
               else f", logical_device_ids={self._logical_device_ids}")
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec}{mem}{ldi})"

    def __reduce__(self):
        return (_named_sharding, (self.mesh, self.spec, self._memory_kind,
                                  self._logical_device_ids))

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.mesh, self._memory_kind, self.spec,
                               self._logical_device_ids))
        return self._hash

    def __eq__(self, other):
        if not isinstance(other, NamedSharding):
            return False
        if self is other:
            return True
        if (self.spec is not other.spec or self._memory_kind != other._memory_kind
                or self._logical_device_ids != other._logical_device_ids):
            return False
        return self.mesh is other.mesh

    def check_compatible_aval(self, aval_shape) -> None:
        if len(aval_shape) < len(self.spec):
            extra = " For scalars the PartitionSpec should be P()" if len(aval_shape) == 0 else ""
            raise ValueError(f"Sharding {self} is only valid for values of rank at least "
                             f"{len(self.spec)}, but was applied to a value of rank "
                             f"{len(aval_shape)}.{extra}")

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    def _concrete_only(self, what):
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError(f"{what} is not implemented for `jax.sharding.AbstractMesh`.")

    @property
    def device_set(self) -> set:
        self._concrete_only("device_set")
        return self.mesh._flat_devices_set

    @property
    def _device_assignment(self) -> tuple:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError("_device_assignment is not implemented for "
                             "`jax.sharding.AbstractMesh`.")
        return self.mesh._flat_devices_tuple

    @property
    def is_fully_addressable(self) -> bool:
        self._concrete_only("is_fully_addressable")
        return not self.mesh.is_multi_process

    @property
    def _is_concrete(self) -> bool:
        return not isinstance(self.mesh, AbstractMesh)

    @property
    def addressable_devices(self) -> set:
        self._concrete_only("addressable_devices")
        return self.mesh._local_devices_set

    @functools.cached_property
    def is_fully_replicated(self) -> bool:
        if self.mesh.size == 1:
            return True
        if self.spec.unreduced:
            return False
        shape = self.mesh.shape
        return math.prod(shape[n] for n in _flatten_spec(self.spec)
                         if n is not None and n is not _UNCONSTRAINED) == 1

    @functools.cached_property
    def replicated_axes(self) -> frozenset:
        used = frozenset(s for s in _flatten_spec(self.spec)
                         if s is not None and s is not _UNCONSTRAINED)
        return frozenset(self.mesh.axis_names) - (used | self.spec.unreduced | self.spec.reduced)

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return self.update(memory_kind=kind)

    def update(self, **kwargs) -> NamedSharding:
        spec = kwargs.pop("spec", self.spec)
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        return NamedSharding(mesh=kwargs.pop("mesh", self.mesh), spec=spec,
                             memory_kind=kwargs.pop("memory_kind", self._memory_kind),
                             _logical_device_ids=kwargs.pop("_logical_device_ids",
                                                            self._logical_device_ids))

    def _tiling(self, ndim: int) -> tuple:
        mesh = self.mesh
        pos = {name: i for i, name in enumerate(mesh.axis_names)}
        parts = self.spec._normalized_spec_for_aval(ndim).partitions
        return tuple(
            () if e is None else tuple((pos[a], mesh.shape[a])
                                       for a in (e if isinstance(e, tuple) else (e,))
                                       if mesh.shape[a] != 1)
            for e in parts)

    def is_equivalent_to(self, other, ndim: int) -> bool:
        if isinstance(self.mesh, AbstractMesh) and isinstance(getattr(other, "mesh", None),
                                                              AbstractMesh):
            return (self._tiling(ndim) == other._tiling(ndim)
                    and self.memory_kind == other.memory_kind)
        return super().is_equivalent_to(other, ndim)


def _named_sharding(mesh, spec, memory_kind, logical_device_ids):
    return NamedSharding(mesh, spec, memory_kind=memory_kind,
                         _logical_device_ids=logical_device_ids)
