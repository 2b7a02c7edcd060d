"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map, associative_scan.

Each loop or branch body is traced once, on abstract values, into a ClosedProgram kept in
the equation's params (`cond[branches=...]`, `while[cond_jaxpr=... body_jaxpr=...]`,
`scan[jaxpr=...]`, with JAX's param names). Closed-over tracers of enclosing
transformations are hoisted into explicit leading operands (`num_consts`, `cond_nconsts`,
`body_nconsts`), so every transformation sees them as ordinary inputs. On the NumPy
backend a loop becomes a `for`/`while`/`if` statement in the generated source of the Program
that contains it (eager loops run a compiled one-equation Program): see the last section.

Reverse mode: a scan or cond whose inputs are partly unknown under linearize is split by
`partial_eval_program` into a known part (run now, emitting residuals: stacked per
iteration for scan, one set per branch for cond) and a linear part that is staged and
later transposed. A while_loop with a dynamic trip count cannot be reversed, as in JAX.
"""
from __future__ import annotations

import builtins
import collections
import inspect
import weakref
from collections.abc import Sequence

import numpy as np

from gpuarr import dtypes, pytrees
from gpuarr.core import (
    ClosedProgram,
    Eqn,
    Primitive,
    Program,
    ShapedArray,
    Tracer,
    Var,
    abstract_eval_rules,
    eval_closed,
    eval_program,
    get_aval,
    set_current_trace,
    subprograms,
    weak_type_rules,
)
from gpuarr.impls import compile_program, impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import not_mapped
from gpuarr.lax import lax

_SCALARS = (bool, int, float, complex)
_REVERSE_WHILE_MSG = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")

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


def _jvp_closed(closed: ClosedProgram, nonzeros):
    """(primals, nonzero tangents) -> (primal outs, tangents of the inexact outputs)."""
    in_avals = list(closed.in_avals)
    out_nz = [_is_inexact(a) for a in closed.out_avals]
    n = len(in_avals)

    def fun(*args):
        tans = iter(args[n:])
        tangents = [next(tans) if nz else Zero(ad.tangent_aval(a))
                    for a, nz in zip(in_avals, nonzeros, strict=True)]
        outs_p, outs_t = ad.jvp_flat(lambda *xs: eval_closed(closed, *xs), args[:n], tangents)
        return outs_p + [ad.instantiate(t) for t, nz in zip(outs_t, out_nz) if nz]

    tan_avals = [a for a, nz in zip(in_avals, nonzeros, strict=True) if nz]
    return pe.trace_to_program(fun, in_avals + tan_avals), out_nz


def _zeros(aval):
    return lax.full(aval.shape, 0, aval.dtype)


def _split_by(flags, xs):
    return [x for x, f in zip(xs, flags, strict=True) if f], \
        [x for x, f in zip(xs, flags, strict=True) if not f]


# ================================================================ cond / switch

cond_p = Primitive("cond", multiple_results=True)


# `branches_platforms` (from platform_dependent: the platforms of each branch) rides along
# every rule unchanged, as in JAX; the index alone chooses the branch.
def _cond_impl(index, *operands, branches, **params):
    return _run_equation(cond_p, (index, *operands), {"branches": branches, **params})


def _cond_abstract(index, *operands, branches, **params):
    if index.shape != () or not dtypes.is_int(index.dtype):
        raise TypeError(f"cond index must be an integer scalar, got {index.str_short()}.")
    out = branches[0].out_avals
    for br in branches:
        ins = br.in_avals
        if len(ins) != len(operands) or not all(builtins.map(_same_type, ins, operands)):
            raise TypeError("cond branches must take the operands' types; got operands "
                            f"{[a.str_short() for a in operands]} for a branch taking "
                            f"{[a.str_short() for a in ins]}.")
        if len(br.out_avals) != len(out) or not all(builtins.map(_same_type, br.out_avals, out)):
            raise TypeError("cond branches must have equal output types.")
    return list(out)  # branch 0's types, weak types included, as in JAX


impl_rules[cond_p] = _cond_impl
abstract_eval_rules[cond_p] = _cond_abstract
weak_type_rules[cond_p] = lambda index, *ops, branches, **params: [
    a.weak_type for a in branches[0].out_avals]


def _cond_jvp(primals, tangents, branches, **params):
    index, *ops = primals
    nonzeros = tuple(type(t) is not Zero for t in tangents[1:])
    jvps = [_jvp_closed(br, nonzeros) for br in branches]
    out_nz = jvps[0][1]
    nz_tans = [t for t in tangents[1:] if type(t) is not Zero]
    outs = cond_p.bind(index, *ops, *nz_tans, branches=tuple(j for j, _ in jvps), **params)
    n = len(branches[0].out_avals)
    tans = iter(outs[n:])
    return outs[:n], [next(tans) if nz else Zero(ad.tangent_aval(a))
                      for a, nz in zip(branches[0].out_avals, out_nz)]


ad.jvp_rules[cond_p] = _cond_jvp


def _cond_batch(axis_size, vals, dims, branches, **params):
    (index, *ops), (index_dim, *op_dims) = vals, dims
    n_out = len(branches[0].out_avals)
    if index_dim is not_mapped:
        force = [False] * n_out
        for _ in range(2):
            batched = [batching.batch_closed(br, axis_size, op_dims, force) for br in branches]
            force = [any(bd[i] is not not_mapped for _, bd in batched) for i in range(n_out)]
        outs = cond_p.bind(index, *ops, branches=tuple(b for b, _ in batched), **params)
        return outs, [0 if f else not_mapped for f in force]
    # A batched index runs every branch on every example and selects per example, as JAX:
    # each branch sees the operands of the examples that take another branch through
    # stop_gradient, so a branch not taken adds no NaN to gradients (JAX issue 1052).
    index = batching.move_to(index, index_dim, 0, axis_size)
    ops = [batching.move_to(x, d, 0, axis_size) for x, d in zip(ops, op_dims)]
    results = []
    for i, br in enumerate(branches):
        prog, _ = batching.batch_closed(br, axis_size, [0] * len(ops), [True] * n_out)
        taken = lax.eq(index, lax._const(index, i))
        results.append(eval_closed(prog, *(_select_per_example(taken, x, lax.stop_gradient(x))
                                           for x in ops)))
    outs = []
    for cases in zip(*results):
        shape = get_aval(cases[0]).shape
        which = lax.broadcast_in_dim(index, shape, (0,))
        outs.append(lax.select_n(which, *cases) if len(cases) > 1 else cases[0])
    return outs, [0] * n_out


batching.batch_rules[cond_p] = _cond_batch


def _select_per_example(pred, on_true, on_false):
    """lax.select with a per-example `pred` (leading axis) broadcast to the operands."""
    shape = get_aval(on_true).shape
    if len(shape) != get_aval(pred).ndim:
        pred = lax.broadcast_in_dim(pred, shape, tuple(range(get_aval(pred).ndim)))
    return lax.select(pred, on_true, on_false)


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    extra = {k: v for k, v in params.items() if k != "branches"}
    index, *ops = args
    if not isinstance(index, Tracer):
        # A concrete index picks its branch now: inline it, as jit's partial eval does.
        br = branches[builtins.min(builtins.max(int(index), 0), len(branches) - 1)]
        return eval_program(br.program, br.consts, ops)
    if not pe.is_known(trace, index):
        return pe.StagingTrace.process_primitive(trace, cond_p, args, params)
    unknowns = [not pe.is_known(trace, x) for x in ops]
    out_uk = [False] * len(branches[0].out_avals)
    for _ in range(2):  # the second pass instantiates what any branch leaves unknown
        splits = [pe.partial_eval_closed(br, unknowns, out_uk) for br in branches]
        out_uk = [any(s[2][i] for s in splits) for i in range(len(out_uk))]
    res_avals = [list(known.out_avals[len(known.out_avals) - nres:])
                 for known, _, _, _, nres in splits]
    all_res, slots = _merge_branch_residuals(res_avals)
    slot_vars = [Var(a) for a in all_res]  # one Var per slot, shared by the branches, as JAX's
    known_brs, unknown_brs = [], []
    for (known, unknown, _, _, nres), own in zip(splits, slots):
        known_brs.append(_fill_residual_slots(known, nres, all_res, own))
        prog, _ = pe.dce_program(unknown.program)
        res_vars = list(slot_vars)
        for slot, v in zip(own, prog.invars[:nres]):
            res_vars[slot] = v
        invars = res_vars + prog.invars[nres:]
        unknown_brs.append(ClosedProgram(Program(prog.constvars, invars, prog.eqns, prog.outvars),
                                         unknown.consts))
    known_ops, unknown_ops = _split_by([not u for u in unknowns], ops)
    with set_current_trace(trace.parent):
        known_outs = cond_p.bind(index, *known_ops, branches=tuple(known_brs), **extra)
    n_known = len(known_outs) - len(all_res)
    residuals = known_outs[n_known:]
    staged = pe.StagingTrace.process_primitive(
        trace, cond_p, [index, *residuals, *unknown_ops], {"branches": tuple(unknown_brs), **extra})
    k, u = iter(known_outs[:n_known]), iter(staged)
    return [next(u) if uk else next(k) for uk in out_uk]


def _merge_branch_residuals(res_avals):
    """(residual types of the merged cond, each branch's slots among them), as JAX merges
    them: the k-th residual of a type in any branch shares the k-th slot of that type, so
    branches saving residuals of the same types pass them in the same slots."""
    tagged = []
    for avals in res_avals:
        seen, branch = collections.Counter(), []
        for a in avals:
            branch.append((a, seen[a]))
            seen[a] += 1
        tagged.append(branch)
    order = list(dict.fromkeys(t for branch in tagged for t in branch))
    index = {t: i for i, t in enumerate(order)}
    return [a for a, _ in order], [[index[t] for t in branch] for branch in tagged]


def _fill_residual_slots(known, nres, all_res, own):
    """A branch's known part returning every residual slot: its own residuals in `own`,
    placeholders (`empty_like_aval`) in the others, as JAX's _join_cond_outputs."""
    n_main = len(known.out_avals) - nres

    def fun(*args):
        outs = eval_closed(known, *args)
        slots = [lax.empty_like_aval(a) for a in all_res]
        for slot, r in zip(own, outs[n_main:]):
            slots[slot] = r
        return outs[:n_main] + slots

    return pe.trace_to_program(fun, list(known.in_avals))


pe.partial_eval_rules[cond_p] = _cond_partial_eval


def _cond_transpose(cts, index, *ops, branches, **params):
    linear = [ad.is_undefined(x) for x in ops]
    known = [x for x in ops if not ad.is_undefined(x)]
    cts = [ad.instantiate(c) for c in cts]
    ct_avals = [get_aval(c) for c in cts]
    t_branches = tuple(_transpose_closed(br, linear, len(known), ct_avals) for br in branches)
    outs = iter(cond_p.bind(index, *known, *cts, branches=t_branches, **params))
    return [None] + [next(outs) if lin else None for lin in linear]


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


ad.transpose_rules[cond_p] = _cond_transpose


def _join_branches(traced):
    """Give every branch all branches' hoisted consts as leading inputs (each uses its own)."""
    all_consts = [c for _, consts, _ in traced for c in consts]
    joined = []
    for b, (closed, consts, _) in enumerate(traced):
        prog = closed.program
        pre = [Var(get_aval(c)) for t in traced[:b] for c in t[1]]
        post = [Var(get_aval(c)) for t in traced[b + 1:] for c in t[1]]
        n = len(consts)
        invars = pre + prog.invars[:n] + post + prog.invars[n:]
        joined.append(ClosedProgram(Program(prog.constvars, invars, prog.eqns, prog.outvars),
                                    closed.consts))
    return joined, all_consts


def _check_branch_outputs(api_name, name1, name2, f1, f2, out1, out2):
    """JAX's checks (and messages) that two branches return the same structure and types;
    `out1` and `out2` are (treedef, avals) of their outputs."""
    (tree1, avals1), (tree2, avals2) = out1, out2
    paths = _leaf_paths(tree1, avals1)

    def component(p):
        return f" at path {pytrees.keystr(p)}" if p and paths is not None else ""

    header = f"{name1} is {_fun_name(f1)}\n{name2} is {_fun_name(f2)}\n\n"
    if tree1 != tree2:
        diffs = [f"{name1} output{component(p)} is a {t1} but {name2} output{component(p)} is a "
                 f"{t2}, so {why}"
                 for p, t1, t2, why in pytrees._equality_errors_pytreedef(tree1, tree2)]
        if not diffs:
            return  # equal structures up to aux data
        raise TypeError(f"{api_name} branch outputs must have the same pytree structure, but "
                        f"they differ:\n\n{header}{_listed(diffs, capitalize=False)}\n"
                        f"Revise {name1} and/or {name2} so that they have the same pytree "
                        "structure.")
    paths = paths or [()] * len(avals1)
    diffs = [f"the output of {name1}{component(p)} has type {_type_str(a)} but the "
             f"corresponding output of {name2} has type {_type_str(b)}{_mismatch_extra(a, b)}"
             for p, a, b in zip(paths, avals1, avals2) if not _same_type(a, b)]
    if not diffs:
        return
    if len(diffs) == 1:
        differences = f"{_capitalize(diffs[0])}.\n"
    else:
        differences = ("\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n")
    raise TypeError(f"{api_name} branches must have equal output types but they differ.\n\n"
                    f"{header}{differences}\nRevise {name1} and/or {name2} so that all output "
                    "types match.")


def _type_str(aval) -> str:
    return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"


def _bind_cond(index, branch_funs, operands, api_name, **params):
    """Trace the branches on the operands' types, check their outputs as JAX does and bind
    `cond` (with `params` beside the branches). An output that every branch returns as the
    same operand is that operand."""
    leaves, in_tree = pytrees.tree_flatten(tuple(operands))
    avals = _avals(leaves)
    traced = [_trace_body(f, in_tree, avals, api_name) for f in branch_funs]
    outs = [(tree, closed.out_avals) for closed, _, tree in traced]
    if api_name == "cond":  # false_fun is branch 0, true_fun branch 1
        _check_branch_outputs("cond", "true_fun", "false_fun", branch_funs[1], branch_funs[0],
                              outs[1], outs[0])
    else:  # JAX's labels: "branch 0", then "branch1", "branch2", ...
        for i in range(1, len(traced)):
            _check_branch_outputs(api_name, "branch 0", f"branch{i}", branch_funs[0],
                                  branch_funs[i], outs[0], outs[i])
    joined, consts = _join_branches(traced)
    operands = [*consts, *builtins.map(_operand, leaves)]
    outs = cond_p.bind(index, *operands, branches=tuple(joined), **params)
    fwds = [set(f) for f in zip(*(_forwarded(br) for br in joined))]
    if fwds:
        from gpuarr.dispatch import as_array
        outs = [as_array(operands[next(iter(f))]) if len(f) == 1 and None not in f else o
                for o, f in zip(outs, fwds)]
    return pytrees.tree_unflatten(traced[0][2], outs)


# The default of cond's and switch's `operand` keyword: passing it (even as None) gives the
# branches that one operand, as in JAX.
_no_operand_sentinel = object()


def _keyword_operand(operand, operands):
    if operand is _no_operand_sentinel:
        return operands
    if operands:
        raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                        f"passed, got {operand=} and positional operands {operands}")
    return (operand,)


def _pred_dtype(pred):
    """The dtype of a cond predicate, with JAX's errors for a missing or non-scalar one."""
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or len(_shape_of(pred)) != 0:
        raise TypeError(f"Pred must be a scalar, got {pred} of "
                        + (f"type {type(pred)}" if isinstance(pred, Sequence)
                           else f"shape {_shape_of(pred)}."))
    try:
        return dtypes.result_type(pred)
    except TypeError as err:
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err


def _shape_of(x) -> tuple:
    return get_aval(x).shape if _is_jax_type(x) else np.shape(x)


def cond(pred, true_fun, false_fun, *operands, operand=_no_operand_sentinel):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`. Both branches are traced
    and must return the same pytree structure and types (else TypeError); under vmap with
    a batched `pred` both run and the results are selected per example."""
    if not (callable(true_fun) and callable(false_fun)):
        # The old form cond(pred, true_operand, true_fun, false_operand, false_fun).
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _keyword_operand(operand, operands)
    pred_dtype = _pred_dtype(pred)
    if pred_dtype.kind != "b":
        if pred_dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
        pred = lax.ne(_operand(pred), lax.full((), 0, get_aval(_operand(pred)).dtype))
    index = lax.convert_element_type(_operand(pred), np.int32)
    return _bind_cond(index, [false_fun, true_fun], operands, "cond")


def switch(index, branches, *operands, operand=_no_operand_sentinel):
    """`branches[index](*operands)` with `index` clamped into range, as lax.switch."""
    if not all(callable(branch) for branch in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    operands = _keyword_operand(operand, operands)
    if len(_shape_of(index)) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {_shape_of(index)}.")
    try:
        index_dtype = dtypes.result_type(index)
    except TypeError as err:
        raise TypeError(f"Index type must be an integer, got {index}.") from err
    if index_dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
    branches = tuple(branches)  # after the check above, as in JAX: an iterator is now empty
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    from gpuarr.lax.special import clamp
    index = lax.convert_element_type(index, np.int32)  # a Python int folds, as in JAX
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    return _bind_cond(index, branches, operands, "switch")


# ================================================================ while_loop

while_p = Primitive("while", multiple_results=True)


def _while_impl(*args, **params):
    return _run_equation(while_p, args, params)


def _while_abstract(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts:]
    (pred,) = cond_jaxpr.out_avals
    # A batched predicate (from vmap) leads every carry's shape: see _while_batch.
    if pred.dtype != np.bool_ or any(c.shape[:pred.ndim] != pred.shape for c in carry) or (
            pred.shape and not carry):
        raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                        f"[{pred!r}].")
    outs = body_jaxpr.out_avals
    if len(outs) != len(carry) or not all(builtins.map(_same_type, outs, carry)):
        raise TypeError("while_loop body function carry input and carry output must have equal "
                        f"types, got {[a.str_short() for a in carry]} and "
                        f"{[a.str_short() for a in outs]}.")
    return [c.update(weak_type=c.weak_type and o.weak_type) for c, o in zip(carry, outs)]


def _while_params(cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    # Keyword order is the printed order, alphabetical as JAX prints it.
    return dict(body_jaxpr=body_jaxpr, body_nconsts=body_nconsts, cond_jaxpr=cond_jaxpr,
                cond_nconsts=cond_nconsts)


impl_rules[while_p] = _while_impl
abstract_eval_rules[while_p] = _while_abstract
weak_type_rules[while_p] = lambda *args, body_jaxpr, **params: [
    a.weak_type and getattr(x, "weak_type", False)
    for a, x in zip(body_jaxpr.out_avals, args[len(args) - len(body_jaxpr.out_avals):])]


def _while_jvp(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    bconsts, carry = primals[nc:nc + nb], primals[nc + nb:]
    bconst_t, carry_t = tangents[nc:nc + nb], tangents[nc + nb:]
    carry_nz = [_is_inexact(get_aval(c)) for c in carry]
    const_nz = [type(t) is not Zero for t in bconst_t]
    jvp_body, _ = _jvp_closed(body_jaxpr, tuple(const_nz + carry_nz))
    n_cnz, n_car = sum(const_nz), len(carry)
    # jvp_body inputs: bconsts, carry, const tangents, carry tangents -> reorder consts first.
    order = (list(range(nb)) + list(range(nb + n_car, nb + n_car + n_cnz))
             + list(range(nb, nb + n_car)) + list(range(nb + n_car + n_cnz,
                                                        nb + n_car + n_cnz + sum(carry_nz))))
    jvp_body = _permute(jvp_body, order, range(len(jvp_body.out_avals)))
    tan_avals = [ad.tangent_aval(get_aval(c)) for c, nz in zip(carry, carry_nz) if nz]
    new_cond = _with_unused_inputs(cond_jaxpr, tan_avals, len(cond_jaxpr.in_avals))
    ct = [ad.instantiate(t) if type(t) is Zero else t for t, nz in zip(carry_t, carry_nz) if nz]
    outs = while_p.bind(*primals[:nc], *bconsts, *[t for t in bconst_t if type(t) is not Zero],
                        *carry, *ct, **_while_params(new_cond, jvp_body, nc, nb + n_cnz))
    tans = iter(outs[n_car:])
    return outs[:n_car], [next(tans) if nz else Zero(ad.tangent_aval(get_aval(c)))
                          for c, nz in zip(carry, carry_nz)]


ad.jvp_rules[while_p] = _while_jvp


def _while_partial_eval(trace, args, params):
    raise ValueError(_REVERSE_WHILE_MSG)


pe.partial_eval_rules[while_p] = _while_partial_eval


def _while_batch(axis_size, vals, dims, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """As JAX batches while: a batched predicate stays a `while` whose cond returns one
    predicate per example; the loop runs while any is true, and each step keeps the old carry
    of the examples that are done (`_while_emit`). Every carry is then batched at 0. With an
    unbatched predicate, batched carries take their batch axis after the predicate's axes,
    which lead every carry's shape."""
    nc, nb = cond_nconsts, body_nconsts
    cdims, bdims, carry_dims = dims[:nc], dims[nc:nc + nb], dims[nc + nb:]
    carry_b = [d is not not_mapped for d in carry_dims]
    while True:
        cdims_in = [0 if b else not_mapped for b in carry_b]
        _, out_dims = batching.batch_closed(body_jaxpr, axis_size, bdims + cdims_in, carry_b)
        new = [b or d is not not_mapped for b, d in zip(carry_b, out_dims)]
        if new == carry_b:
            break
        carry_b = new
    _, (pred_dim,) = batching.batch_closed(
        cond_jaxpr, axis_size, cdims + [0 if b else not_mapped for b in carry_b], [False])
    if pred_dim is not not_mapped:
        new_dims = [0] * len(carry_b)
        body_b, _ = batching.batch_closed(body_jaxpr, axis_size, bdims + new_dims,
                                          [True] * len(carry_b))
        cond_b, _ = batching.batch_closed(cond_jaxpr, axis_size, cdims + new_dims, [True])
    else:
        rank = cond_jaxpr.out_avals[0].ndim
        new_dims = [rank if b else not_mapped for b in carry_b]
        body_b, _ = batching.batch_closed(body_jaxpr, axis_size, bdims + new_dims, carry_b,
                                          out_dim=rank)
        cond_b, _ = batching.batch_closed(cond_jaxpr, axis_size, cdims + new_dims, [False])
    carry = [v if n is not_mapped else batching.move_to(v, d, n, axis_size)
             for v, d, n in zip(vals[nc + nb:], carry_dims, new_dims)]
    outs = while_p.bind(*vals[:nc + nb], *carry, **_while_params(cond_b, body_b, nc, nb))
    return outs, new_dims


batching.batch_rules[while_p] = _while_batch


def while_loop(cond_fun, body_fun, init_val):
    """`while cond_fun(val): val = body_fun(val)`, staged as one `while` primitive. The body
    must keep the carry's pytree structure and types. Differentiable in forward mode only;
    under vmap with a batched predicate it runs until every example is done."""
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    return _while_loop(cond_fun, body_fun, init_val)


def _while_loop(cond_fun, body_fun, init_val, traced_for="while_body", src=None):
    leaves, carry_tree = pytrees.tree_flatten(init_val)
    in_tree = pytrees.tree_structure((init_val,))
    avals = _avals(leaves)

    def trace(avals):
        cond = _trace_body(cond_fun, in_tree, avals, "while_cond")
        if not pytrees.treedef_is_leaf(cond[2]) or len(cond[0].out_avals) != 1:
            raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond[2]}.")
        (pred,) = cond[0].out_avals
        if pred.shape != () or pred.dtype != np.bool_:
            raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                            f"{list(cond[0].out_avals)}.")
        return cond, _trace_body(body_fun, in_tree, avals, traced_for, src)

    (cond_closed, cond_consts, _), (body_closed, body_consts, body_tree) = trace(avals)
    check = body_fun  # the carry's name comes from the loop body's signature (a wrapper's)
    out_avals = body_closed.out_avals
    if len(out_avals) != len(avals):
        _check_carry("while_loop body", check, carry_tree, avals, body_tree, out_avals)
    leaves, avals, changed = _promote_weak_carries(leaves, avals, out_avals)
    if changed:
        (cond_closed, cond_consts, _), (body_closed, body_consts, body_tree) = trace(avals)
    _check_carry("while_loop body", check, carry_tree, avals, body_tree, body_closed.out_avals)
    carry = list(builtins.map(_operand, leaves))
    outs = while_p.bind(*cond_consts, *body_consts, *carry,
                        **_while_params(cond_closed, body_closed, len(cond_consts),
                                        len(body_consts)))
    # A carry the body passes through and the predicate never reads is the initial value.
    nb = len(body_consts)
    _, cond_reads = pe.dce_program(cond_closed.program, [True])
    cond_reads = cond_reads[len(cond_consts):]
    outs = [leaves[i] if f == nb + i and not cond_reads[i] else o
            for i, (o, f) in enumerate(zip(outs, _forwarded(body_closed)))]
    return pytrees.tree_unflatten(carry_tree, outs)


def _promote_weak_carries(leaves, avals, out_avals):
    """A weakly typed initial carry whose type the body changes is converted (strongly) to
    the dtype it promotes to with the body's output, as JAX does: `0` carried through a
    float32 body becomes float32. Returns (leaves, avals, changed)."""
    new_leaves, new_avals, changed = [], [], False
    for x, a, o in zip(leaves, avals, out_avals):
        if a.weak_type and not _same_type(a, o):
            x = lax.convert_element_type(_operand(x), dtypes.result_type(x, o))
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


# ================================================================ scan

scan_p = Primitive("scan", multiple_results=True)


def _scan_impl(*args, **params):
    return _run_equation(scan_p, args, params)


def _scan_abstract(*avals, jaxpr, length, num_carry, num_consts, reverse, unroll):
    ins = jaxpr.in_avals
    if len(avals) != len(ins):
        raise TypeError(f"scan expects {len(ins)} operands, got {len(avals)}.")
    fixed = avals[:num_consts + num_carry]
    for a, b in zip(fixed, ins):
        if not _same_type(a, b):
            raise TypeError(f"scan operand type {a.str_short()} does not match the body's "
                            f"{b.str_short()}.")
    for a, b in zip(avals[num_consts + num_carry:], ins[num_consts + num_carry:]):
        if a.shape[:1] != (length,) or not _same_type(a.update(shape=a.shape[1:]), b):
            raise TypeError(f"scan xs operand of type {a.str_short()} does not match length "
                            f"{length} and body input {b.str_short()}.")
    outs = jaxpr.out_avals
    carry_in = avals[num_consts:num_consts + num_carry]
    for a, b in zip(carry_in, outs[:num_carry]):
        if not _same_type(a, b):
            raise TypeError(f"scan carry output {b.str_short()} does not match its input "
                            f"{a.str_short()}.")
    return [a.update(weak_type=a.weak_type and b.weak_type)
            for a, b in zip(carry_in, outs[:num_carry])] + \
        [a.update(shape=(length,) + a.shape) for a in outs[num_carry:]]


impl_rules[scan_p] = _scan_impl
abstract_eval_rules[scan_p] = _scan_abstract
weak_type_rules[scan_p] = lambda *args, jaxpr, num_carry, num_consts, **params: [
    a.weak_type and getattr(x, "weak_type", False)
    for a, x in zip(jaxpr.out_avals[:num_carry], args[num_consts:num_consts + num_carry])] + [
    a.weak_type for a in jaxpr.out_avals[num_carry:]]


def _scan_params(jaxpr, length, num_carry, num_consts, reverse, unroll):
    # Keyword order is the printed order, alphabetical as JAX prints it.
    return dict(jaxpr=jaxpr, length=length, num_carry=num_carry, num_consts=num_consts,
                reverse=reverse, unroll=unroll)


def _scan_jvp(primals, tangents, jaxpr, length, num_carry, num_consts, reverse, unroll):
    nc, ncar = num_consts, num_carry
    nx = len(primals) - nc - ncar
    const_nz = [type(t) is not Zero for t in tangents[:nc]]
    carry_nz = [_is_inexact(a) for a in jaxpr.in_avals[nc:nc + ncar]]
    xs_nz = [type(t) is not Zero for t in tangents[nc + ncar:]]
    jvp_body, out_nz = _jvp_closed(jaxpr, tuple(const_nz + carry_nz + xs_nz))
    n_in = nc + ncar + nx
    k_c, k_car, k_x = sum(const_nz), sum(carry_nz), sum(xs_nz)
    t0 = n_in
    order = (list(range(nc)) + list(range(t0, t0 + k_c))
             + list(range(nc, nc + ncar)) + list(range(t0 + k_c, t0 + k_c + k_car))
             + list(range(nc + ncar, n_in)) + list(range(t0 + k_c + k_car, t0 + k_c + k_car + k_x)))
    n_out = len(jaxpr.out_avals)
    k_ycar = sum(out_nz[:ncar])
    out_order = (list(range(ncar)) + list(range(n_out, n_out + k_ycar))
                 + list(range(ncar, n_out)) + list(range(n_out + k_ycar, n_out + sum(out_nz))))
    jvp_body = _permute(jvp_body, order, out_order)
    const_t = [t for t in tangents[:nc] if type(t) is not Zero]
    carry_t = [ad.instantiate(t) for t, nz in zip(tangents[nc:nc + ncar], carry_nz) if nz]
    xs_t = [t for t in tangents[nc + ncar:] if type(t) is not Zero]
    outs = scan_p.bind(*primals[:nc], *const_t, *primals[nc:nc + ncar], *carry_t,
                       *primals[nc + ncar:], *xs_t,
                       **_scan_params(jvp_body, length, ncar + k_ycar, nc + k_c, reverse, unroll))
    carry_p, carry_tans = outs[:ncar], iter(outs[ncar:ncar + k_ycar])
    rest = outs[ncar + k_ycar:]
    ny = n_out - ncar
    ys_p, ys_tans = rest[:ny], iter(rest[ny:])
    y_avals = _scan_abstract(*builtins.map(get_aval, primals), jaxpr=jaxpr, length=length,
                             num_carry=ncar, num_consts=nc, reverse=reverse, unroll=unroll)
    tans = [next(carry_tans) if nz else Zero(ad.tangent_aval(a))
            for a, nz in zip(y_avals[:ncar], out_nz[:ncar])]
    tans += [next(ys_tans) if nz else Zero(ad.tangent_aval(a))
             for a, nz in zip(y_avals[ncar:], out_nz[ncar:])]
    return carry_p + ys_p, tans


ad.jvp_rules[scan_p] = _scan_jvp


def _scan_batch(axis_size, vals, dims, jaxpr, length, num_carry, num_consts, reverse, unroll):
    nc, ncar = num_consts, num_carry
    cdims = list(dims[:nc])
    # The body sees one slice of xs: a batch axis at d > 0 is at d - 1 there; d == 0 moves
    # (after the carries, as JAX orders the moves).
    xdims = [not_mapped if d is not_mapped else builtins.max(d, 1) - 1
             for d in dims[nc + ncar:]]
    carry_b = [d is not not_mapped for d in dims[nc:nc + ncar]]
    n_out = len(jaxpr.out_avals)
    while True:
        body, out_dims = batching.batch_closed(
            jaxpr, axis_size, cdims + [0 if b else not_mapped for b in carry_b] + xdims,
            carry_b + [False] * (n_out - ncar))
        new = [b or d is not not_mapped for b, d in zip(carry_b, out_dims[:ncar])]
        if new == carry_b:
            break
        carry_b = new
    carry = [batching.move_to(v, d, 0, axis_size) if b else v
             for v, d, b in zip(vals[nc:nc + ncar], dims[nc:nc + ncar], carry_b)]
    xs = [batching.moveaxis(x, 0, 1) if d == 0 else x
          for x, d in zip(vals[nc + ncar:], dims[nc + ncar:])]
    outs = scan_p.bind(*vals[:nc], *carry, *xs,
                       **_scan_params(body, length, ncar, nc, reverse, unroll))
    y_dims = [not_mapped if d is not_mapped else 1 for d in out_dims[ncar:]]
    return outs, [0 if b else not_mapped for b in carry_b] + y_dims


batching.batch_rules[scan_p] = _scan_batch


def _scan_partial_eval(trace, args, params):
    jaxpr, nc, ncar = params["jaxpr"], params["num_consts"], params["num_carry"]
    length, reverse, unroll = params["length"], params["reverse"], params["unroll"]
    uk = [not pe.is_known(trace, x) for x in args]
    const_uk, carry_uk, xs_uk = uk[:nc], uk[nc:nc + ncar], uk[nc + ncar:]
    n_ys = len(jaxpr.out_avals) - ncar
    while True:
        # Loop-invariant residuals (known consts) are passed once, the others stacked.
        known, unknown, out_uk, inv_src, n_res = pe.partial_eval_closed(
            jaxpr, const_uk + carry_uk + xs_uk, carry_uk + [False] * n_ys, range(nc))
        new = [a or b for a, b in zip(carry_uk, out_uk[:ncar])]
        if new == carry_uk:
            break
        carry_uk = new
    n_kc, n_kcar = nc - sum(const_uk), ncar - sum(carry_uk)
    known_args = [a for a, u in zip(args, const_uk + carry_uk + xs_uk) if not u]
    # A stacked output (a y or a residual) that is an xs slice itself is that xs, passed on
    # rather than stacked again, as JAX forwards it.
    known, fwd = _forward_xs_outputs(known, n_kc + n_kcar, n_kcar)
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(*known_args, **_scan_params(
            known, length, n_kcar, n_kc, reverse, unroll))
    stacked_outs = iter(known_outs)
    known_outs = [next(stacked_outs) if f is None else known_args[f] for f in fwd]
    n_kys = len(known_outs) - n_kcar - n_res
    k_carry, k_ys = known_outs[:n_kcar], known_outs[n_kcar:n_kcar + n_kys]
    stacked = known_outs[n_kcar + n_kys:]
    # Unknown body inputs [invariant, stacked residuals, consts, carry, xs] in scan layout,
    # the stacked residuals after the xs, as JAX orders them.
    prog = unknown.program
    n_inv = len(inv_src)
    inv, res, rest = (prog.invars[:n_inv], prog.invars[n_inv:n_inv + n_res],
                      prog.invars[n_inv + n_res:])
    body = ClosedProgram(Program(prog.constvars, inv + rest + res, prog.eqns, prog.outvars),
                         unknown.consts)
    n_cu, n_caru = sum(const_uk), sum(carry_uk)
    unknown_args = ([args[i] for i in inv_src] + [a for a, u in zip(args[:nc], const_uk) if u]
                    + [a for a, u in zip(args[nc:nc + ncar], carry_uk) if u]
                    + [a for a, u in zip(args[nc + ncar:], xs_uk) if u] + list(stacked))
    staged = pe.StagingTrace.process_primitive(trace, scan_p, unknown_args, _scan_params(
        body, length, n_caru, n_inv + n_cu, reverse, unroll))
    kc, uc = iter(k_carry), iter(staged[:n_caru])
    carries = [next(uc) if u else next(kc) for u in carry_uk]
    ky, uy = iter(k_ys), iter(staged[n_caru:])
    return carries + [next(uy) if u else next(ky) for u in out_uk[ncar:]]


pe.partial_eval_rules[scan_p] = _scan_partial_eval


def _forward_xs_outputs(body, n_fixed, n_carry):
    """(`body` without the stacked outputs that are xs slices, for each output of `body` the
    index of the input it forwards, else None)."""
    prog = body.program
    xs_index = {v.id: n_fixed + k for k, v in enumerate(prog.invars[n_fixed:])}
    fwd = [xs_index.get(o.id) if j >= n_carry and type(o) is Var else None
           for j, o in enumerate(prog.outvars)]
    if all(f is None for f in fwd):
        return body, fwd
    outvars = [o for o, f in zip(prog.outvars, fwd) if f is None]
    return ClosedProgram(Program(prog.constvars, prog.invars, prog.eqns, outvars),
                         body.consts), fwd


def _scan_transpose(cts, *args, jaxpr, length, num_carry, num_consts, reverse, unroll):
    nc, ncar = num_consts, num_carry
    consts, carry, xs = args[:nc], args[nc:nc + ncar], args[nc + ncar:]
    # The body is linear in every carry; a carry that starts from a known value (an
    # instantiated zero tangent) still gets a cotangent, which is then dropped.
    carry_lin = [ad.is_undefined(c) for c in carry]
    const_lin = [ad.is_undefined(c) for c in consts]
    xs_lin = [ad.is_undefined(x) for x in xs]
    known_consts = [c for c in consts if not ad.is_undefined(c)]
    known_xs = [x for x in xs if not ad.is_undefined(x)]
    cts = [ad.instantiate(c) for c in cts]
    ct_carry, ct_ys = cts[:ncar], cts[ncar:]
    lin_const_avals = [c.aval for c in consts if ad.is_undefined(c)]
    linear = const_lin + [True] * ncar + xs_lin
    n_kc, n_lc = len(known_consts), len(lin_const_avals)
    y_ct_avals = list(jaxpr.out_avals[ncar:])
    carry_ct_avals = list(jaxpr.out_avals[:ncar])
    kx_avals = [a for a, lin in zip(jaxpr.in_avals[nc + ncar:], xs_lin) if not lin]
    kc_avals = [a for a, lin in zip(jaxpr.in_avals[:nc], const_lin) if not lin]

    # Transposed body, in JAX's layout: consts (known), carry (const cotangent sums, carry
    # cotangents), xs (ys cotangents, known residual slices) -> (new sums, carry cts), xs
    # cotangents.
    def t_body(*a):
        kc, acc = a[:n_kc], a[n_kc:n_kc + n_lc]
        ct_c = a[n_kc + n_lc:n_kc + n_lc + ncar]
        rest = a[n_kc + n_lc + ncar:]
        ct_y, kx = rest[:len(y_ct_avals)], rest[len(y_ct_avals):]
        cts_in = _backward(jaxpr, linear, list(kc) + list(kx), list(ct_c) + list(ct_y))
        new_acc = [lax.add(s, c) for s, c in zip(acc, cts_in[:n_lc])]
        return new_acc + cts_in[n_lc:n_lc + ncar] + cts_in[n_lc + ncar:]

    t_closed = pe.trace_to_program(
        t_body, kc_avals + lin_const_avals + carry_ct_avals + y_ct_avals + kx_avals)
    init_acc = [_zeros(a) for a in lin_const_avals]
    outs = scan_p.bind(*known_consts, *init_acc, *ct_carry, *ct_ys, *known_xs, **_scan_params(
        t_closed, length, len(init_acc) + ncar, n_kc, not reverse, unroll))
    acc, ct_init = outs[:len(init_acc)], outs[len(init_acc):len(init_acc) + ncar]
    ct_xs = iter(outs[len(init_acc) + ncar:])
    it_acc = iter(acc)
    return ([next(it_acc) if lin else None for lin in const_lin]
            + [ct if lin else None for ct, lin in zip(ct_init, carry_lin)]
            + [next(ct_xs) if lin else None for lin in xs_lin])


ad.transpose_rules[scan_p] = _scan_transpose


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Loop `carry, y = f(carry, x)` over the leading axis of `xs` (a pytree), returning
    `(final carry, stacked ys)`. `length` is needed when `xs` is None; `reverse` runs from
    the end; `unroll` (a non-negative int or a bool) is checked and kept as a param."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    return _scan(f, init, xs, length, reverse, unroll)


def _scan(f, init, xs, length, reverse, unroll, traced_for="scan", src=None):
    carry_leaves, carry_tree = pytrees.tree_flatten(init)
    xs_leaves, xs_tree = pytrees.tree_flatten(xs)
    carry_avals, xs_avals = _avals(carry_leaves), _avals(xs_leaves)
    length = _scan_length(xs_leaves, length)
    x_avals = [a.update(shape=a.shape[1:]) for a in xs_avals]
    in_tree = pytrees.tree_structure((init, xs))
    check = f  # the carry's name comes from the loop body's signature (a wrapper's)

    def trace(carry_avals):
        closed, consts, out_tree = _trace_body(f, in_tree, carry_avals + x_avals, traced_for, src)
        if pytrees.treedef_is_leaf(out_tree) or len(out_tree.children()) != 2:
            got = pytrees.tree_unflatten(out_tree, closed.out_avals)
            raise TypeError(f"scan body output must be a pair, got {got}.")
        return closed, consts, out_tree

    closed, consts, out_tree = trace(carry_avals)
    carry_out_tree = out_tree.children()[0]
    n = len(carry_leaves)
    if carry_out_tree.num_leaves != n:
        _check_carry("scan body", check, carry_tree, carry_avals, carry_out_tree,
                     closed.out_avals[:carry_out_tree.num_leaves])
    carry_leaves, carry_avals, changed = _promote_weak_carries(
        carry_leaves, carry_avals, closed.out_avals[:n])
    if changed:
        closed, consts, out_tree = trace(carry_avals)
        carry_out_tree = out_tree.children()[0]
    _check_carry("scan body", check, carry_tree, carry_avals, carry_out_tree,
                 closed.out_avals[:n])
    if isinstance(unroll, bool):
        unroll = builtins.max(length, 1) if unroll else 1
    if unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    outs = scan_p.bind(*consts, *builtins.map(_operand, carry_leaves),
                       *builtins.map(_operand, xs_leaves),
                       **_scan_params(closed, length, n, len(consts), bool(reverse), int(unroll)))
    # A carry the body passes through unchanged is the initial value itself, as in JAX.
    fwd = _forwarded(closed)
    outs = [carry_leaves[i] if i < n and fwd[i] == len(consts) + i else o
            for i, o in enumerate(outs)]
    return pytrees.tree_unflatten(out_tree, outs)


def _scan_length(xs_leaves, length) -> int:
    """The trip count: `length`, checked against the leading axes of `xs` (JAX's errors)."""
    if any(not hasattr(x, "shape") for x in xs_leaves):
        raise ValueError("scan got value with no leading axis to scan over: "
                         + ", ".join(str(x) for x in xs_leaves if not hasattr(x, "shape")) + ".")
    lengths = [_shape_of(x)[0] for x in xs_leaves]  # a 0-d array is an IndexError, as in JAX
    if length is not None:
        length = int(length)
        if any(n != length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
        return length
    if len(set(lengths)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         + ", ".join(builtins.map(str, lengths)) + ".")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


# ================================================================ fori_loop and map


def _concrete_int(x):
    """`int(x)` for a bound known at trace time, else None."""
    if isinstance(x, Tracer):
        x = x.to_concrete_value()
        if x is None:
            return None
    try:
        return int(x)
    except TypeError:
        return None


def _is_weak(x) -> bool:
    return isinstance(x, _SCALARS) or bool(getattr(x, "weak_type", False))


def _bounds_dtype(lower, upper):
    """The common dtype of fori_loop's bounds: equal dtypes, or a weak signed integer bound
    taking the other's signed integer dtype (JAX's one allowed promotion)."""
    lo = dtypes.dtype(_check_operand(lower), canonicalize=True)
    hi = dtypes.dtype(_check_operand(upper), canonicalize=True)
    if lo == hi:
        return lo
    if lo.kind == "i" and hi.kind == "i":
        if _is_weak(lower) and not _is_weak(upper):
            return hi
        if _is_weak(upper) and not _is_weak(lower):
            return lo
    raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                    f"{lo.name} and {hi.name}")


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """`for i in range(lower, upper): val = body_fun(i, val)`. With bounds known at trace time
    this is a scan whose index starts as a Python int (reverse-differentiable, small
    programs); with traced bounds a while_loop, and `unroll` must be left unset."""
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    dt = _bounds_dtype(lower, upper)
    lo, hi = _concrete_int(lower), _concrete_int(upper)
    if lo is not None and hi is not None:
        def scanned_fun(loop_carry, _):
            i, x = loop_carry
            return (i + 1, body_fun(i, x)), None

        (_, result), _ = _scan(scanned_fun, (lo, init_val), None, builtins.max(hi - lo, 0),
                               False, False if unroll is None else unroll, "fori_loop", body_fun)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    lower, upper = (x if dtypes.dtype(x, canonicalize=True) == dt
                    else lax.convert_element_type(_operand(x), dt) for x in (lower, upper))

    def while_body_fun(loop_carry):
        i, stop, x = loop_carry
        return lax.add(i, lax.full((), 1, get_aval(i).dtype)), stop, body_fun(i, x)

    _, _, result = _while_loop(_fori_cond_fun, while_body_fun, (lower, upper, init_val),
                               "fori_loop", body_fun)
    return result


def _fori_cond_fun(loop_carry):
    i, upper, _ = loop_carry
    return lax.lt(i, upper)


def _batch_and_remainder(xs, batch_size):
    """`xs` split into (full batches stacked along a new leading axis, the remainder); either
    is None when empty. `batch_size=0` is one batch of everything (plain vmap)."""
    leaves, tree = pytrees.tree_flatten(xs)
    if not leaves:
        return xs, None
    n = _shape_of(leaves[0])[0]
    num, rest = (0, n) if batch_size == 0 else divmod(n, batch_size)
    used = num * batch_size
    rem = (pytrees.tree_unflatten(tree, [lax.slice_in_dim(x, used, _shape_of(x)[0])
                                           for x in leaves]) if rest or not num else None)
    if not num:
        return None, rem
    stacked = pytrees.tree_unflatten(tree, [
        lax.reshape(lax.slice_in_dim(x, 0, used), (num, batch_size) + tuple(_shape_of(x)[1:]))
        for x in leaves])
    return stacked, rem


def map(f, xs, *, batch_size=None):
    """`[f(x) for x in xs]` stacked, over the leading axis of the pytree `xs`, as a scan.
    With `batch_size`, chunks of that many examples run under vmap (the remainder last;
    `batch_size=0` is one vmap over everything)."""
    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    from gpuarr.vmap_api import vmap
    scan_xs, rest_xs = _batch_and_remainder(xs, batch_size)
    if scan_xs is None:
        return vmap(f)(rest_xs)
    _, scan_ys = scan(lambda _, x: ((), vmap(f)(x)), (), scan_xs)

    def flatten(y):
        shape = _shape_of(y)
        return lax.reshape(y, (shape[0] * shape[1],) + tuple(shape[2:]))

    if rest_xs is None:
        return pytrees.tree_map(flatten, scan_ys)
    rest_ys = vmap(f)(rest_xs)
    return pytrees.tree_map(lambda a, b: lax.concatenate([flatten(a), b], 0), scan_ys, rest_ys)


# ================================================================ associative_scan


def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive prefix scan of the associative `fn` over `axis` of the pytree `elems`, in
    O(log n) parallel steps (Blelloch's odd/even recursion), as lax.associative_scan."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = pytrees.tree_flatten(elems)
    ndim = get_aval(leaves[0]).ndim  # no leaves: IndexError, as in JAX
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis = axis % ndim
    num = get_aval(leaves[0]).shape[axis]
    if any(get_aval(x).shape[axis] != num for x in leaves):
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[get_aval(x).shape for x in leaves]})")
    if reverse:
        leaves = [lax.rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        # fn's output is only flattened: a wrong leaf count fails when it is next unflattened.
        return pytrees.tree_leaves(
            fn(pytrees.tree_unflatten(tree, a), pytrees.tree_unflatten(tree, b)))

    def take(x, start, stop, stride=1):
        return lax.slice_in_dim(x, start, stop, stride, axis)

    def run(elems):
        n = get_aval(elems[0]).shape[axis]
        if n < 2:
            return elems
        reduced = combine([take(e, 0, n - 1, 2) for e in elems], [take(e, 1, n, 2) for e in elems])
        odd = run(reduced)
        if n % 2 == 0:
            m = get_aval(odd[0]).shape[axis]
            even = combine([take(e, 0, m - 1) for e in odd], [take(e, 2, n, 2) for e in elems])
        else:
            even = combine(odd, [take(e, 2, n, 2) for e in elems])
        even = [lax.concatenate([take(e, 0, 1), r], axis) for e, r in zip(elems, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = run(leaves)
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return pytrees.tree_unflatten(tree, out)


def _interleave(a, b, axis):
    """[a0, b0, a1, b1, ...] along `axis` (len(a) is len(b) or len(b) + 1)."""
    na, nb = get_aval(a).shape[axis], get_aval(b).shape[axis]
    ndim = get_aval(a).ndim
    zero = np.zeros((), get_aval(a).dtype)[()]

    def cfg(lo, hi):
        return tuple((lo, hi, 1) if d == axis else (0, 0, 0) for d in range(ndim))

    pa = lax.pad(a, zero, cfg(0, 1 if na == nb else 0))
    pb = lax.pad(b, zero, cfg(1, 0 if na == nb else 1))
    if get_aval(a).dtype == np.bool_:
        return lax.bitwise_or(pa, pb)
    return lax.add(pa, pb)


# ================================================================ scan pruning and eager loops


def _prune_scan_body(jaxpr, nc, ncar, live):
    """Drop the outputs in `live` that are false, and the carries only they need.

    Returns (body, const_idx, carry_idx, xs_idx, y_idx): `body` takes the kept consts,
    carries and xs (in that order) and returns the kept carries and the live ys.
    """
    prog = jaxpr.program
    need = list(live)
    while True:  # a carry is needed while a needed output reads it
        pruned, used = pe.dce_program(prog, need)
        grown = [n or u for n, u in zip(need[:ncar], used[nc:nc + ncar])]
        if grown == need[:ncar]:
            break
        need[:ncar] = grown
    const_idx = tuple(i for i in range(nc) if used[i])
    carry_idx = tuple(i for i in range(ncar) if need[i])
    xs_idx = tuple(i for i in range(len(prog.invars) - nc - ncar) if used[nc + ncar + i])
    invars = ([prog.invars[i] for i in const_idx] + [prog.invars[nc + i] for i in carry_idx]
              + [prog.invars[nc + ncar + i] for i in xs_idx])
    y_idx = tuple(j for j in range(len(prog.outvars) - ncar) if need[ncar + j])
    body = Program(prog.constvars, invars, pruned.eqns, pruned.outvars)
    return ClosedProgram(body, jaxpr.consts), const_idx, carry_idx, xs_idx, y_idx


def _scan_dce(used, eqn):
    """The scan without the outputs nobody reads, the carries only they need, and the consts
    and xs left unread, as JAX's dce rule for scan."""
    p = eqn.params
    nc, ncar, ins = p["num_consts"], p["num_carry"], eqn.inputs
    body, const_idx, carry_idx, xs_idx, y_idx = _prune_scan_body(p["jaxpr"], nc, ncar, used)
    inputs = ([ins[i] for i in const_idx] + [ins[nc + i] for i in carry_idx]
              + [ins[nc + ncar + i] for i in xs_idx])
    outvars = [eqn.outvars[i] for i in carry_idx] + [eqn.outvars[ncar + j] for j in y_idx]
    params = _scan_params(body, p["length"], len(carry_idx), len(const_idx), p["reverse"],
                          p["unroll"])
    return eqn._replace(inputs=inputs, outvars=outvars, params=params)


pe.dce_rules[scan_p] = _scan_dce


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
