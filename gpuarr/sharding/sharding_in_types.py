"""The sharding in a value's type: the PartitionSpec an Array reports over Explicit mesh axes,
and its printed form (`f32[8@i]`)."""
from __future__ import annotations

import numpy as np

from gpuarr import core
from gpuarr.array import Array
from gpuarr.core import Tracer
from gpuarr.sharding.mesh import AxisType
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shardings import NamedSharding


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
