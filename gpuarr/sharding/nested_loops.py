"""A `while_loop` or `scan` (and so a `fori_loop`) holding shard_maps, in a jitted function
on inputs split over several devices, run iteration by iteration.

Each iteration runs the loop's body (and a while_loop's predicate) as a Program of its own
through `run_program` (data_parallel.py: its shard_maps per device, the equations between them
as one program per device), so the carries stay as each device's pieces from one iteration to
the next and nothing is put together. A while_loop reads its predicate, a replicated scalar,
once per iteration; a scan (a `fori_loop` with static bounds) runs its static length with no
read-back at all. A scan's slices of its `xs` and its stacked outputs are programs too, so
they run on each device's blocks: the outputs stacked along a new unsplit leading dimension
keep their split (`P(None, 'i')`), as XLA lays them out.
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from gpuarr import core
from gpuarr.interpreters import partial_eval
from gpuarr.lax import lax, shape_ops, slicing
from gpuarr.sharding.mesh import AxisType
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shardings import NamedSharding
from gpuarr.sharding.tree_shardings import with_sharding

# body Program -> {signature: the Program taking iteration `i`'s slice of each xs}
_slicers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def run_while(eqn, ins, run_program) -> list:
    """The carries after a `while` equation's loop: its predicate read once per iteration."""
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, carry = ins[:nc], ins[nc:nc + nb], list(ins[nc + nb:])
    while _predicate(run_program(p["cond_jaxpr"], [*cond_consts, *carry])):
        carry = run_program(p["body_jaxpr"], [*body_consts, *carry])
    return carry


def _predicate(outs) -> bool:
    (pred,) = outs
    if np.shape(pred) != ():
        raise TypeError(f"cond_fun must return a boolean scalar, but got shape "
                        f"{np.shape(pred)}.")
    return bool(np.asarray(pred))


def run_scan(eqn, ins, run_program) -> list:
    """The final carries and the stacked outputs of a `scan` equation, its `length` known."""
    p = eqn.params
    body, length = p["jaxpr"], p["length"]
    nc, ncar = p["num_consts"], p["num_carry"]
    consts, carry, xs = ins[:nc], list(ins[nc:nc + ncar]), ins[nc + ncar:]
    y_avals = body.out_avals[ncar:]
    ys: list = [None] * length
    for i in (range(length - 1, -1, -1) if p["reverse"] else range(length)):
        x_i = run_program(_slicer(body, xs), [np.int32(i), *xs]) if xs else []
        outs = run_program(body, [*consts, *carry, *x_i])
        carry, ys[i] = outs[:ncar], outs[ncar:]
    if not y_avals:
        return carry
    if length == 0:
        return carry + [_empty((0, *a.shape), a.dtype, ins) for a in y_avals]
    return carry + run_program(_stacker(length, tuple(y_avals)), [y for out in ys for y in out])


def _empty(shape, dtype, ins):
    """A scan's output of length 0, replicated over the devices of the mesh its inputs are
    split over, as JAX places it (`P()`; one entry per dimension over Explicit axes)."""
    mesh = next((s.mesh for s in (getattr(x, "_sharding", None) for x in ins)
                 if isinstance(s, NamedSharding) and s.mesh.size > 1), None)
    if mesh is None:  # no input split: on the default device
        return np.zeros(shape, dtype)
    typed = all(mesh._name_to_type[a] == AxisType.Explicit for a in mesh.axis_names)
    spec = PartitionSpec(*[None] * len(shape)) if typed else PartitionSpec()
    return with_sharding(np.zeros(shape, dtype), NamedSharding(mesh, spec))


def _slicer(body, xs):
    """The Program taking slice `i` (its first input) of each of `xs` along their leading
    dimension, cached per body and signature."""
    avals = tuple(core.get_aval(x).update(weak_type=False) for x in xs)
    by_body = _slicers.setdefault(body, {})
    if avals not in by_body:
        def take(i, *vs):
            return [slicing.dynamic_index_in_dim(v, i, 0, keepdims=False) for v in vs]
        by_body[avals] = partial_eval.trace_to_program(
            take, [core.ShapedArray((), np.dtype(np.int32)), *avals])
    return by_body[avals]


@functools.lru_cache(maxsize=256)  # bounded: one entry per loop length and output types
def _stacker(length: int, avals: tuple):
    """The Program stacking `length` iterations' outputs (given iteration by iteration, in
    the order of `avals`) along a new leading dimension."""
    def stack(*ys):
        k = len(avals)
        return [lax.concatenate([shape_ops.expand_dims(y, (0,)) for y in ys[j::k]], 0)
                for j in range(k)]
    return partial_eval.trace_to_program(stack, list(avals) * length)
