"""vmap: vectorising a function over a mapped axis of its inputs."""
from __future__ import annotations

import collections
import functools
import inspect
import logging
from collections.abc import Callable

import numpy as np

from gpuarr import core, pytrees
from gpuarr.array import Array
from gpuarr.config import config
from gpuarr.core import Tracer
from gpuarr.dispatch import as_array as _as_array
from gpuarr.dispatch import to_device_array
from gpuarr.interpreters import batching
from gpuarr.interpreters.batching import not_mapped
from gpuarr.sharding import tree_shardings

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
    _check_callable(fun)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # lists and tuples are interchangeable here, as in JAX
    _check_axes_spec(in_axes, out_axes)

    @wraps(fun)
    def vmap_f(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the function, "
                             f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        flat_args, in_tree = pytrees.tree_flatten((args, kwargs))
        flat_axes = _flatten_in_axes(in_tree, in_axes)
        # Unmapped leaves reach `fun` as they are (a Python int stays an int), as in JAX;
        # mapped NumPy values and Python scalars become Arrays.
        flat_args = [a if isinstance(a, (Array, Tracer)) or ax is None else _as_array(a)
                     for a, ax in zip(flat_args, flat_axes)]
        size = _mapped_size(fun, in_tree, flat_args, flat_axes, axis_size)
        dims = [None if ax is None else ax % core.get_aval(x).ndim
                for x, ax in zip(flat_args, flat_axes)]
        out_box = []

        def flat_fun(*flat):
            a, kw = pytrees.tree_unflatten(in_tree, list(flat))
            out = fun(*a, **kw)
            leaves, out_tree = pytrees.tree_flatten(out)
            for leaf in leaves:
                _check_output(leaf)
            out_box.append((out, out_tree))
            return leaves

        outs, out_dims = batching.batch_flat(flat_fun, size, flat_args, dims, axis_name)
        out, out_tree = out_box[0]
        flat_out_axes = tree_shardings.flatten_axes("vmap out_axes", out_tree, out_axes)
        results = []
        for k, (o, d, dst) in enumerate(zip(outs, out_dims, flat_out_axes)):
            if dst is not None and isinstance(o, _SCALARS):  # broadcast, still weakly typed
                o = to_device_array(o)
            if dst is None:
                if d is not not_mapped and sum_match:
                    o = o.sum(d)  # the Array method: jnp.sum's dtypes (a bool sums to int)
                elif d is not not_mapped:
                    _unmapped_output_error(axis_name, out_tree, flat_out_axes, k, d)
                results.append(o)
                continue
            ndim = core.get_aval(o).ndim + (d is not_mapped)
            if not -ndim <= dst < ndim:
                raise ValueError(f"axis {dst} is out of bounds for array of dimension {ndim}")
            results.append(batching.move_to(o, d, dst % ndim, size))
        return pytrees.tree_unflatten(out_tree, results)

    return vmap_f


def wraps(fun):
    """`functools.wraps(fun)` that keeps what it can of a callable whose attributes do not
    copy (an object whose `__name__` is no string), as JAX's transformations do."""
    def decorate(wrapper):
        try:
            return functools.update_wrapper(wrapper, fun)
        except (TypeError, AttributeError):
            wrapper.__wrapped__ = fun
            return wrapper
    return decorate


def _check_callable(fun):
    if isinstance(fun, staticmethod):
        raise TypeError(f"staticmethod arguments are not supported, got {fun}")
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun}")
    if inspect.isgeneratorfunction(fun):
        raise TypeError(f"Expected a function, got a generator function: {fun}")


def _array_like(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic) + _SCALARS)


def _check_output(x):
    if not (isinstance(x, (Array, Tracer)) or _array_like(x)):
        raise TypeError(f"Output from batched function {x!r} with type {type(x)} is not a valid "
                        "JAX type")


def _is_axis(leaf) -> bool:
    return type(leaf) is int


def _check_axes_spec(in_axes, out_axes):
    """JAX's checks of the axis specs' types, made when vmap is applied."""
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got {in_axes}.")
    for name, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        if not all(_is_axis(leaf) for leaf in pytrees.tree_leaves(axes)):
            raise TypeError(f"vmap {name} must be an int, None, or (nested) container with those "
                            f"types as leaves, but got {axes}.")


def _flatten_in_axes(in_tree, in_axes) -> list:
    """One axis per leaf of (args, kwargs) (keyword arguments map over axis 0); JAX's error,
    about the positional arguments only, when `in_axes` is not a prefix of them."""
    try:
        return tree_shardings._broadcast_flat(in_tree, (in_axes, 0))
    except ValueError:
        pass
    return tree_shardings.flatten_axes("vmap in_axes", in_tree.children()[0], in_axes)


def _unmapped_output_error(axis_name, out_tree, flat_out_axes, k, d):
    """JAX's error for an output that varies over the batch but has out_axes None."""
    if axis_name is not None:
        raise ValueError(f"vmap has mapped output (axis_name={axis_name}) but out_axes is None")
    full = pytrees.tree_unflatten(out_tree, flat_out_axes)
    paths = [p for p, _ in pytrees.tree_flatten_with_path(full, is_leaf=lambda x: x is None)[0]]
    raise ValueError(f"at vmap out_axes{pytrees.keystr(paths[k])}, got axis spec None but "
                     f"output was batched on axis {d}")


def _broadcast_prefix(prefix, tree, what):
    """Expand an axes prefix tree to one entry per leaf of `tree` (pmap's form)."""
    result = []

    def visit(p, t):
        if p is None or isinstance(p, int):
            result.extend([p] * len(pytrees.tree_leaves(t)))
            return
        p_children, p_def = pytrees.tree_flatten(p, is_leaf=lambda x: x is None)
        try:
            subtrees = p_def.flatten_up_to(t)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{what} specification must be a tree prefix of the corresponding "
                             f"value, got specification {prefix} for value tree "
                             f"{pytrees.tree_structure(tree)}.") from e
        for pc, st in zip(p_children, subtrees):
            visit(pc, st)

    visit(prefix, tree)
    return result


def _arg_descriptions(fun, in_tree, flat_args) -> list[str]:
    """Per flattened argument, JAX's words for it in a size mismatch: `argument x['a']` by
    the parameter it binds to, `args[2]` past the signature, `kwargs['k']` for keywords."""
    args, kwargs = pytrees.tree_unflatten(in_tree, flat_args)
    try:
        params = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
    except (TypeError, ValueError):
        params = None

    def arg_name(path):
        i = path[0].idx
        if params is None or i >= len(params):
            return f"args{pytrees.keystr(path)}"
        return f"argument {params[i]}{pytrees.keystr(path[1:])}"

    def typ(x):
        aval = core.get_aval(x) if isinstance(x, (Array, Tracer)) or _array_like(x) else None
        if aval is None:
            return "unknown"
        return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"

    return ([f"{arg_name(p)} of type {typ(x)}"
             for p, x in pytrees.tree_flatten_with_path(args)[0]]
            + [f"kwargs{pytrees.keystr(p)} of type {typ(x)}"
               for p, x in pytrees.tree_flatten_with_path(kwargs)[0]])


def _axis_length(x, ax):
    shape = core.get_aval(x).shape if isinstance(x, (Array, Tracer)) or _array_like(x) else None
    if shape is None:
        return None  # not an array: no size to check, as in JAX
    if not -len(shape) <= ax < len(shape):
        raise ValueError(f"vmap was requested to map its argument along axis {ax}, which "
                         f"implies that its rank should be at least {ax + 1 if ax >= 0 else -ax}, "
                         f"but is only {len(shape)} (its shape is {shape})")
    return shape[ax]


def _mapped_size(fun, in_tree, flat_args, flat_axes, axis_size):
    """The batch size, with JAX's errors for no mapped argument or disagreeing sizes (which
    name the most common size first)."""
    if not flat_args:
        if axis_size is not None:
            return axis_size
        args, kwargs = pytrees.tree_unflatten(in_tree, flat_args)
        raise ValueError("vmap wrapped function must be passed at least one argument containing "
                         f"an array or axis_size must be specified, got empty *args={args} and "
                         f"**kwargs={kwargs}")
    sizes = [None if ax is None else _axis_length(x, ax) for x, ax in zip(flat_args, flat_axes)]
    distinct = {s for s in sizes if s is not None} | ({axis_size} if axis_size is not None else set())
    if len(distinct) == 1:
        return distinct.pop()
    if not distinct:
        raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                         "must be specified")
    names = _arg_descriptions(fun, in_tree, flat_args)
    counts = collections.Counter(s for s in sizes if s is not None).most_common()
    msg = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        msg.append(f"  * the `axis_size` argument was {axis_size};\n")
    for k, (sz, ct) in enumerate(counts):
        i = sizes.index(sz)
        where = f"axis {flat_axes[i]} of {names[i]}"
        if ct == 1:
            msg.append(f"  * one axis had size {sz}: {where};\n")
        else:
            msg.append(f"  * {'most' if k == 0 else 'some'} axes ({ct} of them) had size {sz}, "
                       f"e.g. {where};\n")
    raise ValueError("".join(msg)[:-2])
