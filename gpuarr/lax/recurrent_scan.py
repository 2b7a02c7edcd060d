"""Scans whose step is a recurrent cell, `h = f(W @ h + x_t)`, on the NumPy backend.

Written the plain way, each step of such a scan costs at least three NumPy calls (the product,
the sum, the nonlinearity), and for small hidden sizes each call costs more in dispatch than in
arithmetic. Here the sum costs nothing: the per-step inputs are laid out as the right halves of
the rows of one buffer Z, so that row t holds [h_t | x_t], and the product of the augmented
matrix [W | I] with row t is W @ h_t + x_t. The step's last elementwise operation writes
h_{t+1} into the left half of row t + 1. A step is then one BLAS call plus its elementwise tail.

The identity block multiplies x_t by zeros, which turns an infinite or NaN input into NaNs
everywhere, so the generated code takes this path only when the inputs are finite (one sum
over them) and otherwise runs the plain loop. The buffer and its row views are kept between
calls (a pool per scan, for concurrent callers), since making 2 * length views costs as much
as the sums saved.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpuarr.backends.numpy_backend import _KEYWORD_OUT, _impl_for, _ufunc_of, elementwise_prims
from gpuarr.core import Literal
from gpuarr.lax.dot_precision import is_algorithm
from gpuarr.lax.lax import add_p, dot_general_p

# The identity block doubles the product's multiply-adds: worth it while a call's dispatch
# costs more than that arithmetic. With 500 steps of tanh cells on one core the loop took 0.65
# (H = 16), 0.81 (64), 0.92 (128) and 1.6 (256) times as long as the plain one.
MAX_HIDDEN = 128
# Buffers (with their row views) up to this size are kept for the next call.
MAX_POOLED_BYTES = 1 << 22


class Cell(NamedTuple):
    """A scan body matched as `carry' = tail(W @ carry + x)`, read by `emit`."""
    matrix: int       # the body const holding W (or W.T, if `transposed`)
    transposed: bool  # the product is carry @ M, so W = M.T
    hidden: int       # H = K: the carry's length
    dtype: np.dtype
    tail: tuple       # the elementwise equations after the sum, the last writing the carry
    tail_reads: dict  # var id -> body const index, for consts the tail reads
    sum_id: int       # id of the sum's var


def match(body, n_consts: int, length: int) -> Cell | None:
    """The `Cell` of a scan body (body consts, one carry, one per-step input) -> (carry, ys...),
    or None where it is not `carry' = f(W @ carry + x)` with f elementwise."""
    prog = body.program
    if prog.effectful or length < 2 or len(prog.invars) != n_consts + 2 or len(prog.eqns) < 2:
        return None
    h, x = prog.invars[n_consts], prog.invars[n_consts + 1]
    dtype = h.aval.dtype
    if h.aval.ndim != 1 or dtype not in (np.float32, np.float64) or x.aval != h.aval:
        return None
    hidden = h.aval.shape[0]
    product, total, *tail = prog.eqns
    found = _product(product, prog.invars[:n_consts], h)
    if found is None or hidden > MAX_HIDDEN:
        return None
    matrix, transposed = found
    d = product.outvars[0]
    if total.prim is not add_p or {id(a) for a in total.inputs} != {id(d), id(x)}:
        return None
    s = total.outvars[0]
    if s.aval != h.aval:
        return None
    consts = {v.id: i for i, v in enumerate(prog.invars[:n_consts])}
    defined, tail_reads = {s.id}, {}
    for eqn in tail:
        if len(eqn.outvars) != 1 or eqn.outvars[0].aval != h.aval or (
                _ufunc_of(eqn) is None and eqn.prim not in elementwise_prims):
            return None
        for a in eqn.inputs:
            if type(a) is Literal or a.id in defined:
                continue
            if a.id not in consts:  # the old carry or x: no longer at hand
                return None
            tail_reads[a.id] = consts[a.id]
        defined.add(eqn.outvars[0].id)
    new = (tail[-1] if tail else total).outvars[0]
    # d and x feed only the sum; the sum only the tail; the outputs are all the new carry.
    reads = [a for e in prog.eqns[1:] for a in e.inputs if type(a) is not Literal]
    if sum(a is d for a in reads) != 1 or sum(a is x for a in reads) != 1:
        return None
    if any(type(v) is Literal or v is not new for v in prog.outvars):
        return None
    return Cell(matrix, transposed, hidden, np.dtype(dtype), tuple(tail), tail_reads, s.id)


def _product(eqn, consts, h):
    """(const index, transposed) where `eqn` is W @ h or h @ M with W or M a square body const
    of h's type, else None."""
    if eqn.prim is not dot_general_p or len(eqn.inputs) != 2:
        return None
    p = eqn.params
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    if lb or rb or is_algorithm(p.get("precision")):
        return None
    pref = p.get("preferred_element_type")
    if pref is not None and np.dtype(pref) != h.aval.dtype:
        return None
    lhs, rhs = eqn.inputs
    n = h.aval.shape[0]
    if rhs is h and tuple(lc) == (1,) and tuple(rc) == (0,):
        m, transposed = lhs, False
    elif lhs is h and tuple(lc) == (0,) and tuple(rc) == (0,):
        m, transposed = rhs, True
    else:
        return None
    if type(m) is Literal or m.aval.shape != (n, n) or m.aval.dtype != h.aval.dtype:
        return None
    index = next((i for i, c in enumerate(consts) if c is m), None)
    return None if index is None else (index, transposed)


def _workspace(length: int, hidden: int, dtype, n_buffers: int, pooled: bool):
    """make() -> (Z, row views, carry views, buffers) for one call of the loop."""
    def make():
        z = np.empty((length + 1, 2 * hidden), dtype)
        rows, carries = z[:length], z[1:, :hidden]
        if pooled:
            rows, carries = list(rows), list(carries)
        return z, rows, carries, [np.empty(hidden, dtype) for _ in range(n_buffers)]
    return make


def finite_check(gen, seq: str) -> str:
    """An expression true when every element of the sequence `seq` is finite."""
    return f"{gen.obj(np.isfinite, 'isfinite')}({gen.obj(np.add.reduce, 'total')}({seq}, None))"


def emit(gen, cell: Cell, consts, carry_in: str, seq: str, length: int, reverse: bool,
         carry_out: str, ys) -> None:
    """Write the loop: `consts` name the body consts, `seq` the (length, H) per-step inputs;
    the final carry is bound to `carry_out` and each name in `ys` to the stacked carries."""
    n, dtype = cell.hidden, cell.dtype
    pooled = (length + 1) * 2 * n * dtype.itemsize <= MAX_POOLED_BYTES
    make = gen.obj(_workspace(length, n, dtype, len(cell.tail), pooled), "workspace")
    pool = gen.obj([], "pool")
    ws, z, rows, hs = (gen.fresh(p) for p in ("ws", "z", "rows", "hs"))
    bufs = [gen.fresh("b") for _ in cell.tail]
    gen.line(f"{ws} = {pool}.pop() if {pool} else {make}()")
    gen.line(f"{z}, {rows}, {hs}, ({''.join(b + ', ' for b in bufs)}) = {ws}")
    gen.line(f"{z}[:{length}, {n}:] = {seq}{'[::-1]' if reverse else ''}")
    gen.line(f"{z}[0, :{n}] = {carry_in}")
    m = consts[cell.matrix]
    eye = gen.obj(np.eye(n, dtype=dtype), "eye")
    dot = gen.fresh("dot")
    # [W | I] in Fortran order, the layout whose matrix-vector product is fastest.
    gen.line(f"{dot} = {gen.obj(np.concatenate, 'concat')}(({m}{'' if cell.transposed else '.T'}"
             f", {eye})).T.dot")
    row, h_next = gen.fresh("row"), gen.fresh("hn")
    names = {cell.sum_id: bufs[0] if bufs else h_next}
    names.update({vid: consts[i] for vid, i in cell.tail_reads.items()})
    with gen.block(f"for {row}, {h_next} in zip({rows}, {hs}):"):
        gen.line(f"{dot}({row}, {names[cell.sum_id]})")
        for k, eqn in enumerate(cell.tail):
            ufunc, last = _ufunc_of(eqn), k == len(cell.tail) - 1
            out = h_next if last else bufs[k + 1]
            args = [gen.read(a) if type(a) is Literal else names[a.id] for a in eqn.inputs]
            names[eqn.outvars[0].id] = out
            if ufunc is not None:
                target = f"out={out}" if ufunc in _KEYWORD_OUT else out
                gen.line(f"{gen.obj(ufunc, f'f_{eqn.prim.name}_')}({', '.join(args + [target])})")
                continue
            # An elementwise impl that is not a ufunc returns a fresh array.
            call = f"{gen.obj(_impl_for(eqn), f'f_{eqn.prim.name}_')}({', '.join(args)})"
            if last:
                gen.line(f"{gen.obj(np.copyto, 'copyto')}({out}, {call})")
            else:
                names[eqn.outvars[0].id] = gen.fresh()
                gen.line(f"{names[eqn.outvars[0].id]} = {call}")
    gen.line(f"{carry_out} = {z}[{length}, :{n}].copy()")
    for y in ys:
        gen.line(f"{y} = {z}[1:, :{n}]{'[::-1]' if reverse else ''}.copy()")
    gen.line(f"{pool}.append({ws})" if pooled else f"del {ws}")
    gen.line(f"del {', '.join([z, rows, hs] + bufs)}")
