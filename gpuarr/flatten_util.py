"""`ravel_pytree`: a pytree of arrays as one flat vector, and the function that undoes it
(JAX's `jax.flatten_util`).

The leaves are raveled and concatenated in flatten order. Leaves of one dtype keep it, and the
unravel function then accepts a vector of any dtype; leaves of several dtypes are promoted to
their common result type, and unravel checks that dtype and casts each piece back. Both
directions are plain lax operations, so they work eagerly and under jit, grad and vmap.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpuarr import dtypes
from gpuarr.lax import conversions as lax_conversions
from gpuarr.lax import extras as lax_extras
from gpuarr.lax import lax
from gpuarr.lax import shape_ops as lax_shape_ops
from gpuarr.numpy import creation
from gpuarr.pytrees import PyTreeDef, tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


class _HashablePartial:
    """A partial application that compares and hashes by function code and bound arguments, so
    two unravel functions for the same structure are equal (and usable as a static jit
    argument)."""

    def __init__(self, f: Callable, *args):
        self.f = f
        self.args = args

    def __eq__(self, other):
        return (type(other) is _HashablePartial and self.f.__code__ == other.f.__code__
                and self.args == other.args)

    def __hash__(self):
        return hash((self.f.__code__, self.args))

    def __call__(self, *args):
        return self.f(*self.args, *args)


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Flatten the leaves of `pytree` into one 1-D array and return `(flat, unravel)`, where
    `unravel(flat)` rebuilds a pytree of the original structure, shapes and dtypes. The flat
    dtype is the promotion of the leaf dtypes; a pytree without leaves gives an empty float32
    vector."""
    leaves, treedef = tree_flatten(pytree)
    flat, unravel_list = _ravel_list(leaves)
    return flat, _HashablePartial(_unravel_pytree, treedef, unravel_list)


def _unravel_pytree(treedef: PyTreeDef, unravel_list: Callable, flat: Any) -> Any:
    return tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(leaves: list) -> tuple[Any, Callable]:
    if not leaves:
        return lax_shape_ops.full([0], 0, "float32"), _HashablePartial(_unravel_empty)
    # asarray keeps a Python scalar's weak type and canonicalizes NumPy 64-bit leaves.
    leaves = [creation.asarray(x) for x in leaves]
    from_dtypes = tuple(dtypes.dtype(x, canonicalize=True) for x in leaves)
    to_dtype = dtypes.result_type(*from_dtypes)
    sizes = tuple(int(np.size(x)) for x in leaves)
    shapes = tuple(tuple(np.shape(x)) for x in leaves)
    if all(dt == to_dtype for dt in from_dtypes):
        # One dtype: no casts, and unravel stays polymorphic in the dtype it is given.
        flat = lax.concatenate([lax_shape_ops.reshape(x, (n,)) for x, n in zip(leaves, sizes)], 0)
        return flat, _HashablePartial(_unravel_list_single_dtype, sizes, shapes)
    flat = lax.concatenate([lax_shape_ops.reshape(lax_conversions.convert_element_type(x, to_dtype), (n,))
                            for x, n in zip(leaves, sizes)], 0)
    return flat, _HashablePartial(_unravel_list, sizes, shapes, from_dtypes, to_dtype)


def _unravel_empty(flat: Any) -> list:
    return []


def _unravel_list_single_dtype(sizes, shapes, flat) -> list:
    chunks = lax_extras.split(flat, sizes)
    return [lax_shape_ops.reshape(c, shape) for c, shape in zip(chunks, shapes)]


def _unravel_list(sizes, shapes, from_dtypes, to_dtype, flat) -> list:
    flat_dtype = dtypes.dtype(flat, canonicalize=True)
    if flat_dtype != to_dtype:
        raise TypeError(f"unravel function given array of dtype {flat_dtype}, "
                        f"but expected dtype {to_dtype}")
    chunks = lax_extras.split(flat, sizes)
    return [lax_conversions.convert_element_type(lax_shape_ops.reshape(c, shape), dt)
            for c, shape, dt in zip(chunks, shapes, from_dtypes)]
