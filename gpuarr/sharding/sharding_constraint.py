"""with_sharding_constraint: constrain the sharding of intermediate values (JAX's
`lax.with_sharding_constraint`).

On gpuarr's single device every sharding holds the whole array, so the constraint never
changes a value: it is validated as JAX validates it (pytree prefix, rank, mesh in context,
axis types) and the values come back as they are. Concrete Arrays come back reporting the
sharding, as JAX's eager result does; traced values (inside jit, grad, vmap) are returned
unchanged, with no equation in the program.
"""
from __future__ import annotations

from gpuarr import core, pytrees
from gpuarr import sharding as shd
from gpuarr.array import Array
from gpuarr.core import Tracer


def _assert_same_spec(x, user: shd.NamedSharding) -> None:
    """Under an all-Explicit mesh the constraint is an assertion about the input's sharding."""
    x_spec = shd.type_spec(x)
    if x_spec is None:  # a traced value: its sharding is not tracked
        return
    user_spec = user.spec._normalized_spec_for_aval(core.get_aval(x).ndim)
    from gpuarr.config import config
    if config._values["remove_size_one_mesh_axis_from_type"]:
        from gpuarr.shard_map_api import _remove_size_one_axes
        user_spec = _remove_size_one_axes(user_spec, user.mesh)
    for have, want in zip(x_spec, user_spec):
        if want is not shd.PartitionSpec.UNCONSTRAINED and have != want:
            raise AssertionError(
                "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
                f"`Explicit`. The array sharding: {x_spec} did not match the sharding provided: "
                f"{user_spec}. Please use `jax.sharding.reshard` to shard your input to the "
                "sharding you want.")


def _check_auto(s) -> None:
    if not isinstance(s, shd.NamedSharding):
        return
    mesh = s.mesh.abstract_mesh
    for axes in s.spec:
        if axes is shd.PartitionSpec.UNCONSTRAINED or axes is None:
            continue
        for i in axes if isinstance(axes, tuple) else (axes,):
            if mesh._name_to_type[i] != shd.AxisType.Auto:
                raise ValueError(
                    "The spec of NamedSharding passed to with_sharding_constraint can only refer "
                    f"to Auto axes of the mesh. Got spec={s.spec} and mesh={mesh}. You probably "
                    "meant to use `reshard` API?")


def _constrain(x, s, context_mesh):
    """The eager constraint: `x` as an Array reporting Sharding `s` (JAX's impl rule)."""
    from gpuarr.dispatch import as_array
    if isinstance(s, shd.NamedSharding) and isinstance(s.mesh, shd.AbstractMesh):
        if not context_mesh.empty and isinstance(context_mesh, shd.AbstractMesh) \
                and type(x) is not Array:
            s = shd.NamedSharding(shd.get_concrete_mesh(), s.spec)
        else:
            aval = core.get_aval(x)
            if type(x) is not Array:
                raise ValueError(
                    "Target sharding contains a `jax.sharding.AbstractMesh` which requires the "
                    f"input passed should be a `jax.Array`. Got {type(x)} with shape "
                    f"{shd.aval_str(aval)}")
            have = x.sharding
            if not isinstance(have, shd.NamedSharding) or have.mesh.is_scalar:
                raise TypeError(
                    "The sharding on the input must be a `NamedSharding` since the target "
                    f"sharding has an `AbstractMesh` in it. Got sharding type {type(have)} for "
                    f"shape {shd.aval_str(aval)}")
            if have.mesh.shape_tuple != s.mesh.shape_tuple:
                raise ValueError(
                    f"Mesh shape of the input {have.mesh.shape_tuple} does not match the mesh "
                    f"shape of the target sharding {s.mesh.shape_tuple} for shape "
                    f"{shd.aval_str(aval)}")
            s = shd.NamedSharding(have.mesh, s.spec)
    return shd.with_sharding(as_array(x), s)


def with_sharding_constraint(x, shardings):
    """Constrain each leaf of the pytree `x` to the matching leaf of `shardings` (a Sharding,
    or a PartitionSpec on the mesh in context; a pytree prefix of `x`). Under an all-Explicit
    mesh it asserts that the inputs already have that sharding (use `reshard` to change it);
    otherwise the spec may only name Auto axes. Values are unchanged."""
    x_flat, tree = pytrees.tree_flatten(x)
    avals = [core.get_aval(v) for v in x_flat]
    shd.prepare_axis_resources(shardings, "shardings", allow_unconstrained_dims=True)
    user_flat = shd.flatten_axes("with_sharding_constraint shardings", tree, shardings)
    if not shd.get_concrete_mesh().empty or not shd.get_abstract_mesh().empty:
        context_mesh = shd.get_abstract_mesh()
    else:
        context_mesh = shd._physical_mesh()
    flat = [shd.sharding_for_spec(context_mesh, s, "shardings", "with_sharding_constraint")
            for s in user_flat]
    for s, u in zip(flat, user_flat):
        if isinstance(s, shd.UnspecifiedValue):
            raise ValueError(f"One of with_sharding_constraint arguments got sharding {u} which "
                             "is not allowed. Please only pass `jax.sharding.Sharding` instances.")
    shd.check_aval_sharding(flat, avals, ("",) * len(flat), "with_sharding_constraint arguments",
                            allow_uneven=True)
    explicit = shd.get_abstract_mesh().are_all_axes_explicit
    outs = []
    for v, s in zip(x_flat, flat):
        if explicit and isinstance(s, shd.NamedSharding):
            _assert_same_spec(v, s)
            outs.append(v)
            continue
        _check_auto(s)
        outs.append(v if isinstance(v, Tracer) else _constrain(v, s, context_mesh))
    return pytrees.tree_unflatten(tree, outs)
