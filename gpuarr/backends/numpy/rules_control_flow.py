"""Loops and branches in the NumPy backend's generated code.

The NumPy backend writes a Program as the source of one Python function. These rules write a
scan, while or cond (and a custom_linear_solve's solve) into that same function as a `for`,
`while` or `if` statement whose body is the body Program's own straight-line code: carries
are local variables, scan outputs are written into preallocated arrays, and an iteration costs
only its NumPy calls. A scan is first pruned (outputs nobody reads and the carries only they
need are dropped) and split (`_make_scan_plan`: the carry-independent part runs once, batched
over xs); a scan whose step is a recurrent cell takes `recurrent_scan`'s form.
"""
from __future__ import annotations

import builtins
import weakref
from typing import NamedTuple

import numpy as np

from gpuarr.backends.numpy import recurrent_scan
from gpuarr.backends.numpy.codegen import inline_rules
from gpuarr.core import ClosedProgram, Var
from gpuarr.interpreters import batching
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.batching import not_mapped
from gpuarr.lax.control_flow.common import _permute
from gpuarr.lax.control_flow.conditionals import cond_p
from gpuarr.lax.control_flow.loops import while_p
from gpuarr.lax.control_flow.scans import _prune_scan_body, scan_p
from gpuarr.lax.custom_solve import _split_solve_args, linear_solve_p


class _ScanLoop(NamedTuple):
    const_idx: tuple   # which scan consts the pruned body reads
    carry_idx: tuple   # which carries it keeps
    xs_idx: tuple      # which xs it reads
    pre: ClosedProgram | None  # (consts, xs) -> (hoisted ys, stacked residuals)
    body: ClosedProgram  # (body consts, carry, per-step slices) -> (carry, loop ys)
    body_consts: tuple  # indices into the kept consts that `body` takes
    ys: tuple          # per scan output y: ("pre" | "loop" | "xs", k) or None (dead)


_scan_loops: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _scan_loop(jaxpr, length, nc, ncar, live) -> _ScanLoop:
    per_body = _scan_loops.setdefault(jaxpr, {})
    key = (length, nc, ncar, live)
    if key not in per_body:
        per_body[key] = _make_scan_loop(jaxpr, length, nc, ncar, live)
    return per_body[key]


def _make_scan_plan(jaxpr, length, nc, ncar):
    """Hoist the part of a scan body that does not depend on the carry out of the loop.

    That part (e.g. `U @ x_t` in an RNN) runs once over all of `xs`, batched along the scan
    axis; the loop then runs only the carry-dependent rest. Returns (pre, body, y_uk,
    inv_src) or None when nothing can be hoisted: `pre` maps (consts, xs) to (hoisted ys,
    stacked residuals); `body` maps (invariant consts, carry, residual slices) to (carry,
    other ys); `inv_src` says which consts `body` takes.
    """
    nx = len(jaxpr.in_avals) - nc - ncar
    ny = len(jaxpr.out_avals) - ncar
    if nx == 0 or jaxpr.program.effectful:  # effects keep their per-iteration order
        return None
    try:
        known, unknown, out_uk, inv_src, n_res = pe.partial_eval_closed(
            jaxpr, [False] * nc + [True] * ncar + [False] * nx, [True] * ncar + [False] * ny,
            range(nc))
        if not known.eqns:
            return None
        pre, _ = batching.batch_closed(known, length, [not_mapped] * nc + [0] * nx,
                                       [True] * len(known.out_avals))
    except Exception:  # a body that cannot be split or batched runs as it is
        return None
    n_inv = len(inv_src)
    order = (list(range(n_inv)) + list(range(n_inv + n_res, n_inv + n_res + ncar))
             + list(range(n_inv, n_inv + n_res)))
    body = _permute(unknown, order, range(len(unknown.out_avals)))
    return pre, body, out_uk[ncar:], inv_src


def _make_scan_loop(jaxpr, length, nc, ncar, live) -> _ScanLoop:
    # An output that is an x slice itself (residuals of reverse mode often are) is that xs.
    prog = jaxpr.program
    x_pos = {v.id: k for k, v in enumerate(prog.invars[nc + ncar:])}
    same_xs = {j: x_pos[o.id] for j, o in enumerate(prog.outvars[ncar:])
               if live[ncar + j] and type(o) is Var and o.id in x_pos}
    live = tuple(u and j - ncar not in same_xs for j, u in enumerate(live))
    body, const_idx, carry_idx, xs_idx, y_idx = _prune_scan_body(jaxpr, nc, ncar, live)
    n_kc, n_kcar = len(const_idx), len(carry_idx)
    plan = _make_scan_plan(body, length, n_kc, n_kcar) if length > 1 else None
    y_uk = [True] * len(y_idx)
    pre, body_consts = None, tuple(range(n_kc))
    if plan is not None:
        pre, body, y_uk, inv_src = plan
        body_consts = tuple(inv_src)
    ys, n_pre, n_loop = [None] * (len(jaxpr.out_avals) - ncar), 0, 0
    for j, uk in zip(y_idx, y_uk):
        ys[j] = ("loop", n_loop) if uk else ("pre", n_pre)
        n_loop, n_pre = n_loop + uk, n_pre + (not uk)
    for j, k in same_xs.items():
        ys[j] = ("xs", k)
    return _ScanLoop(const_idx, carry_idx, xs_idx, pre, body, body_consts, tuple(ys))


def _emit_closed(gen, closed: ClosedProgram, in_names, carries=None):
    return gen.program(closed.program, [gen.const(c) for c in closed.consts], in_names,
                       carries)


def _for_header(length, index, seqs, targets) -> str:
    items = ([f"range({length})"] if index else []) + list(seqs)
    names = ([index] if index else []) + list(targets)
    if not items:
        return f"for _ in range({length}):"
    if len(items) == 1:
        return f"for {names[0]} in {items[0]}:"
    return f"for {', '.join(names)} in zip({', '.join(items)}):"


def _scan_emit(gen, eqn) -> bool:
    p = eqn.params
    nc, ncar, length, reverse = p["num_consts"], p["num_carry"], p["length"], p["reverse"]
    ins = [gen.read(a) for a in eqn.inputs]
    live = tuple(gen.is_live(v) for v in eqn.outvars)
    cell = (recurrent_scan.match(p["jaxpr"], nc, length)
            if ncar == 1 and len(eqn.inputs) == nc + 2 else None)
    if cell is not None and cell.projection is not None:
        # h = f(W @ h + U @ x_t): one product of [W | U] a step, U @ x_t not hoisted.
        carry = gen.fresh("c")
        ys = [gen.fresh("ys") if gen.is_live(v) else None for v in eqn.outvars[1:]]
        recurrent_scan.emit(gen, cell, ins[:nc], ins[nc], ins[nc + 1], length, reverse, carry,
                            ys)
        for v, name in zip(eqn.outvars, [carry, *ys]):
            if name is not None:
                gen.bind(v, name)
        return True
    loop = _scan_loop(p["jaxpr"], length, nc, ncar, live)
    consts = [ins[i] for i in loop.const_idx]
    xs = [ins[nc + ncar + i] for i in loop.xs_idx]
    seqs, pre_ys = xs, []
    if loop.pre is not None:
        outs = _emit_closed(gen, loop.pre, consts + xs)
        n_pre = builtins.sum(1 for y in loop.ys if y is not None and y[0] == "pre")
        pre_ys, seqs = outs[:n_pre], outs[n_pre:]
    carry = [gen.fresh("c") for _ in loop.carry_idx]
    gen.assign(carry, [ins[nc + i] for i in loop.carry_idx])
    n_loop_ys = len(loop.body.out_avals) - len(carry)
    ys = [gen.fresh("ys") for _ in range(n_loop_ys)]
    body_consts = [consts[i] for i in loop.body_consts]
    cell = (recurrent_scan.match(loop.body, len(body_consts), length)
            if len(carry) == 1 and len(seqs) == 1 else None)
    if cell is None:
        _emit_scan_steps(gen, loop, body_consts, carry, seqs, ys, length, reverse)
    else:  # h = f(W @ h + x_t): one product a step where the inputs are finite
        with gen.block(f"if {recurrent_scan.finite_check(gen, seqs[0])}:"):
            recurrent_scan.emit(gen, cell, body_consts, carry[0], seqs[0], length, reverse,
                                carry[0], ys)
        with gen.block("else:"):
            _emit_scan_steps(gen, loop, body_consts, carry, seqs, ys, length, reverse)
    for v, c in zip([eqn.outvars[i] for i in loop.carry_idx], carry):
        gen.bind(v, c)
    for v, y in zip(eqn.outvars[ncar:], loop.ys):
        if y is None:
            continue
        if y[0] == "loop":
            gen.bind(v, ys[y[1]])
        else:  # a fresh name: the generated code may `del` it without losing the original
            gen.assign([gen.bind(v)], [pre_ys[y[1]] if y[0] == "pre" else ins[nc + ncar + y[1]]])
    return True


def _emit_scan_steps(gen, loop, body_consts, carry, seqs, ys, length, reverse) -> None:
    """The scan's loop, one step of the body per iteration."""
    for name, aval in zip(ys, loop.body.out_avals[len(carry):]):
        gen.line(f"{name} = {gen.obj(np.empty, 'f')}({(length,) + aval.shape}, "
                 f"{gen.obj(aval.dtype, 'd')})")
    # A reverse scan walks reversed views: slices and output rows keep forward indices.
    seqs = [f"{s}[::-1]" for s in seqs] if reverse else seqs
    rows = [f"{y}[::-1]" for y in ys] if reverse else ys
    steps = [gen.fresh("x") for _ in seqs]
    index = gen.fresh("i") if ys else None
    if carry or ys or loop.body.program.effectful:
        with gen.loop(_for_header(length, index, seqs, steps)):
            n_bc = len(body_consts)
            outs = _emit_closed(gen, loop.body, body_consts + carry + steps,
                                [(n_bc + k, k) for k in range(len(carry))])
            # Rows first: an output may be the incoming carry itself.
            for row, y in zip(rows, outs[len(carry):]):
                gen.line(f"{row}[{index}] = {y}")
            gen.assign(carry, outs[:len(carry)])


def _while_emit(gen, eqn) -> bool:
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    ins = [gen.read(a) for a in eqn.inputs]
    carry = [gen.fresh("c") for _ in ins[nc + nb:]]
    gen.assign(carry, ins[nc + nb:])
    batched = p["cond_jaxpr"].out_avals[0].ndim
    with gen.loop("while True:"):
        (pred,) = _emit_closed(gen, p["cond_jaxpr"], ins[:nc] + carry, ())
        gen.line(f"if not {pred}{'.any()' if batched else ''}:")
        gen.line("    break")
        if not batched:
            gen.assign(carry, _emit_closed(gen, p["body_jaxpr"], ins[nc:nc + nb] + carry,
                                           [(nb + k, k) for k in range(len(carry))]))
        else:  # one predicate per example: the examples that are done keep their carry
            new = _emit_closed(gen, p["body_jaxpr"], ins[nc:nc + nb] + carry)
            where = gen.obj(_keep_done, "keep_done")
            gen.assign(carry, [f"{where}({pred}, {n}, {c})" for n, c in zip(new, carry)])
    for v, c in zip(eqn.outvars, carry):
        gen.bind(v, c)
    return True


def _keep_done(pred, new, old):
    """`new` where the leading axes' predicate holds, else `old` (a batched while's step)."""
    pred = np.asarray(pred)
    return np.where(pred.reshape(pred.shape + (1,) * (np.ndim(new) - pred.ndim)), new, old)


def _cond_emit(gen, eqn) -> bool:
    branches = eqn.params["branches"]
    index, *ops = [gen.read(a) for a in eqn.inputs]
    outs = [gen.fresh() for _ in eqn.outvars]
    if len(branches) == 1:
        gen.assign(outs, _emit_closed(gen, branches[0], ops))
    else:
        for k, br in enumerate(branches):
            # The index is clamped into range, as in JAX.
            last = k == len(branches) - 1
            header = "else:" if last else f"{'if' if k == 0 else 'elif'} {index} <= {k}:"
            with gen.block(header):
                gen.assign(outs, _emit_closed(gen, br, ops))
    for v, o in zip(eqn.outvars, outs):
        gen.bind(v, o)
    return True


def _linear_solve_emit(gen, eqn) -> bool:
    # The solve program written inline; fresh names, so a dead operand may be deleted.
    p = eqn.params
    params, b = _split_solve_args([gen.read(a) for a in eqn.inputs], p["const_lengths"])
    outs = [gen.fresh() for _ in eqn.outvars]
    gen.assign(outs, _emit_closed(gen, p["jaxprs"].solve, params.solve + b))
    for v, o in zip(eqn.outvars, outs):
        gen.bind(v, o)
    return True


inline_rules[scan_p] = _scan_emit
inline_rules[while_p] = _while_emit
inline_rules[cond_p] = _cond_emit
inline_rules[linear_solve_p] = _linear_solve_emit
