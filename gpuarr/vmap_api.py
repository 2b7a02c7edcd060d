"""vmap: vectorising a function over a mapped axis of its inputs."""
from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable

import numpy as np

from gpuarr import core, tree_util
from gpuarr.array import Array
from gpuarr.config import config
from gpuarr.core import Tracer
from gpuarr.dispatch import as_array as _as_array
from gpuarr.dispatch import to_device_array
from gpuarr.interpreters import batching
from gpuarr.interpreters.batching import not_mapped

logger = logging.getLogger("gpuarr")
_flags = config._values
_SCALARS = (bool, int, float, complex)


# ---------------------------------------------------------------- vmap


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None,
         sum_match: bool = False):
    """Vectorise `fun` over a mapped axis of its inputs. `in_axes` is an int, None, or a
    pytree prefix of the arguments giving each input's mapped axis (None: not mapped;
    negative axes count from the end); `out_axes` likewise places the batch axis in the
    outputs (None: the output must not vary along the batch, unless `sum_match` is set: then
    a batched output is summed over the batch axis). Keyword arguments are mapped over axis
    0; `axis_size` gives the batch size when no input is mapped; `axis_name` names the mapped
    axis for collectives inside `fun` (lax.psum, pmean, pmax, pmin, axis_index)."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")

    @functools.wraps(fun)
    def vmap_f(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the function, "
                             f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
        axes_prefix = (in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args),
                       {k: 0 for k in kwargs})
        flat_axes = _broadcast_prefix(axes_prefix, (args, kwargs), "vmap in_axes")
        # Unmapped leaves that are not array-like (strings, ...) reach `fun` as they are, as
        # in JAX; NumPy values and Python scalars become Arrays.
        flat_args = [a if isinstance(a, (Array, Tracer)) or (ax is None and not _array_like(a))
                     else _as_array(a) for a, ax in zip(flat_args, flat_axes)]
        size = _mapped_size(flat_args, flat_axes, axis_size, _flat_arg_names(fun, args, kwargs))
        dims = [None if ax is None else ax % core.get_aval(x).ndim
                for x, ax in zip(flat_args, flat_axes)]
        out_box = []

        def flat_fun(*flat):
            a, kw = tree_util.tree_unflatten(in_tree, list(flat))
            out = fun(*a, **kw)
            leaves, out_tree = tree_util.tree_flatten(out)
            out_box.append((out, out_tree))
            return leaves

        outs, out_dims = batching.batch_flat(flat_fun, size, flat_args, dims, axis_name)
        out, out_tree = out_box[0]
        flat_out_axes = _broadcast_prefix(out_axes, out, "vmap out_axes")
        results = []
        for o, d, dst in zip(outs, out_dims, flat_out_axes):
            if dst is not None and isinstance(o, _SCALARS):  # broadcast, still weakly typed
                o = to_device_array(o)
            if dst is None:
                if d is not not_mapped and sum_match:
                    o = o.sum(d)  # the Array method: jnp.sum's dtypes (a bool sums to int)
                elif d is not not_mapped:
                    raise ValueError(f"at vmap out_axes, got axis spec None but output was "
                                     f"batched on axis {d}")
                results.append(o)
                continue
            ndim = core.get_aval(o).ndim + (d is not_mapped)
            if not -ndim <= dst < ndim:
                raise ValueError(f"axis {dst} is out of bounds for array of dimension {ndim}")
            results.append(batching.move_to(o, d, dst % ndim, size))
        return tree_util.tree_unflatten(out_tree, results)

    return vmap_f


def _array_like(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic) + _SCALARS)


def _check_axes_spec(axes, name):
    for leaf in tree_util.tree_leaves(axes):
        if not isinstance(leaf, int) or isinstance(leaf, bool):
            raise TypeError(f"vmap {name} must be an int, None, or a tuple of entries "
                            "corresponding to the positional arguments passed to the function, "
                            f"but got {axes}.")


def _broadcast_prefix(prefix, tree, what):
    """Expand an axes prefix tree to one entry per leaf of `tree`."""
    result = []

    def visit(p, t):
        if p is None or isinstance(p, int):
            result.extend([p] * len(tree_util.tree_leaves(t)))
            return
        p_children, p_def = tree_util.tree_flatten(p, is_leaf=lambda x: x is None)
        try:
            subtrees = p_def.flatten_up_to(t)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{what} specification must be a tree prefix of the corresponding "
                             f"value, got specification {prefix} for value tree "
                             f"{tree_util.tree_structure(tree)}.") from e
        for pc, st in zip(p_children, subtrees):
            visit(pc, st)

    visit(prefix, tree)
    return result


def _flat_arg_names(fun, args, kwargs):
    """A name per flattened argument leaf (the parameter it came from), for error messages."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        name = params[i] if i < len(params) else f"args[{i}]"
        names += [name] * len(tree_util.tree_leaves(a))
    for k, v in kwargs.items():
        names += [k] * len(tree_util.tree_leaves(v))
    return names


def _mapped_size(flat_args, flat_axes, axis_size, names=None):
    sizes, where = set(), []
    for i, (x, ax) in enumerate(zip(flat_args, flat_axes)):
        if ax is None:
            continue
        aval = core.get_aval(x)
        shape = aval.shape
        if not -len(shape) <= ax < len(shape):
            raise ValueError(f"vmap was requested to map its argument along axis {ax}, which "
                             f"implies that its rank should be at least {max(ax + 1, -ax)}, but "
                             f"is only {len(shape)} (its shape is {shape})")
        sizes.add(shape[ax])
        name = names[i] if names and i < len(names) else f"args[{i}]"
        typ = f"{aval.dtype.name}[{','.join(str(d) for d in shape)}]"
        where.append(f"  * one axis had size {shape[ax]}: axis {ax} of argument {name} of type "
                     f"{typ}")
    if axis_size is not None and sizes and sizes != {axis_size}:
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + ";\n".join([f"  * the `axis_size` argument was {axis_size}"] + where))
    if axis_size is not None:
        return axis_size
    if not sizes:
        raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                         "must be specified")
    if len(sizes) > 1:
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + ";\n".join(where))
    return sizes.pop()
