"""The core: abstract values, primitives, the Program IR, and traces with `bind`.

Tracing is "stackless" (as in today's JAX): a context holds the *current* trace, and
`bind` hands every primitive application to it. A trace treats its own tracers as
values it understands and anything else (arrays, tracers of enclosing traces) as
constants; it does its own work by binding primitives on its parent trace. Nesting
transformations is therefore just a chain of parents, and a tracer can never be
confused with one from another transformation of the same kind.
"""
from __future__ import annotations

import collections
import itertools
import os
import re
import sys
import threading
import weakref
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from gpuarr import dtypes
from gpuarr import pretty_printer as pp
from gpuarr.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from gpuarr.sharding.mesh import empty_abstract_mesh
from gpuarr.sharding.partition_spec import PartitionSpec
from gpuarr.sharding.shardings import NamedSharding

# ---------------------------------------------------------------- abstract values


class AbstractValue:
    """The base class of abstract values (JAX's `core.AbstractValue`)."""

    __slots__ = ()


class ShapedArray(AbstractValue):
    """The abstract value of an array: shape, dtype, whether its dtype is weak, and inside a
    shard_map body with check_vma the manual mesh axes it varies along (`vma`, JAX's
    `aval.mat.varying`; empty everywhere else)."""

    __slots__ = ("shape", "dtype", "weak_type", "vma", "_hash")

    def __init__(self, shape, dtype, weak_type: bool = False, *, sharding=None,
                 manual_axis_type=None, memory_space=None, vma=frozenset()):
        # JAX's keywords are accepted for the types libraries build from a value's own
        # (`x.aval.sharding`): gpuarr's types carry no mesh axes, so they are not kept.
        del sharding, manual_axis_type, memory_space
        self.shape = tuple(shape)
        # An extended dtype (dtypes.ExtendedDType: flax's fm32) is kept as it is.
        self.dtype = dtype if isinstance(dtype, (np.dtype, dtypes.ExtendedDType)) \
            else np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self.vma = vma if type(vma) is frozenset else frozenset(vma)
        self._hash = None

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def update(self, shape=None, dtype=None, weak_type=None, vma=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type,
                           vma=self.vma if vma is None else vma)

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def to_tangent_aval(self) -> ShapedArray:
        """The type of this value's tangents (and cotangents): itself for inexact dtypes,
        float0 of its shape otherwise, weak type kept, as JAX's aval method."""
        if dtypes.is_float(self.dtype) or dtypes.is_complex(self.dtype):
            return self
        return ShapedArray(self.shape, dtypes.float0, self.weak_type, vma=self.vma)

    to_ct_aval = to_tangent_aval
    at_least_vspace = to_tangent_aval  # JAX's older name, still read by libraries

    @property
    def sharding(self):
        """The sharding in the type, as JAX reports it for a value over no mesh axes: a
        NamedSharding of the empty abstract mesh, no dimension split (gpuarr's types carry no
        mesh axes; an Array's own `.sharding` says where it lives)."""
        return NamedSharding(empty_abstract_mesh, PartitionSpec(*[None] * len(self.shape)))

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type
                and self.vma == other.vma)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.shape, self.dtype, self.weak_type, self.vma))
        return self._hash

    def _vma_str(self) -> str:  # JAX's `{V:i,j}` suffix, the axes in mesh order
        if not self.vma:
            return ""
        order = _vma_ctx.axes or ()
        names = [n for n in order if n in self.vma] + sorted(map(str, self.vma - set(order)))
        return "{V:" + ",".join(map(str, names)) + "}"

    def str_short(self) -> str:
        return (f"{dtypes.short_dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"
                + self._vma_str())

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return (f"ShapedArray({self.dtype.name}[{','.join(map(str, self.shape))}]"
                f"{self._vma_str()}{weak})")

    def __str__(self):  # as JAX prints a type in messages: ~float32[2,3] (~ marks weak types)
        return (f"{'~' if self.weak_type else ''}{self.dtype.name}"
                f"[{','.join(map(str, self.shape))}]{self._vma_str()}")


def is_extended_dtype(dt) -> bool:
    """Whether `dt` is an extended dtype with rules of its own (JAX's
    `isinstance(dt, dtypes.ExtendedDType)` for a user-defined one such as flax's `fm32`); key
    dtypes, whose arrays are pytrees of their data, are not."""
    return isinstance(dt, dtypes.ExtendedDType) and hasattr(dt, "_rules")


def physical_element_aval(dtype) -> ShapedArray:
    """The aval of one element's physical data for an extended dtype (its rules'
    `physical_element_aval`: float32[] for flax's fm32); a NumPy dtype is its own."""
    if is_extended_dtype(dtype):
        return dtype._rules.physical_element_aval(dtype)
    return ShapedArray((), dtype)


def physical_aval(aval):
    """The aval backends store for `aval` (JAX's `core.physical_aval`): for an extended
    dtype, the element's physical aval with `aval`'s shape in front; others are their own."""
    if isinstance(aval, ShapedArray) and is_extended_dtype(aval.dtype):
        elt = physical_element_aval(aval.dtype)
        return ShapedArray((*aval.shape, *elt.shape), elt.dtype, aval.weak_type)
    return aval


def has_extended_dtype(aval) -> bool:
    """Whether `aval` is of a user-defined extended dtype (one with rules: fm32)."""
    return is_extended_dtype(getattr(aval, "dtype", None))


def get_aval(x) -> ShapedArray:
    """The abstract value of a tracer, Array, NumPy value or Python scalar (or of a type in
    `pytype_aval_mappings`)."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval
    if isinstance(x, (np.ndarray, np.generic)):  # first: np.float64 is also a Python float
        return _ndarray_aval(x)
    if isinstance(x, (bool, int, float, complex)):
        return _scalar_aval(x)
    for t in type(x).__mro__:
        rule = pytype_aval_mappings.get(t)
        if rule is not None:
            return rule(x)
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid array type; "
                    "pass a gpuarr Array, a NumPy array or a Python scalar.")


def _ndarray_aval(x) -> ShapedArray:
    return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))


def _scalar_aval(x) -> ShapedArray:
    return ShapedArray((), dtypes.dtype(x, canonicalize=True), weak_type=type(x) is not bool)


# type -> fn(value) -> ShapedArray: abstract values by type (JAX's `core.pytype_aval_mappings`,
# also `interpreters.xla.pytype_aval_mappings`), where libraries register array-like types of
# their own; get_aval reads it for types it does not know.
pytype_aval_mappings: dict[type, Callable] = {
    np.ndarray: _ndarray_aval, np.generic: _ndarray_aval,
    bool: _scalar_aval, int: _scalar_aval, float: _scalar_aval, complex: _scalar_aval,
}


def is_concrete(x) -> bool:
    return not isinstance(x, Tracer)


# ---------------------------------------------------------------- primitives


class Primitive:
    """A named operation. What it means lives in the rule tables of each transformation."""

    __slots__ = ("name", "multiple_results", "effectful")

    def __init__(self, name: str, multiple_results: bool = False, effectful: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.effectful = effectful

    def bind(self, *args, **params):
        if _vma_ctx.axes is not None and len(args) > 1:
            args = _insert_pvary(self, args, params)
        return _ctx.trace.process_primitive(self, args, params)

    def get_bind_params(self, params):
        """The parameters to bind this primitive with, given an equation's (JAX's hook for
        interpreters of jaxprs such as equinox's; the same parameters here)."""
        return params

    def __repr__(self):
        return self.name


# Rule tables owned by the core. The other tables live with their transformation:
# impls.impl_rules, ad.jvp_rules, ad.transpose_rules, batching.batch_rules,
# partial_eval.partial_eval_rules, compiler.lowering.kernel_rules; the NumPy backend's
# code-generation rules in backends.numpy.codegen.
abstract_eval_rules: dict[Primitive, Callable[..., list[ShapedArray]]] = {}
# weak_type of each output in eager mode, where no abstract evaluation happens.
weak_type_rules: dict[Primitive, Callable[..., bool]] = {}
# Binary elementwise primitives: operands of unequal nonzero ranks are an error, which NumPy's
# broadcasting would hide from eager evaluation.
rank_checked_prims: set[Primitive] = set()
# Names of the primitives XLA's cost analysis counts as transcendental: each element costs many
# arithmetic operations (stages.cost_analysis counts them; the NumPy backend sizes passes by it).
TRANSCENDENTAL_PRIMS = frozenset((
    "exp", "exp2", "expm1", "log", "log1p", "logistic", "pow", "sqrt", "rsqrt", "cbrt", "tanh",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh",
    "atanh", "erf", "erfc", "erf_inv", "lgamma", "digamma"))


def default_weak_type_rule(*args, **params) -> bool:
    for a in args:  # a loop, not all(...): this runs on every eager op
        weak = getattr(a, "weak_type", None)
        if not (weak or (weak is None and type(a) in (int, float, complex))):
            return False  # Python numbers are weakly typed (bool is not), as in get_aval
    return True


# ---------------------------------------------------------------- the Program IR

_var_ids = itertools.count()


class Var:
    """A typed variable of a Program. Named only when printed."""

    __slots__ = ("aval", "id")

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.id = next(_var_ids)

    def __repr__(self):
        return f"Var({self.id}:{self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in a Program. `shown` is the Python float it came from,
    if any: JAX prints that (0.1, not the float32 0.10000000149011612)."""

    __slots__ = ("val", "aval", "shown")

    def __init__(self, val, aval: ShapedArray, shown: float | None = None):
        self.val = val
        self.aval = aval
        self.shown = shown

    def __repr__(self):
        return f"Literal({self.val!r})"


Atom = Var | Literal


class SourceInfo(NamedTuple):
    file: str
    line: int
    function: str

    def __str__(self):
        return f"{self.file}:{self.line} ({self.function})"


class Eqn(NamedTuple):
    """`outvars = prim[params](inputs)`."""

    prim: Primitive
    inputs: list
    params: dict
    outvars: list
    source_info: SourceInfo | None = None

    # JAX's names for the fields (JaxprEqn), which interpreters of jaxprs read.
    primitive = property(lambda self: self.prim)
    invars = property(lambda self: self.inputs)

    @property
    def effects(self) -> frozenset:
        """JAX's set of the equation's effects: gpuarr tells only whether there is one (a
        callback, a print, a check), so an effectful equation has the one SIDE_EFFECT."""
        return _EFFECTFUL if self.prim.effectful or _has_effectful_subprogram(self) else _PURE


class SideEffect:
    """The effect of an effectful equation (JAX's `Effect`; gpuarr has one kind)."""

    def __repr__(self):
        return "SideEffect"


SIDE_EFFECT = SideEffect()
_EFFECTFUL, _PURE = frozenset((SIDE_EFFECT,)), frozenset()


class Program:
    """A typed, closed-over-nothing list of equations (JAX's jaxpr)."""

    __slots__ = ("constvars", "invars", "eqns", "outvars", "__weakref__")

    def __init__(self, constvars, invars, eqns, outvars):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    @property
    def effectful(self) -> bool:
        return any(e.prim.effectful or _has_effectful_subprogram(e) for e in self.eqns)

    def pretty(self, source_info: bool = False) -> str:
        return pp_program(self, source_info=source_info)

    def __str__(self):
        return pp_program(self)

    __repr__ = __str__


class ClosedProgram:
    """A Program together with the values of its constvars."""

    __slots__ = ("program", "consts", "__weakref__")

    def __init__(self, program: Program, consts):
        self.program = program
        self.consts = list(consts)

    in_avals = property(lambda self: self.program.in_avals)
    out_avals = property(lambda self: self.program.out_avals)
    eqns = property(lambda self: self.program.eqns)
    jaxpr = property(lambda self: self.program)  # JAX's name (ClosedJaxpr.jaxpr)
    literals = property(lambda self: self.consts)

    def pretty(self, source_info: bool = False) -> str:
        return pp_program(self.program, source_info=source_info)

    def __str__(self):
        return pp_program(self.program)

    __repr__ = __str__


def subprograms(params: dict):
    """The Programs and ClosedPrograms held in an equation's params (control flow, jit)."""
    for v in params.values():
        if isinstance(v, (Program, ClosedProgram)):
            yield v
        elif isinstance(v, (tuple, list)):
            for w in v:
                if isinstance(w, (Program, ClosedProgram)):
                    yield w


def _has_effectful_subprogram(eqn) -> bool:
    for sub in subprograms(eqn.params):
        prog = sub.program if isinstance(sub, ClosedProgram) else sub
        if prog.effectful:
            return True
    return False


# ---------------------------------------------------------------- printing


def _var_names():
    letters = "abcdefghijklmnopqrstuvwxyz"
    for n in itertools.count(1):
        for combo in itertools.product(letters, repeat=n):
            if n > 1 and combo[0] == "a":
                continue
            yield "".join(combo)


class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.shared: dict[int, str] = {}  # id(Program) -> its `let` name
        self.gen = _var_names()

    def __call__(self, atom) -> str:
        if isinstance(atom, Literal):
            return _pp_literal(atom)
        name = self.names.get(atom.id)
        if name is None:
            name = self.names[atom.id] = next(self.gen)
        return name

    def binder(self, var) -> str:
        return f"{self(var)}:{var.aval.str_short()}"


def _pp_literal(lit: Literal) -> str:
    val = np.asarray(lit.val)
    if val.dtype == np.bool_:
        text = "True" if bool(val) else "False"
    elif val.dtype.kind in "iu":
        text = str(int(val))
    elif lit.shown is not None:
        text = repr(lit.shown)
    elif val.dtype.kind == "f" or val.dtype.name == "bfloat16":
        text = repr(float(val))
    else:
        text = str(val.item() if val.ndim == 0 else val)
    return f"{text}:{lit.aval.str_short()}"


# A break between variables is its own group: the list fills each line and wraps (two columns
# in) only once a line has reached the width.
_VAR_SEP = pp.concat(pp.text(""), pp.group(pp.brk()))
_OUT_SEP = pp.concat(pp.text(","), pp.group(pp.brk()))


def _vars_doc(names, sep=_VAR_SEP):
    return pp.nest(2, pp.join(sep, [pp.text(n) for n in names]))


# ---- equation parameters

class ParamPrinting(NamedTuple):
    """How one primitive's equation parameters print, as JAX's printing rules for it do.

    Parameters print sorted by name, after those named in `first`. `hidden` ones never print
    (the output type implies them), `hidden_if_none` ones not when None, `hidden_if_empty` ones
    not when empty, zero or False; `as_lists` ones print their innermost tuples as lists.
    `unsharded` names JAX's sharding parameters, which gpuarr's primitive does not carry (it
    places no shardings inside programs): they print as None, as JAX prints them unsharded.
    `name` is the name JAX's primitive prints with, where it differs; `extra(eqn)` gives
    parameters JAX's primitive carries and gpuarr's does not need (a dict), printed with the
    rest.
    """
    first: tuple = ()
    hidden: tuple = ()
    hidden_if_none: tuple = ()
    hidden_if_empty: tuple = ()
    as_lists: tuple = ()
    unsharded: tuple = ()
    name: str | None = None
    extra: Callable | None = None


param_printing: dict[str, ParamPrinting] = {
    "dot_general": ParamPrinting(hidden_if_none=("precision", "preferred_element_type"),
                                 as_lists=("dimension_numbers",)),
    "broadcast_in_dim": ParamPrinting(hidden=("shape",), hidden_if_empty=("broadcast_dimensions",)),
    "reduce_sum": ParamPrinting(unsharded=("out_sharding",)),
    "reshape": ParamPrinting(unsharded=("sharding",)),
    "iota": ParamPrinting(unsharded=("sharding",)),
    "jit": ParamPrinting(first=("name",)),
    "custom_jvp_call": ParamPrinting(first=("name",), hidden_if_empty=("num_consts",)),
    "custom_vjp_call": ParamPrinting(first=("name",)),
    "custom_lin": ParamPrinting(hidden=("out_avals",)),
    "check": ParamPrinting(hidden=("err_tree",)),
}


def _innermost_as_lists(value):
    if isinstance(value, (tuple, list)):
        if any(isinstance(v, (tuple, list)) for v in value):
            return tuple(_innermost_as_lists(v) for v in value)
        return list(value)
    return value


def _is_empty(value) -> bool:
    return value is None or (not isinstance(value, np.ndarray) and not value)


def _shown_params(eqn: Eqn) -> list:
    """The (name, value) pairs an equation prints, in order."""
    params = eqn.params
    rule = param_printing.get(eqn.prim.name)
    if rule is None:
        return [(k, params[k]) for k in sorted(params)]
    shown = {}
    for k, v in params.items():
        if (k in rule.hidden or (k in rule.hidden_if_none and v is None)
                or (k in rule.hidden_if_empty and _is_empty(v))):
            continue
        shown[k] = _innermost_as_lists(v) if k in rule.as_lists else v
    shown.update((k, None) for k in rule.unsharded)
    if rule.extra is not None:
        shown.update(rule.extra(eqn))
    order = [k for k in rule.first if k in shown]
    order += sorted(k for k in shown if k not in rule.first)
    return [(k, shown[k]) for k in order]


_ADDRESS = re.compile(r" at 0x([0-9a-fA-F]+)")


def _pp_value(value) -> str:
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    if isinstance(value, frozenset):
        try:
            items = sorted(value)
        except TypeError:
            items = list(value)
        return f"frozenset({{{', '.join(repr(e) for e in items)}}})"
    text = str(value)
    if " at 0x" in text:  # addresses change from run to run; JAX masks them too
        text = _ADDRESS.sub(lambda m: " at 0x" + "X" * len(m.group(1)), text)
    return text


def _param_doc(value, namer, source_info):
    if isinstance(value, (Program, ClosedProgram)):
        prog = value.program if isinstance(value, ClosedProgram) else value
        if id(prog) in namer.shared:
            return pp.text(namer.shared[id(prog)])
        return _program_doc(prog, namer, source_info)
    if isinstance(value, (tuple, list)) and any(isinstance(v, (Program, ClosedProgram))
                                                for v in value):  # `(` one a line `)`
        items = pp.join(pp.brk(), [_param_doc(v, namer, source_info) for v in value])
        return pp.group(pp.concat(pp.nest(2, pp.concat(pp.text("("), pp.brk(""), items)),
                              pp.brk(""), pp.text(")")))
    return pp.text(_pp_value(value))


def _params_doc(pairs):
    """`[k=v k=v]`, or when that does not fit, one `k=v` a line and `]` on its own line."""
    if not pairs:
        return pp.NIL
    return pp.group(pp.concat(pp.nest(2, pp.concat(pp.text("["), pp.brk(""), pp.join(pp.brk(), pairs))),
                          pp.brk(""), pp.text("]")))


# ---- equations and programs

def _eqn_parts(outs, note, name, params, args):
    lhs = _vars_doc(outs) if outs else pp.text("_")
    rhs = pp.concat(pp.text(" "), _vars_doc(args))  # JAX keeps the space with no operands
    return pp.concat(lhs, pp.text(" = ", note), pp.text(name), params, rhs)


def _eqn_doc(eqn: Eqn, namer: _Namer, source_info: bool):
    # Every break in an equation sits in a group of its own, so grouping the whole changes no
    # layout: it only lets an equation that fits on its line be written out in one step.
    note = str(eqn.source_info) if source_info and eqn.source_info is not None else None
    rule = param_printing.get(eqn.prim.name)
    name = rule.name if rule is not None and rule.name else eqn.prim.name
    items = _shown_params(eqn)
    if items and next(subprograms(dict(items)), None) is not None:
        # Named in JAX's order: jit's aliases (which name some results), the results, then
        # the called Programs and the operands.
        _alias_nested(eqn, namer)
        outs = [namer.binder(v) for v in eqn.outvars]
        params = _params_doc([pp.concat(pp.text(f"{k}="), _param_doc(v, namer, source_info))
                              for k, v in items])
        args = [namer(a) for a in eqn.inputs]
        return pp.group(_eqn_parts(outs, note, name, params, args))
    outs = [namer.binder(v) for v in eqn.outvars]
    pairs = [f"{k}={_pp_value(v)}" for k, v in items]
    args = [namer(a) for a in eqn.inputs]
    flat = (f"{' '.join(outs) or '_'} = {name}{'[' + ' '.join(pairs) + ']' if pairs else ''}"
            f" {' '.join(args)}")
    return pp.line(flat, note, lambda: _eqn_parts(outs, note, name,
                                                _params_doc([pp.text(p) for p in pairs]), args))


def pp_eqn(eqn: Eqn, namer: _Namer, indent: int = 0, source_info: bool = False,
           width: float = float("inf")) -> str:
    """One equation, its first line unindented, laid out from column `indent`.

    By default there is no width limit, so the equation takes one line, any Programs it holds
    included (kernel comments quote equations this way); `make_jaxpr`'s printing lays
    equations out at width 80.
    """
    return pp.render(_eqn_doc(eqn, namer, source_info), indent, width)


def _alias_nested(eqn: Eqn, namer: _Namer) -> None:
    """Name a called Program's inputs and outputs after the equation's (as JAX prints jit)."""
    if eqn.prim.name != "jit":  # control-flow bodies keep their own names, as in JAX
        return
    for sub in subprograms(eqn.params):
        prog = sub.program if isinstance(sub, ClosedProgram) else sub
        if id(prog) in namer.shared:  # printed on its own, `let name = ...`, with its own names
            continue
        if len(prog.invars) == len(eqn.inputs) and len(prog.outvars) == len(eqn.outvars):
            _suggest_same_names(namer, prog.invars, eqn.inputs)
            _suggest_same_names(namer, prog.outvars, eqn.outvars)


def _suggest_same_names(namer: _Namer, inner, outer) -> None:
    """Each inner Var not yet named takes its outer Var's name (named now if it is not yet),
    each outer Var lending its name once: an input passed twice names one inner input."""
    lent = set()
    for i, o in zip(inner, outer):
        if isinstance(o, Var) and o.id not in lent and isinstance(i, Var) \
                and i.id not in namer.names:
            lent.add(o.id)
            namer.names[i.id] = namer(o)


def _program_doc(prog: Program, namer: _Namer, source_info: bool):
    consts = _vars_doc([namer.binder(v) for v in prog.constvars])
    ins = _vars_doc([namer.binder(v) for v in prog.invars])
    eqns = [_eqn_doc(e, namer, source_info) for e in prog.eqns]
    names = [namer(v) for v in prog.outvars]
    outs = pp.concat(pp.text("("), _vars_doc(names, _OUT_SEP), pp.text(",)" if len(names) == 1 else ")"))
    # As JAX lays a jaxpr out: the whole on one line when it fits (equations separated by
    # "; "), else each equation on its own line.
    body = pp.concat(pp.text("let"), pp.nest(2, pp.concat(pp.brk(), pp.join(pp.brk("; "), eqns))),
                     pp.brk(), pp.text("in "), outs)
    head = pp.concat(pp.text("{ lambda "), consts, pp.text("; "), ins, pp.text(". "), body)
    return pp.group(pp.concat(pp.nest(2, head), pp.text(" }")))


def pp_program(prog: Program, indent: int = 0, source_info: bool = False, namer=None) -> str:
    """Write `prog` in JAX's jaxpr syntax: `{ lambda a:f32[3]; b:f32[]. let ... in (c,) }`."""
    if namer is None:
        namer = _Namer()
        namer.names.update((v.id, "_") for v in _unused_outvars(prog))
        shared = _shared_programs(prog)
        namer.shared.update((id(sub), name) for name, sub in shared)
        lets = [pp.concat(pp.text(f"let {name} = "), _program_doc(sub, namer, source_info),
                          pp.text(" in"), pp.brk()) for name, sub in shared]
        return pp.render(pp.concat(*lets, _program_doc(prog, namer, source_info)), indent)
    return pp.render(_program_doc(prog, namer, source_info), indent)


def _shared_programs(prog: Program) -> list:
    """[(name, Program)] to print first as `let name = { ... } in`, as JAX does: the called
    Programs that are reached more than once, or that have more than ten equations. They are
    named after the jit that calls them, else `jaxpr`, with a count to keep names unique."""
    counts, names, queue = collections.Counter(), {}, collections.deque([prog])
    progs = {}
    while queue:
        p = queue.popleft()
        progs[id(p)] = p
        counts[id(p)] += 2 if p is not prog and len(p.eqns) > 10 else 1
        for eqn in p.eqns:
            name = eqn.params.get("name") if eqn.prim.name == "jit" else None
            for sub in subprograms(eqn.params):
                sub = sub.program if isinstance(sub, ClosedProgram) else sub
                queue.append(sub)
                if name is not None:
                    names.setdefault(id(sub), name.strip("<>"))
    shared, taken = [], collections.Counter()
    for key, count in counts.items():
        if count == 1:
            continue
        name = names.get(key, "jaxpr")
        if taken[name]:
            taken[name] += 1
            name += str(taken[name] - 1)
        taken[name] += 1
        shared.append((name, progs[key]))
    return shared


def _unused_outvars(prog: Program) -> list:
    """The equation results nothing reads: JAX prints them as `_` in a top-level jaxpr."""
    used = {v.id for v in prog.outvars if isinstance(v, Var)}
    unused = []
    for eqn in reversed(prog.eqns):
        unused += [v for v in eqn.outvars if v.id not in used]
        used.update(a.id for a in eqn.inputs if isinstance(a, Var))
    return unused


# ---------------------------------------------------------------- type checking


def typecheck_program(prog: Program) -> None:
    """Check that every variable is defined once before use and every equation's types match."""
    env: set[int] = set()

    def define(v):
        if not isinstance(v, Var):
            raise TypeError(f"expected a Var as binder, got {v!r}")
        if v.id in env:
            raise TypeError(f"variable {v!r} is defined twice")
        env.add(v.id)

    def read(a):
        if isinstance(a, Literal):
            return a.aval
        if a.id not in env:
            raise TypeError(f"variable {a!r} is used before it is defined")
        return a.aval

    for v in prog.constvars + prog.invars:
        define(v)
    for eqn in prog.eqns:
        in_avals = [read(a) for a in eqn.inputs]
        rule = abstract_eval_rules.get(eqn.prim)
        if rule is None:
            raise TypeError(f"primitive {eqn.prim.name} has no abstract evaluation rule")
        out_avals = rule(*in_avals, **eqn.params)
        for var, aval in zip(eqn.outvars, out_avals, strict=True):
            if var.aval.strip_weak_type().update(vma=frozenset()) != \
                    aval.strip_weak_type().update(vma=frozenset()):
                raise TypeError(f"{eqn.prim.name}: output type {var.aval.str_short()} does not "
                                f"match the rule's {aval.str_short()}")
        for sub in subprograms(eqn.params):
            typecheck_program(sub.program if isinstance(sub, ClosedProgram) else sub)
        for v in eqn.outvars:
            define(v)
    for a in prog.outvars:
        read(a)


# ---------------------------------------------------------------- traces and tracers


class Trace:
    """Interprets primitive applications; `parent` is the trace its own work is bound on."""

    __slots__ = ("parent", "alive", "__weakref__")

    def __init__(self, parent: Trace | None):
        self.parent = parent
        self.alive = True

    def process_primitive(self, prim: Primitive, args, params):
        raise NotImplementedError

    @property
    def main(self):
        """The trace's identity (JAX's `Trace.main`, which libraries compare with `is` to tell
        their own tracers from others')."""
        return self

    def __repr__(self):
        return type(self).__name__


class _TraceContext(threading.local):
    trace: Trace | None = None


_ctx = _TraceContext()


def current_trace() -> Trace:
    return _ctx.trace


def set_base_trace(trace: Trace) -> None:
    """Install the trace that evaluates primitives eagerly (done once by gpuarr.dispatch)."""
    _ctx.trace = trace
    _TraceContext.trace = trace


@contextmanager
def set_current_trace(trace: Trace):
    prev = _ctx.trace
    _ctx.trace = trace
    try:
        yield trace
    finally:
        _ctx.trace = prev


def find_top_trace(xs) -> Trace:
    """The trace that binding on `xs` would use: the current one, as tracing is stackless."""
    del xs
    return _ctx.trace


class OpaqueTraceState:
    """An identity of a trace that compares equal only for the same live trace."""

    __slots__ = ("_ref",)

    def __init__(self, trace: Trace):
        self._ref = weakref.ref(trace)

    def __eq__(self, other):
        # weakref.ref returns one shared reference per trace, so identities compare equal
        # even after the trace is gone (JAX's OpaqueTraceState compares its trace's weakref).
        return isinstance(other, OpaqueTraceState) and self._ref == other._ref

    def __hash__(self):
        return id(self._ref)


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
    """An opaque, comparable identity of the current trace (libraries check that state they
    captured is used under the same transformation)."""
    del convention
    return OpaqueTraceState(_ctx.trace)


def mapped_aval(size: int, axis, aval: ShapedArray) -> ShapedArray:
    """`aval` with the mapped axis `axis` (of length `size`) removed (None: unchanged)."""
    if axis is None:
        return aval
    shape = list(aval.shape)
    if shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has length "
                         f"{shape[axis]}, not the mapped size {size}")
    del shape[axis]
    return aval.update(shape=tuple(shape))


def unmapped_aval(size: int, axis, aval: ShapedArray, explicit_mesh_axis=None) -> ShapedArray:
    """`aval` with an axis of length `size` inserted at `axis` (None: unchanged)."""
    del explicit_mesh_axis
    if axis is None:
        return aval
    shape = list(aval.shape)
    shape.insert(axis, size)
    return aval.update(shape=tuple(shape))


def valid_jaxtype(x) -> bool:
    """Whether `x` is a value that operations accept (it has an abstract value)."""
    try:
        get_aval(x)
    except TypeError:
        return False
    return True


def bind(prim: Primitive, *args, **params):
    """Apply `prim` to `args` on the current trace."""
    return prim.bind(*args, **params)


# ---------------------------------------------------------------- varying manual axes
#
# JAX's check_vma typing inside a shard_map body: each value's aval carries the manual mesh
# axes it varies along (`ShapedArray.vma`). Where operands varying along different axes meet,
# `pvary` (a per-device no-op whose transpose is a psum) first makes the others vary along
# them too, so reverse-mode AD sums the cotangents of unvarying values over those axes.


class _VmaContext(threading.local):
    axes: tuple | None = None  # the mesh axis names, in order, while vma is checked


_vma_ctx = _VmaContext()
pvary_p = Primitive("pvary")
# prim -> rule(in_avals, **params) -> the vma of each output, for primitives whose outputs do
# not vary where their operands do (collectives); default: the operands' union.
vma_rules: dict[Primitive, Callable] = {}


@contextmanager
def checking_vma(axis_names):
    """Type the values traced inside with the manual mesh axes `axis_names` they vary along
    (JAX's `config._check_vma(True)` while a shard_map body is traced or transformed); None
    turns the typing off (a shard_map body with check_vma=False)."""
    prev = _vma_ctx.axes
    _vma_ctx.axes = None if axis_names is None else tuple(axis_names)
    try:
        yield
    finally:
        _vma_ctx.axes = prev


def vma_checked() -> bool:
    """Whether values traced now carry their varying manual axes (check_vma)."""
    return _vma_ctx.axes is not None


def vma_of(x) -> frozenset:
    """The manual mesh axes `x` varies along (a traced value's; nothing else varies)."""
    return getattr(x.aval, "vma", frozenset()) if isinstance(x, Tracer) else frozenset()


def ordered_axes(axes) -> tuple:
    """`axes` in the order of the mesh whose values are typed now (JAX orders them so)."""
    order = _vma_ctx.axes or ()
    return tuple(n for n in order if n in axes) + tuple(sorted(set(axes) - set(order), key=str))


def _insert_pvary(prim, args, params):
    """JAX's standard_insert_pvary: operands that vary along fewer axes than the others
    `pvary` to them (only traced ones: a constant is the same on every device). Operands of
    control flow are left as they are: its sub-programs were typed with them."""
    if prim is pvary_p:
        return args
    vmas = [vma_of(a) for a in args]
    union = frozenset().union(*vmas)
    if all(v == union for v in vmas) or next(subprograms(params), None) is not None:
        return args
    return tuple(pvary_p.bind(a, axes=ordered_axes(union - v))
                 if isinstance(a, Tracer) and v != union else a for a, v in zip(args, vmas))


def typed_outputs(prim, in_avals, out_avals, params) -> list:
    """`out_avals` with the axes each output varies along (vma_rules, else the operands'
    union; a primitive with sub-programs keeps the types its rule read from them)."""
    rule = vma_rules.get(prim)
    if rule is not None:
        vmas = rule(in_avals, **params)
    elif next(subprograms(params), None) is not None:
        return out_avals
    else:
        vmas = [frozenset().union(*[getattr(a, "vma", frozenset()) for a in in_avals])
                ] * len(out_avals)
    return [a if not isinstance(a, ShapedArray) or a.vma == v else a.update(vma=v)
            for a, v in zip(out_avals, vmas)]


class Tracer:
    """A value being traced. Python operators are installed by gpuarr.numpy."""

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    def to_concrete_value(self):
        """The concrete value behind this tracer, or None when it is abstract."""
        return None

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    # __iter__ (one index_in_dim per row) is installed by gpuarr.lax.slicing, which builds on core.

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(self)

    def _concrete(self, error_cls, fn_name):
        val = self.to_concrete_value()
        if val is None:
            raise error_cls(self, _provenance(self, fn_name))
        return val

    def __bool__(self):
        return bool(self._concrete(TracerBoolConversionError, "bool"))

    def __int__(self):
        return int(self._concrete(ConcretizationTypeError, "int"))  # as JAX (not __index__)

    def __index__(self):
        aval = self.aval
        if aval.ndim or aval.dtype.kind not in "iu":  # whatever the value, as JAX checks first
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        return self._concrete(TracerIntegerConversionError, "__index__").__index__()

    # float() and complex() refuse every tracer, even one with a known value (under grad, say),
    # as in JAX: the result would silently drop out of the transformation.
    def __float__(self):
        raise ConcretizationTypeError(self, _provenance(self, "float"))

    def __complex__(self):
        raise ConcretizationTypeError(self, _provenance(self, "complex"))

    def item(self, *args):
        """The value of a one-element array as a Python scalar: needs a concrete value."""
        return np.asarray(self._concrete(ConcretizationTypeError, "item")).item(*args)

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__}. Traced arrays can't be used as "
                        "dict keys or static arguments; pass a concrete Python value instead.")

    def __setitem__(self, idx, value):
        raise TypeError("JAX arrays are immutable and do not support in-place item assignment. "
                        "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
                        "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

    def __repr__(self):  # the form JAX's documentation shows (SPEC S3)
        aval = self.aval
        shape = ",".join(map(str, aval.shape))
        return f"Traced<ShapedArray({aval.dtype.name}[{shape}])>with<{self._trace!r}>"

    def __str__(self):
        return repr(self)


def _provenance(tracer, fn_name: str) -> str:
    describe = getattr(tracer._trace, "describe_provenance", None)
    origin = describe(tracer) if describe is not None else ""
    if fn_name in ("int", "float", "complex"):  # JAX's pointer to a dtype conversion first
        origin = (f"The problem arose with the `{fn_name}` function. If trying to convert the "
                  f"data type of a value, try using `x.astype({fn_name})` or "
                  f"`jnp.array(x, {fn_name})` instead.\n{origin}")
    return origin


def check_tracer_alive(x: Tracer, use: str = "") -> None:
    """Raise UnexpectedTracerError for a tracer whose transformation has already finished."""
    if not x._trace.alive:
        site = getattr(x._trace, "creation_site", None)
        where = site(x) if site is not None else None
        created = f"\nThe tracer was created by the operation at {where}." if where else ""
        raise UnexpectedTracerError(
            f"Encountered an unexpected tracer. A function transformed by gpuarr had a side effect "
            f"that let a traced value escape (for example by storing it in a global or an object "
            f"attribute), and it was used {use or 'after the transformation finished'}: {x!r}."
            f"{created}\nReturn the value from the transformed function instead of storing it."
        )


# ---------------------------------------------------------------- source locations

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


# Functions that interpret a Program equation by equation (their loop variable is `eqn`):
# what they bind comes from that equation, so it keeps the equation's source location.
_PROGRAM_INTERPRETERS = frozenset({"eval_program", "backward_pass", "checkify_program"})


# Further directories whose frames are not the user's (libraries register theirs through
# source_info_util.register_exclusion / traceback_util.register_exclusion).
excluded_source_paths: list = []


def is_user_file(filename: str) -> bool:
    """Whether a frame of `filename` is the user's: outside gpuarr and every registered
    library directory (JAX's traceback_util.include_filename)."""
    return not filename.startswith(_PKG_DIR) and not (
        excluded_source_paths and filename.startswith(tuple(excluded_source_paths)))


def user_source_info() -> SourceInfo | None:
    """Where the user's code applied the operation being bound now.

    The innermost caller frame outside the gpuarr package (and outside contextlib), unless
    an interpreter of a Program (`eval_program`, `backward_pass`) is reached first: then the
    location of the equation it is evaluating, so transformed Programs (jvp, vmap, inlined
    jit, transposition) keep pointing at the user's line."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        fname = code.co_filename
        if fname.startswith(_PKG_DIR):
            if code.co_name in _PROGRAM_INTERPRETERS:
                eqn = frame.f_locals.get("eqn")
                info = getattr(eqn, "source_info", None)
                if info is not None:
                    return info
        elif not fname.endswith(("contextlib.py", "functools.py")) and not (
                excluded_source_paths and fname.startswith(tuple(excluded_source_paths))):
            return SourceInfo(fname, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


# ---------------------------------------------------------------- evaluating Programs


def _weak_operand(lit: Literal):
    """A weakly typed literal as the Python number it came from, so that binding it again keeps
    the weak type; its NumPy value where no Python number has its dtype (a weak float16)."""
    py = lit.shown if lit.shown is not None else \
        lit.val.item() if hasattr(lit.val, "item") else lit.val
    if type(py) in (int, float, complex) and dtypes.dtype(py, canonicalize=True) == lit.aval.dtype:
        return py
    return lit.val


def literal_operand(lit: Literal):
    """The value an interpreter binds for a literal: a weak one as its Python number, a bool
    as a Python bool (as JAX's interpreters hand literals to rules that test `x is True`),
    others as their NumPy scalar."""
    if lit.aval.weak_type:
        return _weak_operand(lit)
    return bool(lit.val) if lit.aval.dtype == np.bool_ else lit.val


def eval_jaxpr(jaxpr: Program, consts, *args, propagate_source_info: bool = True):
    """Evaluate `jaxpr` with `consts` on `args` under the current trace (JAX's
    jax.core.eval_jaxpr); a list of the outputs."""
    del propagate_source_info  # equations always bind with their own source locations
    return eval_program(jaxpr, consts, args)


def eval_program(prog: Program, consts, args):
    """Evaluate `prog` by binding each equation on the current trace (so it can be traced)."""
    env: dict[int, Any] = {}

    def read(a):
        if type(a) is Literal:
            return literal_operand(a)
        return env[a.id]

    for v, x in zip(prog.constvars, consts, strict=True):
        env[v.id] = x
    for v, x in zip(prog.invars, args, strict=True):
        env[v.id] = x
    for eqn in prog.eqns:
        outs = eqn.prim.bind(*map(read, eqn.inputs), **eqn.params)
        if not eqn.prim.multiple_results:
            outs = (outs,)
        for v, x in zip(eqn.outvars, outs, strict=True):
            env[v.id] = x
    return [read(a) for a in prog.outvars]


def eval_closed(closed: ClosedProgram, *args):
    return eval_program(closed.program, closed.consts, args)


def safe_map(f, *xs):
    return [f(*args) for args in zip(*xs, strict=True)]


def safe_zip(*xs):
    return list(zip(*xs, strict=True))


def unzip2(pairs):
    a, b = [], []
    for x, y in pairs:
        a.append(x)
        b.append(y)
    return a, b
