"""while_loop, and fori_loop and map on top of it and of scan: the `while` primitive
(`while[cond_jaxpr=... body_jaxpr=...]`, JAX's params) and its rules. A while_loop with a
dynamic trip count can be linearized but not transposed, as in JAX; fori_loop with bounds
known at trace time is a scan, so it can.
"""
from __future__ import annotations

import builtins

import numpy as np

from gpuarr import dtypes, pytrees
from gpuarr.core import (
    ClosedProgram,
    Primitive,
    Program,
    Tracer,
    abstract_eval_rules,
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
    _SCALARS,
    _avals,
    _check_carry,
    _check_operand,
    _forwarded,
    _is_inexact,
    _jvp_closed,
    _operand,
    _permute,
    _promote_weak_carries,
    _run_equation,
    _same_type,
    _shape_of,
    _trace_body,
    _with_unused_inputs,
    label_carry,
)
from gpuarr.lax.control_flow.scans import (
    _scan,
    scan,
)

_REVERSE_WHILE_MSG = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")

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
    const_nz = [type(t) is not Zero for t in bconst_t]
    # The carries with tangents: a fixpoint over the body, as JAX's.
    carry_nz = [type(t) is not Zero and _is_inexact(get_aval(c)) for c, t in zip(carry, carry_t)]
    while True:
        jvp_body, out_nz = _jvp_closed(body_jaxpr, tuple(const_nz + carry_nz), carry_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz)]
        if new == carry_nz:
            break
        carry_nz = new
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
    """JAX's rule: the carries an unknown input reaches (a fixpoint over the body) are
    unknown. With a known predicate, a loop of the known carries runs now, and the whole loop
    is staged for the unknown ones (recomputing the known part). That is what `linearize`
    needs; transposing the staged loop then raises JAX's error (`_while_transpose`)."""
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    uk = [not pe.is_known(trace, x) for x in args]
    cond_uk, body_uk, carry_uk = uk[:nc], uk[nc:nc + nb], uk[nc + nb:]
    while True:
        body_known, _, out_uk, _, _ = pe.partial_eval_closed(
            params["body_jaxpr"], body_uk + carry_uk, carry_uk)
        new = [a or b for a, b in zip(carry_uk, out_uk, strict=True)]
        if new == carry_uk:
            break
        carry_uk = new
    cond_known, _, (pred_uk,), _, _ = pe.partial_eval_closed(
        params["cond_jaxpr"], cond_uk + carry_uk, [False])
    if pred_uk or all(carry_uk):
        return pe.StagingTrace.process_primitive(trace, while_p, args, params)
    n_known = carry_uk.count(False)
    known_args = [x for x, u in zip(args, cond_uk + body_uk + carry_uk, strict=True) if not u]
    with set_current_trace(trace.parent):
        known_outs = iter(while_p.bind(*known_args, **_while_params(
            _first_outputs(cond_known, 1), _first_outputs(body_known, n_known),
            cond_uk.count(False), body_uk.count(False))))
    staged = pe.StagingTrace.process_primitive(trace, while_p, args, params)
    return [o if u else next(known_outs) for o, u in zip(staged, carry_uk, strict=True)]


def _first_outputs(closed, n):
    """`closed` computing only its first `n` outputs (the residuals after them dropped)."""
    prog = closed.program
    prog, _ = pe.dce_program(Program(prog.constvars, prog.invars, prog.eqns, prog.outvars[:n]))
    return ClosedProgram(prog, closed.consts)


def _while_transpose(cts, *args, **params):
    raise ValueError(_REVERSE_WHILE_MSG)


pe.partial_eval_rules[while_p] = _while_partial_eval
ad.transpose_rules[while_p] = _while_transpose


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
    label_carry(body_closed, check, carry_tree, avals)
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
                    else conversions.convert_element_type(_operand(x), dt) for x in (lower, upper))

    def while_body_fun(loop_carry):
        i, stop, x = loop_carry
        return lax.add(i, shape_ops.full((), 1, get_aval(i).dtype)), stop, body_fun(i, x)

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
        shape_ops.reshape(lax.slice_in_dim(x, 0, used), (num, batch_size) + tuple(_shape_of(x)[1:]))
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
        return shape_ops.reshape(y, (shape[0] * shape[1],) + tuple(shape[2:]))

    if rest_xs is None:
        return pytrees.tree_map(flatten, scan_ys)
    rest_ys = vmap(f)(rest_xs)
    return pytrees.tree_map(lambda a, b: lax.concatenate([flatten(a), b], 0), scan_ys, rest_ys)
