"""cond and switch: the `cond` primitive (`cond[branches=...]`, JAX's params) and its rules.
Reverse mode splits a cond whose inputs are partly unknown into a known cond that also emits
residuals (one set per branch, merged into common slots) and a linear one that is transposed.
"""
from __future__ import annotations

import builtins
import collections
from collections.abc import Sequence

import numpy as np

from gpuarr import dtypes, pytrees
from gpuarr.core import (
    ClosedProgram,
    Primitive,
    Program,
    Tracer,
    Var,
    abstract_eval_rules,
    eval_closed,
    eval_program,
    get_aval,
    set_current_trace,
    weak_type_rules,
)
from gpuarr.impls import impl_rules
from gpuarr.interpreters import ad, batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.ad import Zero
from gpuarr.interpreters.batching import not_mapped
from gpuarr.lax import conversions, lax, shape_ops
from gpuarr.lax.control_flow.common import (
    _avals,
    _capitalize,
    _forwarded,
    _fun_name,
    _jvp_closed,
    _leaf_paths,
    _listed,
    _mismatch_extra,
    _operand,
    _run_equation,
    _same_type,
    _shape_of,
    _split_by,
    _trace_body,
    _transpose_closed,
    _type_str,
    labels,
)

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
    # An output has a tangent when some branch gives it one (JAX's rule); the others stay
    # symbolic zeros.
    n = len(branches[0].out_avals)
    out_nz = [False] * n
    for br in branches:
        out_nz = [a or b for a, b in zip(out_nz, _jvp_closed(br, nonzeros, [False] * n)[1])]
    jvps = [_jvp_closed(br, nonzeros, out_nz) for br in branches]
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
        which = shape_ops.broadcast_in_dim(index, shape, (0,))
        outs.append(lax.select_n(which, *cases) if len(cases) > 1 else cases[0])
    return outs, [0] * n_out


batching.batch_rules[cond_p] = _cond_batch


def _select_per_example(pred, on_true, on_false):
    """lax.select with a per-example `pred` (leading axis) broadcast to the operands."""
    shape = get_aval(on_true).shape
    if len(shape) != get_aval(pred).ndim:
        pred = shape_ops.broadcast_in_dim(pred, shape, tuple(range(get_aval(pred).ndim)))
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
        slots = [shape_ops.empty_like_aval(a) for a in all_res]
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
    out_paths = _leaf_paths(traced[0][2], traced[0][0].out_avals)
    labels[joined[0]] = ([f" at path {pytrees.keystr(p)}" if p and out_paths else ""
                          for p in out_paths or [()] * len(traced[0][0].out_avals)],
                         [_fun_name(f) for f in branch_funs])
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
        pred = lax.ne(_operand(pred), shape_ops.full((), 0, get_aval(_operand(pred)).dtype))
    index = conversions.convert_element_type(_operand(pred), np.int32)
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
    index = conversions.convert_element_type(index, np.int32)  # a Python int folds, as in JAX
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    return _bind_cond(index, branches, operands, "switch")
