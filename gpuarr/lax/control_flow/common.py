"""Pieces the control-flow constructs share: tracing a body into a ClosedProgram on abstract
values (hoisting closed-over tracers into leading operands), the checks and messages on
operands, branch outputs and loop carries, JVP and transposition of a traced body, and the
eager path, which runs one control-flow equation as a compiled one-equation Program.
"""
from __future__ import annotations

import builtins
import inspect
import weakref

import numpy as np

from gpuarr import dtypes, pytrees
from gpuarr.core import (
    ClosedProgram,
    Eqn,
    Program,
    ShapedArray,
    Tracer,
    Var,
    abstract_eval_rules,
    eval_closed,
    get_aval,
    is_extended_dtype,
    subprograms,
)
from gpuarr.impls import compile_program
from gpuarr.interpreters import ad
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.lax import conversions, shape_ops

_SCALARS = (bool, int, float, complex)

# ---------------------------------------------------------------- tracing bodies


def _is_jax_type(x) -> bool:
    return isinstance(x, Tracer) or hasattr(x, "aval") or isinstance(
        x, (np.ndarray, np.generic) + _SCALARS)


def _check_operand(x):
    if _is_jax_type(x):
        return x
    typ = type(x) if isinstance(x, str) else f"'{type(x)}'"  # JAX quotes all but str's
    raise TypeError(f"Argument '{x}' of type {typ} is not a valid JAX type")


def _avals(leaves):
    return [get_aval(_check_operand(x)) for x in leaves]


def _operand(x):
    """A leaf as a bindable value: Python scalars become 0-d Arrays of their JAX dtype, weakly
    typed (bool aside), so a loop carried from `0` or `1.0` stays weak as in JAX."""
    if isinstance(x, _SCALARS):
        from gpuarr.dispatch import wrap
        return wrap(np.asarray(x, dtypes.dtype(x, canonicalize=True)), type(x) is not bool)
    return x


def _check_returned(out, traced_for, src):
    """JAX's TypeError for a traced function that returns a leaf that is not an array."""
    for path, x in pytrees.tree_flatten_with_path(out)[0]:
        if not _is_jax_type(x):
            where = f" at output component {pytrees.keystr(path)}" if path else ""
            raise TypeError(f"function {_fun_name(src)} traced for {traced_for} returned a value "
                            f"of type {type(x)}{where}, which is not a valid JAX type")


def _trace_body(fun, in_tree, in_avals, traced_for=None, src=None):
    """Trace `fun(*tree_unflatten(in_tree, args))` on abstract values.

    Returns (ClosedProgram, hoisted tracer consts, output treedef); the program's leading
    inputs receive the hoisted consts. `traced_for` and `src` (the user's function, when
    `fun` wraps it) name the function in the error for a non-array output; without them
    that error is the one for a bad operand.
    """
    def checked(*args):
        out = fun(*args)
        if traced_for is None:
            pytrees.tree_map(_check_operand, out)
        else:
            _check_returned(out, traced_for, fun if src is None else src)
        return out

    flat_fun, out_tree = pytrees.flatten_fun(checked, in_tree)
    closed = pe.trace_to_program(flat_fun, in_avals)
    closed, consts = pe.hoist_tracer_consts(closed)
    return closed, consts, out_tree()


def _forwarded(closed: ClosedProgram) -> list:
    """Per output of `closed`, the index of the input it returns unchanged, else None."""
    prog = closed.program
    where = {id(v): i for i, v in enumerate(prog.invars)}
    return [where.get(id(o)) if type(o) is Var else None for o in prog.outvars]


def _fun_name(f) -> str:
    """`name at file:line`, as JAX names a traced function in its messages."""
    name = getattr(f, "__name__", type(f).__name__)
    code = getattr(inspect.unwrap(f), "__code__", None)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def _mismatch_extra(a: ShapedArray, b: ShapedArray) -> str:
    """What differs between two array types, worded as JAX's `aval_mismatch_extra`."""
    found = [what for what, differs in (("the dtypes do not match", a.dtype != b.dtype),
                                        ("the shapes do not match", a.shape != b.shape)) if differs]
    if not found:
        return ""
    return ", so " + (found[0] if len(found) == 1 else f"{found[0]}, and {found[1]}")


def _capitalize(s: str) -> str:
    return s[0].upper() + s[1:]


def _listed(diffs, capitalize=True) -> str:
    """One difference as a sentence, several as a bulleted list (JAX's layout)."""
    if len(diffs) == 1:
        return f"{_capitalize(diffs[0]) if capitalize else diffs[0]}.\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def _leaf_paths(tree, avals):
    try:
        return [p for p, _ in pytrees.tree_flatten_with_path(
            pytrees.tree_unflatten(tree, avals))[0]]
    except Exception:  # a custom node that cannot be rebuilt from avals: no paths to show
        return None


def _same_type(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _is_inexact(aval) -> bool:
    return dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype)


def _permute(closed: ClosedProgram, in_order, out_order) -> ClosedProgram:
    """The same program with its inputs and outputs reordered."""
    prog = closed.program
    new = Program(prog.constvars, [prog.invars[i] for i in in_order], prog.eqns,
                  [prog.outvars[j] for j in out_order])
    return ClosedProgram(new, closed.consts)


def _with_unused_inputs(closed: ClosedProgram, avals, where: int) -> ClosedProgram:
    """Insert ignored inputs of `avals` at position `where`."""
    prog = closed.program
    extra = [Var(a) for a in avals]
    invars = prog.invars[:where] + extra + prog.invars[where:]
    return ClosedProgram(Program(prog.constvars, invars, prog.eqns, prog.outvars), closed.consts)


def _jvp_closed(closed: ClosedProgram, nonzeros, instantiate=None):
    """(primals, nonzero tangents) -> (primal outs, tangents of the inexact outputs). With
    `instantiate` (a flag per output), only the outputs whose tangent is not a symbolic zero,
    or is flagged, get one (JAX's jvp_jaxpr); the second result says which."""
    in_avals = list(closed.in_avals)
    n = len(in_avals)
    box = []

    def fun(*args):
        tans = iter(args[n:])
        tangents = [next(tans) if nz else Zero(ad.tangent_aval(a))
                    for a, nz in zip(in_avals, nonzeros, strict=True)]
        outs_p, outs_t = ad.jvp_flat(lambda *xs: eval_closed(closed, *xs), args[:n], tangents)
        out_nz = [_is_inexact(a) and (instantiate is None or inst or type(t) is not Zero)
                  for a, t, inst in zip(closed.out_avals, outs_t,
                                        instantiate or [True] * len(outs_t), strict=True)]
        box[:] = [out_nz]
        return outs_p + [ad.instantiate(t) for t, nz in zip(outs_t, out_nz) if nz]

    tan_avals = [a for a, nz in zip(in_avals, nonzeros, strict=True) if nz]
    return pe.trace_to_program(fun, in_avals + tan_avals), box[0]


def _zeros(aval):
    if is_extended_dtype(aval.dtype):  # the dtype's own zero
        return ad.zeros_like_aval(aval)
    return shape_ops.full(aval.shape, 0, aval.dtype)


def _split_by(flags, xs):
    return [x for x, f in zip(xs, flags, strict=True) if f], \
        [x for x, f in zip(xs, flags, strict=True) if not f]


# ---------------------------------------------------------------- transposing bodies


def _transpose_closed(closed, linear, n_known, ct_avals):
    """(known inputs, output cotangents) -> cotangents of the linear inputs (instantiated)."""
    known_avals = [a for a, lin in zip(closed.in_avals, linear, strict=True) if not lin]

    def fun(*args):
        known, cts = args[:n_known], args[n_known:]
        return _backward(closed, linear, known, cts)

    return pe.trace_to_program(fun, known_avals + list(ct_avals))


def _backward(closed, linear, known, cts):
    """Cotangents of the `linear` inputs of `closed`, given the other inputs' values."""
    prog = closed.program
    lin_vars = [v for v, lin in zip(prog.invars, linear, strict=True) if lin]
    known_vars = [v for v, lin in zip(prog.invars, linear, strict=True) if not lin]
    as_linear = ClosedProgram(Program(prog.constvars + known_vars, lin_vars, prog.eqns,
                                      prog.outvars), list(closed.consts) + list(known))
    cts_in = ad.backward_pass(as_linear, list(cts))
    return [_zeros(v.aval) if type(c) is Zero else c for v, c in zip(lin_vars, cts_in)]


# ---------------------------------------------------------------- checking operands and carries


def _type_str(aval) -> str:
    return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"


def _shape_of(x) -> tuple:
    return get_aval(x).shape if _is_jax_type(x) else np.shape(x)


def _promote_weak_carries(leaves, avals, out_avals):
    """A weakly typed initial carry whose type the body changes is converted (strongly) to
    the dtype it promotes to with the body's output, as JAX does: `0` carried through a
    float32 body becomes float32. Returns (leaves, avals, changed)."""
    new_leaves, new_avals, changed = [], [], False
    for x, a, o in zip(leaves, avals, out_avals):
        if a.weak_type and not _same_type(a, o):
            x = conversions.convert_element_type(_operand(x), dtypes.result_type(x, o))
            a, changed = get_aval(x), True
        new_leaves.append(x)
        new_avals.append(a)
    return new_leaves, new_avals, changed


def _carry_component(body_fun):
    """How JAX's carry messages name a carry component: by the body's first parameter."""
    try:
        params = list(inspect.signature(body_fun).parameters)
    except (ValueError, TypeError):
        params = []
    name = params[0] if params else None
    if name:
        return lambda p: (f"the input carry component {name}{pytrees.keystr(p)}" if p
                          else f"the input carry {name}")
    return lambda p: (f"the input carry at path {pytrees.keystr(p)}" if p
                      else "the input carry")


# How JAX's type errors name the parts of a loop's carry or a cond's outputs, kept beside the
# traced body (a loop's body, a cond's branch 0) for checks made after tracing (shard_map's
# check_vma, sharding/spmd.py): a label per leaf, and for cond the header naming the branches.
labels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def label_carry(closed, body_fun, in_tree, in_avals) -> None:
    """Remember how JAX's carry messages name each carry leaf of the loop body `closed`."""
    component = _carry_component(body_fun)
    paths = _leaf_paths(in_tree, in_avals) or [()] * len(in_avals)
    labels[closed] = [component(p) for p in paths]


def _check_carry(name, body_fun, in_tree, in_avals, out_tree, out_avals):
    """JAX's checks (and messages) that a loop body returns its carry's structure and types."""
    component = _carry_component(body_fun)
    if in_tree != out_tree:
        try:
            diffs = [f"{component(p)} is a {t1} but the corresponding component of the carry "
                     f"output is a {t2}, so {why}"
                     for p, t1, t2, why in pytrees._equality_errors(
                         (), pytrees.tree_unflatten(in_tree, in_avals),
                         pytrees.tree_unflatten(out_tree, out_avals))]
        except Exception:  # a custom node that cannot hold avals
            diffs = None
        if diffs == []:
            return  # equal structures up to aux data
        differences = (_listed(diffs) if diffs else f"the input tree structure is:\n{in_tree}\n"
                       f"the output tree structure is:\n{out_tree}\n")
        raise TypeError(
            f"{name} function carry input and carry output must have the same pytree structure, "
            f"but they differ:\n\n{differences}\nRevise the function so that the carry output "
            "has the same pytree structure as the carry input.")
    paths = _leaf_paths(in_tree, in_avals) or [()] * len(in_avals)
    diffs = [f"{component(p)} has type {_type_str(a)} but the corresponding output carry "
             f"component has type {_type_str(b)}{_mismatch_extra(a, b)}"
             for p, a, b in zip(paths, in_avals, out_avals) if not _same_type(a, b)]
    if diffs:
        raise TypeError(
            f"{name} function carry input and carry output must have equal types, but they "
            f"differ:\n\n{_listed(diffs)}\nRevise the function so that all output types match "
            "the corresponding input types.")


# ---------------------------------------------------------------- eager control flow


_equations: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PROGRAMS = (Program, ClosedProgram)


def _holds_program(v) -> bool:
    """Whether the param value `v` is, or lists, a sub-program (as `subprograms` finds them)."""
    return isinstance(v, _PROGRAMS) or (
        isinstance(v, (tuple, list)) and any(isinstance(w, _PROGRAMS) for w in v))


def _run_equation(prim, args, params):
    """Eager control flow: `prim` on `args`, run by the code a jitted Program would contain
    (a one-equation Program compiled once per body and operand types)."""
    # One weakly keyed level per sub-program, so the cache never keeps a body alive.
    level = _equations
    subs = list(subprograms(params))
    for sub in subs[:-1]:
        level = level.setdefault(sub, weakref.WeakKeyDictionary())
    cache = level.setdefault(subs[-1], {})
    avals = tuple(builtins.map(get_aval, args))
    key = (prim, avals, tuple((k, v) for k, v in params.items() if not _holds_program(v)))
    fn = cache.get(key)
    if fn is None:
        invars = [Var(a) for a in avals]
        outvars = [Var(a) for a in abstract_eval_rules[prim](*avals, **params)]
        prog = Program([], invars, [Eqn(prim, invars, params, outvars)], outvars)
        fn = cache[key] = compile_program(prog)  # the host compiler (gpuarr.impls)
    return list(fn(*args))
