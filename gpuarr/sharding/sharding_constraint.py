"""with_sharding_constraint: constrain the sharding of intermediate values (JAX's
`lax.with_sharding_constraint`).

The constraint is validated as JAX validates it (pytree prefix, rank, mesh in context, axis
types). Concrete Arrays come back placed with the sharding (resharded over several devices),
as JAX's eager result does. A traced value constrained to a sharding over several devices
gains a `sharding_constraint` equation: the identity on each device's value, which jit's
data-parallel path (data_parallel.py) runs as XLA does, moving the blocks so that the value
that follows is laid out as the sharding says (an all-gather for `P()`). Over one device the
constraint changes nothing and leaves no equation.
"""
from __future__ import annotations

from gpuarr import core, pytrees
from gpuarr.array import Array
from gpuarr.core import Tracer
from gpuarr.device_api import traced_put
from gpuarr.sharding.data_parallel import sharding_constraint_p
from gpuarr.sharding.mesh import AbstractMesh, AxisType
from gpuarr.sharding.mesh_context import _physical_mesh, get_abstract_mesh, get_concrete_mesh
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.sharding_in_types import aval_str, type_spec
from gpuarr.sharding.shardings import NamedSharding
from gpuarr.sharding.tree_shardings import (
    UnspecifiedValue,
    check_aval_sharding,
    concrete_sharding,
    flatten_axes,
    held_in_pieces,
    prepare_axis_resources,
    sharding_for_spec,
    with_sharding,
)


def constrain_traced(x, s, retype: bool = False):
    """Traced `x` constrained to Sharding `s`: an equation where `s` spans several devices
    (jit's data-parallel path lays the value out so), else `x` itself."""
    s = concrete_sharding(s)
    if not held_in_pieces(s):
        return x
    return sharding_constraint_p.bind(x, sharding=s, retype=retype)


def _put_traced(x, s):
    """A traced value put with Sharding `s`: as JAX's device_put inside jit, a NamedSharding
    over Explicit mesh axes sets its type, so its layout; any other leaves it as it is."""
    if not isinstance(s, NamedSharding) or not s.mesh.are_all_axes_explicit:
        return x
    return constrain_traced(x, s, retype=True)


traced_put[0] = _put_traced


def _assert_same_spec(x, user: NamedSharding) -> None:
    """Under an all-Explicit mesh the constraint is an assertion about the input's sharding."""
    x_spec = type_spec(x)
    if x_spec is None:  # a traced value: its sharding is not tracked
        return
    user_spec = user.spec._normalized_spec_for_aval(core.get_aval(x).ndim)
    from gpuarr.config import config
    if config._values["remove_size_one_mesh_axis_from_type"]:
        from gpuarr.sharding.shard_map import _remove_size_one_axes
        user_spec = _remove_size_one_axes(user_spec, user.mesh)
    for have, want in zip(x_spec, user_spec):
        if want is not PartitionSpec.UNCONSTRAINED and have != want:
            raise AssertionError(
                "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
                f"`Explicit`. The array sharding: {x_spec} did not match the sharding provided: "
                f"{user_spec}. Please use `jax.sharding.reshard` to shard your input to the "
                "sharding you want.")


def _check_auto(s) -> None:
    if not isinstance(s, NamedSharding):
        return
    mesh = s.mesh.abstract_mesh
    for axes in s.spec:
        if axes is PartitionSpec.UNCONSTRAINED or axes is None:
            continue
        for i in axes if isinstance(axes, tuple) else (axes,):
            if mesh._name_to_type[i] != AxisType.Auto:
                raise ValueError(
                    "The spec of NamedSharding passed to with_sharding_constraint can only refer "
                    f"to Auto axes of the mesh. Got spec={s.spec} and mesh={mesh}. You probably "
                    "meant to use `reshard` API?")


def _constrain(x, s, context_mesh):
    """The eager constraint: `x` as an Array reporting Sharding `s` (JAX's impl rule)."""
    from gpuarr.dispatch import as_array
    if isinstance(s, NamedSharding) and isinstance(s.mesh, AbstractMesh):
        if not context_mesh.empty and isinstance(context_mesh, AbstractMesh) \
                and type(x) is not Array:
            s = NamedSharding(get_concrete_mesh(), s.spec)
        else:
            aval = core.get_aval(x)
            if type(x) is not Array:
                raise ValueError(
                    "Target sharding contains a `jax.sharding.AbstractMesh` which requires the "
                    f"input passed should be a `jax.Array`. Got {type(x)} with shape "
                    f"{aval_str(aval)}")
            have = x.sharding
            if not isinstance(have, NamedSharding) or have.mesh.is_scalar:
                raise TypeError(
                    "The sharding on the input must be a `NamedSharding` since the target "
                    f"sharding has an `AbstractMesh` in it. Got sharding type {type(have)} for "
                    f"shape {aval_str(aval)}")
            if have.mesh.shape_tuple != s.mesh.shape_tuple:
                raise ValueError(
                    f"Mesh shape of the input {have.mesh.shape_tuple} does not match the mesh "
                    f"shape of the target sharding {s.mesh.shape_tuple} for shape "
                    f"{aval_str(aval)}")
            s = NamedSharding(have.mesh, s.spec)
    return with_sharding(as_array(x), s)


def with_sharding_constraint(x, shardings):
    """Constrain each leaf of the pytree `x` to the matching leaf of `shardings` (a Sharding,
    or a PartitionSpec on the mesh in context; a pytree prefix of `x`). Under an all-Explicit
    mesh it asserts that the inputs already have that sharding (use `reshard` to change it);
    otherwise the spec may only name Auto axes. Values are unchanged; their layout over
    several devices follows the sharding."""
    x_flat, tree = pytrees.tree_flatten(x)
    avals = [core.get_aval(v) for v in x_flat]
    prepare_axis_resources(shardings, "shardings", allow_unconstrained_dims=True)
    user_flat = flatten_axes("with_sharding_constraint shardings", tree, shardings)
    if not get_concrete_mesh().empty or not get_abstract_mesh().empty:
        context_mesh = get_abstract_mesh()
    else:
        context_mesh = _physical_mesh()
    flat = [sharding_for_spec(context_mesh, s, "shardings", "with_sharding_constraint")
            for s in user_flat]
    for s, u in zip(flat, user_flat):
        if isinstance(s, UnspecifiedValue):
            raise ValueError(f"One of with_sharding_constraint arguments got sharding {u} which "
                             "is not allowed. Please only pass `jax.sharding.Sharding` instances.")
    check_aval_sharding(flat, avals, ("",) * len(flat), "with_sharding_constraint arguments",
                            allow_uneven=True)
    explicit = get_abstract_mesh().are_all_axes_explicit
    outs = []
    for v, s in zip(x_flat, flat):
        if explicit and isinstance(s, NamedSharding):
            _assert_same_spec(v, s)
            outs.append(v)
            continue
        _check_auto(s)
        outs.append(constrain_traced(v, s) if isinstance(v, Tracer)
                    else _constrain(v, s, context_mesh))
    return pytrees.tree_unflatten(tree, outs)
