"""Scans whose step is a recurrent cell, `h = f(W @ h + x_t)` or `h = f(W @ h + U @ x_t)`, on
the NumPy backend.

Written the plain way, each step of such a scan costs at least three NumPy calls (the products,
the sum, the nonlinearity), and for small hidden sizes each call costs more in dispatch than in
arithmetic. Here the sum costs nothing: the per-step inputs are laid out as the right halves of
the rows of one buffer Z, so that row t holds [h_t | x_t], and the product of the augmented
matrix [W | U] with row t is W @ h_t + U @ x_t. The step's last elementwise operation writes
h_{t+1} into the left half of row t + 1. A step is then one BLAS call plus its elementwise tail.

A cell without an input product, `f(W @ h + x_t)`, takes U = I. The identity block multiplies
x_t by zeros, which turns an infinite or NaN input into NaNs everywhere, so the generated code
takes this path only when the inputs are finite (one sum over them) and otherwise runs the
plain loop. With a real U the product is the cell's own sum, in another order, for every input.

The buffer and its row views are kept between calls (a pool per scan, for concurrent
callers), since making 2 * length views costs as much as the sums saved.
The buffers are 64-byte aligned: OpenBLAS's vector loads run slower across cache lines, and a
product with a matrix NumPy placed on a 16-byte boundary took 7% longer.
"""
from __future__ import annotations

import collections
import itertools
from typing import NamedTuple

import numpy as np

from gpuarr.backends.host_memory import aligned_empty
from gpuarr.backends.numpy.codegen import KEYWORD_OUT, block_kernel_rules, impl_for, ufunc_of
from gpuarr.core import Literal
from gpuarr.impls import elementwise_prims
from gpuarr.lax.dot_precision import is_algorithm
from gpuarr.lax.dot_products import dot_general_p
from gpuarr.lax.lax import add_p

# The identity block doubles the product's multiply-adds: worth it while a call's dispatch
# costs more than that arithmetic. With 500 steps of tanh cells on one core the loop took 0.65
# (H = 16), 0.81 (64), 0.92 (128) and 1.6 (256) times as long as the plain one. An input
# product U @ x_t in the step trades one batched product over all steps for wider steps: the
# same bound holds for its width.
MAX_HIDDEN = 128
# Buffers (with their row views) up to this size are kept for the next call.
MAX_POOLED_BYTES = 1 << 22


class Cell(NamedTuple):
    """A scan body matched as `carry' = tail(W @ carry + U @ x)` or `tail(W @ carry + x)`,
    read by `emit`."""
    matrix: int       # the body const holding W (or W.T, if `transposed`)
    transposed: bool  # the product is carry @ M, so W = M.T
    hidden: int       # H: the carry's length
    inputs: int       # the length of x
    projection: tuple | None  # (const index, transposed) of U, or None where U = I
    dtype: np.dtype
    tail: tuple       # the elementwise equations after the sum, the last writing the carry
    tail_reads: dict  # var id -> body const index, for consts the tail reads
    sum_id: int       # id of the sum's var
    ys_old: tuple     # per stacked output: True where it is the old carry, else the new one


def match(body, n_consts: int, length: int) -> Cell | None:
    """The `Cell` of a scan body (body consts, one carry, one per-step input) -> (carry, ys...),
    or None where it is not `carry' = f(W @ carry + U @ x)` or `f(W @ carry + x)` with f
    elementwise."""
    prog = body.program
    if prog.effectful or length < 2 or len(prog.invars) != n_consts + 2 or len(prog.eqns) < 2:
        return None
    consts, h, x = prog.invars[:n_consts], prog.invars[n_consts], prog.invars[n_consts + 1]
    dtype = h.aval.dtype
    if (h.aval.ndim != 1 or x.aval.ndim != 1 or dtype not in (np.float32, np.float64)
            or x.aval.dtype != dtype or max(h.aval.shape[0], x.aval.shape[0]) > MAX_HIDDEN):
        return None
    hidden = h.aval.shape[0]
    eqns = list(prog.eqns)
    # W @ h and U @ x, in either order, or W @ h alone.
    found = _product(eqns[0], consts, h, hidden)
    projection = _product(eqns[1], consts, x, hidden) if found else None
    if found is None:
        projection = _product(eqns[0], consts, x, hidden)
        found = _product(eqns[1], consts, h, hidden) if projection else None
    if found is None:
        return None
    products = [e.outvars[0] for e in eqns[:2 if projection else 1]]
    total, *tail = eqns[len(products):] or [None]
    addends = products + ([] if projection else [x])
    if projection is None and x.aval != h.aval:
        return None
    if (total is None or total.prim is not add_p
            or {id(a) for a in total.inputs} != {id(a) for a in addends}):
        return None
    s = total.outvars[0]
    if s.aval != h.aval:
        return None
    const_index = {v.id: i for i, v in enumerate(consts)}
    defined, tail_reads = {s.id}, {}
    for eqn in tail:
        if len(eqn.outvars) != 1 or eqn.outvars[0].aval != h.aval or (
                ufunc_of(eqn) is None and eqn.prim not in elementwise_prims):
            return None
        for a in eqn.inputs:
            if type(a) is Literal or a.id in defined:
                continue
            if a.id not in const_index:  # the old carry or x: no longer at hand
                return None
            tail_reads[a.id] = const_index[a.id]
        defined.add(eqn.outvars[0].id)
    new = (tail[-1] if tail else total).outvars[0]
    # The products and x feed only the sum (x through U); the sum only the tail; the outputs
    # are all the new carry.
    reads = [a for e in eqns[len(products):] for a in e.inputs if type(a) is not Literal]
    if any(sum(a is v for a in reads) != 1 for v in addends):
        return None
    # The outputs: the new carry, then stacked new or old carries (rows of one buffer).
    if prog.outvars[0] is not new or any(v is not new and v is not h for v in prog.outvars[1:]):
        return None
    return Cell(found[0], found[1], hidden, x.aval.shape[0], projection, np.dtype(dtype),
                tuple(tail), tail_reads, s.id, tuple(v is h for v in prog.outvars[1:]))


def _product(eqn, consts, v, rows: int):
    """(const index, transposed) where `eqn` is M @ v or v @ M.T with M a body const of shape
    (rows, len(v)) and v's type, else None."""
    if eqn.prim is not dot_general_p or len(eqn.inputs) != 2:
        return None
    p = eqn.params
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    if lb or rb or is_algorithm(p.get("precision")):
        return None
    pref = p.get("preferred_element_type")
    if pref is not None and np.dtype(pref) != v.aval.dtype:
        return None
    lhs, rhs = eqn.inputs
    n = v.aval.shape[0]
    if rhs is v and tuple(lc) == (1,) and tuple(rc) == (0,):
        m, transposed, shape = lhs, False, (rows, n)
    elif lhs is v and tuple(lc) == (0,) and tuple(rc) == (0,):
        m, transposed, shape = rhs, True, (n, rows)
    else:
        return None
    if type(m) is Literal or m.aval.shape != shape or m.aval.dtype != v.aval.dtype:
        return None
    index = next((i for i, c in enumerate(consts) if c is m), None)
    return None if index is None else (index, transposed)


class _Workspace(NamedTuple):
    z: np.ndarray          # (length + 1, H + X): row t is [h_t | x_t]
    stacked_t: np.ndarray  # (H + X, H): [W | U].T, whose transpose has the fastest product
    dot: object            # the product with [W | U], bound once
    rows: object           # the rows of Z the products read
    carries: object        # the left halves the steps write
    buffers: list          # one (H,) buffer per tail equation


def _workspace(length: int, cell: Cell, pooled: bool):
    """make() -> a `_Workspace` for one call of the loop."""
    n, width = cell.hidden, cell.hidden + cell.inputs

    def make():
        z = aligned_empty((length + 1, width), cell.dtype)
        stacked_t = aligned_empty((width, n), cell.dtype)
        rows, carries = z[:length], z[1:, :n]
        if pooled:
            rows, carries = list(rows), list(carries)
        return _Workspace(z, stacked_t, stacked_t.T.dot, rows, carries,
                          [aligned_empty((n,), cell.dtype) for _ in cell.tail])
    return make


def finite_check(gen, seq: str) -> str:
    """An expression true when every element of the sequence `seq` is finite."""
    return f"{gen.obj(np.isfinite, 'isfinite')}({gen.obj(np.add.reduce, 'total')}({seq}, None))"


def emit(gen, cell: Cell, consts, carry_in: str, seq: str, length: int, reverse: bool,
         carry_out: str, ys) -> None:
    """Write the loop: `consts` name the body consts, `seq` the (length, X) per-step inputs;
    the final carry is bound to `carry_out`, and each name in `ys` to the stacked carries of
    the body output at the same position in `cell.ys_old` (None for outputs not wanted)."""
    n, dtype = cell.hidden, cell.dtype
    pooled = (length + 1) * (n + cell.inputs) * dtype.itemsize <= MAX_POOLED_BYTES
    make = gen.obj(_workspace(length, cell, pooled), "workspace")
    pool = gen.obj([], "pool")
    ws = gen.fresh("ws")
    gen.line(f"{ws} = {pool}.pop() if {pool} else {make}()")
    gen.line(f"{ws}.z[:{length}, {n}:] = {seq}{'[::-1]' if reverse else ''}")
    gen.line(f"{ws}.z[0, :{n}] = {carry_in}")
    w = consts[cell.matrix] if cell.transposed else f"{consts[cell.matrix]}.T"
    if cell.projection is None:
        u = gen.obj(np.eye(n, dtype=dtype), "eye")
    else:
        index, transposed = cell.projection
        u = consts[index] if transposed else f"{consts[index]}.T"
    gen.line(f"{gen.obj(np.concatenate, 'concat')}(({w}, {u}), out={ws}.stacked_t)")
    bufs = [f"{ws}.buffers[{k}]" for k in range(len(cell.tail))]
    names = {cell.sum_id: bufs[0] if cell.tail else f"{ws}.carries"}
    names.update({vid: consts[i] for vid, i in cell.tail_reads.items()})
    ufuncs = [_step_fn(eqn) for eqn in cell.tail]
    if all(f is not None and f not in KEYWORD_OUT for f in ufuncs):
        _emit_driven(gen, cell, ufuncs, ws, bufs, names)
    else:
        _emit_loop(gen, cell, ufuncs, ws, bufs, names)
    gen.line(f"{carry_out} = {ws}.z[{length}, :{n}].copy()")
    for y, old in zip(ys, cell.ys_old):
        if y is not None:  # row t of Z holds the carry before step t, row t + 1 the one after
            rows = f"{ws}.z[:{length}, :{n}]" if old else f"{ws}.z[1:, :{n}]"
            gen.line(f"{y} = {rows}{'[::-1]' if reverse else ''}.copy()")
    gen.line(f"{pool}.append({ws})" if pooled else f"del {ws}")


def _step_fn(eqn):
    """The ufunc computing a tail equation, or its one-operand block kernel, which is called
    as a ufunc is, `kernel(x, out)` (sin and the other functions that give XLA's values for
    subnormal operands, lax/subnormal_operands.py), or None."""
    ufunc = ufunc_of(eqn)
    if ufunc is not None or len(eqn.inputs) != 1 or len(eqn.outvars) != 1:
        return ufunc
    rule = block_kernel_rules.get(eqn.prim)
    return rule(eqn) if rule is not None else None


def _emit_driven(gen, cell, ufuncs, ws, bufs, names) -> None:
    """The steps as one chain of iterators: zip calls its iterators in order, so each step is
    the product, then each tail ufunc, with no Python bytecode between the calls."""
    repeat = gen.obj(itertools.repeat, "repeat")
    sums = f"{repeat}({bufs[0]})" if cell.tail else f"{ws}.carries"
    # map with several iterables passes the arguments on directly (starmap over a zip builds
    # a tuple per call): 3-5% faster on a 500-step scan.
    calls = [f"map({ws}.dot, {ws}.rows, {sums})"]
    for k, (eqn, ufunc) in enumerate(zip(cell.tail, ufuncs)):
        last = k == len(cell.tail) - 1
        args = [f"{repeat}({gen.read(a) if type(a) is Literal else names[a.id]})"
                for a in eqn.inputs]
        args.append(f"{ws}.carries" if last else f"{repeat}({bufs[k + 1]})")
        names[eqn.outvars[0].id] = f"{ws}.carries" if last else bufs[k + 1]
        calls.append(f"map({gen.obj(ufunc, f'f_{eqn.prim.name}_')}, {', '.join(args)})")
    gen.line(f"{gen.obj(collections.deque, 'deque')}(zip(  # a step's calls, in order")
    for call in calls:
        gen.line(f"        {call},")
    gen.line("), 0)")


def _emit_loop(gen, cell, ufuncs, ws, bufs, names) -> None:
    """The steps as a Python loop (for tails with calls the driven form cannot make)."""
    row, h_next = gen.fresh("row"), gen.fresh("hn")
    names = {k: (h_next if v == f"{ws}.carries" else v) for k, v in names.items()}
    with gen.block(f"for {row}, {h_next} in zip({ws}.rows, {ws}.carries):"):
        gen.line(f"{ws}.dot({row}, {names[cell.sum_id]})")
        for k, (eqn, ufunc) in enumerate(zip(cell.tail, ufuncs)):
            last = k == len(cell.tail) - 1
            out = h_next if last else bufs[k + 1]
            args = [gen.read(a) if type(a) is Literal else names[a.id] for a in eqn.inputs]
            names[eqn.outvars[0].id] = out
            if ufunc is not None:
                target = f"out={out}" if ufunc in KEYWORD_OUT else out
                gen.line(f"{gen.obj(ufunc, f'f_{eqn.prim.name}_')}({', '.join(args + [target])})")
                continue
            # An elementwise impl that is not a ufunc returns a fresh array.
            call = f"{gen.obj(impl_for(eqn), f'f_{eqn.prim.name}_')}({', '.join(args)})"
            if last:
                gen.line(f"{gen.obj(np.copyto, 'copyto')}({out}, {call})")
            else:
                names[eqn.outvars[0].id] = gen.fresh()
                gen.line(f"{names[eqn.outvars[0].id]} = {call}")
