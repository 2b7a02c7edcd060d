"""Shardings (JAX's `jax.sharding`): meshes of devices, PartitionSpecs and the Shardings built
from them.

With one device every mesh axis has size 1 and a NamedSharding places the whole array there.
With several cpu devices (`jax_num_cpu_devices`) or processes (`distributed.initialize`),
a NamedSharding gives each device its piece (`x.addressable_shards`), and `shard_map` runs a
program per device (sharding/spmd.py, docs/scale-out.md). These classes carry JAX's names,
printing, equality, validation and errors, so that programs written against the sharding API
run unchanged: `device_put(x, NamedSharding(mesh, P('i')))`, `jit(f, out_shardings=...)`,
`reshard`, `set_mesh`, `shard_map` (gpuarr.sharding.shard_map). Arrays report the Sharding
they were placed with (`x.sharding`).

This module only re-exports; the implementation lives in its submodules: partition_spec,
mesh (axis types, devices, meshes), mesh_context (set_mesh, get_mesh), shardings,
sharding_in_types, tree_shardings (jit's and device_put's pytrees of shardings), resharding;
shard_map and sharding_constraint (lax.with_sharding_constraint) build on them.

core imports the leaf modules (partition_spec, mesh, shardings), and Python runs this module
first: the names of the modules that build on core (mesh_context, sharding_in_types,
tree_shardings, resharding) are read from their modules when first asked for, so that those
modules import core, Array and placement at their top.
"""
from __future__ import annotations

import importlib

from gpuarr.sharding.mesh import (  # noqa: F401
    AbstractDevice,
    AbstractMesh,
    AxisType,
    BaseMesh,
    ManualAxisType,
    Mesh,
    empty_abstract_mesh,
    empty_concrete_mesh,
    show_axes,
)
from gpuarr.sharding.partition_spec import P, PartitionSpec, UnconstrainedSingleton  # noqa: F401
from gpuarr.sharding.shardings import (  # noqa: F401
    DuplicateSpecError,
    IndivisibleError,
    NamedSharding,
    Sharding,
    SingleDeviceSharding,
    default_sharding,
    make_single_device_sharding,
)

_BUILT_ON_CORE = {
    "mesh_context": ("get_abstract_mesh", "get_concrete_mesh", "get_mesh", "make_mesh",
                     "set_mesh", "use_abstract_mesh"),
    "resharding": ("auto_axes", "canonicalize_sharding", "explicit_axes", "reshard"),
    "sharding_in_types": ("aval_str", "modify_spec_for_auto_manual", "type_spec", "type_str"),
    "tree_shardings": ("UNSPECIFIED", "PytreeLeaf", "UnspecifiedValue",
                       "UnsupportedShardingError", "check_aval_sharding", "common_device",
                       "concrete_sharding", "device_of", "flatten_axes",
                       "flatten_axis_resources", "jit_context_mesh", "prepare_axis_resources",
                       "sharding_for_spec", "with_sharding"),
}
_MODULE_OF = {name: module for module, names in _BUILT_ON_CORE.items() for name in names}


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'gpuarr.sharding' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"gpuarr.sharding.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh", "NamedSharding",
    "PartitionSpec", "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
    "get_abstract_mesh", "get_mesh", "make_single_device_sharding", "reshard", "set_mesh",
    "use_abstract_mesh",
]
