"""Small-domain lookup tables: in a compiled Program, a costly elementwise chain applied to an
integer that takes few values becomes one gather from a table of all its results.

The samplers in gpuarr.random turn random bits into floats through such chains. `normal` keeps
the top 23 bits of each word (`bits >> 9`) and maps them through XLA's erf_inv, which the NumPy
backend reproduces operation by operation in a few dozen NumPy passes per value. The chain is a
pure function of an integer with at most 2**23 values, so its results over the whole domain fit
in a table (32 MiB of float32), after which each value costs one gather. The table is filled by
the chain's own compiled code, so the results do not change by a bit. It is built once the
chain has been evaluated on as many values as the table holds, so a Program called on a few
values never pays for it, and it is shared by every Program whose chain is the same.

A chain starts at a logical right shift of an unsigned integer by a constant, leaving at most
`MAX_DOMAIN_BITS` bits; it takes in the elementwise equations that read only the shifted value,
each other and constants, and it must end in one value read by the rest of the Program and
contain a `costly` primitive (otherwise a gather from a table this large costs more than the
passes it replaces).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from gpuarr.backends.host_threads import _PARALLEL_MIN, run_in_blocks, thread_buffer
from gpuarr.core import Eqn, Literal, Primitive, Program, ShapedArray, Var, subprograms
from gpuarr.impls import impl_rules

# 2**23 values: every uniform float32 draw. The float32 table is 32 MiB.
MAX_DOMAIN_BITS = 23
# Chains over fewer elements than this are left alone: a call that small is dispatch-bound.
MIN_SIZE = 1 << 9
# Built tables kept for new Programs (older ones live on in the Programs already using them).
MAX_SHARED_TABLES = 4
# The chain is evaluated in pieces this long, too short for any NumPy kernel of the backend to
# hand work to the shared threads (it may be running on one of them, inside a blocked run).
_PIECE = _PARALLEL_MIN

# The chain is compiled once per piece length; the last piece of each call has its own.
_MAX_PROGRAMS = 16

lookup_table_p = Primitive("lookup_table")


def tabulate(prog: Program, is_elementwise, costly, compile_program) -> Program:
    """`prog` with each tabulable chain replaced by a `lookup_table` equation (`prog` itself
    where there is none). `is_elementwise(eqn)` says whether an equation maps elements to
    elements, `costly` holds the primitives worth a table, and `compile_program(prog)` gives
    the callable that evaluates a chain."""
    eqns = prog.eqns
    constants = _constant_ids(eqns)
    replaced: dict[int, Eqn | None] = {}
    for i, eqn in enumerate(eqns):
        bits = _domain_bits(eqn) if eqn.prim.name == "shift_right_logical" else None
        if bits is None:
            continue
        found = _chain(prog, i, constants, is_elementwise)
        if found is None or not any(eqns[j].prim in costly for j in found[0]):
            continue
        members, exit_var, dropped, outside = found
        if any(j in replaced for j in dropped):
            continue
        table = _shared_table(_Chain(eqns, constants, eqn.outvars[0], members, exit_var, bits,
                                     compile_program))
        for j in dropped:
            replaced[j] = None
        if eqn.outvars[0].id not in outside:
            replaced[i] = None  # the lookup shifts the bits itself, into gather indices
        replaced[members[-1]] = Eqn(
            lookup_table_p, [eqn.inputs[0]], {"table": table, "shift": int(eqn.inputs[1].val)},
            [exit_var], eqns[members[-1]].source_info)
    if not replaced:
        return prog
    kept = [replaced.get(j, e) for j, e in enumerate(eqns)]
    return Program(prog.constvars, prog.invars, _drop_dead_constants(kept, prog, constants),
                   prog.outvars)


def _domain_bits(shift: Eqn) -> int | None:
    x, amount = shift.inputs
    dtype = x.aval.dtype
    if type(amount) is not Literal or dtype.kind != "u" or x.aval.size < MIN_SIZE:
        return None
    bits = dtype.itemsize * 8 - int(amount.val)
    return bits if 0 < bits <= MAX_DOMAIN_BITS else None


def _constant_ids(eqns) -> dict[int, int]:
    """Var id -> index of its equation, for values of at most one element computed from
    literals only (the chain's bounds and scales)."""
    found: dict[int, int] = {}
    for i, eqn in enumerate(eqns):
        if (not eqn.prim.effectful and eqn.outvars
                and all(v.aval.size <= 1 for v in eqn.outvars)
                and all(type(a) is Literal or a.id in found for a in eqn.inputs)
                and next(subprograms(eqn.params), None) is None):
            found.update((v.id, i) for v in eqn.outvars)
    return found


def _chain(prog: Program, start: int, constants, is_elementwise):
    """(indices of the equations the exit needs, exit variable, indices of all the chain's
    equations (the others are dead), ids read outside them) from the shift at `start`, or
    None."""
    eqns = prog.eqns
    root = eqns[start].outvars[0]
    inside = {root.id}
    members = []
    for j in range(start + 1, len(eqns)):
        e = eqns[j]
        operands = [a for a in e.inputs if type(a) is not Literal and a.id not in constants]
        if (operands and all(a.id in inside for a in operands) and len(e.outvars) == 1
                and e.outvars[0].aval.shape == root.aval.shape and is_elementwise(e)):
            members.append(j)
            inside.add(e.outvars[0].id)
    member_set = set(members)
    outside = {a.id for j, e in enumerate(eqns) if j not in member_set for a in e.inputs
               if type(a) is not Literal}
    outside.update(a.id for a in prog.outvars if type(a) is not Literal)
    exits = [eqns[j].outvars[0] for j in members if eqns[j].outvars[0].id in outside]
    if len(exits) != 1:
        return None
    needed, wanted = [], {exits[0].id}  # the equations the exit depends on
    for j in reversed(members):
        if eqns[j].outvars[0].id in wanted:
            needed.append(j)
            wanted.update(a.id for a in eqns[j].inputs if type(a) is not Literal)
    return sorted(needed), exits[0], member_set, outside


def _drop_dead_constants(eqns, prog: Program, constants) -> list[Eqn]:
    """`eqns` less the constant equations nothing reads any more."""
    read = {a.id for a in prog.outvars if type(a) is not Literal}
    kept = []
    for i in range(len(eqns) - 1, -1, -1):
        e = eqns[i]
        if e is None:
            continue
        if constants.get(e.outvars[0].id) == i and not any(v.id in read for v in e.outvars):
            continue
        read.update(a.id for a in e.inputs if type(a) is not Literal)
        kept.append(e)
    return kept[::-1]


class _Chain:
    """The equations of one chain, re-typed for any number of elements."""

    def __init__(self, eqns, constants, root, members, exit_var, bits, compile_program):
        wanted, prelude = {a.id for j in members for a in eqns[j].inputs
                           if type(a) is not Literal and a.id in constants}, []
        for i in range(max(members), -1, -1):  # the constant equations the chain reads
            e = eqns[i]
            if constants.get(e.outvars[0].id) == i and any(v.id in wanted for v in e.outvars):
                prelude.append(e)
                wanted.update(a.id for a in e.inputs if type(a) is not Literal)
        self.prelude = prelude[::-1]
        self.body = [eqns[j] for j in members]
        self.root, self.exit = root, exit_var
        self.domain = 1 << bits
        self.compile_program = compile_program
        self.key = str(self.program(self.domain))

    def program(self, length: int) -> Program:
        """The chain as a Program over `length` elements (1-d), with fresh variables."""
        renamed: dict[int, Var] = {}

        def rename(v):
            if type(v) is Literal:
                return v
            if v.id not in renamed:
                aval = v.aval
                if aval.shape == self.root.aval.shape:
                    aval = ShapedArray((length,), aval.dtype, aval.weak_type)
                renamed[v.id] = Var(aval)
            return renamed[v.id]

        root = rename(self.root)
        eqns = [Eqn(e.prim, [rename(a) for a in e.inputs], e.params,
                    [rename(v) for v in e.outvars]) for e in self.prelude + self.body]
        return Program([], [root], eqns, [rename(self.exit)])


class LookupTable:
    """A chain's results over its whole domain, computed once the chain has been evaluated on
    as many values as the domain holds."""

    def __init__(self, chain: _Chain):
        self.chain = chain
        self.dtype = chain.exit.aval.dtype
        self.values: np.ndarray | None = None
        self.evaluated = 0
        self._programs: dict[int, object] = {}
        self._lock = threading.Lock()

    def __repr__(self):
        state = "built" if self.values is not None else f"{self.evaluated} values evaluated"
        return f"LookupTable({self.chain.domain} entries of {self.dtype.name}, {state})"

    def _evaluate(self, index: np.ndarray, out: np.ndarray) -> None:
        """out = the chain of the 1-d `index`, piece by piece on the calling thread."""
        for lo in range(0, index.shape[0], _PIECE):
            piece = index[lo:lo + _PIECE]
            fn = self._programs.get(piece.shape[0])
            if fn is None:
                if len(self._programs) >= _MAX_PROGRAMS:  # many sizes seen: start afresh
                    self._programs.clear()
                fn = self._programs[piece.shape[0]] = self.chain.compile_program(
                    self.chain.program(piece.shape[0]))
            out[lo:lo + _PIECE] = fn(piece)[0]

    def _ready(self, size: int) -> np.ndarray | None:
        if self.values is None:
            self.evaluated += size
            if self.evaluated < self.chain.domain:
                return None
            with self._lock:  # built on this thread: the shared threads may be waiting on it
                if self.values is None:
                    values = np.empty(self.chain.domain, self.dtype)
                    _filling.active = True
                    try:
                        self._evaluate(np.arange(self.chain.domain,
                                                 dtype=self.chain.root.aval.dtype), values)
                    finally:
                        _filling.active = False
                    self.values = values
        return self.values

    def lookup_into(self, bits: np.ndarray, out: np.ndarray, shift: int) -> np.ndarray:
        """out = the chain of `bits >> shift` (one block, on the calling thread)."""
        values = self._ready(bits.size)
        if values is not None:
            # Indices of NumPy's own index type: `take` would otherwise convert them in a pass.
            index = thread_buffer("gather_index", bits.size, np.intp).reshape(bits.shape)
            np.right_shift(bits, bits.dtype.type(shift), out=index)
            # The shift leaves every index inside the table, so `take` need not check them
            # ("wrap" never wraps here; on 2**22 indices it runs a third faster than "raise").
            np.take(values, index, out=out, mode="wrap")
            return out
        index = np.right_shift(bits, bits.dtype.type(shift)).reshape(-1)
        if out.flags.c_contiguous:
            self._evaluate(index, out.reshape(-1))
        else:
            flat = np.empty(index.size, self.dtype)
            self._evaluate(index, flat)
            out[...] = flat.reshape(out.shape)
        return out

    def __call__(self, bits, shift: int) -> np.ndarray:
        bits = np.asarray(bits)
        out = np.empty(bits.shape, self.dtype)
        flat_in, flat_out = np.ascontiguousarray(bits).reshape(-1), out.reshape(-1)
        run_in_blocks(lambda lo, hi: self.lookup_into(flat_in[lo:hi], flat_out[lo:hi], shift),
                      flat_in.shape[0])
        return out


_filling = threading.local()


def filling_table() -> bool:
    """Whether this thread is filling a table: the chain's kernels then run once over the
    domain and need not prepare for later calls (XLA's erf_inv builds no grid of its own)."""
    return getattr(_filling, "active", False)


_shared: OrderedDict[str, LookupTable] = OrderedDict()


def _shared_table(chain: _Chain) -> LookupTable:
    """The table of `chain`: the one already made for an equal chain, if it is still kept."""
    table = _shared.get(chain.key)
    if table is None:
        table = _shared[chain.key] = LookupTable(chain)
    _shared.move_to_end(chain.key)
    while len(_shared) > MAX_SHARED_TABLES:
        _shared.popitem(last=False)
    return table


def lookup_impl(bits, *, table: LookupTable, shift: int):
    return table(bits, shift)


impl_rules[lookup_table_p] = lookup_impl
