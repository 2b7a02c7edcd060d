"""Forward-mode (JVP) and transposition: the two halves of automatic differentiation.

Reverse mode is `linearize` then `transpose`: a JVP trace whose parent is a
PartialEvalTrace computes primal values concretely while the tangent computation is
staged into a linear Program; `backward_pass` runs that Program backwards.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np

from gpuarr import dtypes, impls
from gpuarr.core import (
    ClosedProgram,
    Literal,
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    abstract_eval_rules,
    check_tracer_alive,
    current_trace,
    get_aval,
    is_extended_dtype,
    literal_operand,
    ordered_axes,
    pvary_p,
    set_current_trace,
    vma_checked,
    vma_of,
)
from gpuarr.interpreters import batching
from gpuarr.interpreters import partial_eval as pe

# prim -> rule(primals, tangents, **params) -> (primal_out, tangent_out); tangents may be Zero.
jvp_rules: dict[Primitive, Callable] = {}
# prim -> rule(ct, *invals, **params) -> list of cotangents per input (None for non-linear
# inputs); invals are UndefinedPrimal for linear inputs. ct is a list for multi-result prims.
transpose_rules: dict[Primitive, Callable] = {}

# Set by gpuarr.lax: builds an array of zeros on the current trace.
zeros_like_aval: Callable[[ShapedArray], object] = None  # type: ignore[assignment]


# ---------------------------------------------------------------- symbolic zeros


class Zero:
    """A tangent or cotangent known to be zero, kept symbolic to skip work."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_primal(x) -> Zero:
        return Zero(tangent_aval(get_aval(x)))

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents of integer and boolean values have dtype float0, as in JAX; those of an
    extended dtype the dtype its rules give (`_rules.tangent_dtype`)."""
    if dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype):
        return aval
    if is_extended_dtype(aval.dtype):
        return ShapedArray(aval.shape, aval.dtype._rules.tangent_dtype(aval.dtype))
    return ShapedArray(aval.shape, dtypes.float0)


def instantiate(t):
    """A concrete array for a possibly symbolic zero."""
    if type(t) is not Zero:
        return t
    if t.aval.dtype == dtypes.float0:
        return np.zeros(t.aval.shape, dtypes.float0)
    return zeros_like_aval(t.aval)


# ---------------------------------------------------------------- add_any: summing cotangents

add_any_p = Primitive("add_any")
impls.impl_rules[add_any_p] = np.add
abstract_eval_rules[add_any_p] = lambda x, y: [x.update(weak_type=x.weak_type and y.weak_type)]


def add_tangents(x, y):
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    dt = getattr(x, "dtype", None)
    if dt == dtypes.float0:
        return x
    if is_extended_dtype(dt):  # the dtype's own sum (fm32's is a maximum)
        return dt._rules.add(dt, x, y)
    return add_any_p.bind(x, y)


jvp_rules[add_any_p] = lambda primals, tangents: (
    add_any_p.bind(*primals), add_tangents(*tangents))
transpose_rules[add_any_p] = lambda ct, x, y: [ct, ct]


def _add_any_batch(axis_size, vals, dims):
    x, y = (batching.move_to(v, d, 0, axis_size) for v, d in zip(vals, dims, strict=True))
    return add_any_p.bind(x, y), 0


batching.batch_rules[add_any_p] = _add_any_batch


# ---------------------------------------------------------------- the JVP trace


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def to_concrete_value(self):
        p = self.primal
        return p.to_concrete_value() if isinstance(p, Tracer) else p


class JVPTrace(Trace):
    """Carries (primal, tangent) pairs; rules run on the parent trace."""

    __slots__ = ()

    def to_primal_tangent(self, x):
        if type(x) is JVPTracer and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            check_tracer_alive(x, "inside jvp/grad")
        return x, Zero.from_primal(x)

    def process_primitive(self, prim, args, params):
        primals, tangents = [], []
        for x in args:
            p, t = self.to_primal_tangent(x)
            primals.append(p)
            tangents.append(t)
        if all(type(t) is Zero for t in tangents):
            with set_current_trace(self.parent):
                return prim.bind(*primals, **params)
        rule = jvp_rules.get(prim)
        if rule is None:
            raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
        with set_current_trace(self.parent):
            out_p, out_t = rule(primals, tangents, **params)
        if prim.multiple_results:
            return [self.maybe_tracer(p, t) for p, t in zip(out_p, out_t, strict=True)]
        return self.maybe_tracer(out_p, out_t)

    def pure(self, primal, tangent):
        return JVPTracer(self, primal, tangent)

    def maybe_tracer(self, primal, tangent):
        """A tracer only for a value with a tangent: with a symbolic zero (or float0) one the
        primal itself, as JAX's `maybe_jvp_tracer` (libraries tell the values that depend on
        a differentiated input by whether they are this trace's tracers)."""
        if type(tangent) is Zero or getattr(tangent, "dtype", None) == dtypes.float0:
            return primal
        return JVPTracer(self, primal, tangent)


def jvp_flat(fun: Callable, primals, tangents):
    """Run `fun(*primals)` carrying `tangents`; return (primal outs, tangent outs (maybe Zero))."""
    trace = JVPTrace(current_trace())
    ins = [trace.maybe_tracer(p, t) for p, t in zip(primals, tangents, strict=True)]
    try:
        with set_current_trace(trace):
            outs = fun(*ins)
        pairs = [trace.to_primal_tangent(o) for o in outs]
    finally:
        trace.alive = False
    return [p for p, _ in pairs], [t for _, t in pairs]


# ---------------------------------------------------------------- rule helpers


def defjvp(prim: Primitive, *derivs, with_ans: bool = False):
    """JVP from one function per argument: `deriv(g, *primals, **params)` is its tangent term
    (`deriv(g, ans, *primals, **params)` with `with_ans`, to reuse the output: exp, tanh)."""

    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        total = None
        for d, t in zip(derivs, tangents, strict=True):
            if d is None or type(t) is Zero:
                continue
            term = d(t, out, *primals, **params) if with_ans else d(t, *primals, **params)
            total = term if total is None else add_tangents(total, term)
        return out, Zero.from_primal(out) if total is None else total

    jvp_rules[prim] = rule


def defjvp_zero(prim: Primitive):
    """Outputs are piecewise constant (comparisons, integer ops): tangents are zero."""

    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [Zero.from_primal(o) for o in out]
        return out, Zero.from_primal(out)

    rule.zero_jvp = True  # lets tests tell non-differentiable primitives apart
    jvp_rules[prim] = rule


def deflinear(prim: Primitive, transpose: Callable):
    """A primitive linear in all its arguments; `transpose(ct, *invals, **params)`."""

    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        return out, prim.bind(*map(instantiate, tangents), **params)

    jvp_rules[prim] = rule
    transpose_rules[prim] = transpose


def defbilinear(prim: Primitive, lhs_transpose: Callable, rhs_transpose: Callable):
    """A primitive linear in each argument separately (mul, dot_general)."""

    def rule(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y, **params)
        t = Zero.from_primal(out)
        if type(tx) is not Zero:
            t = add_tangents(t, prim.bind(tx, y, **params))
        if type(ty) is not Zero:
            t = add_tangents(t, prim.bind(x, ty, **params))
        return out, t

    def transpose(ct, x, y, **params):
        if is_undefined(x):
            return [lhs_transpose(ct, x, y, **params), None]
        return [None, rhs_transpose(ct, x, y, **params)]

    jvp_rules[prim] = rule
    transpose_rules[prim] = transpose


# ---------------------------------------------------------------- linearize and transpose


class UndefinedPrimal:
    """Marks a linear input of an equation during transposition."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return type(x) is UndefinedPrimal


def linearize_flat(fun: Callable, primals):
    """Evaluate `fun` at `primals` and stage its linearization.

    Returns (primal outs, linear ClosedProgram from input tangents to output tangents).
    """
    parent = current_trace()
    pe_trace = pe.PartialEvalTrace(parent)
    tangent_ins = [pe_trace.new_arg(tangent_aval(get_aval(p))) for p in primals]
    # Integer inputs keep an input slot but carry a symbolic zero (their cotangent is float0).
    tangent_ins = [t if t.aval.dtype != dtypes.float0 else Zero(t.aval) for t in tangent_ins]
    jvp_trace = JVPTrace(pe_trace)
    ins = [JVPTracer(jvp_trace, p, t) for p, t in zip(primals, tangent_ins, strict=True)]
    try:
        with set_current_trace(jvp_trace):
            outs = fun(*ins)
        pairs = [jvp_trace.to_primal_tangent(o) for o in outs]
        primals_out = [p for p, _ in pairs]
        with set_current_trace(pe_trace):
            tangents_out = [instantiate(t) for _, t in pairs]
    except BaseException:
        jvp_trace.alive = pe_trace.alive = False
        raise
    jvp_trace.alive = False
    for p in primals_out:
        if type(p) is pe.StagingTracer and p._trace is pe_trace:
            raise TypeError("a primal output depends on a tangent; this function is not "
                            "differentiable with respect to its inputs")
    linear = pe_trace.finish(tangents_out)
    # Tangents only the primal needed (a slice feeding a comparison) are dead here, as after
    # JAX's dce_jaxpr.
    program, _ = pe.dce_program(linear.program)
    return primals_out, ClosedProgram(program, linear.consts)


# Primitives whose transpose runs even when every output cotangent is zero, as in JAX: a
# custom_vjp's bwd may return values that do not depend on the cotangents (flax's fp8 ops
# return the new scales and amax histories as the gradients of the old ones).
transposed_without_cotangents: set = set()


def backward_pass(linear: ClosedProgram, cts_out):
    """Transpose a linear Program: output cotangents in, input cotangents (maybe Zero) out."""
    prog = linear.program
    primal_env = {v.id: x for v, x in zip(prog.constvars, linear.consts, strict=True)}
    ct_env: dict[int, object] = {}

    def write_ct(atom, ct):
        if ct is None or type(ct) is Zero or isinstance(atom, Literal):
            return
        prev = ct_env.get(atom.id)
        ct_env[atom.id] = ct if prev is None else add_tangents(prev, ct)

    def read_in(atom):
        if isinstance(atom, Literal):  # a weak literal stays weak, as when evaluated
            return literal_operand(atom)
        if atom.id in primal_env:
            return primal_env[atom.id]
        return UndefinedPrimal(atom.aval)

    for v, ct in zip(prog.outvars, cts_out, strict=True):
        write_ct(v, ct)
    for eqn in reversed(prog.eqns):
        cts = [ct_env.pop(v.id, None) for v in eqn.outvars]
        if all(c is None for c in cts) and eqn.prim not in transposed_without_cotangents:
            continue
        cts = [Zero(v.aval) if c is None else _typed_ct(c, v.aval)
               for v, c in zip(eqn.outvars, cts, strict=True)]
        rule = transpose_rules.get(eqn.prim)
        if rule is None:
            raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                      f"'{eqn.prim.name}' not implemented")
        invals = [read_in(a) for a in eqn.inputs]
        cts_in = rule(cts if eqn.prim.multiple_results else cts[0], *invals, **eqn.params)
        for a, x, ct in zip(eqn.inputs, invals, cts_in, strict=True):
            if is_undefined(x):
                write_ct(a, ct)
    return [ct_env.get(v.id, Zero(v.aval)) for v in prog.invars]


def _typed_ct(ct, aval):
    """With check_vma, a cotangent varies along the axes its primal does (JAX types a seed
    such as grad's ones so; a loop's transposed carry must keep its type)."""
    if not vma_checked() or type(ct) is Zero or not getattr(aval, "vma", None):
        return ct
    missing = aval.vma - vma_of(ct)
    return pvary_p.bind(ct, axes=ordered_axes(missing)) if missing else ct


def vjp_flat(fun: Callable, primals):
    """Returns (primal outs, pullback taking output cotangents to input cotangents)."""
    primals_out, linear = linearize_flat(fun, primals)

    def pullback(cts_out):
        return backward_pass(linear, cts_out)

    return primals_out, pullback


# ---------------------------------------------------------------- transforming Programs

_jvp_program_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jvp_program(closed: ClosedProgram, nonzeros: tuple) -> ClosedProgram:
    """A Program computing (primal outs, tangent outs) from (primals, nonzero tangents)."""
    return _jvp_programs(closed, nonzeros, True)[0]


def jvp_program_nonzero(closed: ClosedProgram, nonzeros: tuple):
    """(Program, out_nonzeros): as jvp_program, but the Program returns only the tangents that
    are not symbolically zero (JAX's jvp_jaxpr with instantiate=False); out_nonzeros says which
    outputs have one."""
    return _jvp_programs(closed, nonzeros, False)


def _jvp_programs(closed, nonzeros, instantiate_all):
    per_prog = _jvp_program_cache.setdefault(closed, {})
    cached = per_prog.get((nonzeros, instantiate_all))
    if cached is not None:
        return cached
    n = len(closed.in_avals)
    tan_avals = [tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros, strict=True) if nz]
    out_nonzeros = []

    def fun(*args):
        primals, tans = list(args[:n]), iter(args[n:])
        tangents = [next(tans) if nz else Zero(tangent_aval(a))
                    for a, nz in zip(closed.in_avals, nonzeros, strict=True)]
        from gpuarr.core import eval_closed
        outs_p, outs_t = jvp_flat(lambda *xs: eval_closed(closed, *xs), primals, tangents)
        out_nonzeros[:] = [instantiate_all or type(t) is not Zero for t in outs_t]
        return outs_p + [instantiate(t) for t, nz in zip(outs_t, out_nonzeros) if nz]

    result = pe.trace_to_program(fun, list(closed.in_avals) + tan_avals), tuple(out_nonzeros)
    per_prog[(nonzeros, instantiate_all)] = result
    return result


# JAX's names for the rule tables and helpers (jax.interpreters.ad), for rules that libraries
# register on their own primitives: same signatures as jvp_rules and transpose_rules.
class _PrimitiveJVPs(dict):
    """`jax.interpreters.ad.primitive_jvps`: a rule set here goes into `jvp_rules`, called
    with its primals and tangents as tuples, as JAX passes them (a rule may use them as a
    pytree prefix, equinox's vmapped primitives do)."""

    def __setitem__(self, prim, rule):
        def adapted(primals, tangents, **params):
            return rule(tuple(primals), tuple(tangents), **params)
        jvp_rules[prim] = adapted

    def __getitem__(self, prim):
        return jvp_rules[prim]

    def __contains__(self, prim):
        return prim in jvp_rules

    def get(self, prim, default=None):
        return jvp_rules.get(prim, default)


primitive_jvps = _PrimitiveJVPs()
primitive_transposes = transpose_rules
instantiate_zeros = instantiate
is_undefined_primal = is_undefined
Zero.from_primal_value = staticmethod(Zero.from_primal)
