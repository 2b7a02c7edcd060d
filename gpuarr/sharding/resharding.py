"""reshard and the axis-type contexts auto_axes and explicit_axes."""
from __future__ import annotations

import functools

from gpuarr import core, pytrees
from gpuarr.core import Tracer
from gpuarr.dispatch import as_array
from gpuarr.sharding.mesh import AxisType, Mesh, empty_abstract_mesh
from gpuarr.sharding.mesh_context import get_abstract_mesh, use_abstract_mesh
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.sharding_in_types import modify_spec_for_auto_manual, type_spec
from gpuarr.sharding.shardings import NamedSharding, _flatten_spec
from gpuarr.sharding.tree_shardings import flatten_axis_resources, with_sharding


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
