"""shard_map (JAX's `jax.shard_map`).

shard_map runs `f` once per device on that device's shard of each input. On a mesh of several
devices that is what happens: `f` is traced for one device's shards and run on each
(`_stage_per_device`, sharding/spmd.py). On a mesh of one device every mesh axis has size 1 and
each shard is the whole array: `f` runs once, with
each manual mesh axis name bound as a named vmap axis of size 1. An input whose in_spec names
an axis gets a new leading axis of size 1 mapped by that vmap (it *varies* along the axis);
other inputs are not mapped (they are the same on every device). Collectives then behave as
on a size-1 axis: `psum(x, 'i')` is x, `axis_index('i')` is 0, `all_gather` adds a unit axis.
An output mapped along an axis varies along it, so its out_spec must name that axis (JAX's
`check_vma` check); the unit axis is removed again. Specs are validated against the mesh and
the arguments with JAX's errors.
"""
from __future__ import annotations

import functools
import inspect
import math
from typing import NamedTuple

from gpuarr import core, pytrees
from gpuarr.array import Array
from gpuarr.config import config
from gpuarr.core import Tracer
from gpuarr.interpreters import batching
from gpuarr.interpreters.batching import not_mapped
from gpuarr.lax import parallel
from gpuarr.sharding import spmd
from gpuarr.sharding.mesh import AbstractMesh, AxisType, Mesh
from gpuarr.sharding.mesh_context import get_abstract_mesh, get_concrete_mesh, use_abstract_mesh
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.sharding_in_types import aval_str, type_spec, type_str
from gpuarr.sharding.shardings import NamedSharding
from gpuarr.sharding.tree_shardings import (
    _broadcast_flat,
    _prefix_error_messages,
    check_distinct_devices,
    with_sharding,
)

P = PartitionSpec


class InferFromArgs:
    """The default `in_specs`: take each input's spec from its sharding (Explicit axes)."""

    def __repr__(self):
        return "gpuarr.sharding.Infer"

    def __reduce__(self):
        return (_get_infer, ())


Infer = InferFromArgs()


def _get_infer():
    return Infer


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True):
    """Map `f` over the shards of its inputs on the devices of `mesh` (default: the mesh
    given to `set_mesh`). `in_specs` (a PartitionSpec per argument, a pytree prefix of the
    arguments; None for an argument passed as it is; default: from the inputs' shardings
    when the axes are Explicit) says how each input is split over the mesh axes, `out_specs`
    how the outputs are put together. `axis_names` are the mesh axes `f` is manual over
    (default: all); collectives inside `f` name them. With `check_vma`, an output that varies
    along an axis its out_spec does not name is an error. Usable as a decorator
    (`@partial(shard_map, mesh=..., in_specs=..., out_specs=...)`)."""
    kwargs = dict(mesh=mesh, in_specs=in_specs, out_specs=out_specs, axis_names=axis_names,
                  check_vma=check_vma)
    if f is None:
        return lambda g: _shard_map(g, **kwargs)
    return _shard_map(f, **kwargs)


def cached_shard_map(f, *, mesh, in_specs, out_specs, check_vma=True):
    """shard_map of `f` whose per-device Program, traced and compiled on the first eager call
    over several devices, is reused by later eager calls with the same argument structure,
    shapes and dtypes (pmap's cache, as jit's: `f` is traced once per signature)."""
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                      axis_names=frozenset(), check_vma=check_vma, cache={})


def _shard_map(f, *, mesh, in_specs, out_specs, axis_names, check_vma, cache=None):
    if not callable(f):
        raise TypeError("shard_map requires a callable for its first argument, but got "
                        f"{f} of type {type(f)}.")

    @functools.wraps(f)
    def wrapped(*args):
        the_mesh, names = _shmap_checks(mesh, axis_names, in_specs, out_specs)
        leaves, in_tree = pytrees.tree_flatten(args)
        try:
            specs_flat = _broadcast_flat(in_tree, in_specs)
        except ValueError:
            msg, *_ = _prefix_error_messages(in_specs, args, "shard_map in_specs")
            raise ValueError(msg) from None
        if in_specs is Infer and _all_explicit(the_mesh, names):
            specs_flat = [_manual_spec(names, _spec_of(a), the_mesh) for a in leaves]
        dyn = [s is not None for s in specs_flat]
        dyn_argnums = [i for i, d in enumerate(dyn) if d]
        dyn_args = [_as_value(leaves[i]) for i in dyn_argnums]
        dyn_specs = [specs_flat[i] for i in dyn_argnums]
        _check_specs_vs_args(f, the_mesh, in_tree, in_specs, dyn_argnums, dyn_specs, dyn_args)
        if frozenset(the_mesh.axis_names) == names and _all_explicit(the_mesh, names):
            _check_input_types(the_mesh, dyn_args, dyn_specs)
        concrete = _concrete_mesh(the_mesh, dyn_args)
        bound = [n for n in the_mesh.axis_names if n in names]
        box = []

        def call(*dyn_vals):
            it = iter(dyn_vals)
            flat = [next(it) if d else leaf for leaf, d in zip(leaves, dyn)]
            ans = f(*pytrees.tree_unflatten(in_tree, flat))
            out_leaves, out_tree = pytrees.tree_flatten(ans)
            try:
                out_specs_flat = _broadcast_flat(out_tree, out_specs)
            except ValueError:
                msg, *_ = _prefix_error_messages(out_specs, ans, "shard_map out_specs")
                raise ValueError(msg) from None
            box.append((out_tree, out_specs_flat))
            if check_vma:  # JAX's implicit pvary of an output to the axes of its out_spec
                out_leaves = [_vary_to(o, s) for o, s in zip(out_leaves, out_specs_flat)]
            return out_leaves

        if the_mesh.size > 1:
            key = None  # only eager calls reuse a staged Program (nothing traced is baked in)
            if (cache is not None and all(dyn) and concrete is not None
                    and spmd.runs_per_device_eagerly(concrete, dyn_args)):
                key = (in_tree, tuple(dyn_specs), tuple(core.get_aval(a) for a in dyn_args))
            staged = cache.get(key) if key is not None else None
            if staged is None:
                staged = _stage_per_device(f, call, box, the_mesh, concrete, names, bound,
                                           dyn_args, dyn_specs, out_specs, check_vma)
                if key is not None and not staged.hoisted:
                    cache[key] = staged
            return _run_staged(staged, dyn_args)
        # One device: `f` is staged once for its shard (so check_vma types control flow as
        # JAX does, spmd.varying_axes), then run as a named vmap of size 1 per mesh axis.
        arg_axes = [_spec_axes(s) for s in dyn_specs]
        avals = [spmd.shard_aval(core.get_aval(a), s, the_mesh, check_vma)
                 for a, s in zip(dyn_args, dyn_specs)]
        with use_abstract_mesh(_as_manual_mesh(the_mesh, names)):
            closed, hoisted = spmd.trace_per_device(call, avals, the_mesh, bound, check_vma)
            varying = spmd.varying_axes(closed, [()] * len(hoisted) + arg_axes,
                                        the_mesh.axis_names, check_vma)
            outs, _ = _run_levels(functools.partial(core.eval_closed, closed), bound,
                                  [*hoisted, *dyn_args],
                                  [frozenset()] * len(hoisted) + arg_axes)
        varying = [frozenset() if v is None else v for v in varying]
        out_tree, out_specs_flat = box[0]
        outs = [_as_value(o) for o in outs]
        _check_outputs(f, the_mesh, out_tree, out_specs, out_specs_flat, outs, varying,
                       check_vma)
        if concrete is not None and frozenset(concrete.axis_names) == names:
            outs = [_attach(o, NamedSharding(concrete, s)) for o, s in zip(outs, out_specs_flat)]
        return pytrees.tree_unflatten(out_tree, outs)

    return wrapped


# ---------------------------------------------------------------- running f


class _Aval:
    """An output of the per-device Program as _check_outputs reads it (its aval)."""

    def __init__(self, aval):
        self.aval = aval


def _manual_mesh(concrete, names):
    """The devices of `concrete` at position 0 of the axes outside `names` (shard_map
    manual over `names` only): JAX partitions the other axes by itself, and the value is the
    same along them, so one device per block of the manual axes computes it."""
    index = tuple(slice(None) if n in names else 0 for n in concrete.axis_names)
    kept = [i for i, n in enumerate(concrete.axis_names) if n in names]
    return Mesh(concrete.devices[index], tuple(concrete.axis_names[i] for i in kept),
                axis_types=tuple(concrete.axis_types[i] for i in kept))


class _Staged(NamedTuple):
    """A shard_map's per-device Program and what running it needs."""
    closed: core.ClosedProgram
    hoisted: list  # tracers of an enclosing trace that the Program takes first
    out_tree: object
    out_specs_flat: tuple
    mesh: Mesh  # the devices it runs on
    whole: Mesh  # the mesh the outputs report
    in_specs: tuple
    check_vma: bool


def _stage_per_device(f, call, box, mesh, concrete, names, bound, args, specs, out_specs,
                      check_vma) -> _Staged:
    """shard_map on a mesh of several devices: `f` traced for one device's shards, to run on
    every device (sharding/spmd.py). Manual over some mesh axes only (`axis_names`), it runs
    on the devices of those axes; the outputs report the whole mesh."""
    if concrete is None:
        concrete = get_concrete_mesh()
        if concrete.empty or concrete.abstract_mesh.shape_tuple != mesh.shape_tuple:
            raise ValueError(f"shard_map over {mesh} needs its devices: pass a concrete Mesh "
                             "(jax.make_mesh) or enter one with jax.set_mesh.")
    whole = concrete
    if frozenset(mesh.axis_names) != names:
        if len({d.process_index for d in concrete.devices.flat}) > 1:
            raise NotImplementedError(
                f"shard_map over the mesh axes {sorted(names)} of {mesh}, which spans "
                "processes: gpuarr runs shard_map across processes manual over every mesh "
                "axis; leave axis_names unset.")
        concrete = _manual_mesh(concrete, names)
    check_distinct_devices(list(concrete.devices.flat), "shard_map")
    avals = [spmd.shard_aval(core.get_aval(a), s, concrete, check_vma)
             for a, s in zip(args, specs)]
    with use_abstract_mesh(_as_manual_mesh(mesh, names)):
        closed, hoisted = spmd.trace_per_device(call, avals, concrete, bound, check_vma)
    out_tree, out_specs_flat = box[-1]
    varying = spmd.varying_axes(closed, [()] * len(hoisted) + [_spec_axes(s) for s in specs],
                                mesh.axis_names, check_vma)
    _check_outputs(f, mesh, out_tree, out_specs, out_specs_flat,
                   [_Aval(a) for a in closed.out_avals],
                   [frozenset() if v is None else v for v in varying], check_vma)
    return _Staged(closed, list(hoisted), out_tree, tuple(out_specs_flat), concrete, whole,
                   (P(),) * len(hoisted) + tuple(specs), check_vma)


def _run_staged(staged: _Staged, args):
    """Run a staged shard_map on `args`: per device, or bound into the enclosing trace."""
    closed, mesh = staged.closed, staged.mesh
    ins = [*staged.hoisted, *args]
    if spmd.runs_per_device_eagerly(mesh, ins):  # outputs stay in pieces
        outs = spmd.run_per_device(ins, closed, mesh, staged.in_specs, staged.out_specs_flat)
    else:
        outs = spmd.shard_map_p.bind(*ins, closed=closed, mesh=mesh, in_specs=staged.in_specs,
                                     out_specs=staged.out_specs_flat,
                                     check_vma=staged.check_vma)
    if not isinstance(outs[0] if outs else None, Tracer):
        outs = [_attach(o, NamedSharding(staged.whole, s))
                for o, s in zip(outs, staged.out_specs_flat)]
    return pytrees.tree_unflatten(staged.out_tree, outs)


def _run_levels(call, axes, vals, arg_axes, level=0):
    """Run `call` with one named vmap of size 1 per name in `axes` (outermost first). Returns
    the outputs, their unit axes removed, and per output the set of axes it varies along."""
    if level == len(axes):
        outs = call(*vals)
        return outs, [set() for _ in outs]
    name = axes[level]
    ins, dims = [], []
    for v, names in zip(vals, arg_axes):
        if name in names:
            ins.append(core_expand(v))
            dims.append(0)
        else:
            ins.append(v)
            dims.append(not_mapped)
    box = []

    def inner(*xs):
        outs, varying = _run_levels(call, axes, list(xs), arg_axes, level + 1)
        box.append(varying)
        return outs

    outs, out_dims = batching.batch_flat(inner, 1, ins, dims, name)
    varying = box[0]
    result = []
    for o, d, vs in zip(outs, out_dims, varying):
        if d is not not_mapped:
            o = core_squeeze(o, d)
            vs.add(name)
        result.append(o)
    return result, varying


def _vary_to(x, spec):
    """`x` made to vary along the mesh axes `spec` splits over (check_vma)."""
    if not isinstance(spec, PartitionSpec) or not isinstance(x, Tracer):
        return x
    missing = _spec_axes(spec) - core.vma_of(x)
    return parallel.pcast(x, tuple(core.ordered_axes(missing)), to="varying") if missing else x


def core_expand(x):
    from gpuarr.lax import shape_ops
    return shape_ops.expand_dims(x, (0,))


def core_squeeze(x, d):
    from gpuarr.lax import shape_ops
    return shape_ops.squeeze(x, (d,))


def _as_value(x):
    from gpuarr.dispatch import as_array
    return as_array(x)


def _attach(x, sharding):
    if type(x) is not Array:
        return x
    return with_sharding(x, sharding)


def _as_manual_mesh(mesh, names):
    return mesh.abstract_mesh.update_axis_types({a: AxisType.Manual for a in names})


# ---------------------------------------------------------------- the checks


def _all_explicit(mesh, names) -> bool:
    return all(mesh._name_to_type[a] == AxisType.Explicit for a in names)


def _spec_axes(spec) -> frozenset:
    return frozenset(p for s in spec.partitions if s is not None
                     for p in (s if isinstance(s, tuple) else (s,)))


def _spec_of(x):
    spec = type_spec(x)
    if spec is None:  # a traced value: its sharding is not tracked, take it as replicated
        spec = P(*[None] * core.get_aval(x).ndim)
    return spec


def _shmap_checks(mesh, axis_names, in_specs, out_specs):
    if mesh is None:
        mesh = get_abstract_mesh()
        if mesh.empty:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
                             "enter into a mesh context")
    else:
        ctx_mesh = get_abstract_mesh()
        if not ctx_mesh.empty and getattr(mesh, "abstract_mesh", None) is not ctx_mesh:
            raise ValueError(f"The context mesh {ctx_mesh} should match the mesh passed to "
                             f"shard_map {mesh}")
    if not isinstance(mesh, (Mesh, AbstractMesh)):
        raise TypeError("shard_map requires a `jax.sharding.Mesh` or a "
                        "`jax.sharding.AbstractMesh` instance for its second argument, but got "
                        f"{mesh} of type {type(mesh)}.")
    if mesh.empty:
        raise ValueError(f"shard_map requires a non-empty mesh. Got {mesh}")
    all_names = frozenset(mesh.axis_names)
    if not isinstance(axis_names, (frozenset, set)):
        raise TypeError("`axis_names` argument of shard_map should be of type `frozenset` or "
                        f"`set`. Got type: {type(axis_names)}")
    axis_names = frozenset(axis_names) or all_names
    if not axis_names.issubset(all_names):
        raise ValueError(f"jax.shard_map requires axis_names={axis_names} to be a subset of "
                         f"mesh.axis_names={all_names}")
    if in_specs is Infer and not _all_explicit(mesh, axis_names):
        types = ", ".join(str(mesh._name_to_type[a]) for a in axis_names)
        raise TypeError("shard_map in_specs argument must be a pytree of "
                        "`jax.sharding.PartitionSpec` instances, but it was `None` when "
                        f"{axis_names=} are of type {types}")
    if in_specs is not Infer and in_specs is not None:
        _check_specs("in", in_specs, axis_names)
        _check_unreduced("in", mesh, axis_names, in_specs)
    _check_specs("out", out_specs, axis_names)
    _check_unreduced("out", mesh, axis_names, out_specs)
    return mesh, axis_names


def _check_unreduced(prefix, mesh, manual_axes, specs):
    full_manual = frozenset(mesh.axis_names) == manual_axes
    for s in pytrees.tree_leaves(specs):
        if not s.unreduced and not s.reduced:
            continue
        if not full_manual:
            raise NotImplementedError(
                f"unreduced/reduced can only be passed to {prefix}_specs when shard_map is in "
                f"full manual mode. Got mesh axis names {mesh.axis_names}, manual_axes: "
                f"{manual_axes}, specs: {s}. Please file a bug at "
                "https://github.com/jax-ml/jax/issues.")
        for what, axes in (("unreduced", s.unreduced), ("reduced", s.reduced)):
            if not all(mesh._name_to_type[u] == AxisType.Explicit for u in axes):
                raise ValueError(f"{what} in {prefix}_specs {s} can only be used when the mesh "
                                 "passed to shard_map contains axis names all of type "
                                 f"`Explicit`. Got mesh {mesh}")


def _check_specs(prefix, specs, manual_axes) -> None:
    if prefix == "in" and specs is None:
        raise TypeError("shard_map in_specs argument must be a pytree of "
                        "`jax.sharding.PartitionSpec` instances, but it was None.\n"
                        "Instead of `in_specs=None`, did you mean `in_specs=P()`, "
                        "where `P = jax.sharding.PartitionSpec`?")

    def check_spec(p):
        if not isinstance(p, PartitionSpec):
            return False
        return all(name is None or name in manual_axes
                   for names in p.partitions
                   for name in (names if isinstance(names, tuple) else (names,)))

    if all(check_spec(p) for p in pytrees.tree_leaves(specs)):
        return
    paths = pytrees.tree_leaves_with_path(specs)
    msgs = [f"  {prefix}_specs{pytrees.keystr(key)} is {x} of type {type(x).__name__}, "
            for key, x in paths if not isinstance(x, PartitionSpec)]
    if not msgs:
        for key, p in paths:
            for names in p:
                for name in names if isinstance(names, tuple) else (names,):
                    if name is not None and name not in manual_axes:
                        msgs.append(f"  {prefix}_specs{pytrees.keystr(key)} refers to "
                                    f"{name!r}")
        raise ValueError(f"shard_map {prefix}_specs argument must refer to an axis marked as "
                         f"manual ({manual_axes}), but:\n\n" + "\n\n".join(msgs) + "\n\n"
                         f"Check the {prefix}_specs values passed to shard_map.")
    raise TypeError(f"shard_map {prefix}_specs argument must be a pytree of "
                    "`jax.sharding.PartitionSpec` instances, but:\n\n" + "\n\n".join(msgs)
                    + f"\n\nCheck the {prefix}_specs values passed to shard_map.")


def _manual_spec(manual_axes, spec, mesh):
    out = []
    for s in spec.partitions:
        if s is None:
            out.append(s)
        elif isinstance(s, tuple):
            temp = [p if p in manual_axes else None for p in s]
            while temp and temp[-1] is None:
                temp.pop()
            if None in temp:
                raise ValueError(f"Invalid spec: {spec}")
            out.append(None if not temp else tuple(temp))
        else:
            out.append(s if s in manual_axes else None)
    _check_unreduced("in", mesh, manual_axes, spec)
    return P(*out, unreduced=spec.unreduced, reduced=spec.reduced)


def _remove_size_one_axes(spec, mesh):
    new = []
    for s in spec.partitions:
        if s is None or s is P.UNCONSTRAINED:
            new.append(s)
        elif isinstance(s, tuple):
            new.append(tuple(i for i in s if mesh.shape[i] != 1))
        else:
            new.append(None if mesh.shape[s] == 1 else s)

    def keep(axes):
        return frozenset(a for a in axes if mesh.shape[a] != 1)
    return P(*new, unreduced=keep(spec.unreduced), reduced=keep(spec.reduced))


def _check_input_types(mesh, args, specs):
    """JAX's Explicit mode: an input's in_spec must be the spec in its type (its sharding);
    checked for concrete values (the sharding of a traced value is not tracked)."""
    drop = config._values["remove_size_one_mesh_axis_from_type"]
    for a, s in zip(args, specs):
        if not isinstance(s, PartitionSpec):
            continue
        have = type_spec(a)
        if have is None:
            continue
        want = s._normalized_spec_for_aval(core.get_aval(a).ndim)
        if drop:
            want, have = _remove_size_one_axes(want, mesh), _remove_size_one_axes(have, mesh)
        if have is not want:
            raise ValueError(
                f"in_specs passed to shard_map: {want} does not match the specs of the input: "
                f"{have} for arg: {type_str(a, have)}. `in_specs` is an optional argument so "
                "you can omit specifying it and shard_map will infer the in_specs from the "
                "arguments. If you want to reshard your inputs, you can use `jax.reshard` on "
                "the arguments and then pass those args to shard_map.")


def _concrete_mesh(mesh, args):
    """The Mesh the outputs are placed on: `mesh`, or for an AbstractMesh the mesh in context
    or the inputs' (JAX requires NamedSharding inputs then)."""
    if isinstance(mesh, Mesh):
        return mesh
    if any(isinstance(a, Tracer) for a in args):
        return None
    concrete = get_concrete_mesh()
    found = mesh if concrete.empty else concrete
    for a in args:
        s = getattr(a, "_sharding", None) if type(a) is Array else None
        if isinstance(s, NamedSharding) and not s.mesh.is_scalar:
            if s.mesh.shape_tuple != found.shape_tuple:
                raise ValueError(
                    f"Mesh shape of the input {s.mesh.shape_tuple} does not match the mesh "
                    f"shape passed to shard_map  {found.shape_tuple} for shape "
                    f"{type_str(a, type_spec(a))}")
            found = s.mesh
    if isinstance(found, AbstractMesh):
        raise ValueError("Please pass `jax.Array`s with a `NamedSharding` as input to "
                         "`shard_map` when passing `AbstractMesh` to the mesh argument.")
    return found


def _fun_name(f) -> str:
    name = getattr(f, "__name__", None)
    if name is not None:
        return name
    if isinstance(f, functools.partial):
        return _fun_name(f.func)
    return "<unnamed function>"


def _try_infer_args(f, tree):
    dummy = pytrees.tree_unflatten(tree, [False] * tree.num_leaves)
    try:
        return inspect.signature(f).bind(*dummy)
    except (TypeError, ValueError):
        return None


def _iter_paths(tree, specs, fails):
    """(spec key path, spec) and (value key path, failure) for each failing leaf."""
    failures = pytrees.tree_unflatten(tree, fails)
    fail_paths = pytrees.tree_flatten_with_path(failures, is_leaf=lambda x: x is None)[0]
    spec_paths = pytrees.tree_flatten_with_path(specs, is_leaf=lambda x: x is None)[0]
    spec_tree = pytrees.tree_structure(specs, is_leaf=lambda x: x is None)
    keyed = pytrees.tree_unflatten(spec_tree, [_Keyed(k, s) for k, s in spec_paths])
    specs_flat = _broadcast_flat(pytrees.tree_structure(failures), keyed)
    return [((s.key, s.spec), (key, fail)) for s, (key, fail) in zip(specs_flat, fail_paths)
            if s.spec is not None and fail is not None]


class _Keyed:
    __slots__ = ("key", "spec")

    def __init__(self, key, spec):
        self.key, self.spec = key, spec


def _arg_extra(ba, fun_name, fail_key):
    if ba is None:
        return ""
    arg_key, *_ = fail_key
    params = [(name, p) for name, p in ba.signature.parameters.items()
              if p.kind not in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)]
    if arg_key.idx >= len(params) or params[arg_key.idx][1].kind == \
            inspect.Parameter.VAR_POSITIONAL:
        return (f", where args{pytrees.keystr((arg_key,))} is the index "
                f"{arg_key.idx - len(params) + 1} component of {fun_name}'s varargs parameter "
                f"'{params[-1][0]}',")
    return (f", where args{pytrees.keystr((arg_key,))} is bound to {fun_name}'s parameter "
            f"'{params[arg_key.idx][0]}',")


def _spec_rank_error(prefix, f, tree, specs, fails) -> str:
    fun_name = _fun_name(f)
    if prefix == "in":
        base, ba = "the passed args", _try_infer_args(f, tree)
    else:
        base, ba = f"{fun_name}(*args)", None
    msgs, avals = [], []
    for (spec_key, spec), (fail_key, aval) in _iter_paths(tree, specs, fails):
        extra = _arg_extra(ba, fun_name, fail_key) if prefix == "in" else ""
        avals.append(aval)
        msgs.append(
            f"* {prefix}_specs{pytrees.keystr(spec_key)} is {spec} which has length "
            f"{len(spec)}, but {base}{pytrees.keystr(fail_key)}{extra} has shape "
            f"{aval_str(aval)}, which has rank {aval.ndim} (and {aval.ndim} < {len(spec)})")
    if len(msgs) == 1:
        msgs = [msgs[0][2:]]
    msg = (f"shard_map applied to the function '{fun_name}' was given an {prefix}_specs entry "
           "which is too long to be compatible with the corresponding "
           f"{prefix}put value from the function:\n\n" + "\n\n".join(msgs) + "\n\n"
           f"Entries in {prefix}_specs must be of length no greater than the number of axes in "
           f"the corresponding {prefix}put value.\n\n"
           f"Either revise the spec to be shorter, or modify '{fun_name}' so that its "
           f"{prefix}puts have sufficient rank.")
    if any(not a.ndim for a in avals):
        msg += (f"\n\nFor scalar values (rank 0), consider using an {prefix}_specs entry of "
                "`P()`, where `P = jax.sharding.PartitionSpec`.")
    return msg


def _spec_to_names(spec) -> dict:
    return {i: names if isinstance(names, tuple) else (names,)
            for i, names in enumerate(spec.partitions) if names is not None}


def _check_specs_vs_args(f, mesh, in_tree, in_specs, dyn_argnums, specs, xs):
    avals = [core.get_aval(x) for x in xs]

    def expand(fail):
        full = [None] * in_tree.num_leaves
        for i, fl in zip(dyn_argnums, fail):
            full[i] = fl
        return full

    fail = [a if isinstance(p, P) and len(p) > a.ndim else None for p, a in zip(specs, avals)]
    if any(fl is not None for fl in fail):
        raise ValueError(_spec_rank_error("in", f, in_tree, in_specs, expand(fail)))

    def bad(a, d, ns):
        return a.shape[d] % math.prod(mesh.shape[n] for n in ns)
    fail = [a if isinstance(s, P) and any(bad(a, d, ns) for d, ns in _spec_to_names(s).items())
            else None for a, s in zip(avals, specs)]
    if any(fl is not None for fl in fail):
        raise ValueError(_spec_divisibility_error(f, mesh, in_tree, in_specs, expand(fail)))


def _spec_divisibility_error(f, mesh, tree, specs, fails) -> str:
    ba = _try_infer_args(f, tree)
    fun_name = _fun_name(f)
    msgs = []
    for (spec_key, spec), (fail_key, aval) in _iter_paths(tree, specs, fails):
        extra = _arg_extra(ba, fun_name, fail_key)
        for d, ns in _spec_to_names(spec).items():
            sz = math.prod(mesh.shape[n] for n in ns)
            if aval.shape[d] % sz:
                axis = f"axes {ns}" if len(ns) > 1 else f"axis '{ns[0]}'"
                total = "total " if len(ns) > 1 else ""
                msgs.append(
                    f"* the passed args{pytrees.keystr(fail_key)} of shape "
                    f"{aval_str(aval)}{extra} corresponds to "
                    f"in_specs{pytrees.keystr(spec_key)} of value {spec}, which maps array "
                    f"axis {d} (of size {aval.shape[d]}) to mesh {axis} (of {total}size {sz}), "
                    f"but {sz} does not evenly divide {aval.shape[d]}")
    if len(msgs) == 1:
        msgs = [msgs[0][2:]]
    return (f"shard_map applied to the function '{fun_name}' was given argument arrays with "
            "axis sizes that are not evenly divisible by the corresponding mesh axis sizes:\n\n"
            f"The mesh given has shape {tuple(mesh.shape.values())} with corresponding axis "
            f"names {mesh.axis_names}.\n\n" + "\n\n".join(msgs) + "\n\n"
            "Array arguments' axis sizes must be evenly divisible by the mesh axis or axes "
            "indicated by the corresponding elements of the argument's in_specs entry. "
            "Consider checking that in_specs are correct, and if so consider changing the mesh "
            f"axis sizes or else padding the input and adapting '{fun_name}' appropriately.")


def _order(mesh, axes) -> tuple:
    return tuple(a for a in mesh.axis_names if a in axes)


def _check_outputs(f, mesh, out_tree, out_specs, specs_flat, outs, varying, check_vma):
    avals = [core.get_aval(o) for o in outs]
    fails = [a if isinstance(s, P) and s and len(s) > a.ndim else None
             for s, a in zip(specs_flat, avals)]
    if any(fl is not None for fl in fails):
        msg = _spec_rank_error("out", f, out_tree, out_specs, fails)
        if any(fl is not None and not fl.shape for fl in fails):
            msg += (" In particular, for rank 0 outputs which are not constant over the mesh, "
                    "add at least one (singleton) axis to them so that they can be "
                    "concatenated using out_specs.")
        raise ValueError(msg)
    if not check_vma:
        return
    fails = [frozenset(v) if isinstance(s, P) and not v <= _spec_axes(s) else None
             for s, v in zip(specs_flat, varying)]
    if not any(fl is not None for fl in fails):
        return
    msgs = []
    for (spec_key, spec), (_, vary) in _iter_paths(out_tree, out_specs, fails):
        mentioned = _spec_axes(spec) | spec.unreduced | spec.reduced
        unmentioned = [n for n in mesh.axis_names if n not in mentioned]
        where = f"out_specs{pytrees.keystr(spec_key)} is {spec} which implies that the"
        if len(unmentioned) > 1:
            need = ",".join(map(str, _order(mesh, _spec_axes(spec))))
            got = ",".join(map(str, _order(mesh, vary)))
            diff = ",".join(map(str, _order(mesh, [n for n in unmentioned if n in vary])))
            msgs.append(f"* {where} corresponding output value is only varying across mesh "
                        f"axes {{{need}}} and not {{{diff}}}, but it was inferred to be "
                        f"possibly varying over {{{got}}}")
        else:
            msgs.append(f"* {where} corresponding output value is replicated across mesh axis "
                        f"'{unmentioned[0]}', but could not infer replication over any axes")
    if len(msgs) == 1:
        msgs = [msgs[0][2:]]
    raise ValueError(
        f"shard_map applied to the function '{_fun_name(f)}' was given out_specs which require "
        "replication which can't be statically inferred given the mesh:\n\n"
        f"The mesh given has shape {tuple(mesh.shape.values())} with corresponding axis names "
        f"{mesh.axis_names}.\n\n" + "\n\n".join(msgs) + "\n\n"
        "Check if these output values are meant to be replicated over those mesh axes. If not, "
        "consider revising the corresponding out_specs entries. If so, consider disabling the "
        "check by passing the check_vma=False argument to `jax.shard_map`.")


def smap(f=None, /, *, in_axes=Infer, out_axes, axis_name):
    """`shard_map` over the one mesh axis `axis_name` of the mesh in context (`set_mesh`),
    with the mapped axes given as integers, as in vmap: `in_axes` (an int, None, Infer, or a
    tuple with one entry per positional argument) says which axis of each input is split over
    the mesh axis, `out_axes` where the outputs put it back together. Usable as a decorator
    factory when `f` is omitted."""
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of "
                        "entries corresponding to the positional arguments passed to the "
                        f"function, but got {in_axes}.")
    if in_axes is not Infer and not all(isinstance(a, int)
                                        for a in pytrees.tree_leaves(in_axes)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or (nested) "
                        f"container with those types as leaves, but got {in_axes}.")
    if not all(isinstance(a, int) for a in pytrees.tree_leaves(out_axes)):
        raise TypeError("smap out_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {out_axes}.")

    def spec(axis):  # the PartitionSpec that splits `axis` over the mesh axis
        return P() if axis is None else P(*[None] * axis, axis_name)

    in_specs = in_axes if in_axes is Infer else pytrees.tree_map(
        spec, in_axes, is_leaf=lambda x: x is None)
    out_specs = pytrees.tree_map(spec, out_axes, is_leaf=lambda x: x is None)
    return shard_map(f, in_specs=in_specs, out_specs=out_specs, axis_names={axis_name})
