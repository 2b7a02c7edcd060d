"""Collectives over a named mapped axis: `psum`, `pmean`, `pmax`, `pmin` and `axis_index`.

An axis gets its name from `vmap(..., axis_name=...)`. Each collective is a primitive whose
batching rule does the work: the BatchTrace of the named axis reduces over its batch dimension
(a value that does not vary along the axis counts `axis_size` times in a sum) and the result
no longer varies along that axis. Names of other (outer) vmaps are passed on to them; a name
no vmap binds is a NameError, as in JAX.
"""
from __future__ import annotations

import numpy as np

from gpuarr import tree_util
from gpuarr.backends.numpy_backend import impl_rules
from gpuarr.core import Primitive, ShapedArray, abstract_eval_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters.batching import batch_rules, collective_prims, not_mapped
from gpuarr.lax import lax


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _unbound(*args, axis_name, **params):
    raise NameError(f"unbound axis name: {axis_name[0]}. Collectives such as psum name an axis "
                    "that an enclosing vmap(..., axis_name=...) maps over.")


def _reducer_rule(prim, reduce, repeat):
    """Batch rule of a reducing collective: `reduce(x, axes)` over the batch dimension of the
    named axis; `repeat(x, n)` for a value that is the same at all n positions."""

    def rule(axis_size, vals, dims, *, axis_name):
        (x,), (d,) = vals, dims
        name = batching.current_axis_name()
        if name not in axis_name:  # an outer vmap's axis: act on each element of this one
            return prim.bind(x, axis_name=axis_name), d
        out = repeat(x, axis_size) if d is not_mapped else reduce(x, (d,))
        rest = tuple(n for n in axis_name if n != name)
        return (prim.bind(out, axis_name=rest) if rest else out), not_mapped
    return rule


def _collective(name, reduce, repeat) -> Primitive:
    prim = Primitive(name)
    impl_rules[prim] = _unbound
    abstract_eval_rules[prim] = lambda x, *, axis_name: [x]
    batch_rules[prim] = _reducer_rule(prim, reduce, repeat)
    collective_prims.add(prim)
    return prim


psum_p = _collective("psum", lax.reduce_sum,
                     lambda x, n: lax.mul(x, lax.full_like(x, n)))
ad.deflinear(psum_p, lambda ct, x, *, axis_name: [psum_p.bind(ct, axis_name=axis_name)])
pmax_p = _collective("pmax", lax.reduce_max, lambda x, n: x)
pmin_p = _collective("pmin", lax.reduce_min, lambda x, n: x)
ad.defjvp_zero(pmax_p)  # JAX does not differentiate these either; their tangents are zero
ad.defjvp_zero(pmin_p)

axis_index_p = Primitive("axis_index")
impl_rules[axis_index_p] = _unbound
abstract_eval_rules[axis_index_p] = lambda *, axis_name: [ShapedArray((), np.dtype(np.int32))]
collective_prims.add(axis_index_p)
ad.defjvp_zero(axis_index_p)


def _axis_index_batch(axis_size, vals, dims, *, axis_name):
    if batching.current_axis_name() != axis_name[0]:
        return axis_index_p.bind(axis_name=axis_name), not_mapped
    return lax.iota(np.int32, axis_size), 0


batch_rules[axis_index_p] = _axis_index_batch


def _check_groups(axis_index_groups):
    if axis_index_groups is not None:
        raise NotImplementedError("axis_index_groups is not supported: collectives reduce over "
                                  "the whole named axis.")


def _bind_leaves(prim, x, axis_name, axis_index_groups):
    """`prim` on each leaf of the pytree `x` (Python scalars as weakly typed 0-d arrays)."""
    _check_groups(axis_index_groups)
    names = _names(axis_name)
    return tree_util.tree_map(
        lambda v: prim.bind(*lax._coerce_scalars(prim.name, v), axis_name=names), x)


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum each leaf of the pytree `x` over the mapped axis (or axes) `axis_name`; the result is
    the same at every position of the axis (JAX's lax.psum under vmap)."""
    return _bind_leaves(psum_p, x, axis_name, axis_index_groups)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of each leaf of `x` over the mapped axis (or axes) `axis_name` (lax.pmean); integer
    leaves give floats, as true division does."""
    _check_groups(axis_index_groups)
    size = psum(1, axis_name)
    return tree_util.tree_map(lambda v: psum(v, axis_name) / size, x)


def pmax(x, axis_name, *, axis_index_groups=None):
    """Elementwise maximum of each leaf of `x` over the mapped axis `axis_name` (lax.pmax)."""
    return _bind_leaves(pmax_p, x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Elementwise minimum of each leaf of `x` over the mapped axis `axis_name` (lax.pmin)."""
    return _bind_leaves(pmin_p, x, axis_name, axis_index_groups)


def axis_index(axis_name):
    """The position along the mapped axis `axis_name`, an int32 that varies along it
    (lax.axis_index)."""
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError("axis_index of several axes at once is not supported; "
                                  "combine axis_index of each name.")
    return axis_index_p.bind(axis_name=names)
