"""Staging: turning Python functions into Programs, and splitting Programs by what is known.

`StagingTrace` records every primitive applied to its tracers as an equation (JAX's
DynamicJaxprTrace). `PartialEvalTrace` does the same, but applies primitives whose inputs
are all known (not its own tracers) right away on its parent: that is how linearize
keeps primal values concrete while the tangent computation is staged into a linear
Program.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuarr import dtypes
from gpuarr.array import Array
from gpuarr.core import (
    ClosedProgram,
    Eqn,
    Literal,
    Primitive,
    Program,
    ShapedArray,
    Trace,
    Tracer,
    Var,
    abstract_eval_rules,
    check_tracer_alive,
    current_trace,
    eval_closed,
    get_aval,
    set_current_trace,
    subprograms,
    typed_outputs,
    user_source_info,
    vma_checked,
)
from gpuarr.interpreters.physical import check_operands

# prim -> rule(trace, args, params) for primitives with some unknown inputs under
# PartialEvalTrace (jit inlines, control flow splits its body). Default: stage it whole.
partial_eval_rules: dict[Primitive, Callable] = {}

_SCALARS = (bool, int, float, complex)


class StagingTracer(Tracer):
    # `_var`, not `var`: tracers also carry the array method `x.var()`.
    __slots__ = ("_var",)

    def __init__(self, trace, var: Var):
        self._trace = trace
        self._var = var

    @property
    def aval(self):
        return self._var.aval


class StagingTrace(Trace):
    """Records primitive applications on its tracers into a Program."""

    __slots__ = ("invars", "eqns", "constvars", "constvals", "_const_ids", "_converted",
                 "debug_info")

    def __init__(self, parent: Trace | None, debug_info=None):
        super().__init__(parent)
        self.invars: list[Var] = []
        self.eqns: list[Eqn] = []
        self.constvars: list[Var] = []
        self.constvals: list = []
        self._const_ids: dict[int, Var] = {}
        self._converted: list = []  # NumPy constants replaced by canonical-dtype copies
        self.debug_info = debug_info  # (function name, [argument name per input])

    def __repr__(self):
        return "DynamicJaxprTrace"

    def new_arg(self, aval: ShapedArray) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        return StagingTracer(self, var)

    def to_atom(self, x):
        if type(x) is StagingTracer and x._trace is self:
            return x._var
        if isinstance(x, Tracer):
            check_tracer_alive(x, "inside another transformation")
            return self._const(x)
        if isinstance(x, _SCALARS):
            aval = get_aval(x)
            return Literal(aval.dtype.type(x), aval, x if type(x) is float else None)
        if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0):
            dt = dtypes.canonicalize_dtype(x.dtype)
            return Literal(np.asarray(x, dt)[()], ShapedArray((), dt))
        if type(x) is Array and x.ndim == 0:
            # A scalar Array (a promoted Python scalar, a `full` of shape ()) is written inline,
            # as JAX writes its Arrays of literal types.
            return Literal(np.asarray(x)[()], x.aval, getattr(x, "_python_float", None))
        return self._const(x)

    def _const(self, x) -> Var:
        var = self._const_ids.get(id(x))
        if var is None:
            var = self._const_ids[id(x)] = Var(get_aval(x))
            self.constvars.append(var)
            if isinstance(x, np.ndarray) and x.dtype != var.aval.dtype:
                # An int64/float64 NumPy value runs as its canonical type (x64 off), as the
                # Program says; the original is kept so that its id stays unique in the trace.
                self._converted.append(x)
                x = x.astype(var.aval.dtype)
            self.constvals.append(x)
        return var

    def process_primitive(self, prim: Primitive, args, params):
        inputs = [self.to_atom(a) for a in args]
        rule = abstract_eval_rules.get(prim)
        if rule is None:
            raise NotImplementedError(f"primitive {prim.name} has no abstract evaluation rule")
        in_avals = [a.aval for a in inputs]
        check_operands(prim, in_avals, params)
        out_avals = rule(*in_avals, **params)
        if vma_checked():
            out_avals = typed_outputs(prim, in_avals, out_avals, params)
        outvars = [Var(aval) for aval in out_avals]
        self.eqns.append(Eqn(prim, inputs, params, outvars, user_source_info()))
        outs = [StagingTracer(self, v) for v in outvars]
        return outs if prim.multiple_results else outs[0]

    def finish(self, outs) -> ClosedProgram:
        """Close the trace: its tracers become invalid, and the recorded Program is returned."""
        outvars = [self.to_atom(o) for o in outs]
        self.alive = False
        return ClosedProgram(Program(self.constvars, self.invars, self.eqns, outvars), self.constvals)

    def creation_site(self, tracer):
        """The source location of the equation that produced `tracer` (None for inputs)."""
        var = getattr(tracer, "_var", None)
        for eqn in self.eqns:
            if any(v is var for v in eqn.outvars):
                return eqn.source_info
        return None

    def describe_provenance(self, tracer) -> str:
        if self.debug_info is None or type(tracer) is not StagingTracer or tracer._trace is not self:
            return ""
        fn_name, arg_names = self.debug_info
        deps = _input_dependencies(self, tracer._var)
        names = [arg_names[i] for i, v in enumerate(self.invars)
                 if v.id in deps and i < len(arg_names) and arg_names[i]]
        where = f"The error occurred while tracing the function {fn_name}. "
        if names:
            quoted = ", ".join(dict.fromkeys(names))
            plural = "s" if len(set(names)) > 1 else ""
            return (where + "This concrete value was not available in Python because it depends "
                    f"on the value of the argument{plural} {quoted}.")
        return where


def _input_dependencies(trace: StagingTrace, var: Var) -> set[int]:
    needed = {var.id}
    for eqn in reversed(trace.eqns):
        if any(v.id in needed for v in eqn.outvars):
            needed.update(a.id for a in eqn.inputs if isinstance(a, Var))
    return needed


class PartialEvalTrace(StagingTrace):
    """Stages only what depends on its own (unknown) tracers; the rest runs on the parent."""

    __slots__ = ()

    def process_primitive(self, prim, args, params):
        for a in args:
            if type(a) is StagingTracer and a._trace is self:
                break
        else:
            with set_current_trace(self.parent):
                return prim.bind(*args, **params)
        rule = partial_eval_rules.get(prim)
        if rule is not None:
            return rule(self, args, params)
        return StagingTrace.process_primitive(self, prim, args, params)


def trace_to_program(fun: Callable, in_avals, debug_info=None, parent: Trace | None = None):
    """Stage `fun(*flat_args) -> flat list of outputs` into a ClosedProgram.

    Consts of the result may include tracers of enclosing traces (closures); use
    `hoist_tracer_consts` to turn those into explicit inputs before binding.
    """
    from gpuarr.core import current_trace

    trace = StagingTrace(parent if parent is not None else current_trace(), debug_info)
    in_tracers = [trace.new_arg(aval) for aval in in_avals]
    try:
        with set_current_trace(trace):
            outs = fun(*in_tracers)
    except BaseException:
        trace.alive = False
        raise
    return trace.finish(list(outs))


def is_known(trace, x) -> bool:
    """Whether `x` is known to the PartialEvalTrace `trace` (not one of its own tracers)."""
    return not (type(x) is StagingTracer and x._trace is trace)


def partial_eval_closed(closed, in_uk, instantiate, invariant_in=()):
    """Split `closed` into what its known inputs determine and the rest.

    The program is re-traced under a PartialEvalTrace (so nested control flow is split by
    its own rules). Returns (known, unknown, out_uk, inv_src, n_res): `known` maps the
    known inputs to the known outputs followed by `n_res` residuals; `unknown` takes
    [invariant residuals, residuals, unknown inputs]: invariant residuals are known inputs
    at positions `invariant_in` (listed in `inv_src`), passed through unchanged.
    """
    in_avals = list(closed.in_avals)
    box = []

    def known_fun(*known_in):
        trace = PartialEvalTrace(current_trace())
        it = iter(known_in)
        args = [trace.new_arg(a) if u else next(it) for a, u in zip(in_avals, in_uk)]
        try:
            with set_current_trace(trace):
                outs = eval_closed(closed, *args)
        except BaseException:
            trace.alive = False
            raise
        out_uk = [not is_known(trace, o) or inst for o, inst in zip(outs, instantiate)]
        unknown = trace.finish([o for o, u in zip(outs, out_uk) if u])
        prog = unknown.program
        position = {id(x): i for i, (x, u) in enumerate(zip(args, in_uk)) if not u}
        inv_vars, inv_src, res_vars, res_vals, keep_vars, keep_vals = [], [], [], [], [], []
        for v, c in zip(prog.constvars, unknown.consts):
            if isinstance(c, Tracer) and position.get(id(c), -1) in invariant_in:
                inv_vars.append(v)
                inv_src.append(position[id(c)])
            elif isinstance(c, Tracer):
                res_vars.append(v)
                res_vals.append(c)
            else:
                keep_vars.append(v)
                keep_vals.append(c)
        split = Program(keep_vars, inv_vars + res_vars + prog.invars, prog.eqns, prog.outvars)
        box.append((ClosedProgram(split, keep_vals), out_uk, inv_src, len(res_vars)))
        return [o for o, u in zip(outs, out_uk) if not u] + res_vals

    known = trace_to_program(known_fun, [a for a, u in zip(in_avals, in_uk) if not u])
    return (known, *box[0])


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
    """JAX's partial evaluation of a wrapped function on PartialVals: the known values are
    computed now, the rest is staged. Returns (Program over the unknown inputs, one PartialVal
    per output: known with its value or unknown with its type, the Program's consts)."""
    trace = PartialEvalTrace(current_trace())
    args = [pv.get_known() if pv.is_known() else trace.new_arg(pv[0]) for pv in pvals]
    try:
        with set_current_trace(trace):
            outs = list(getattr(fun, "call_wrapped", fun)(*args))
    except BaseException:
        trace.alive = False
        raise
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(outs)
    out_uk = [not is_known(trace, o) or inst for o, inst in zip(outs, instantiate, strict=True)]
    closed = trace.finish([o for o, u in zip(outs, out_uk) if u])
    out_pvals = [PartialVal.unknown(get_aval(o)) if u else PartialVal.known(o)
                 for o, u in zip(outs, out_uk)]
    return closed.program, out_pvals, list(closed.consts)


def hoist_tracer_consts(closed: ClosedProgram):
    """Move consts that are tracers into leading inputs; return (program, those tracers)."""
    prog = closed.program
    keep_vars, keep_vals, hoist_vars, hoist_vals = [], [], [], []
    for v, x in zip(prog.constvars, closed.consts, strict=True):
        if isinstance(x, Tracer):
            hoist_vars.append(v)
            hoist_vals.append(x)
        else:
            keep_vars.append(v)
            keep_vals.append(x)
    if not hoist_vars:
        return closed, []
    new = Program(keep_vars, hoist_vars + prog.invars, prog.eqns, prog.outvars)
    return ClosedProgram(new, keep_vals), hoist_vals


def consts_as_inputs(closed: ClosedProgram) -> Program:
    """The same Program with its constvars turned into leading invars."""
    prog = closed.program
    return Program([], prog.constvars + prog.invars, prog.eqns, prog.outvars)


# ---------------------------------------------------------------- program surgery


def split_eqns(prog: Program, in_unknowns):
    """Equations that depend on an unknown input (transitively) and those that do not.

    Returns (known_eqns, unknown_eqns, ids of every unknown variable)."""
    unknown_ids = {v.id for v, u in zip(prog.invars, in_unknowns, strict=True) if u}
    known_eqns, unknown_eqns = [], []
    for eqn in prog.eqns:
        if any(isinstance(a, Var) and a.id in unknown_ids for a in eqn.inputs):
            unknown_eqns.append(eqn)
            unknown_ids.update(v.id for v in eqn.outvars)
        else:
            known_eqns.append(eqn)
    return known_eqns, unknown_eqns, unknown_ids


def partial_eval_program(prog: Program, in_unknowns, instantiate=False):
    """Split `prog` by dataflow into a known and an unknown part.

    Returns (known, unknown, out_unknowns, num_res): `known` maps the known inputs to the
    known outputs followed by residuals; `unknown` maps residuals followed by the unknown
    inputs to the unknown outputs. Constvars count as known inputs of `known`.
    """
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(prog.outvars)
    known_eqns, unknown_eqns, unknown_ids = split_eqns(prog, in_unknowns)
    out_unknowns = [isinstance(a, Var) and a.id in unknown_ids or inst
                    for a, inst in zip(prog.outvars, instantiate, strict=True)]
    # Residuals: known vars read by the unknown side (including forced-unknown outputs).
    residuals, seen = [], set()

    def need(a):
        if isinstance(a, Var) and a.id not in unknown_ids and a.id not in seen:
            seen.add(a.id)
            residuals.append(a)

    for eqn in unknown_eqns:
        for a in eqn.inputs:
            need(a)
    for a, u in zip(prog.outvars, out_unknowns, strict=True):
        if u:
            need(a)
    known_ins = [v for v, u in zip(prog.invars, in_unknowns, strict=True) if not u]
    known_outs = [a for a, u in zip(prog.outvars, out_unknowns, strict=True) if not u]
    known = Program(prog.constvars, known_ins, known_eqns, known_outs + residuals)
    res_vars = [Var(r.aval) for r in residuals]
    rename = {r.id: nv for r, nv in zip(residuals, res_vars, strict=True)}
    unknown_ins = [v for v, u in zip(prog.invars, in_unknowns, strict=True) if u]
    unknown_eqns = [_rename_eqn(e, rename) for e in unknown_eqns]
    unknown_outs = [rename.get(a.id, a) if isinstance(a, Var) else a
                    for a, u in zip(prog.outvars, out_unknowns, strict=True) if u]
    unknown = Program([], res_vars + unknown_ins, unknown_eqns, unknown_outs)
    return known, unknown, out_unknowns, len(residuals)


def _rename_eqn(eqn: Eqn, rename: dict) -> Eqn:
    inputs = [rename.get(a.id, a) if isinstance(a, Var) else a for a in eqn.inputs]
    return eqn._replace(inputs=inputs)


# primitive -> rule(used_outputs, eqn) -> the equation computing only the used outputs (and
# reading only what they need), for primitives with several outputs (a scan's ys).
dce_rules: dict = {}


def dce_program(prog: Program, used_outputs=None):
    """Drop equations whose results are unused (keeping effectful ones), and the unused
    outputs of equations with a `dce_rules` entry.

    Returns (program, used_inputs) where the program keeps only the used outputs and all
    inputs (callers decide whether to prune inputs using `used_inputs`).
    """
    if used_outputs is None:
        used_outputs = [True] * len(prog.outvars)
    outvars = [a for a, u in zip(prog.outvars, used_outputs, strict=True) if u]
    live = {a.id for a in outvars if isinstance(a, Var)}
    kept = []
    for eqn in reversed(prog.eqns):
        effectful = eqn.prim.effectful or any(
            (s.program if isinstance(s, ClosedProgram) else s).effectful
            for s in subprograms(eqn.params))
        used = [v.id in live for v in eqn.outvars]
        if effectful or any(used):
            rule = dce_rules.get(eqn.prim)
            if rule is not None and not effectful and not all(used):
                eqn = rule(used, eqn)
            kept.append(eqn)
            live.update(a.id for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    used_inputs = [v.id in live for v in prog.invars]
    return Program(prog.constvars, prog.invars, kept, outvars), used_inputs


class PartialVal(tuple):
    """JAX's partial value: `(aval, None)` for an unknown value, `(None, const)` for a known
    one (jax.interpreters.partial_eval.PartialVal)."""

    def __new__(cls, xs):
        pv, const = xs
        return tuple.__new__(cls, xs)

    @classmethod
    def known(cls, const) -> PartialVal:
        return PartialVal((None, const))

    @classmethod
    def unknown(cls, aval) -> PartialVal:
        return PartialVal((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        """The known value, or None."""
        return self[1] if self[0] is None else None

    def get_aval(self):
        """The abstract value, known or not."""
        return get_aval(self[1]) if self[0] is None else self[0]
