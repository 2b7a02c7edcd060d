"""Program-to-Program passes run under jit (never on eager ops): algebraic simplification,
constant folding, common-subexpression elimination and dead-code elimination.

`optimize(closed)` runs them in that order. Each pass can be switched off by name with
`set_enabled(name, False)` or the environment variable `GPUARR_DISABLE_PASSES=cse,fold`;
`config.enable_passes = False` switches all of them off. Simplification follows XLA's
algebraic simplifier, so jitted numerics can differ from eager ones exactly where JAX's do:
`log(exp(x))` is `x` (eager `log(exp(100.))` is inf), `log(sqrt(x))` is `0.5 * log(x)`.

Rewrite rules are data: `SIMPLIFY_RULES` maps a primitive name to functions
`rule(eqn, producer) -> replacement or None`, where `producer(atom)` is the equation that
defines `atom` in the rewritten program (None for inputs and literals; also None under
`only_use=True` when `atom` is read anywhere else) and a replacement is an atom or a list of
`(prim, inputs, params)` whose last result replaces the equation's output.
"""
from __future__ import annotations

import math
import os
from collections import Counter
from contextlib import nullcontext

import numpy as np

from gpuarr.backends.float_env import flushing
from gpuarr.config import config
from gpuarr.core import (
    ClosedProgram,
    Eqn,
    Literal,
    Primitive,
    Program,
    ShapedArray,
    Var,
    abstract_eval_rules,
    subprograms,
)
from gpuarr.impls import decompositions, host_impl, impl_rules  # the reference semantics (fold)
from gpuarr.interpreters.partial_eval import trace_to_program

PASSES = ("inline", "simplify", "fold", "cse", "dce")
_enabled = {name: True for name in PASSES}
for _name in os.environ.get("GPUARR_DISABLE_PASSES", "").split(","):
    if _name.strip() in _enabled:
        _enabled[_name.strip()] = False


def set_enabled(name: str, flag: bool) -> None:
    """Switch pass `name` (one of PASSES) on or off for later compilations."""
    if name not in _enabled:
        raise ValueError(f"unknown pass {name!r}; passes are {', '.join(PASSES)}")
    _enabled[name] = bool(flag)


def enabled(name: str) -> bool:
    return bool(config.enable_passes) and _enabled[name]


def _lax():
    from gpuarr.lax import lax
    return lax


# ---- helpers ---------------------------------------------------------------------------------

def _literal_value(atom):
    if isinstance(atom, Literal):
        return np.asarray(atom.val)
    return None


def _is_const(atom, value) -> bool:
    v = _literal_value(atom)
    return v is not None and v.size == 1 and bool(np.all(v == value)) and not (
        v.dtype.kind == "f" and value == 0 and np.signbit(v).any())


def _same_aval(a, b) -> bool:
    return a.aval.shape == b.aval.shape and a.aval.dtype == b.aval.dtype


def make_literal(value, aval: ShapedArray) -> Literal:
    return Literal(np.asarray(value, aval.dtype)[()], ShapedArray((), aval.dtype, aval.weak_type))


# ---- simplification rules (data) -------------------------------------------------------------

def _log_of(eqn, producer):
    p = producer(eqn.inputs[0])
    if p is None:
        return None
    if p.prim.name == "exp":                     # log(exp(x)) -> x
        return p.inputs[0]
    if p.prim.name == "sqrt":                    # log(sqrt(x)) -> 0.5 * log(x)
        x = p.inputs[0]
        half = make_literal(0.5, x.aval)
        return [("log", [x], {}), ("mul", [half, "$0"], {})]
    return None


_NONNEGATIVE = {"exp", "sqrt", "abs", "logistic"}


def _exp_of(eqn, producer):
    p = producer(eqn.inputs[0])
    if p is not None and p.prim.name == "log":   # exp(log(x)) -> x, where x >= 0 is known
        q = producer(p.inputs[0])
        if q is not None and q.prim.name in _NONNEGATIVE:
            return p.inputs[0]
    return None


def _identity_operand(value, commutative):
    def rule(eqn, producer):
        x, y = eqn.inputs
        out = eqn.outvars[0]
        if _is_const(y, value) and _same_aval(x, out):
            return x
        if commutative and _is_const(x, value) and _same_aval(y, out):
            return y
        return None
    return rule


def _involution(eqn, producer):                 # neg(neg(x)) -> x, not(not(x)) -> x
    p = producer(eqn.inputs[0])
    if p is not None and p.prim is eqn.prim:
        return p.inputs[0]
    return None


def _transpose_of(eqn, producer):
    perm = tuple(eqn.params["permutation"])
    if perm == tuple(range(len(perm))):
        return eqn.inputs[0]
    swapped = _swapped_product(perm, producer(eqn.inputs[0], only_use=True))
    if swapped is not None:
        return swapped
    p = producer(eqn.inputs[0])
    if p is not None and p.prim.name == "transpose":
        inner = tuple(p.params["permutation"])
        composed = tuple(inner[i] for i in perm)
        if composed == tuple(range(len(composed))):
            return p.inputs[0]
        return [("transpose", [p.inputs[0]], {"permutation": composed})]
    return None


def _swapped_product(perm, p):
    """transpose(dot(a, b)) -> dot(b, a) where the permutation swaps the two operands' kept
    axes (the weight gradient of reverse-mode AD, written as JAX writes it): no copy."""
    if p is None or p.prim.name != "dot_general":
        return None
    (lc, rc), (lb, rb) = p.params["dimension_numbers"]
    a, b = p.inputs
    n_a, n_b = a.aval.ndim - len(lc), b.aval.ndim - len(rc)
    if lb or rb or perm != tuple(range(n_a, n_a + n_b)) + tuple(range(n_a)):
        return None
    params = dict(p.params, dimension_numbers=((tuple(rc), tuple(lc)), ((), ())))
    return [("dot_general", [b, a], params)]


def _reshape_of(eqn, producer):
    x = eqn.inputs[0]
    if eqn.params.get("dimensions") is not None:
        return None
    if x.aval.shape == eqn.outvars[0].aval.shape:
        return x
    p = producer(x)
    if p is not None and p.prim.name == "reshape" and p.params.get("dimensions") is None:
        inner = p.inputs[0]
        if inner.aval.shape == eqn.outvars[0].aval.shape:
            return inner
        return [("reshape", [inner], dict(eqn.params))]
    return None


def _convert_of(eqn, producer):
    x, out = eqn.inputs[0], eqn.outvars[0]
    if x.aval.dtype == out.aval.dtype and x.aval.weak_type == out.aval.weak_type:
        return x
    return None


def _broadcast_of(eqn, producer):
    x, out = eqn.inputs[0], eqn.outvars[0]
    if x.aval.shape == out.aval.shape:
        return x
    return None


def _scaled_product(eqn, producer):
    """c * dot(a, b) -> dot(a, c * b), the scalar moved onto the smaller operand (as XLA's
    simplifier does): a weight gradient x^T g scaled by a learning rate is larger than g."""
    for c, prod in (eqn.inputs, eqn.inputs[::-1]):
        p = producer(prod, only_use=True)
        if (isinstance(c, Literal) and c.aval.shape == () and p is not None
                and p.prim.name == "dot_general" and np.dtype(c.aval.dtype).kind in "fc"):
            a, b = p.inputs
            if a.aval.dtype == b.aval.dtype == prod.aval.dtype:
                size = lambda v: math.prod(v.aval.shape)  # noqa: E731
                i = 0 if size(a) < size(b) else 1
                if size(p.inputs[i]) < size(prod):
                    scaled = [("mul", [c, p.inputs[i]], {})]
                    ins = [a, "$0"] if i else ["$0", b]
                    return scaled + [("dot_general", ins, dict(p.params))]
    return None


def _same_operands(eqn, producer):
    """max(x, x) -> x and min(x, x) -> x, as XLA's simplifier: a subnormal x comes back
    unchanged where the operation itself would read it as zero and flush it."""
    x, y = eqn.inputs
    if not isinstance(x, Literal) and not isinstance(y, Literal) and x.id == y.id:
        return x
    return None


def _converted_predicate(atom, producer, shape):
    """The boolean operand of `atom = convert_element_type(pred)` to a float type, of the
    product's `shape` (XLA matches no broadcast between them), or None."""
    if isinstance(atom, Literal) or tuple(atom.aval.shape) != tuple(shape):
        return None
    p = producer(atom)
    if (p is not None and p.prim.name == "convert_element_type"
            and not isinstance(p.inputs[0], Literal) and np.dtype(p.inputs[0].aval.dtype) == np.bool_
            and np.dtype(atom.aval.dtype) in _RECIPROCAL_DTYPES):
        return p.inputs[0]
    return None


def _predicate_product(eqn, producer):
    """float(pred) * a -> select(pred, a, 0), as XLA's simplifier rewrites it: a False
    operand gives 0 even where `a` is infinite or NaN (`b / False` for a bool array `b` is
    `[inf, 0]`, not `[inf, nan]`, under jit and in JAX's jnp.true_divide)."""
    for conv, other in (eqn.inputs, eqn.inputs[::-1]):
        pred = _converted_predicate(conv, producer, eqn.outvars[0].aval.shape)
        if pred is not None:
            return [("select_n", [pred, make_literal(0, eqn.outvars[0].aval), other], {})]
    return None


def _predicate_dot(eqn, producer):
    """dot(a, float(pred)) of operands of one shape that XLA's simplifier turns into a product
    (a dot of vectors into reduce(a * b), a dot of one-element operands into a * b), where
    `_predicate_product` then applies: float(pred) * a is select(pred, a, 0), so a False
    element gives 0 even where `a` is infinite (`jnp.dot(a, jnp.float32(b))` of a bool `b`)."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs
    out = eqn.outvars[0].aval
    shape = tuple(lhs.aval.shape)
    if lb or rb or shape != tuple(rhs.aval.shape) or not (
            lhs.aval.dtype == rhs.aval.dtype == out.dtype):
        return None
    vector = len(shape) == 1 and tuple(lc) == tuple(rc) == (0,)
    one = all(d == 1 for d in shape) and tuple(out.shape) == shape
    if not (vector or one):
        return None
    for conv, other in ((lhs, rhs), (rhs, lhs)):
        pred = _converted_predicate(conv, producer, shape)
        if pred is None and all(d == 1 for d in shape):
            pred = _one_converted_predicate(conv, producer)
        if pred is None:
            continue
        steps = []
        if tuple(pred.aval.shape) != shape:  # one element, seen through reshapes and slices
            steps.append(("reshape", [pred], {"new_sizes": shape, "dimensions": None}))
            pred = "$0"
        steps.append(("select_n", [pred, make_literal(0, other.aval), other], {}))
        if vector:
            steps.append(("reduce_sum", [f"${len(steps) - 1}"], {"axes": (0,)}))
        return steps
    return None


def _one_converted_predicate(atom, producer):
    """The one-element bool `pred` of a one-element `atom` that is float(pred) reshaped or
    sliced (moves XLA's simplifier sees through), or None."""
    while not isinstance(atom, Literal) and math.prod(atom.aval.shape) == 1:
        p = producer(atom)
        if p is None:
            return None
        if p.prim.name in ("reshape", "slice", "squeeze", "expand_dims", "broadcast_in_dim"):
            atom = p.inputs[0]
            continue
        return _converted_predicate(atom, producer, atom.aval.shape)
    return None


_MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
# cmp(float(i), c) for an integer i and a subnormal c: cmp(float(i), 0) with the strictness
# that compares exactly ({sign of c: {cmp: new cmp}}); eq and ne are constant.
_AGAINST_ZERO = {True: {"lt": "le", "le": "le", "gt": "gt", "ge": "gt"},
                 False: {"lt": "lt", "le": "lt", "gt": "ge", "ge": "ge"}}


def _converted_integer_comparison(eqn, producer):
    """float(i) < c for an integer (or bool) i and a subnormal constant c compares exactly:
    LLVM's instcombine, which XLA runs on its CPU and GPU code, folds a comparison of an
    integer-to-float conversion with a constant into an integer comparison
    (foldFCmpIntToFPConst), so the constant is not read as zero as flushed arithmetic
    would read it: `jit(lambda x: x < 1e-39)(uint32 0)` is True, for a float32 0 False."""
    for i, (conv, c) in enumerate((eqn.inputs, eqn.inputs[::-1])):
        v = _literal_value(c)
        if (v is None or v.size != 1 or isinstance(conv, Literal)
                or np.dtype(conv.aval.dtype) not in (np.dtype(np.float32), np.dtype(np.float64))):
            continue
        p = producer(conv)
        if p is None or p.prim.name != "convert_element_type" or isinstance(p.inputs[0], Literal) \
                or np.dtype(p.inputs[0].aval.dtype).kind not in "biu":
            continue
        c = v.reshape(()).astype(conv.aval.dtype)
        if c == 0 or not abs(c) < np.finfo(c.dtype).tiny:
            continue
        cmp = _MIRRORED[eqn.prim.name] if i else eqn.prim.name
        if cmp in ("eq", "ne"):  # a converted integer is never NaN: b != b is False
            return [("ne" if cmp == "eq" else "eq", [conv, conv], {})]
        return [(_AGAINST_ZERO[bool(c > 0)][cmp], [conv, make_literal(0, conv.aval)], {})]
    return None


def _one_element_selection(eqn, producer):
    """A select whose result has one element reads a subnormal constant case as a zero of its
    sign, as XLA's CPU code does: it folds the constant into a literal of the result's shape
    (a broadcast to one element is a reshape, which constant folding evaluates), and a
    one-element fusion emits its literals flushed, while it keeps a broadcast of a scalar
    constant. So under jit `where(x > 0, x, 1e-39)` is 0 for `x` of shape (), (1,) or (1, 1)
    and 1e-39 for two elements or more; the value passed as an argument comes through."""
    out = eqn.outvars[0].aval
    if np.dtype(out.dtype) not in _FLUSHED_DTYPES or math.prod(out.shape) != 1:
        return None
    pred, p = eqn.inputs[0], producer(eqn.inputs[0])
    if isinstance(pred, Literal) or p is not None and all(isinstance(a, Literal) for a in p.inputs):
        return None  # a constant predicate: the select folds away (exactly) before XLA's fusion
    cases = list(eqn.inputs[1:])
    for i, c in enumerate(cases):
        v = _scalar_constant(c, producer)
        if v is not None and v != 0 and abs(v) < np.finfo(out.dtype).tiny:
            cases[i] = make_literal(np.copysign(0, v), c.aval)  # a scalar: select_n broadcasts it
    kept = [a for a, b in zip([eqn.inputs[0], *cases], eqn.inputs) if a is b]
    if len(kept) == len(eqn.inputs) or not any(a.aval.shape == out.shape for a in kept):
        return None
    return [("select_n", [eqn.inputs[0], *cases], dict(eqn.params))]


def _scalar_constant(atom, producer):
    """The value of a float constant scalar `atom`, seen through broadcasts and conversions
    between float types (constant folding runs after this pass), or None."""
    while not isinstance(atom, Literal):
        p = producer(atom)
        if p is not None and p.prim is CONSTANT:  # a closed-over array of one element
            if math.prod(atom.aval.shape) != 1 or np.dtype(atom.aval.dtype).kind != "f":
                return None
            try:  # a host array, a gpuarr Array or a device buffer
                return np.asarray(p.params.get("value"), atom.aval.dtype).reshape(())
            except Exception:  # noqa: BLE001 - a buffer that does not convert is left alone
                return None
        if p is None or p.prim.name not in ("broadcast_in_dim", "convert_element_type", "reshape") \
                or np.dtype(p.inputs[0].aval.dtype).kind != "f":
            return None
        atom = p.inputs[0]
    v = _literal_value(atom)
    return v.reshape(()) if v.size == 1 and v.dtype.kind == "f" else None


def _integer_pow_of(eqn, producer):             # x ** 1 -> x (left by vmap of grad of x ** 2)
    return eqn.inputs[0] if eqn.params["y"] == 1 else None


_RECIPROCAL_DTYPES = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}
_FLUSHED_DTYPES = {np.dtype(np.float32), np.dtype(np.float64)}  # XLA's CPU code computes float16 in float32


def _is_constant(atom, producer) -> bool:
    p = producer(atom)
    return isinstance(atom, Literal) or (p is not None and p.prim is CONSTANT)


def _reciprocal_divisor(eqn, producer):
    """x / c -> x * (1 / c) for a constant c, and x / broadcast(y) -> x * broadcast(1 / y), as
    XLA rewrites them under JAX (on CPU, in eager broadcasts too): the reciprocal is rounded to
    the dtype, so `jit(lambda i: 4.0 * i / 20000)(15691)` is 3.1381998, not 3.1382. Not for
    bfloat16 (computed in float32 there), complex or integer types, nor a constant x (folded)."""
    x, y = eqn.inputs
    out = eqn.outvars[0]
    if np.dtype(out.aval.dtype) not in _RECIPROCAL_DTYPES or _is_constant(x, producer):
        return None
    pred = _converted_predicate(x, producer, out.aval.shape)
    # The product, as _predicate_product then rewrites it (this pass walks once).
    product = ((lambda r: ("select_n", [pred, make_literal(0, out.aval), r], {}))
               if pred is not None else (lambda r: ("mul", [x, r], {})))
    if _is_constant(y, producer) or y.aval.shape != out.aval.shape:  # gpuarr's div broadcasts
        return [("div", [make_literal(1, y.aval), y], {}), product("$0")]
    p = producer(y)
    if p is not None and p.prim.name == "broadcast_in_dim":
        src = p.inputs[0]
        return [("div", [make_literal(1, src.aval), src], {}),
                ("broadcast_in_dim", ["$0"], dict(p.params)), product("$1")]
    return None


SIMPLIFY_RULES = {
    "log": [_log_of],
    "integer_pow": [_integer_pow_of],
    "exp": [_exp_of],
    "mul": [_identity_operand(1, True), _predicate_product, _scaled_product],
    "dot_general": [_predicate_dot],
    "add": [_identity_operand(0, True)],
    "sub": [_identity_operand(0, False)],
    "div": [_identity_operand(1, False), _reciprocal_divisor],
    **{cmp: [_converted_integer_comparison] for cmp in _MIRRORED},
    "select_n": [_one_element_selection],
    "max": [_same_operands],
    "min": [_same_operands],
    "neg": [_involution],
    "not": [_involution],
    "transpose": [_transpose_of],
    "reshape": [_reshape_of],
    "convert_element_type": [_convert_of],
    "broadcast_in_dim": [_broadcast_of],
}

_ELEMENTWISE_BINARY = {"add", "sub", "mul", "div", "max", "min", "pow", "rem", "atan2", "and",
                       "or", "xor", "eq", "ne", "lt", "le", "gt", "ge", "nextafter"}


# ---- the rewriting driver --------------------------------------------------------------------

class _Rewriter:
    """Walks a Program's equations in order, emitting rewritten ones and a var substitution."""

    def __init__(self, program: Program):
        self.program = program
        self.env: dict = {}
        self.defs: dict = {}
        self.eqns: list = []
        reads = [a for e in program.eqns for a in e.inputs] + list(program.outvars)
        self.uses = Counter(a.id for a in reads if not isinstance(a, Literal))

    def read(self, atom):
        if isinstance(atom, Literal):
            return atom
        return self.env.get(atom.id, atom)

    def producer(self, atom, only_use=False):
        if isinstance(atom, Literal) or (only_use and self.uses[atom.id] != 1):
            return None
        return self.defs.get(atom.id)

    def substitute(self, out, atom):
        """Read `atom` wherever `out` was read."""
        self.env[out.id] = atom
        if not isinstance(atom, Literal):
            self.uses[atom.id] += self.uses[out.id]

    def emit(self, prim, inputs, params, outvars=None, source_info=None):
        if outvars is None:
            avals = abstract_eval_rules[prim](*[a.aval for a in inputs], **params)
            outvars = [Var(a) for a in avals]
        eqn = Eqn(prim, list(inputs), dict(params), list(outvars), source_info)
        self.eqns.append(eqn)
        for v in outvars:
            self.defs[v.id] = eqn
        return eqn

    def finish(self, constvars) -> Program:
        outs = [self.read(a) for a in self.program.outvars]
        return Program(constvars, self.program.invars, self.eqns, outs)


def _prim(name):
    return getattr(_lax(), f"{name}_p")


# The producer rules see for a constvar: a constant, as XLA sees a closed-over array.
CONSTANT = Primitive("constant")


def simplify(program: Program, consts=None) -> Program:
    """Apply SIMPLIFY_RULES until no rule fires on an equation (a single forward walk);
    `consts`, the values of the constvars where known, are the CONSTANT equations' `value`."""
    rw = _Rewriter(program)
    fused_into_larger = _fused_into_larger(program)
    values = list(consts) if consts is not None else [None] * len(program.constvars)
    for v, value in zip(program.constvars, values):
        rw.defs[v.id] = Eqn(CONSTANT, [], {"value": value}, [v])
    for eqn in program.eqns:
        inputs = [rw.read(a) for a in eqn.inputs]
        eqn = eqn._replace(inputs=inputs)
        inputs = _scalar_broadcast_operands(eqn, rw)
        eqn = eqn._replace(inputs=inputs)
        replacement = None
        if not eqn.prim.multiple_results and len(eqn.outvars) == 1:
            for rule in SIMPLIFY_RULES.get(eqn.prim.name, ()):
                if rule in _ONE_ELEMENT_FUSION_RULES and eqn.outvars[0].id in fused_into_larger:
                    continue
                replacement = rule(eqn, rw.producer)
                if replacement is not None:
                    break
        if replacement is None:
            rw.emit(eqn.prim, inputs, eqn.params, eqn.outvars, eqn.source_info)
            continue
        out = eqn.outvars[0]
        if isinstance(replacement, list):
            results = []
            for i, (name, ins, params) in enumerate(replacement):
                ins = [results[int(a[1:])] if isinstance(a, str) else a for a in ins]
                last = i == len(replacement) - 1
                new = rw.emit(_prim(name), ins, params, [out] if last else None, eqn.source_info)
                results.append(new.outvars[0])
        elif replacement.aval.dtype == out.aval.dtype and replacement.aval.shape == out.aval.shape:
            rw.substitute(out, replacement)
        else:
            rw.emit(eqn.prim, inputs, eqn.params, eqn.outvars, eqn.source_info)
    return rw.finish(program.constvars)


# Rules that hold for a one-element value only where XLA's fusion of it has one element too.
_ONE_ELEMENT_FUSION_RULES = {_one_element_selection}
# Consumers XLA's CPU fusion does not fuse a producer into (besides control flow).
_NOT_FUSED = {"dot_general", "sort", "scatter", "scatter_add", "scatter_sub", "scatter_mul",
              "scatter_min", "scatter_max", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}


def _fused_into_larger(program: Program) -> set:
    """The ids of one-element values that reach, through one-element elementwise or layout
    steps, a step with a larger result that XLA would fuse them into (a broadcast, a
    concatenation): their code is then that larger loop's."""
    size = lambda v: math.prod(v.aval.shape)  # noqa: E731
    grows = set()
    for eqn in reversed(program.eqns):
        if (eqn.prim.multiple_results or eqn.prim.name in _NOT_FUSED
                or any(True for _ in subprograms(eqn.params))):
            continue
        larger = any(size(v) > 1 or v.id in grows for v in eqn.outvars)
        if larger:
            grows.update(a.id for a in eqn.inputs if not isinstance(a, Literal) and size(a) == 1)
    return grows


def _scalar_broadcast_operands(eqn, rw) -> list:
    """`add(x, broadcast_in_dim(2.0, ...))` -> `add(x, 2.0)`: broadcast scalars are literals."""
    if eqn.prim.name not in _ELEMENTWISE_BINARY and eqn.prim.name != "select_n":
        return eqn.inputs
    inputs = list(eqn.inputs)
    out_shape = eqn.outvars[0].aval.shape
    for i, a in enumerate(inputs):
        p = rw.producer(a)
        if p is None or p.prim.name != "broadcast_in_dim":
            continue
        src = p.inputs[0]
        others = [b for j, b in enumerate(inputs) if j != i]
        if isinstance(src, Literal) and any(b.aval.shape == out_shape for b in others):
            inputs[i] = src
    return inputs


def fold(program: Program, consts: list):
    """Evaluate equations whose inputs are all literals (scalar results become literals)."""
    rw = _Rewriter(program)
    for eqn in program.eqns:
        inputs = [rw.read(a) for a in eqn.inputs]
        # The cheap tests first: most equations read a variable.
        foldable = (inputs and all(isinstance(a, Literal) for a in inputs)
                    and not eqn.prim.multiple_results and not eqn.prim.effectful
                    and eqn.outvars[0].aval.shape == () and eqn.prim in impl_rules
                    and not any(True for _ in subprograms(eqn.params)))
        if foldable:
            impl = host_impl(eqn.prim, [a.aval.dtype for a in eqn.inputs])
            try:
                # The literals as their dtype's values (as JAX converts Python scalars), then
                # the equation exactly, as StableHLO's folder does with the constants of the
                # program JAX lowers; a constant passed to a nested jit is an argument there,
                # which XLA's own constant folding reads as zero if subnormal (flushed).
                args = [np.asarray(a.val).astype(a.aval.dtype) for a in inputs]
                passed = any(isinstance(a, ArgumentLiteral) for a in inputs)
                with np.errstate(all="ignore"), (flushing() if passed else nullcontext()):
                    value = np.asarray(impl(*args, **eqn.params))
            except Exception:  # noqa: BLE001 - leave anything that fails to run for run time
                value = None
            if value is not None and value.shape == ():
                out = eqn.outvars[0]
                rw.env[out.id] = (ArgumentLiteral if passed else Literal)(
                    value.astype(out.aval.dtype)[()], out.aval)
                continue
        rw.emit(eqn.prim, [_plain(a) for a in inputs], eqn.params, eqn.outvars, eqn.source_info)
    folded = rw.finish(program.constvars)
    return Program(folded.constvars, folded.invars, folded.eqns,
                   [_plain(a) for a in folded.outvars]), consts


def _plain(atom):
    return Literal(atom.val, atom.aval, atom.shown) if isinstance(atom, ArgumentLiteral) else atom


def _key_of(value):
    if isinstance(value, (Program, ClosedProgram)):
        return ("program", id(value))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_key_of(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _key_of(v)) for k, v in value.items()))
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


def _atom_key(atom):
    if isinstance(atom, Literal):
        v = np.asarray(atom.val)
        return ("lit", v.dtype.str, v.tobytes(), atom.aval.weak_type)
    return atom.id


def cse(program: Program) -> Program:
    """Merge equations that apply the same primitive, with the same params, to the same inputs."""
    rw = _Rewriter(program)
    seen: dict = {}
    for eqn in program.eqns:
        inputs = [rw.read(a) for a in eqn.inputs]
        key = None
        if not eqn.prim.effectful:
            key = (eqn.prim.name, id(eqn.prim), tuple(_atom_key(a) for a in inputs),
                   _key_of(eqn.params), tuple((v.aval.shape, v.aval.dtype.str) for v in eqn.outvars))
        prior = seen.get(key) if key is not None else None
        if prior is not None:
            for old, new in zip(eqn.outvars, prior):
                rw.env[old.id] = new
            continue
        new = rw.emit(eqn.prim, inputs, eqn.params, eqn.outvars, eqn.source_info)
        if key is not None:
            seen[key] = new.outvars
    return rw.finish(program.constvars)


def dce(program: Program) -> Program:
    """Drop equations none of whose outputs are used (effectful equations always stay)."""
    live = {a.id for a in program.outvars if isinstance(a, Var)}
    kept = []
    for eqn in reversed(program.eqns):
        if eqn.prim.effectful or any(v.id in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(a.id for a in eqn.inputs if isinstance(a, Var))
    return Program(program.constvars, program.invars, list(reversed(kept)), program.outvars)


class ArgumentLiteral(Literal):
    """A literal passed as an argument to a call that `inline` spliced: JAX lowers the call as
    a function whose parameter it is, so XLA's constant folding, not StableHLO's, computes
    with it (subnormals read as zero, as in XLA's flushed arithmetic)."""

    __slots__ = ()


# Call-like primitives and the param holding the program they call: inlined before fusion,
# so fusion and the other passes see across their boundaries.
CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "remat2": "jaxpr",
         "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
         "custom_vmap_call": "call", "composite": "jaxpr"}


def inline(program: Program, consts: list, mark_arguments: bool = False):
    """Replace each call of a sub-program (nested jit, remat, custom_jvp/vjp) by its equations,
    with fresh variables; the callee's consts become constvars of the caller. With
    `mark_arguments`, literals passed to a call become `ArgumentLiteral`s, for `fold` (which
    turns them back into plain literals)."""
    if not any(e.prim in decompositions or e.prim.name in CALLS and isinstance(
            e.params.get(CALLS[e.prim.name]), (Program, ClosedProgram)) for e in program.eqns):
        return program, consts
    constvars, consts = list(program.constvars), list(consts)
    rw = _Rewriter(program)

    def splice(sub: Program, sub_consts, inputs):
        env = {}
        for v, c in zip(sub.constvars, sub_consts):
            cv = Var(v.aval)
            constvars.append(cv)
            consts.append(c)
            env[v.id] = cv
        for v, a in zip(sub.invars, inputs):
            env[v.id] = ArgumentLiteral(a.val, a.aval, a.shown) if mark_arguments and isinstance(
                a, Literal) else a
        look = lambda a: a if isinstance(a, Literal) else env[a.id]  # noqa: E731
        for eqn in sub.eqns:
            ins = [look(a) for a in eqn.inputs]
            outs = [Var(v.aval) for v in eqn.outvars]
            for old, new in zip(eqn.outvars, outs):
                env[old.id] = new
            walk(eqn._replace(inputs=ins, outvars=outs))
        # Read through the rewriter: an output may be the result of a call spliced deeper.
        return [rw.read(look(a)) for a in sub.outvars]

    def walk(eqn):
        key = CALLS.get(eqn.prim.name)
        callee = eqn.params.get(key) if key else None
        if eqn.prim in decompositions:
            try:
                callee = _decomposition(eqn)
            except NotImplementedError:  # a lowering rule gpuarr cannot run: the impl serves
                callee = None
        if isinstance(callee, (Program, ClosedProgram)):
            sub = callee.program if isinstance(callee, ClosedProgram) else callee
            sub_consts = callee.consts if isinstance(callee, ClosedProgram) else []
            if len(sub.invars) == len(eqn.inputs) and len(sub.outvars) == len(eqn.outvars) \
                    and not (isinstance(callee, Program) and sub.constvars):
                results = splice(sub, sub_consts, [rw.read(a) for a in eqn.inputs])
                for old, new in zip(eqn.outvars, results):
                    rw.env[old.id] = new
                return
        rw.emit(eqn.prim, [rw.read(a) for a in eqn.inputs], eqn.params, eqn.outvars,
                eqn.source_info)

    for eqn in program.eqns:
        walk(eqn._replace(inputs=[rw.read(a) for a in eqn.inputs]))
    return rw.finish(constvars), consts


def _decomposition(eqn) -> ClosedProgram:
    """The Program of a primitive defined by a function of other operations, for `eqn`."""
    fun, multiple_results = decompositions[eqn.prim]

    def flat(*args):
        out = fun(*args, **eqn.params)
        return list(out) if multiple_results else [out]
    return trace_to_program(flat, [a.aval for a in eqn.inputs])


def optimize(closed: ClosedProgram) -> ClosedProgram:
    """Run the enabled passes over `closed` (`Platform.optimize`, before codegen on every platform)."""
    if not config.enable_passes:
        return closed
    program, consts = closed.program, list(closed.consts)
    if enabled("inline"):
        program, consts = inline(program, consts, mark_arguments=enabled("fold"))
    if enabled("simplify"):
        program = simplify(program, consts)
    if enabled("fold"):
        program, consts = fold(program, consts)
    if enabled("cse"):
        program = cse(program)
    if enabled("dce"):
        program = dce(program)
    return ClosedProgram(program, consts)


# ---- lowering -------------------------------------------------------------------------------

def _split_pieces(rw, eqn, x):
    axis, start = eqn.params["axis"], 0
    for out in eqn.outvars:
        starts, limits = [0] * x.aval.ndim, list(x.aval.shape)
        starts[axis], limits[axis] = start, start + out.aval.shape[axis]
        rw.emit(_prim("slice"), [x], dict(start_indices=tuple(starts),
                                         limit_indices=tuple(limits), strides=None),
                [out], eqn.source_info)
        start = limits[axis]


def _unstack_pieces(rw, eqn, x):
    axis = eqn.params["axis"]
    for i, out in enumerate(eqn.outvars):
        starts, limits = [0] * x.aval.ndim, list(x.aval.shape)
        starts[axis], limits[axis] = i, i + 1
        piece = rw.emit(_prim("slice"), [x], dict(start_indices=tuple(starts),
                                                 limit_indices=tuple(limits), strides=None),
                        None, eqn.source_info).outvars[0]
        rw.emit(_prim("squeeze"), [piece], dict(dimensions=(axis,)), [out], eqn.source_info)


def _stack_pieces(rw, eqn, *xs):
    axis, (out,) = eqn.params["axis"], eqn.outvars
    shape = out.aval.shape[:axis] + (1,) + out.aval.shape[axis + 1:]
    dims = tuple(d for d in range(len(shape)) if d != axis)
    grown = [rw.emit(_prim("broadcast_in_dim"), [x], dict(shape=shape, broadcast_dimensions=dims),
                     None, eqn.source_info).outvars[0] for x in xs]
    rw.emit(_prim("concatenate"), grown, dict(dimension=axis), [out], eqn.source_info)


def _empty_zero(rw, eqn):
    # A value nobody reads (a cond branch's placeholder residual): the kernels write zero.
    (out,) = eqn.outvars
    rw.substitute(out, Literal(np.zeros((), out.aval.dtype)[()], out.aval))


def _pow_float_exponent(rw, eqn, x, y):
    # XLA converts an integer exponent to the base's type; the kernels' pow takes one type.
    if y.aval.dtype != x.aval.dtype:
        y = rw.emit(_prim("convert_element_type"), [y],
                    dict(new_dtype=x.aval.dtype, weak_type=False), None,
                    eqn.source_info).outvars[0]
    rw.emit(eqn.prim, [x, y], eqn.params, eqn.outvars, eqn.source_info)


# Primitives the kernels compute as layout operations (or constants, or with converted
# operands): name -> rule(rewriter, eqn, *inputs) emitting the equations that replace `eqn`
# (writing its outputs).
KERNEL_DECOMPOSITIONS = {"split": _split_pieces, "unstack": _unstack_pieces,
                         "stack": _stack_pieces, "empty2": _empty_zero,
                         "pow": _pow_float_exponent}


def decompose_for_kernels(program: Program) -> Program:
    """`program` with each primitive of KERNEL_DECOMPOSITIONS written as the slices, squeezes,
    broadcasts and concatenations the kernels fuse. Kernel compilation runs this always: it is
    a lowering, not an optional pass."""
    if not any(e.prim.name in KERNEL_DECOMPOSITIONS for e in program.eqns):
        return program
    rw = _Rewriter(program)
    for eqn in program.eqns:
        inputs = [rw.read(a) for a in eqn.inputs]
        rule = KERNEL_DECOMPOSITIONS.get(eqn.prim.name)
        if rule is None:
            rw.emit(eqn.prim, inputs, eqn.params, eqn.outvars, eqn.source_info)
        else:
            rule(rw, eqn, *inputs)
    return rw.finish(program.constvars)


# ---- in-place updates ------------------------------------------------------------------------

def inplace_operands(program: Program, donated=()) -> set:
    """Indices of equations (scatters) whose operand dies there, so the update can happen in
    place: the operand is not used later, is not a program output, and is an intermediate or
    a donated input. The fusion pass then writes the scatter into the operand's buffer."""
    last_use: dict = {}
    for i, eqn in enumerate(program.eqns):
        for a in eqn.inputs:
            if isinstance(a, Var):
                last_use[a.id] = i
    outputs = {a.id for a in program.outvars if isinstance(a, Var)}
    inputs = {v.id for v in program.invars + program.constvars} - {v.id for v in donated}
    found = set()
    for i, eqn in enumerate(program.eqns):
        if not eqn.prim.name.startswith("scatter") or not eqn.inputs:
            continue
        operand = eqn.inputs[0]
        if (isinstance(operand, Var) and last_use.get(operand.id) == i
                and operand.id not in outputs and operand.id not in inputs
                and sum(a is operand for a in eqn.inputs) == 1):
            found.add(i)
    return found
