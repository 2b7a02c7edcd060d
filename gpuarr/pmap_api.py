"""pmap: a function mapped over an axis of its inputs, one position per device.

gpuarr runs the mapped computation as one vectorised program (`jit` of `vmap` with the axis
name, so collectives work as under pmap) on the default device. As with JAX, the mapped axis
may not be longer than the number of devices: portable pmap programs size it with
`local_device_count()`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

from gpuarr import core, pytrees
from gpuarr.device_api import devices as _devices
from gpuarr.jit_api import jit
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
    count = len(devices) if devices is not None else len(_devices(backend))
    axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    # Outputs unmapped by out_axes come back mapped and are read at position 0.
    mapped_out_axes = pytrees.tree_map(lambda a: 0 if a is None else a, out_axes,
                                         is_leaf=lambda a: a is None)

    def dynamic(seq, n):
        return tuple(seq[i] for i in range(n) if i not in statics)

    def vectorised(*args, **kwargs):
        def with_statics(*dyn, **kw):
            it = iter(dyn)
            return fun(*[a if i in statics else next(it) for i, a in enumerate(args)], **kw)
        dyn_axes = dynamic(axes, len(args)) if isinstance(axes, tuple) and statics else axes
        out = vmap(with_statics, in_axes=dyn_axes, out_axes=mapped_out_axes,
                   axis_name=axis_name, axis_size=axis_size)(*dynamic(args, len(args)),
                                                              **kwargs)
        leaves, tree = pytrees.tree_flatten(out)
        flat_axes = _broadcast_prefix(out_axes, out, "pmap out_axes")
        return pytrees.tree_unflatten(
            tree, [leaf[0] if ax is None else leaf for leaf, ax in zip(leaves, flat_axes)])

    compiled = jit(vectorised, static_argnums=statics, donate_argnums=donate_argnums)

    @functools.wraps(fun)
    def mapped(*args, **kwargs):
        dyn_axes = dynamic(axes, len(args)) if isinstance(axes, tuple) and statics else axes
        size = _mapped_size(dynamic(args, len(args)), kwargs, dyn_axes, axis_size)
        if size > count:
            raise ValueError(f"pmap got a mapped axis of size {size}, but only {count} "
                             f"device{'s are' if count != 1 else ' is'} available. Size the "
                             "mapped axis with jax.local_device_count().")
        return compiled(*args, **kwargs)

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
