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
"""
from __future__ import annotations

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
from gpuarr.sharding.mesh_context import (  # noqa: F401
    get_abstract_mesh,
    get_concrete_mesh,
    get_mesh,
    make_mesh,
    set_mesh,
    use_abstract_mesh,
)
from gpuarr.sharding.partition_spec import P, PartitionSpec, UnconstrainedSingleton  # noqa: F401
from gpuarr.sharding.resharding import auto_axes, canonicalize_sharding, explicit_axes, reshard  # noqa: F401
from gpuarr.sharding.sharding_in_types import (  # noqa: F401
    aval_str,
    modify_spec_for_auto_manual,
    type_spec,
    type_str,
)
from gpuarr.sharding.shardings import (  # noqa: F401
    DuplicateSpecError,
    IndivisibleError,
    NamedSharding,
    Sharding,
    SingleDeviceSharding,
    default_sharding,
    make_single_device_sharding,
)
from gpuarr.sharding.tree_shardings import (  # noqa: F401
    UNSPECIFIED,
    PytreeLeaf,
    UnspecifiedValue,
    UnsupportedShardingError,
    check_aval_sharding,
    common_device,
    concrete_sharding,
    device_of,
    flatten_axes,
    flatten_axis_resources,
    jit_context_mesh,
    prepare_axis_resources,
    sharding_for_spec,
    with_sharding,
)

__all__ = [
    "AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh", "NamedSharding",
    "PartitionSpec", "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
    "get_abstract_mesh", "get_mesh", "make_single_device_sharding", "reshard", "set_mesh",
    "use_abstract_mesh",
]
