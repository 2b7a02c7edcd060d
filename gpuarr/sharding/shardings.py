"""Shardings (JAX's `jax.sharding`): meshes of devices, PartitionSpecs and the Shardings built
from them, for gpuarr's single device.

gpuarr runs every computation on one device, so every concrete `Mesh` has one device and all
its axes have size 1: a NamedSharding then places the whole array on that device, and every
PartitionSpec describes the same layout. These classes carry JAX's names, printing, equality,
validation and errors, so that programs written against the sharding API run unchanged:
`device_put(x, NamedSharding(mesh, P('i')))`, `jit(f, out_shardings=...)`, `reshard`,
`set_mesh`, `shard_map` (gpuarr.shard_map_api). Arrays report the Sharding they were placed
with (`x.sharding`). What one device cannot do (a mesh axis of size > 1) raises
NotImplementedError.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import functools
import math
import threading
import warnings
import weakref

import numpy as np

from gpuarr import pytrees

__all__ = [
    "AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh", "NamedSharding",
    "PartitionSpec", "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
    "get_abstract_mesh", "get_mesh", "make_single_device_sharding", "reshard", "set_mesh",
    "use_abstract_mesh",
]


def _frozen_setattr(self, name, value):
    raise AttributeError(f"{type(self).__name__} objects are immutable")


def _interner():
    """A weak-value table: equal arguments give the same object (JAX interns these classes,
    so they compare by identity)."""
    return weakref.WeakValueDictionary()


# ---------------------------------------------------------------- PartitionSpec


class UnconstrainedSingleton:
    """`P.UNCONSTRAINED`: a dimension whose sharding the compiler may choose."""

    def __repr__(self):
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_get_unconstrained, ())


def _get_unconstrained():
    return _UNCONSTRAINED


_UNCONSTRAINED = UnconstrainedSingleton()


def _canonicalize_partition(p):
    """One entry of a PartitionSpec: lists become tuples, a 1-tuple its element, () None."""
    if isinstance(p, list):
        p = tuple(p)
    if isinstance(p, tuple):
        for q in p:
            if isinstance(q, (tuple, list)):
                raise ValueError("A tuple inside PartitionSpec cannot contain a nested tuple. "
                                 f"Got partition: {p} and the nested tuple: {q}")
        if not p:
            return None
        return p[0] if len(p) == 1 else p
    return p


def _check_partition_spec(partitions, unreduced, reduced):
    if not reduced and not unreduced:
        return
    if None in unreduced:
        raise ValueError("unreduced cannot contain None. All elements in unreduced should refer"
                         " to the mesh axes.")
    if None in reduced:
        raise ValueError("reduced cannot contain None. All elements in reduced should refer to "
                         "the mesh axes.")
    if unreduced & reduced:
        raise ValueError("`unreduced` and `reduced` argument to PartitionSpec cannot overlap. "
                         f"Got unreduced: {unreduced} and reduced: {reduced}")
    for partition in partitions:
        for p in partition if isinstance(partition, tuple) else (partition,):
            if p in unreduced:
                raise ValueError("partitions cannot overlap with unreduced axes passed to "
                                 f"PartitionSpec. Got partitions: {partitions} and unreduced "
                                 f"axes: {unreduced}")
            if p in reduced:
                raise ValueError("partitions cannot overlap with reduced axes passed to "
                                 f"PartitionSpec. Got partitions: {partitions} and reduced "
                                 f"axes: {reduced}")


def _axis_set(value, what):
    if isinstance(value, frozenset):
        return value
    if not isinstance(value, set):
        raise TypeError(f"{what} argument of PartitionSpec should of type `frozenset` or `set`. "
                        f"Got type {value}")
    return frozenset(value)


class PartitionSpec:
    """How each dimension of an array is split over named mesh axes: each entry is None (not
    split), an axis name, or a tuple of axis names; `unreduced`/`reduced` name axes over
    which the value is a partial sum. Equal specs are the same object (as in JAX), so they
    compare and hash by identity; a spec is not a tuple, so pytree functions treat it as a
    leaf."""

    __slots__ = ("_partitions", "unreduced", "reduced", "__weakref__")
    UNCONSTRAINED = _UNCONSTRAINED
    _table = _interner()

    def __new__(cls, *partitions, unreduced=frozenset(), reduced=frozenset()):
        partitions = tuple(_canonicalize_partition(p) for p in partitions)
        unreduced = _axis_set(unreduced, "unreduced")
        reduced = _axis_set(reduced, "reduced")
        key = (partitions, unreduced, reduced)
        obj = PartitionSpec._table.get(key)
        if obj is None:
            _check_partition_spec(partitions, unreduced, reduced)
            obj = object.__new__(PartitionSpec)
            object.__setattr__(obj, "_partitions", partitions)
            object.__setattr__(obj, "unreduced", unreduced)
            object.__setattr__(obj, "reduced", reduced)
            PartitionSpec._table[key] = obj
        return obj

    __setattr__ = _frozen_setattr

    def __init_subclass__(cls, *args, **kwargs):
        raise TypeError("Subclassing `jax.P` is prohibited.")

    @property
    def partitions(self) -> tuple:
        return self._partitions

    def __repr__(self):
        pr = repr(self._partitions)[1:-1]
        if not self.unreduced and not self.reduced:
            return f"P({pr})"
        if self.unreduced and self.reduced:
            ur = f"unreduced={set(self.unreduced)!r}, reduced={set(self.reduced)!r}"
        elif self.unreduced:
            ur = f"unreduced={set(self.unreduced)!r}"
        else:
            ur = f"reduced={set(self.reduced)!r}"
        pr = "" if not pr else f"{pr} " if pr.endswith(",") else f"{pr}, "
        return f"P({pr}{ur})"

    def __reduce__(self):
        return (_make_spec, (self._partitions, self.unreduced, self.reduced))

    def __getitem__(self, i):
        if self.reduced or self.unreduced:
            raise ValueError("Using pspec[...] is dangerous when PartitionSpec has non-empty "
                             "unreduced/reduced set. Please use spec.partitions[...]")
        return self._partitions[i]

    def __iter__(self):
        if self.reduced or self.unreduced:
            raise ValueError("Using *pspec is dangerous when PartitionSpec has non-empty "
                             "unreduced/reduced set. Please use *spec.partitions")
        return iter(self._partitions)

    def __len__(self):
        return len(self._partitions)

    def __add__(self, other):
        if isinstance(other, PartitionSpec):
            return PartitionSpec(*self.partitions, *other.partitions,
                                 unreduced={*self.unreduced, *other.unreduced},
                                 reduced={*self.reduced, *other.reduced})
        if isinstance(other, tuple):
            for what in ("unreduced", "reduced"):
                if getattr(self, what):
                    raise TypeError(f"other {other} cannot be of instance `tuple` when self "
                                    f"{self} has {what} in `__add__` of PartitionSpec.")
            return PartitionSpec(*self, *other)
        raise NotImplementedError

    def __radd__(self, other):
        if not isinstance(other, tuple):
            raise NotImplementedError
        for what in ("unreduced", "reduced"):
            if getattr(self, what):
                raise TypeError(f"other {other} cannot be of instance `tuple` when self {self} "
                                f"has {what} in `__radd__` of PartitionSpec.")
        return PartitionSpec(*other, *self)

    def index(self, value):
        return self._partitions.index(_canonicalize_partition(value))

    def count(self, value):
        return self._partitions.count(_canonicalize_partition(value))

    def update(self, partitions=None, unreduced=None, reduced=None) -> PartitionSpec:
        p = self._partitions if partitions is None else partitions
        ur = self.unreduced if unreduced is None else unreduced
        r = self.reduced if reduced is None else reduced
        return PartitionSpec(*p, unreduced=ur, reduced=r)

    def to_lo(self):
        return [self]

    def to_tangent_spec(self):
        return self

    def to_ct_spec(self):
        return self.update(unreduced=self.reduced, reduced=self.unreduced)

    def _normalized_spec_for_aval(self, ndim: int) -> PartitionSpec:
        out = [None if p is _UNCONSTRAINED else p for p in self._partitions]
        out.extend([None] * (ndim - len(out)))
        return self.update(partitions=out)

    def _check_compatible_wrt_shape(self, shape):
        if len(shape) < len(self._partitions):
            extra = " For scalars the PartitionSpec should be P()" if len(shape) == 0 else ""
            raise ValueError(f"PartitionSpec {self} is only valid for values of rank at least "
                             f"{len(self._partitions)}, but was applied to a value of rank "
                             f"{len(shape)}.{extra}")


def _make_spec(partitions, unreduced, reduced):
    return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


P = PartitionSpec


# ---------------------------------------------------------------- axis types, devices


class AxisType(enum.Enum):
    """How a mesh axis is used: Auto (the compiler decides), Explicit (shardings are part of
    the types), Manual (inside shard_map)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


def _normalize_axis_types(axis_names, axis_types, name):
    axis_types = (AxisType.Auto,) * len(axis_names) if axis_types is None else axis_types
    if not isinstance(axis_types, tuple):
        axis_types = (axis_types,)
    if not all(isinstance(a, AxisType) for a in axis_types):
        raise TypeError(f"axis_types passed to {name} must be of type `jax.sharding.AxisType`. "
                        f"Got {axis_types} of type {tuple(type(a) for a in axis_types)}")
    if len(axis_names) != len(axis_types):
        raise ValueError("Number of axis names should match the number of axis_types. Got "
                         f"axis_names={axis_names} and axis_types={axis_types}")
    return axis_types


@dataclasses.dataclass(frozen=True, slots=True)
class AbstractDevice:
    """The kind of device a mesh is made of, without a particular device."""

    device_kind: str
    num_cores: int | None
    platform: str

    def __repr__(self):
        return f"AbstractDevice({self._repr()})"

    def _repr(self):
        return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform}")


class ManualAxisType:
    """The mesh axes along which a value inside shard_map varies, or is an unreduced or
    reduced partial result."""

    __slots__ = ("varying", "unreduced", "reduced", "__weakref__")
    _table = _interner()

    def __new__(cls, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        if varying & unreduced:
            raise ValueError("varying and unreduced cannot have common mesh axes. Got "
                             f"varying={varying} and unreduced={unreduced}")
        if varying & reduced:
            raise ValueError("varying and reduced cannot have common mesh axes. Got "
                             f"varying={varying} and reduced={reduced}")
        key = (frozenset(varying), frozenset(unreduced), frozenset(reduced))
        obj = ManualAxisType._table.get(key)
        if obj is None:
            obj = object.__new__(ManualAxisType)
            for name, value in zip(("varying", "unreduced", "reduced"), key):
                object.__setattr__(obj, name, value)
            ManualAxisType._table[key] = obj
        return obj

    __setattr__ = _frozen_setattr

    def __repr__(self):
        return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
                f"reduced={self.reduced})")

    def __reduce__(self):
        return (_make_mat, (self.varying, self.unreduced, self.reduced))

    def update(self, **kwargs) -> ManualAxisType:
        for name in ("varying", "unreduced", "reduced"):
            kwargs.setdefault(name, getattr(self, name))
        return ManualAxisType(**kwargs)

    def to_ct_mat(self) -> ManualAxisType:
        return self.update(unreduced=self.reduced, reduced=self.unreduced)

    @property
    def empty(self) -> bool:
        return not (self.varying or self.unreduced or self.reduced)


def _make_mat(varying, unreduced, reduced):
    return ManualAxisType(varying=varying, unreduced=unreduced, reduced=reduced)


# ---------------------------------------------------------------- meshes


def show_axes(axes) -> str:
    """Axis names as JAX's messages list them: `a`, `b`."""
    return ", ".join(sorted(f"`{a}`" for a in axes))


class BaseMesh:
    """What Mesh and AbstractMesh share: axis names, sizes and types."""

    @functools.cached_property
    def are_all_axes_manual(self) -> bool:
        return bool(self.axis_types) and all(t == AxisType.Manual for t in self.axis_types)

    @functools.cached_property
    def are_all_axes_auto(self) -> bool:
        return bool(self.axis_types) and all(t == AxisType.Auto for t in self.axis_types)

    @functools.cached_property
    def are_all_axes_explicit(self) -> bool:
        return bool(self.axis_types) and all(t == AxisType.Explicit for t in self.axis_types)

    @functools.cached_property
    def _any_axis_manual(self) -> bool:
        return AxisType.Manual in self.axis_types

    @functools.cached_property
    def _any_axis_auto(self) -> bool:
        return AxisType.Auto in self.axis_types

    @functools.cached_property
    def _any_axis_explicit(self) -> bool:
        return AxisType.Explicit in self.axis_types

    @functools.cached_property
    def auto_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == AxisType.Auto)

    @functools.cached_property
    def explicit_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                     if t == AxisType.Explicit)

    @functools.cached_property
    def manual_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                     if t == AxisType.Manual)

    @functools.cached_property
    def _name_to_type(self) -> dict:
        return dict(zip(self.axis_names, self.axis_types))

    @functools.cached_property
    def shape(self) -> collections.OrderedDict:
        """Axis name -> size, in mesh order."""
        return collections.OrderedDict(self.shape_tuple)

    @functools.cached_property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def empty(self) -> bool:
        return self.size == 0


class Mesh(BaseMesh, contextlib.ContextDecorator):
    """An n-dimensional array of devices with a name (and an AxisType) per dimension.

    `Mesh(np.array(gpuarr.devices()).reshape(1, 1), ('x', 'y'))`; `gpuarr.make_mesh` builds
    one from axis sizes. Equal meshes are the same object. `with mesh:` (deprecated in JAX
    for `with gpuarr.set_mesh(mesh):`) makes it the mesh that bare PartitionSpecs refer to
    in `with_sharding_constraint`."""

    _table = _interner()

    def __new__(cls, devices, axis_names, axis_types=None):
        if not isinstance(devices, np.ndarray):
            devices = np.array(devices, dtype=object)
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        if any(i is None for i in axis_names):
            raise ValueError(f"Mesh axis names cannot be None. Got: {axis_names}")
        if devices.ndim != len(axis_names):
            raise ValueError(
                "Mesh requires the ndim of its first argument (`devices`) to equal the length of "
                "its second argument (`axis_names`), but got "
                f"devices.ndim == {devices.ndim} and len(axis_names) == {len(axis_names)}.")
        flat = tuple(devices.flat)
        axis_types = _normalize_axis_types(axis_names, axis_types, "Mesh")
        key = (flat, devices.shape, axis_names, axis_types)
        obj = Mesh._table.get(key)
        if obj is None:
            empty = not axis_names and flat[0] is None
            arr = np.empty(len(flat), dtype=object)
            arr[:] = flat
            arr = arr.reshape(devices.shape)
            arr.flags.writeable = False
            obj = object.__new__(Mesh)
            d = obj.__dict__
            d.update(devices=arr, axis_names=axis_names, axis_types=axis_types,
                     size=0 if empty else math.prod(devices.shape))
            Mesh._table[key] = obj
        return obj

    __setattr__ = _frozen_setattr

    def __reduce__(self):
        return (Mesh, (self.devices, self.axis_names, self.axis_types))

    @property
    def axis_sizes(self) -> tuple:
        return self.devices.shape

    @property
    def is_scalar(self) -> bool:
        return self.size == 1 and not self.axis_names

    @functools.cached_property
    def device_ids(self) -> np.ndarray:
        assert not self.empty
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @functools.cached_property
    def _flat_devices_tuple(self) -> tuple:
        return tuple(self.devices.flat)

    @functools.cached_property
    def _flat_devices_set(self) -> set:
        return set(self.devices.flat)

    @functools.cached_property
    def local_devices(self) -> list:
        # One process holds every device.
        return list(self.devices.flat)

    @functools.cached_property
    def _local_devices_set(self) -> set:
        return set(self.local_devices)

    @property
    def local_mesh(self) -> Mesh:
        if self.empty:
            return self
        return Mesh(self.devices, self.axis_names)

    @property
    def is_multi_process(self) -> bool:
        return False

    def update(self, devices=None, axis_names=None, axis_types=None) -> Mesh:
        return Mesh(self.devices if devices is None else devices,
                    self.axis_names if axis_names is None else axis_names,
                    self.axis_types if axis_types is None else axis_types)

    def __str__(self):
        if self.empty:
            return "Mesh()"
        mesh_str = ", ".join(f"'{k}': {v}" for k, v in self.shape.items())
        return f"Mesh({mesh_str}, axis_types={self.axis_types})"

    def __repr__(self):
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.device_ids.shape}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types})")

    @functools.cached_property
    def abstract_mesh(self) -> AbstractMesh:
        if not self.axis_names:
            return empty_abstract_mesh
        d = self.devices.flat[0]
        device = None if d is None else AbstractDevice(
            device_kind=d.device_kind, num_cores=None, platform=d.platform)
        return AbstractMesh(self.axis_sizes, self.axis_names, axis_types=self.axis_types,
                            abstract_device=device)

    def __enter__(self):
        warnings.warn("`with mesh:` context manager has been deprecated. Please use `with "
                      "jax.set_mesh(mesh):` instead.", category=DeprecationWarning, stacklevel=2)
        _resource_stack().append(self)
        return self

    def __exit__(self, exc_type, exc_value, tb):
        _resource_stack().pop()
        return False


class AbstractMesh(BaseMesh):
    """Axis sizes, names and types of a mesh, without its devices. Equal abstract meshes are
    the same object."""

    _table = _interner()

    def __new__(cls, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
        axis_types = _normalize_axis_types(axis_names, axis_types, "AbstractMesh")
        key = (axis_sizes, axis_names, axis_types, abstract_device)
        obj = AbstractMesh._table.get(key)
        if obj is None:
            obj = object.__new__(AbstractMesh)
            obj.__dict__.update(axis_sizes=axis_sizes, axis_names=axis_names,
                                axis_types=axis_types, abstract_device=abstract_device,
                                size=math.prod(axis_sizes) if axis_sizes else 0)
            AbstractMesh._table[key] = obj
        return obj

    __setattr__ = _frozen_setattr

    def __reduce__(self):
        return (_make_abstract_mesh, (self.axis_sizes, self.axis_names, self.axis_types,
                                      self.abstract_device))

    def __repr__(self):
        mesh_repr = (", ".join(f"'{n}': {v}" for n, v in self.shape_tuple)
                     if self.shape_tuple else "()")
        ad = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({mesh_repr}, axis_types={self.axis_types}{ad})"

    def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kwargs):
        kwargs.setdefault("abstract_device", self.abstract_device)
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types, **kwargs)

    def update_axis_types(self, name_to_type: dict) -> AbstractMesh:
        return self.update(axis_types=tuple(name_to_type.get(n, a)
                                            for n, a in zip(self.axis_names, self.axis_types)))

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def _no(self, name):
        raise ValueError(f"AbstractMesh does not implement {name}")

    devices = property(lambda self: self._no("devices"))
    device_ids = property(lambda self: self._no("device_ids"))
    is_multi_process = property(lambda self: self._no("is_multi_process"))
    local_devices = property(lambda self: self._no("local_devices"))
    local_mesh = property(lambda self: self._no("local_mesh"))

    def __enter__(self):
        self._no("__enter__")

    def __exit__(self, exc_type, exc_value, tb):
        self._no("__exit__")


def _make_abstract_mesh(axis_sizes, axis_names, axis_types, abstract_device):
    return AbstractMesh(axis_sizes, axis_names, axis_types, abstract_device=abstract_device)


empty_abstract_mesh = AbstractMesh((), ())
empty_concrete_mesh = Mesh(np.empty((), dtype=object), ())


# ---------------------------------------------------------------- the mesh in context

class _MeshState(threading.local):
    def __init__(self):
        self.abstract = None  # set by set_mesh / use_abstract_mesh
        self.concrete = None  # set by set_mesh
        self.resources: list = []  # `with mesh:` blocks


_state = _MeshState()


def _resource_stack() -> list:
    return _state.resources


def _physical_mesh() -> Mesh:
    """The mesh of the innermost `with mesh:` block (the empty mesh outside one)."""
    stack = _state.resources
    return stack[-1] if stack else empty_concrete_mesh


def _trace_state_clean() -> bool:
    from gpuarr import core
    from gpuarr.dispatch import eval_trace
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
    and the product of the shape may not exceed the number of devices: on gpuarr's single
    device every axis has size 1."""
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


# ---------------------------------------------------------------- shardings

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
        """The devices of this sharding that this process addresses (all of them)."""
        return self.device_set

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
        return self.devices_indices_map(global_shape)

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
    axes (JAX's `jax.sharding.NamedSharding`). On gpuarr's one device every axis has size 1,
    so the whole array sits on that device whatever the spec."""

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
        return True

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


# ---------------------------------------------------------------- types of values

def modify_spec_for_auto_manual(spec, mesh) -> PartitionSpec:
    """`spec` with only the mesh's Explicit axes (the part of a sharding that is in a type)."""
    new_spec = []
    for s in spec.partitions:
        if s is None:
            new_spec.append(s)
        elif isinstance(s, tuple):
            new_spec.append(tuple(p for p in s if mesh._name_to_type[p] == AxisType.Explicit))
        else:
            new_spec.append(s if mesh._name_to_type[s] == AxisType.Explicit else None)

    def keep(axes):
        return {u for u in axes if mesh._name_to_type[u] == AxisType.Explicit}
    return PartitionSpec(*new_spec, unreduced=keep(spec.unreduced), reduced=keep(spec.reduced))


def type_spec(x):
    """The PartitionSpec that JAX's type of `x` carries (`jax.typeof(x).sharding.spec`): one
    entry per dimension, only Explicit axes. None for a traced value, whose sharding gpuarr
    does not track."""
    from gpuarr.array import Array
    from gpuarr.core import Tracer
    if isinstance(x, Tracer):
        return None
    ndim = np.ndim(x)
    s = getattr(x, "_sharding", None) if type(x) is Array else None
    if isinstance(s, NamedSharding):
        spec = s.spec._normalized_spec_for_aval(ndim)
        if any(p is not None for p in spec.partitions) and not s.mesh.are_all_axes_explicit:
            spec = modify_spec_for_auto_manual(spec, s.mesh)
        return spec
    return PartitionSpec(*[None] * ndim)


def aval_str(aval) -> str:
    """`float32[4,3]`: an aval as JAX's messages print it (full dtype name)."""
    return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"


def type_str(x, spec) -> str:
    """`float32[4@i]`: JAX's short type of `x` with the mesh axes its dimensions use."""
    from gpuarr import core
    aval = core.get_aval(x)
    dims = []
    for n, s in zip(aval.shape, spec.partitions if spec is not None else [None] * aval.ndim):
        if s is None:
            dims.append(f"{n}")
        elif isinstance(s, tuple):
            dims.append(f"{n}@({','.join(s)})")
        else:
            dims.append(f"{n}@{s}")
    return f"{aval.dtype.name}[{','.join(dims)}]"


# ---------------------------------------------------------------- pytrees of shardings


class PytreeLeaf:
    """Stands for a leaf of the value when a pytree of shardings is checked against it."""

    def __repr__(self):
        return "pytree leaf"


def _is_none(x) -> bool:
    return x is None


def _broadcast_flat(treedef, axis_tree) -> list:
    """One entry of the prefix tree `axis_tree` (None is a leaf) per leaf of `treedef`;
    ValueError when it is not a prefix."""
    leaves, ptree = pytrees.tree_flatten(axis_tree, is_leaf=_is_none)
    dummy = pytrees.tree_unflatten(treedef, [PytreeLeaf()] * treedef.num_leaves)
    out = []
    for leaf, sub in zip(leaves, ptree.flatten_up_to(dummy)):
        out.extend([leaf] * pytrees.tree_structure(sub).num_leaves)
    return out


def _prefix_error_messages(prefix, full, name) -> list[str]:
    makers = pytrees._prefix_errors((), prefix, full, lambda kp, x: x is None)
    return [make(name) for make in makers]


def flatten_axes(name, treedef, axis_tree, *, tupled_args=False) -> list:
    """`axis_tree` (a prefix of the tree `treedef`) broadcast to one entry per leaf, with
    JAX's error (naming `name`) when it is not a prefix."""
    try:
        return _broadcast_flat(treedef, axis_tree)
    except ValueError:
        pass
    hint = ""
    if tupled_args:
        hint += (f" Note that {name} that are non-trivial pytrees should always be wrapped in a "
                 "tuple representing the argument list.")
        if len(treedef.children()) == 1:
            try:
                _broadcast_flat(treedef, (axis_tree,))
            except ValueError:
                pass
            else:
                hint += (" In particular, you're passing in a single argument which means that "
                         f"{name} might need to be wrapped in a singleton tuple.")
    dummy = pytrees.tree_unflatten(treedef, [PytreeLeaf()] * treedef.num_leaves)
    msgs = _prefix_error_messages(axis_tree, dummy, name)
    details = "\n  ".join(msgs)
    raise ValueError(f"{name} specification must be a tree prefix of the corresponding value; "
                     f"{hint}\n  Mismatch details ({len(msgs)} found):\n  {details}") from None


def flatten_axis_resources(what, tree, shardings, tupled_args) -> list:
    """jit's and reshard's form of `flatten_axes`, with JAX's messages for a wrong prefix."""
    try:
        return _broadcast_flat(tree, shardings)
    except ValueError:
        pass
    if tupled_args and (type(shardings) is not tuple or len(shardings) != len(tree.children())):
        msg = (f"{what} specification must be a tree prefix of the positional arguments tuple. "
               f"In particular, {what} must either be a Sharding, a PartitionSpec, or a tuple of "
               "length equal to the number of positional arguments.")
        if type(shardings) is not tuple:
            msg += f" But {what} is not a tuple: got {type(shardings)} instead."
        elif len(shardings) != len(tree.children()):
            msg += (f" But {what} is the wrong length: got a tuple or list of length "
                    f"{len(shardings)} for an args tuple of length {len(tree.children())}.")
        if len(tree.children()) == 1:
            try:
                _broadcast_flat(tree, (shardings,))
            except ValueError:
                pass
            else:
                msg += (f" Given the corresponding argument being passed, it looks like {what} "
                        "might need to be wrapped in a singleton tuple.")
        raise ValueError(msg)
    dummy = pytrees.tree_unflatten(tree, [PytreeLeaf()] * tree.num_leaves)
    msgs = _prefix_error_messages(shardings, dummy, what)
    raise ValueError(f"Mismatch details ({len(msgs)} found):\n" + "\n".join(msgs))


class UnspecifiedValue:
    def __repr__(self):
        return "UnspecifiedValue"


UNSPECIFIED = UnspecifiedValue()


class UnsupportedShardingError(NotImplementedError, TypeError):
    """A sharding argument that is neither a Sharding nor a PartitionSpec: a TypeError in JAX,
    and gpuarr (one device, no other kind of sharding) cannot honour it either."""


def prepare_axis_resources(axis_resources, arg_name, allow_unconstrained_dims=False):
    """Check each leaf of a pytree of sharding specifications (None, Sharding or
    PartitionSpec) as JAX does; returns the tree."""
    entries, treedef = pytrees.tree_flatten(axis_resources, is_leaf=_is_none)
    what = f"{arg_name} leaf specifications"
    for entry in entries:
        if entry is None or isinstance(entry, UnspecifiedValue):
            continue
        if isinstance(entry, Sharding):
            if isinstance(entry, NamedSharding) and entry.mesh.empty:
                raise ValueError(f"One of {what} got an empty NamedSharding: {entry} which is "
                                 "not allowed.")
            if (not allow_unconstrained_dims and isinstance(entry, NamedSharding)
                    and _UNCONSTRAINED in entry.spec.partitions):
                raise ValueError(f"Unconstrained dims are not allowed when passed to {arg_name}:"
                                 f" {entry}")
            continue
        if not isinstance(entry, PartitionSpec):
            msg = f"{what} are expected to be PartitionSpec instances or None, but got {entry}"
            if arg_name in ("in_shardings", "out_shardings"):
                msg += (". (gpuarr does not shard arrays with anything else: pass "
                        "gpuarr.sharding Shardings or PartitionSpecs.)")
            raise UnsupportedShardingError(msg)
        if not allow_unconstrained_dims and _UNCONSTRAINED in entry.partitions:
            raise ValueError(f"Unconstrained dims are not allowed when passed to {arg_name}: "
                             f"{entry}")
        _check_unique_resources(entry, arg_name)
    return axis_resources


def sharding_for_spec(mesh, x, name: str, api_name: str):
    """A PartitionSpec (or Sharding, or None) of a jit-like API as a Sharding on the mesh in
    context: RuntimeError for a PartitionSpec without a mesh."""
    if x is None:
        if api_name == "jit" or mesh.empty:
            return UNSPECIFIED
        return NamedSharding(mesh, PartitionSpec())
    if isinstance(x, (UnspecifiedValue, Sharding)):
        return x
    if mesh.empty:
        raise RuntimeError(
            f"{api_name} requires a non-empty mesh in context if you are passing "
            f"`PartitionSpec`s to {name}. You can define a context mesh via "
            f"`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to {name} and then the "
            "mesh context manager is not required.")
    return NamedSharding(mesh, x)


def jit_context_mesh():
    """The mesh bare PartitionSpecs given to jit refer to: set_mesh's, else an abstract mesh
    with an Explicit axis from use_abstract_mesh."""
    mesh = get_concrete_mesh()
    if not mesh.empty:
        return mesh
    abstract = get_abstract_mesh()
    if not abstract.empty and abstract._any_axis_explicit:
        return abstract
    return mesh


def check_aval_sharding(shardings, avals, names, what_aval: str, allow_uneven=False) -> None:
    """The rank (and, unless `allow_uneven`, divisibility) check of each sharding against its
    value's shape."""
    for aval, s, name in zip(avals, shardings, names):
        if s is None or isinstance(s, UnspecifiedValue):
            continue
        name_str = f" with pytree key path {name}" if name else ""
        try:
            s.check_compatible_aval(aval.shape)
        except ValueError as e:
            raise ValueError(f"One of {what_aval}{name_str} is incompatible with its sharding "
                             f"annotation {s}: {e}") from None
        if not allow_uneven:
            s.shard_shape(aval.shape)


def concrete_sharding(s: Sharding) -> Sharding:
    """`s` with a concrete Mesh: a NamedSharding over an AbstractMesh takes the mesh in
    context when it matches, else the default devices."""
    if not isinstance(s, NamedSharding) or not isinstance(s.mesh, AbstractMesh):
        return s
    mesh = get_concrete_mesh()
    if mesh.empty or mesh.abstract_mesh.shape_tuple != s.mesh.shape_tuple:
        mesh = make_mesh(s.mesh.axis_sizes, s.mesh.axis_names, s.mesh.axis_types)
    return NamedSharding(mesh, s.spec, memory_kind=s.memory_kind)


def device_of(s: Sharding, what: str):
    """The one device that Sharding `s` places data on; NotImplementedError when it spans
    several device positions (gpuarr does not split arrays)."""
    if isinstance(s, NamedSharding):
        if s.mesh.size > 1:
            raise NotImplementedError(
                f"{what}: {s} splits arrays over a mesh of {s.mesh.size} devices; gpuarr runs "
                "each computation on one device, so every mesh axis must have size 1.")
        s = concrete_sharding(s)
    devices = s._device_assignment
    if len(devices) != 1:
        raise NotImplementedError(
            f"{what}: {s} spans {len(devices)} devices; gpuarr runs each computation on one "
            "device.")
    device = devices[0]
    if s.memory_kind not in (None, "device") and device.platform != "cpu":
        raise NotImplementedError(f"{what}: memory kind {s.memory_kind!r} is not supported on "
                                  f"{device!r}; gpuarr keeps arrays in device memory.")
    return device


def common_device(shardings, what: str):
    """The one device of the Shardings among `shardings` (None when there are none);
    ValueError when they name different devices."""
    device = None
    for s in shardings:
        if isinstance(s, Sharding):
            d = device_of(s, what)
            if device is None:
                device = d
            elif d != device:
                raise ValueError(f"Received incompatible devices for {what}: shardings name "
                                 f"{device!r} and {d!r}; gpuarr runs each computation on one "
                                 "device.")
    return device


def with_sharding(x, s: Sharding):
    """A new Array with `x`'s buffer, committed to the device of `s` and reporting `s`."""
    from gpuarr import placement
    out = placement.put(x, device_of(s, "device_put"))
    out._sharding = concrete_sharding(s)
    return out


# ---------------------------------------------------------------- reshard and axis types

def _source_summary() -> str:
    """`file:line:column (function)` of the innermost caller outside gpuarr."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not os.path.abspath(code.co_filename).startswith(here):
            line, col = frame.f_lineno, None
            positions = getattr(code, "co_positions", None)
            if positions is not None:
                pos = list(positions())[frame.f_lasti // 2]
                line, col = pos[0] or line, pos[2]
            col_str = "" if col is None else f":{col}"
            return f"{code.co_filename}:{line}{col_str} ({code.co_name})"
        frame = frame.f_back
    return "unknown"


def canonicalize_sharding(sharding, api_name: str, check_mesh_consistency: bool = True):
    """`out_sharding`-style arguments (NamedSharding or PartitionSpec) as a NamedSharding over
    an abstract mesh, checked as JAX does; None (or an empty mesh) gives None."""
    if sharding is None:
        return None
    if isinstance(sharding, NamedSharding) and sharding.mesh.empty:
        return None
    if not isinstance(sharding, (NamedSharding, PartitionSpec)):
        raise TypeError(f"`out_sharding` argument of {api_name} only supports instances of "
                        f"`NamedSharding` or `PartitionSpec`. Got {sharding} of type: "
                        f"{type(sharding)}")
    cur_mesh = get_abstract_mesh()
    if isinstance(sharding, PartitionSpec):
        if cur_mesh.empty:
            raise ValueError("Using PartitionSpec when you are not under a mesh context is not "
                             "allowed. Please pass a NamedSharding instance or enter into a mesh"
                             f" context via `jax.set_mesh`. Got {sharding}")
        sharding = NamedSharding(cur_mesh, sharding)
    else:
        if sharding.mesh.abstract_mesh.are_all_axes_auto and cur_mesh.are_all_axes_auto:
            check_mesh_consistency = False
        if (check_mesh_consistency and not cur_mesh.empty
                and sharding.mesh.abstract_mesh is not cur_mesh):
            raise ValueError(
                f"Context mesh {cur_mesh} should match the mesh of sharding "
                f"{sharding.mesh.abstract_mesh} passed to {api_name}. This error occurs at "
                f"source:  {_source_summary()}")
        if isinstance(sharding.mesh, Mesh):
            sharding = NamedSharding(sharding.mesh.abstract_mesh, sharding.spec)
    spec = sharding.spec
    for s in [*_flatten_spec(spec), *spec.unreduced, *spec.reduced]:
        if s is None:
            continue
        kind = sharding.mesh._name_to_type[s]
        if kind in (AxisType.Auto, AxisType.Manual):
            raise ValueError(
                f"PartitionSpec passed to {api_name} cannot contain axis names that are of type "
                f"Auto or Manual. Got PartitionSpec: {spec} with axis name: {s} of type: "
                f"{kind}. This error occurs at source:  {_source_summary()}")
    return sharding


def reshard(xs, out_shardings):
    """Put each leaf of `xs` in the sharding given by the matching leaf of `out_shardings` (a
    NamedSharding, or a PartitionSpec on the mesh in context; only Explicit axes). The values
    are unchanged (one device holds them whole); concrete Arrays come back reporting the new
    sharding, traced values come back as they are."""
    from gpuarr import core
    from gpuarr.core import Tracer
    from gpuarr.dispatch import as_array
    x_flat, treedef = pytrees.tree_flatten(xs)
    shardings_flat = flatten_axis_resources("reshard out_shardings", treedef, out_shardings,
                                            tupled_args=True)
    out = []
    for x, s in zip(x_flat, shardings_flat):
        ds = canonicalize_sharding(s, "reshard", check_mesh_consistency=False)
        if ds is None:
            raise ValueError("Reshard should only be used with out_shardings which are non-None "
                             f"and have a non-empty mesh. Got sharding {s}.")
        ds = ds.update(spec=ds.spec._normalized_spec_for_aval(core.get_aval(x).ndim))
        if isinstance(x, Tracer):
            out.append(x)
            continue
        mesh = s.mesh if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) else None
        target = ds if mesh is None else NamedSharding(mesh, ds.spec)
        out.append(with_sharding(as_array(x), target))
    return pytrees.tree_unflatten(treedef, out)


def _get_new_mesh(axes, axis_type: AxisType, name: str, shardings=None):
    cur_mesh = get_abstract_mesh()
    sharding_mesh = empty_abstract_mesh
    for i in pytrees.tree_leaves(shardings):
        if isinstance(i, NamedSharding):
            if not sharding_mesh.empty and sharding_mesh is not i.mesh.abstract_mesh:
                raise ValueError(f"Shardings passed to {name} should have the same mesh. Got one"
                                 f" mesh {sharding_mesh} and another {i.mesh}")
            sharding_mesh = i.mesh.abstract_mesh
    if sharding_mesh.empty and cur_mesh.empty:
        return None
    if not sharding_mesh.empty and not cur_mesh.empty:
        if sharding_mesh is not cur_mesh:
            raise ValueError(f"Context mesh {cur_mesh} must match the mesh passed to shardings "
                             f"{sharding_mesh}. Recommended approach is to use `jax.set_mesh` "
                             "context manager.")
        mesh_to_use = cur_mesh
    else:
        mesh_to_use = cur_mesh if sharding_mesh.empty else sharding_mesh
    if axes is None:
        axes = mesh_to_use.axis_names
    if not isinstance(axes, tuple):
        axes = (axes,)
    for a in axes:
        if mesh_to_use._name_to_type[a] == AxisType.Manual and axis_type in (
                AxisType.Auto, AxisType.Explicit):
            raise NotImplementedError(
                "Going from `Manual` AxisType to `Auto` or `Explicit` AxisType is not allowed. "
                "Please file a bug at https://github.com/jax-ml/jax/issues with your use case")
    return mesh_to_use, mesh_to_use.update_axis_types({a: axis_type for a in axes}), axes


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """Run `f` with the mesh axes `axes` (default: all) of the mesh in context made Auto, then
    reshard its outputs to `out_sharding` (given here or as a keyword of the call)."""
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def decorator(*args, **kwargs):
        if out_sharding is None:
            if "out_sharding" not in kwargs:
                raise TypeError("Missing required keyword argument: 'out_sharding'")
            sharding = kwargs.pop("out_sharding")
        else:
            sharding = out_sharding
        info = _get_new_mesh(axes, AxisType.Auto, "auto_axes", shardings=sharding)
        if info is None or set(info[0].auto_axes) == set(info[2]):
            return f(*args, **kwargs)
        with use_abstract_mesh(info[1]):
            out = f(*args, **kwargs)
        return reshard(out, sharding)
    return decorator


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """Run `f` with the mesh axes `axes` (default: all) of the mesh in context made Explicit,
    its inputs resharded to `in_sharding` (given here or as a keyword of the call)."""
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def decorator(*args, **kwargs):
        if in_sharding is None:
            if "in_sharding" not in kwargs:
                raise TypeError("Missing required keyword argument: 'in_sharding'")
            sharding = kwargs.pop("in_sharding")
        else:
            sharding = in_sharding
        info = _get_new_mesh(axes, AxisType.Explicit, "explicit_axes")
        if info is None:
            raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to "
                             "enter into a mesh context when using `explicit_axes` API.")
        with use_abstract_mesh(info[1]):
            args = reshard(args, sharding)
            out = f(*args, **kwargs)
        mesh = get_abstract_mesh()

        def spec_of(o):
            spec = type_spec(o)
            if spec is None:
                spec = PartitionSpec(*[None] * o.aval.ndim)
            return modify_spec_for_auto_manual(spec, mesh)
        return reshard(out, pytrees.tree_map(spec_of, out))
    return decorator
