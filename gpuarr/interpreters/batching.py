"""vmap: a trace whose tracers carry a batch of values along one axis (`bdim`)."""
from __future__ import annotations

import weakref
from collections.abc import Callable

from gpuarr.core import (
    ClosedProgram,
    Primitive,
    Trace,
    Tracer,
    abstract_eval_rules,
    check_tracer_alive,
    current_trace,
    eval_closed,
    get_aval,
    set_current_trace,
    subprograms,
)
from gpuarr.interpreters import partial_eval as pe

not_mapped = None

# prim -> rule(axis_size, vals, dims, **params) -> (outs, out_dims); single-result prims
# return (out, out_dim). Every dim is an int or not_mapped.
batch_rules: dict[Primitive, Callable] = {}

# Collective primitives (lax.psum, lax.axis_index, ...): their batch rules run even when no
# operand is mapped, since they act on the named axis itself.
collective_prims: set[Primitive] = set()
# The axis name of the BatchTrace whose rule is running: collective rules compare it with
# their axis names, and sub-programs batched by a rule (jit, loop bodies) keep it.
_rule_axis_name: list = [None]


def current_axis_name():
    """The axis name of the vmap whose batching rule is running (None when unnamed)."""
    return _rule_axis_name[-1]


# (name, size) of each named vmap whose function is being traced, innermost last. Collectives
# whose result shape depends on the axis size (all_gather, psum_scatter, all_to_all) read it
# when they are bound, also inside a jit traced under the vmap; jit keys its cache on it.
_axis_env: list = []


def axis_env() -> tuple:
    return tuple(_axis_env)


def bound_axis_size(name) -> int:
    """The size of the innermost vmap named `name`; NameError (as JAX) when none is."""
    for bound, size in reversed(_axis_env):
        if bound == name:
            return size
    raise NameError(f"unbound axis name: {name}")


# Set by gpuarr.lax: move a batch axis (`moveaxis`) and materialise one (`broadcast`).
moveaxis: Callable = None  # type: ignore[assignment]
broadcast_batched: Callable = None  # type: ignore[assignment]


def _names_axis(params, name) -> bool:
    """Whether a sub-program in `params` (a loop's body, a branch) holds a collective over
    the named axis `name`: it is batched even when no operand is (an `axis_index` in the
    body differs along the axis), not run outside the axis where the name is unbound."""
    for sub in subprograms(params):
        for eqn in getattr(sub, "program", sub).eqns:
            if eqn.prim in collective_prims:
                axes = eqn.params.get("axis_name", eqn.params.get("axes"))
                if name == axes or (isinstance(axes, tuple) and name in axes):
                    return True
            if _names_axis(eqn.params, name):
                return True
    return False


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace, val, bdim):
        self._trace = trace
        self.val = val
        self.bdim = bdim

    @property
    def aval(self):
        aval = get_aval(self.val)
        if self.bdim is not_mapped:
            return aval
        shape = aval.shape[:self.bdim] + aval.shape[self.bdim + 1:]
        return aval.update(shape=shape)


class BatchTrace(Trace):
    """Applies batching rules; `axis_size` is the length of the mapped axis."""

    __slots__ = ("axis_size", "axis_name")

    def __init__(self, parent, axis_size: int, axis_name=None):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = axis_name

    def to_val_dim(self, x):
        if type(x) is BatchTracer and x._trace is self:
            return x.val, x.bdim
        if isinstance(x, Tracer):
            check_tracer_alive(x, "inside vmap")
        return x, not_mapped

    def process_primitive(self, prim, args, params):
        vals, dims = [], []
        for x in args:
            v, d = self.to_val_dim(x)
            vals.append(v)
            dims.append(d)
        if all(d is not_mapped for d in dims) and prim not in collective_prims and not (
                self.axis_name is not None and _names_axis(params, self.axis_name)):
            with set_current_trace(self.parent):
                return prim.bind(*vals, **params)
        rule = batch_rules.get(prim)
        if rule is None:
            raise NotImplementedError(f"Batching rule for '{prim.name}' not implemented")
        _rule_axis_name.append(self.axis_name)
        try:
            with set_current_trace(self.parent):
                outs, out_dims = rule(self.axis_size, vals, dims, **params)
        except (TypeError, ValueError):
            # Report bad operands with the per-example types the function was written for
            # (`add got incompatible shapes ...: (3,), (4,)`), as JAX does, where it can.
            check = abstract_eval_rules.get(prim)
            if check is not None:
                check(*[a.aval if isinstance(a, BatchTracer) and a._trace is self
                        else get_aval(a) for a in args], **params)
            raise
        finally:
            _rule_axis_name.pop()
        if prim.multiple_results:
            return [self.pure(o, d) for o, d in zip(outs, out_dims, strict=True)]
        return self.pure(outs, out_dims)

    def pure(self, val, bdim):
        return val if bdim is not_mapped else BatchTracer(self, val, bdim)


def batch_flat(fun: Callable, axis_size: int, vals, dims, axis_name=None):
    """Run `fun` over a batch; return (outs, out_dims) with each out dim int or not_mapped."""
    trace = BatchTrace(current_trace(), axis_size, axis_name)
    ins = [trace.pure(v, d) for v, d in zip(vals, dims, strict=True)]
    if axis_name is not None:
        _axis_env.append((axis_name, axis_size))
    try:
        with set_current_trace(trace):
            outs = fun(*ins)
        pairs = [trace.to_val_dim(o) for o in outs]
    finally:
        trace.alive = False
        if axis_name is not None:
            _axis_env.pop()
    return [v for v, _ in pairs], [d for _, d in pairs]


def move_to(x, dim, dst: int, axis_size: int):
    """Put the batch axis of `x` (at `dim`, maybe not_mapped) at position `dst`."""
    if dim is not_mapped:
        return broadcast_batched(x, axis_size, dst)
    if dim == dst:
        return x
    return moveaxis(x, dim, dst)


def vectorized_rule(prim: Primitive):
    """Batching rule for an op that acts independently on each element."""

    def rule(axis_size, vals, dims, **params):
        (x,), (d,) = vals, dims
        return prim.bind(x, **params), d

    return rule


def batch_program(closed: ClosedProgram, axis_size: int, in_dims: tuple) -> ClosedProgram:
    """A Program over batched inputs (`in_dims`) whose outputs are all batched at axis 0."""
    return batch_closed(closed, axis_size, in_dims, [True] * len(closed.out_avals))[0]


def _batched_avals(closed: ClosedProgram, axis_size: int, in_dims):
    avals = []
    for aval, d in zip(closed.in_avals, in_dims, strict=True):
        if d is not_mapped:
            avals.append(aval)
        else:
            shape = list(aval.shape)
            shape.insert(d, axis_size)
            avals.append(aval.update(shape=tuple(shape)))
    return avals


_batch_closed_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def batch_closed(closed: ClosedProgram, axis_size: int, in_dims, force_out, out_dim: int = 0):
    """Batch `closed`, leaving outputs that do not vary along the batch unmapped.

    Returns (ClosedProgram, out_dims): each output is batched at `out_dim` or not_mapped;
    outputs whose `force_out` entry is true are always batched there (control flow needs a
    fixed layout for loop carries).
    """
    axis_name = current_axis_name()
    key = (axis_size, tuple(in_dims), tuple(force_out), axis_name, out_dim)
    per_prog = _batch_closed_cache.setdefault(closed, {})
    if key in per_prog:
        return per_prog[key]
    in_avals = _batched_avals(closed, axis_size, in_dims)
    dims_box = []

    def fun(*args):
        outs, out_dims = batch_flat(lambda *xs: eval_closed(closed, *xs), axis_size, args, in_dims,
                                    axis_name)
        results, dims = [], []
        for o, d, force in zip(outs, out_dims, force_out, strict=True):
            if d is not_mapped and not force:
                results.append(o)
                dims.append(not_mapped)
            else:
                results.append(move_to(o, d, out_dim, axis_size))
                dims.append(out_dim)
        dims_box.append(dims)
        return results

    result = (pe.trace_to_program(fun, in_avals), dims_box[0])
    per_prog[key] = result
    return result


# ---------------------------------------------------------------- JAX's rule-table names

class _PrimitiveBatchers:
    """`jax.interpreters.batching.primitive_batchers`: rules in JAX's older signature
    `rule(vals, dims, **params) -> (out, out_dims)`, installed into `batch_rules`."""

    def __setitem__(self, prim, rule):
        def adapted(axis_size, vals, dims, **params):
            return rule(tuple(vals), tuple(dims), **params)  # tuples, as JAX passes them
        batch_rules[prim] = adapted

    def __delitem__(self, prim):
        del batch_rules[prim]

    def __contains__(self, prim):
        return prim in batch_rules


class _AxisPrimitiveBatchers(_PrimitiveBatchers):
    """`jax.interpreters.batching.axis_primitive_batchers`: rules that also take the axis,
    `rule(axis_size, axis_name, trace_type, vals, dims, **params)`."""

    def __setitem__(self, prim, rule):
        def adapted(axis_size, vals, dims, **params):
            return rule(axis_size, current_axis_name(), None, tuple(vals), tuple(dims), **params)
        batch_rules[prim] = adapted


primitive_batchers = _PrimitiveBatchers()
axis_primitive_batchers = _AxisPrimitiveBatchers()
