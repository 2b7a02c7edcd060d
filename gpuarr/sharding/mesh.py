"""Axis types, abstract devices and meshes (Mesh, AbstractMesh), and the stack of meshes entered
with `with mesh:`."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import functools
import math
import threading
import warnings

import numpy as np

from gpuarr.sharding.partition_spec import _frozen_setattr, _interner

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
        from gpuarr.process_group import state
        return [d for d in self.devices.flat if d.process_index == state.process_index]

    @functools.cached_property
    def _local_devices_set(self) -> set:
        return set(self.local_devices)

    @property
    def local_mesh(self) -> Mesh:
        if self.empty:
            return self
        if not self.is_multi_process:
            return Mesh(self.devices, self.axis_names)
        raise NotImplementedError("local_mesh of a mesh that spans processes: build the mesh "
                                  "of jax.local_devices() instead.")

    @functools.cached_property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

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
