"""Extended dtypes on the physical data: Programs over avals of a user-defined extended dtype
(flax's `fm32`, whose rules give a float32 element) rewritten over what backends store.

An aval of an extended dtype is the type the transformations see: its cotangents add with the
dtype's `_rules.add`, its zeros come from `_rules.zero`. Backends never see one: before a
Program is compiled (jit) or an equation runs eagerly, `physicalize` traces it again with every
such aval replaced by `core.physical_aval` (the element's physical aval with the array's shape
in front). Conversions to and from the dtype are the identity on the physical data, and
operations that only move or shape data (`STRUCTURAL`) are the same operation on it, with
rules in `physical_rules` (filled by lax) where parameters change; control flow and calls
are bound again with their sub-programs physicalized; custom_jvp and custom_vjp calls are
their primal Program, inlined. Any other operation on such a value is JAX's TypeError
(`check_operands`)."""
from __future__ import annotations

import weakref
from collections.abc import Callable

from gpuarr import dtypes
from gpuarr.core import (
    ClosedProgram,
    Literal,
    Primitive,
    Program,
    ShapedArray,
    _weak_operand,
    has_extended_dtype,
    is_extended_dtype,
    physical_aval,
    physical_element_aval,
    subprograms,
)

# prim -> rule(in_avals, out_avals, *physical_args, **params) -> list of physical outputs.
physical_rules: dict[Primitive, Callable] = {}

# prim -> the name of its dtype parameter, for primitives that can make a value of an
# extended dtype from plain ones (convert_element_type): eager evaluation looks there.
dtype_params: dict[Primitive, str] = {}

# Primitives that move or shape data without computing on it: they accept operands of an
# extended dtype, as JAX's do, and on the physical data (a scalar element) they are the same
# primitive.
STRUCTURAL = frozenset((
    "broadcast_in_dim", "reshape", "transpose", "squeeze", "concatenate", "slice",
    "dynamic_slice", "dynamic_update_slice", "select_n", "rev", "gather", "scatter", "pad",
    "optimization_barrier"))

# Structural primitives whose parameters name only leading axes: the same on physical data
# whose element has axes of its own (they trail). The others of STRUCTURAL either have a
# rule in physical_rules or take extended dtypes with a scalar element only.
_LEADING_AXES_ONLY = frozenset(("concatenate", "rev", "squeeze"))

# The linear part of a custom_vjp function, staged by reverse mode and transposed (into its
# `bwd`) before anything is compiled: its operands may be of any type.
_LINEAR_CALLS = frozenset(("custom_lin",))

# Calls whose primal Program is what they compute: inlined on the physical data.
_INLINED = frozenset(("custom_jvp_call", "custom_vjp_call"))


def check_operands(prim: Primitive, avals, params) -> None:
    """JAX's TypeError when `prim` computes on an operand of an extended dtype: such values
    only move through shape operations, conversions, calls and control flow."""
    for a in avals:
        if isinstance(a.dtype, dtypes.ExtendedDType) and has_extended_dtype(a):
            break
    else:
        return
    if prim.name in STRUCTURAL or prim.name in _LINEAR_CALLS or prim in physical_rules or next(
            subprograms(params), None) is not None:
        return
    raise TypeError(f"{prim.name} does not accept dtype {a.dtype.name}: values of an extended "
                    "dtype only move through shape operations and control flow. Convert them "
                    "with lax.convert_element_type to compute on them.")


_HAS_EXTENDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def has_extended(prog: Program) -> bool:
    """Whether `prog` (or a Program inside it) has a value of an extended dtype."""
    found = _HAS_EXTENDED.get(prog)
    if found is None:
        found = _HAS_EXTENDED[prog] = _scan_for_extended(prog)
    return found


def _scan_for_extended(prog: Program) -> bool:
    if any(map(has_extended_dtype, (v.aval for v in prog.constvars + prog.invars))):
        return True
    for eqn in prog.eqns:
        if any(has_extended_dtype(v.aval) for v in eqn.outvars):
            return True
        for sub in subprograms(eqn.params):
            if has_extended(sub.program if isinstance(sub, ClosedProgram) else sub):
                return True
    return False


_PHYSICAL: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def physicalize(closed: ClosedProgram) -> ClosedProgram:
    """`closed` over the physical data of its extended-dtype values (itself when it has
    none): what a backend compiles."""
    if not has_extended(closed.program):
        return closed
    out = _PHYSICAL.get(closed)
    if out is None:
        from gpuarr.interpreters import partial_eval as pe  # which imports this module
        consts = [physical_value(c) for c in closed.consts]
        out = pe.trace_to_program(
            lambda *args: eval_physical(closed.program, consts, args),
            [physical_aval(a) for a in closed.in_avals])
        _PHYSICAL[closed] = out
    return out


def physical_value(x):
    """The physical data of a value of an extended dtype (an EArray's data); others as they
    are."""
    data = getattr(x, "_extended_data", None)
    return x if data is None else data


def eval_physical(prog: Program, consts, args) -> list:
    """Evaluate `prog` on physical values by binding each equation on the current trace:
    equations that touch an extended dtype through `bind_physical`, the others as they are."""
    env: dict = {}

    def read(a):
        if type(a) is Literal:
            return _weak_operand(a) if a.aval.weak_type else a.val
        return env[a.id]

    for v, x in zip(prog.constvars, consts, strict=True):
        env[v.id] = x
    for v, x in zip(prog.invars, args, strict=True):
        env[v.id] = x
    for eqn in prog.eqns:
        vals = [read(a) for a in eqn.inputs]
        in_avals = [a.aval for a in eqn.inputs]
        out_avals = [v.aval for v in eqn.outvars]
        if any(map(has_extended_dtype, in_avals + out_avals)) or _has_extended_sub(eqn.params):
            outs = bind_physical(eqn.prim, vals, in_avals, out_avals, eqn.params)
        else:
            outs = eqn.prim.bind(*vals, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs, strict=True):
            env[v.id] = x
    return [read(a) for a in prog.outvars]


def _has_extended_sub(params) -> bool:
    return any(has_extended(s.program if isinstance(s, ClosedProgram) else s)
               for s in subprograms(params))


def bind_physical(prim: Primitive, args, in_avals, out_avals, params) -> list:
    """Bind the physical form of `prim[params]` (whose logical operand and result avals are
    `in_avals`, `out_avals`) on the physical values `args`; a list of physical results."""
    rule = physical_rules.get(prim)
    if rule is not None:
        return rule(in_avals, out_avals, *args, **params)
    if prim.name in _INLINED:
        call = params["call_jaxpr"]
        return eval_physical(call.program, [physical_value(c) for c in call.consts], args)
    if prim.name in STRUCTURAL and prim.name not in _LEADING_AXES_ONLY:
        for a in (*in_avals, *out_avals):
            if has_extended_dtype(a) and physical_element_aval(a.dtype).shape:
                raise NotImplementedError(
                    f"{prim.name} on an extended dtype whose element is not a scalar "
                    f"({a.dtype.name}: {physical_element_aval(a.dtype).str_short()}); only "
                    "extended dtypes with a scalar physical element are supported.")
    out = prim.bind(*args, **{k: _physical_param(v) for k, v in params.items()})
    return list(out) if prim.multiple_results else [out]


def _physical_param(v):
    if isinstance(v, ClosedProgram):
        return physicalize(v)
    if isinstance(v, Program):
        if not has_extended(v):
            return v
        closed = physicalize(ClosedProgram(v, []))
        if closed.consts:
            raise NotImplementedError("an open sub-program whose physical form has constants")
        return closed.program
    if isinstance(v, tuple):
        return tuple(_physical_param(w) for w in v)
    if isinstance(v, list):
        return [_physical_param(w) for w in v]
    if is_extended_dtype(v):
        return physical_element_aval(v).dtype
    if isinstance(v, ShapedArray):
        return physical_aval(v)
    return v
