"""pmap: a function mapped over an axis of its inputs, one position per device.

With several cpu (or cuda) devices, each position runs on its own device (shard_map over a
one-axis mesh of the first devices: a program per device, collectives between them).
Otherwise, and for nested out_axes, the mapped computation is one vectorised program (`jit`
of `vmap` with the axis name, so collectives work as under pmap) on the default device; both
give the same values. As with JAX, the mapped axis may not be longer than the number of
devices: portable pmap programs size it with `local_device_count()`. Across processes each
process passes its own positions, the collectives span every process's devices, and each
process gets back its own positions (sharding/process_arrays.py). The per-device form keeps
the Program it traced for each argument structure, shapes, dtypes and static values, as
JAX's pmap (and jit) do.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from gpuarr import core, process_group, pytrees
from gpuarr.device_api import devices as _devices
from gpuarr.jit_api import jit
from gpuarr.lax import parallel
from gpuarr.lax.shape_ops import expand_dims, squeeze, transpose
from gpuarr.sharding import process_arrays
from gpuarr.sharding.mesh import AxisType, Mesh
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shard_map import cached_shard_map
from gpuarr.vmap_api import _broadcast_prefix, vmap


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0,
         static_broadcasted_argnums=(), devices=None, backend=None, axis_size=None,
         donate_argnums=(), global_arg_shapes=None):
    """Map `fun` over axis `in_axes` (default: the leading axis) of its inputs, one position
    per device, naming the axis `axis_name` for collectives (lax.psum, all_gather, ppermute,
    ...). Arguments in `static_broadcasted_argnums` are static and passed whole to every
    position; keyword arguments are mapped over axis 0; an output whose `out_axes` entry is
    None is position 0's value (the positions must agree on it). The mapped axis may have at
    most as many positions as there are devices (`devices`, or those of `backend`)."""
    if global_arg_shapes is not None:
        raise ValueError("global_arg_shapes only worked with xmap and is not supported.")
    statics = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
               else tuple(static_broadcasted_argnums))
    # Across processes (JAX's multi-controller pmap) each process maps its local devices.
    count = len(devices) if devices is not None else len(_mapped_devices(backend))
    axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    # Outputs unmapped by out_axes come back mapped and are read at position 0.
    mapped_out_axes = pytrees.tree_map(lambda a: 0 if a is None else a, out_axes,
                                         is_leaf=lambda a: a is None)

    def dynamic(seq, n):
        return tuple(seq[i] for i in range(n) if i not in statics)

    def dynamic_axes(args):
        return dynamic(axes, len(args)) if isinstance(axes, tuple) and statics else axes

    def vectorised(*args, **kwargs):
        def with_statics(*dyn, **kw):
            it = iter(dyn)
            return fun(*[a if i in statics else next(it) for i, a in enumerate(args)], **kw)
        with parallel.pmap_axis(axis_name):
            out = vmap(with_statics, in_axes=dynamic_axes(args), out_axes=mapped_out_axes,
                       axis_name=axis_name, axis_size=axis_size)(*dynamic(args, len(args)),
                                                                  **kwargs)
        leaves, tree = pytrees.tree_flatten(out)
        flat_axes = _broadcast_prefix(out_axes, out, "pmap out_axes")
        return pytrees.tree_unflatten(
            tree, [leaf[0] if ax is None else leaf for leaf, ax in zip(leaves, flat_axes)])

    compiled = jit(vectorised, static_argnums=statics, donate_argnums=donate_argnums)
    staged: dict = {}  # the per-device form's shard_maps, each caching its traced Program

    def checked_size(args, kwargs):
        size = _mapped_size(dynamic(args, len(args)), kwargs, dynamic_axes(args), axis_size)
        if size > count:
            raise ValueError(f"pmap got a mapped axis of size {size}, but only {count} "
                             f"device{'s are' if count != 1 else ' is'} available. Size the "
                             "mapped axis with jax.local_device_count().")
        return size

    def lower(*args, **kwargs):
        # Ahead-of-time stages of the vectorised program (JAX's pmap(f).lower(...)).
        checked_size(args, kwargs)
        return compiled.lower(*args, **kwargs)

    @functools.wraps(fun)
    def mapped(*args, **kwargs):
        if statics and max(statics) >= len(args):
            raise ValueError(
                f"pmapped function has static_broadcasted_argnums={statics} but was called "
                f"with only {len(args)} positional argument{'s' if len(args) > 1 else ''}. "
                "All static broadcasted arguments must be passed positionally.")
        size = checked_size(args, kwargs)
        per_device = _per_device_form(size, args, kwargs, dynamic_axes(args), out_axes, statics,
                                      devices if devices is not None else _devices(backend),
                                      devices is None, staged)
        if per_device is not None:
            return per_device(fun, axis_name)
        return compiled(*args, **kwargs)

    mapped.lower = lower
    return mapped


def _mapped_size(args, kwargs, axes, axis_size) -> int:
    """The length of the mapped axis (vmap checks that the inputs agree)."""
    if axis_size is not None:
        return axis_size
    prefix = (axes if isinstance(axes, tuple) else (axes,) * len(args), {k: 0 for k in kwargs})
    try:
        flat_axes = _broadcast_prefix(prefix, (tuple(args), kwargs), "pmap in_axes")
    except ValueError:
        return 0  # vmap reports what is wrong
    for leaf, ax in zip(pytrees.tree_leaves((tuple(args), kwargs)), flat_axes):
        shape = () if ax is None or isinstance(leaf, (bool, int, float, complex)) \
            else core.get_aval(leaf).shape
        if ax is not None and -len(shape) <= ax < len(shape):
            return shape[ax]
    return 0


def _mapped_devices(backend):
    """The devices one process's pmap maps over: this process's when several processes
    run the computation (each passes its local batch), else every device."""
    devs = _devices(backend)
    if process_group.state.process_count > 1:
        devs = [d for d in devs if d.process_index == process_group.state.process_index]
    return devs


def _per_device_form(size, args, kwargs, dyn_axes, out_axes, statics, devs, default=False,
                     staged=None):
    """The per-device runner when this call can run a position per cpu device or GPU, else
    None. With several processes and the `default` devices, the positions of every process
    form the mapped axis (process order) and each process passes and gets back its own.
    Each leaf of the dynamic arguments is mapped over its `in_axes` entry (keyword arguments
    over axis 0, as in JAX); static arguments are passed whole to every position. `staged`
    keeps a shard_map per argument structure, static values and devices, so that a later
    call with the same shapes and dtypes runs the Program traced by the first."""
    across = default and process_group.state.process_count > 1
    devs = [d for p in range(process_group.state.process_count)  # each process's first `size`
            for d in [d for d in devs if d.process_index == p][:size]] if across else devs[:size]
    dyn = tuple(a for i, a in enumerate(args) if i not in statics)
    try:
        leaves, tree = pytrees.tree_flatten((dyn, kwargs))
        leaf_axes = _broadcast_prefix((dyn_axes, {k: 0 for k in kwargs}), (dyn, kwargs),
                                      "pmap in_axes")
    except ValueError:
        if across:
            raise
        return None  # the vectorised path reports it as JAX does
    # across processes out_axes may be a pytree prefix of the outputs (one process gives
    # back its positions of each); within one, one int or None runs per device
    axes_leaves, axes_tree = pytrees.tree_flatten(out_axes, is_leaf=lambda a: a is None)
    if ((size < 2 and not across)
            or not (out_axes is None or isinstance(out_axes, int) or across)
            or not all(a is None or isinstance(a, int) for a in axes_leaves)
            or {d.platform for d in devs} not in ({"cpu"}, {"cuda"})):
        if across:
            raise ValueError(f"pmap out_axes must be a pytree prefix of the outputs with "
                             f"ints or None at its leaves, got {out_axes!r}.")
        return None
    # the static values (not the whole arguments, which would keep this call's batch alive)
    fixed = {i: args[i] for i in statics}
    key = (tree, tuple(leaf_axes), axes_tree, tuple(axes_leaves), tuple(devs), len(args),
           tuple((i, type(v), v) for i, v in sorted(fixed.items())))
    try:
        hash(key)
    except TypeError:  # an unhashable static value: staged afresh on each call
        key = None

    def run(fun, axis_name):
        entry = staged.get((key, axis_name)) if key is not None and staged is not None else None
        if entry is None:
            entry = _staged_map(fun, axis_name, devs, tree, leaf_axes, out_axes, fixed,
                                len(args))
            if key is not None and staged is not None:
                staged[key, axis_name] = entry
        mesh, mapped = entry
        moved = [x if a is None else _move_to_front(x, a) for x, a in zip(leaves, leaf_axes)]
        if across:  # each process's batch: its positions of the global input
            moved = [x if a is None else process_arrays.global_from_local(x, mesh)
                     for x, a in zip(moved, leaf_axes)]
        out = mapped(*moved)
        if across:
            out = pytrees.tree_map(lambda o: process_arrays.local_from_global(o, size), out)
        if out_axes is None or isinstance(out_axes, int):
            return out if not out_axes else pytrees.tree_map(
                lambda o: _move_from_front(o, out_axes), out)
        outs, out_tree = pytrees.tree_flatten(out)
        flat_axes = _broadcast_prefix(out_axes, out, "pmap out_axes")
        return pytrees.tree_unflatten(out_tree, [o if not a else _move_from_front(o, a)
                                                 for o, a in zip(outs, flat_axes)])
    return run


def _staged_map(fun, axis_name, devs, tree, leaf_axes, out_axes, fixed, nargs):
    """(the one-axis mesh of `devs`, the shard_map running `fun` at each position of it)."""

    name = "_pmap" if axis_name is None else axis_name
    mesh = Mesh(np.array(devs, dtype=object), (name,), (AxisType.Auto,))

    def body(*shards):
        inner = [v if a is None else squeeze(v, (0,)) for v, a in zip(shards, leaf_axes)]
        dyn_in, kw = pytrees.tree_unflatten(tree, inner)
        it = iter(dyn_in)
        with parallel.pmap_axis(name):
            out = fun(*[fixed[i] if i in fixed else next(it) for i in range(nargs)], **kw)
        if out_axes is None:
            return out
        leaves, out_tree = pytrees.tree_flatten(out)
        flat_axes = _broadcast_prefix(out_axes, out, "pmap out_axes")
        return pytrees.tree_unflatten(out_tree, [o if a is None else expand_dims(o, (0,))
                                                 for o, a in zip(leaves, flat_axes)])

    in_specs = tuple(PartitionSpec() if a is None else PartitionSpec(name) for a in leaf_axes)
    # a pytree prefix of the outputs: each mapped output split over the positions
    out_spec = pytrees.tree_map(lambda a: PartitionSpec() if a is None else PartitionSpec(name),
                                out_axes, is_leaf=lambda a: a is None)
    return mesh, cached_shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_spec,
                                  check_vma=False)


def _move_to_front(x, axis):
    return _moveaxis(x, axis, 0) if axis else x


def _move_from_front(x, axis):
    return _moveaxis(x, 0, axis)


def _moveaxis(x, src, dst):
    ndim = core.get_aval(x).ndim
    perm = list(range(ndim))
    perm.insert(dst % ndim, perm.pop(src % ndim))
    return transpose(x, perm)
