"""The NumPy backend's compiler: the CPU default and the reference every other backend is tested
against.

A Program compiles to straight-line Python source, one line per equation, calling the
primitive's NumPy implementation from `gpuarr.impls.impl_rules`. Calling a compiled Program costs a
Python function call plus the NumPy calls themselves: no per-equation interpretation.

Primitives may also be written into the source more directly: `expr_rules` give a primitive
as one Python expression for given operand types (a BLAS product without the general impl's
parameter handling), 0-d elementwise operations become Python operators on NumPy scalars, and
`inline_rules` let loops (scan, while) write their bodies into the same function as `for` and
`while` statements, so an iteration costs only its NumPy calls. Inside a loop, results go into
buffers that live across iterations (the carry's own, or one allocated before the loop).
Large elementwise steps split their rows between two threads and matrix products choose their
BLAS threading by size and machine load (`host_threads.split_ufunc`, `host_threads.blas_dot`).
A run of very large elementwise steps over one shape is written as one loop over blocks
(`Codegen.blocked_run`): its intermediates live in per-block buffers instead of going through
memory at full size, and the blocks are shared between the threads. A costly elementwise chain
from an integer with few values (a sampler's random bits through XLA's erf_inv) becomes a gather
from a table of its results (`lookup_tables`). Freed host buffers stay in the process for the
next call (`host_memory`).
"""
from __future__ import annotations

import functools
import linecache
import weakref
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

from gpuarr.backends import host_memory, lookup_tables
from gpuarr.backends.host_threads import SPLIT_UFUNC_SIZE, run_in_cache_blocks, run_in_passes, split_ufunc
from gpuarr.core import TRANSCENDENTAL_PRIMS, ClosedProgram, Literal, Primitive, Program
from gpuarr.impls import (
    NARROW,
    costly_prims,
    elementwise_prims,
    fresh_output_prims,
    impl_rules,
    install_host_compiler,
    narrow_impl,
)

# How primitives are written into the generated source, keyed by primitive like
# `gpuarr.compiler.lowering` for kernels; the rules_* modules of this package register them.
# What each primitive computes is `gpuarr.impls.impl_rules`, which these must agree with.

# prim -> the NumPy ufunc that implements it exactly on floating-point operands, for
# primitives whose general impl is a Python function (integer division rules, say): compiled
# Programs call the ufunc directly and can give it an `out=` buffer.
float_ufuncs: dict[Primitive, np.ufunc] = {}
# prim -> rule(eqn) -> the NumPy ufunc computing this equation exactly, or None: for
# primitives whose general impl is a Python function but whose common case is one ufunc (a shift
# by a constant in range, say). Compiled Programs then treat the equation as that ufunc
# (`ufunc_of`): called directly, given `out=` buffers, run block by block.
blocked_ufunc_rules: dict[Primitive, Callable] = {}
# prim -> rule(eqn) -> fn(*operand_blocks, *outs) or None: an elementwise kernel that is not a
# ufunc but can take one block of a blocked run, on the calling thread, writing the block of
# each output (for primitives whose impl splits its own work over the threads: XLA's erf_inv,
# threefry2x32, say).
block_kernel_rules: dict[Primitive, Callable] = {}
# prim -> rule(*in_avals, **params) -> (template, objects) or None: the primitive, for operands
# of these types, as one Python expression equal to its impl. `{i}` is operand i; `{out}`, where
# present, receives ", buffer" when the result may be written into a buffer of its type; other
# fields name `objects`. E.g. ("{0}.dot({1}.T{out})", {}), ("{r}({0}, (1,))", {"r": f}).
expr_rules: dict[Primitive, Callable] = {}
# prim -> rule(gen: Codegen, eqn) -> bool: write the equation into the generated function
# (loops write their bodies inline), binding each output that is read later to a fresh name
# (`gen.bind`). False leaves it to a call of the impl.
inline_rules: dict[Primitive, Callable] = {}

block_kernel_rules[lookup_tables.lookup_table_p] = lambda eqn: functools.partial(
    eqn.params["table"].lookup_into, shift=eqn.params["shift"])

_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_counter = iter(range(1 << 62))


def compile_closed(closed: ClosedProgram) -> Callable:
    """A Python callable taking the Program's inputs (NumPy values), returning a tuple."""
    fn = _compiled.get(closed)
    if fn is None:
        fn = _compiled[closed] = _compile(closed.program, closed.consts)
    return fn


def compile_program(prog: Program) -> Callable:
    """Like `compile_closed` for a Program without consts (constvars become leading inputs)."""
    fn = _compiled.get(prog)
    if fn is None:
        fn = _compiled[prog] = _compile(prog, None)
    return fn


def _is_narrow_eqn(eqn) -> bool:
    return bool(NARROW) and any(
        type(v) is not Literal and v.aval.dtype in NARROW or
        type(v) is Literal and getattr(v.val, "dtype", None) in NARROW
        for v in list(eqn.inputs) + list(eqn.outvars))


def impl_for(eqn) -> Callable:
    impl = impl_rules.get(eqn.prim)
    if impl is None:
        raise NotImplementedError(f"the NumPy backend has no implementation of {eqn.prim.name}")
    if _is_narrow_eqn(eqn):
        impl = narrow_impl(eqn.prim)
    return functools.partial(impl, **eqn.params) if eqn.params else impl


def _compile(prog: Program, consts) -> Callable:
    host_memory.keep_freed_memory()  # compiled calls then reuse freed buffers (see there)
    prog = lookup_tables.tabulate(prog, _is_elementwise, costly_prims, compile_program)
    gen = Codegen()
    if consts is None:
        const_names = [gen.fresh() for _ in prog.constvars]
        params = list(const_names)
    else:
        const_names = [gen.const(c) for c in consts]
        params = []
    in_names = [gen.fresh() for _ in prog.invars]
    params += in_names
    results = gen.program(prog, const_names, in_names)
    gen.line(f"return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return gen.function(params)


class Codegen:
    """The source of one Python function under construction.

    `program` writes a Program's equations as statements over local names; loop rules
    (`inline_rules`) call it again for their bodies inside `loop`s and `block`s. Each Program
    gets its own variable environment (Programs are closed); local names are unique in the
    function.
    """

    # Python allows 20 nested blocks; deeper loops are left to calls of their impl.
    MAX_DEPTH = 12

    def __init__(self):
        # The module name lets gpuarr's warnings filter (see gpuarr.dispatch) cover compiled code.
        # `np`: parameters written into the source may be NumPy integers (`np.int64(2)`).
        self.namespace: dict[str, object] = {"__name__": "gpuarr.backends.compiled_program",
                                             "np": np}
        self.lines: list[str] = []
        self.depth = 1
        self._count = 0
        self._env: dict[int, str] = {}
        self._live: set[int] = set()
        self._loops: list[list[int]] = []  # [header line index, depth] of the loops being written

    # -- names

    def fresh(self, prefix: str = "v") -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def obj(self, value, prefix: str = "g") -> str:
        """A global name for `value` in the generated function's namespace."""
        name = self.fresh(prefix)
        self.namespace[name] = value
        return name

    def const(self, value) -> str:
        """A global name for a Program's const (an Array or NumPy value) as a NumPy value."""
        return self.obj(as_numpy(value), "c")

    def read(self, atom) -> str:
        if type(atom) is Literal:
            # 0-d arrays, not NumPy scalars: ufuncs take them about 30% faster.
            return self.obj(np.asarray(atom.val), "k")
        return self._env[atom.id]

    def read_scalar(self, atom) -> str:
        """Like `read`, a literal as a NumPy scalar (for Python operators)."""
        if type(atom) is Literal:
            return self.obj(np.asarray(atom.val)[()], "k")
        return self._env[atom.id]

    def bind(self, var, name: str | None = None) -> str:
        self._env[var.id] = name = name or self.fresh()
        return name

    def is_live(self, var) -> bool:
        """Whether the Program being written reads `var` after defining it (or returns it)."""
        return var.id in self._live

    # -- statements

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextmanager
    def block(self, header: str):
        self.line(header)
        start = len(self.lines)
        self.depth += 1
        try:
            yield
            if len(self.lines) == start:  # an empty block is not Python
                self.line("pass")
        finally:
            self.depth -= 1

    @contextmanager
    def loop(self, header: str):
        """A `for`/`while` block whose body may keep buffers across iterations (`hoist`)."""
        self._loops.append([len(self.lines), self.depth])
        try:
            with self.block(header):
                yield
        finally:
            self._loops.pop()

    def hoist(self, text: str) -> None:
        """Write a statement just before the innermost loop being written."""
        where = self._loops[-1]
        self.lines.insert(where[0], "    " * where[1] + text)
        where[0] += 1

    def assign(self, targets, values) -> None:
        """`targets = values` as one statement (so swapped names do not clobber each other)."""
        pairs = [(t, v) for t, v in zip(targets, values, strict=True) if t != v]
        if pairs:
            self.line(f"{', '.join(t for t, _ in pairs)} = {', '.join(v for _, v in pairs)}")

    def program(self, prog: Program, const_names, in_names, carries=None) -> list[str]:
        """Write `prog`'s equations with its constvars and invars bound to the given names;
        return the names (or literal constants) of its outputs.

        `carries` is given for the body of the loop being written (`loop`): pairs
        (input index, output index) of its loop-carried values, () for none. Results then go
        into buffers that live across iterations: the carry's own (copied once before the
        loop) or one allocated before the loop.
        """
        outer = self._env, self._live
        self._env, self._live = {}, _live_ids(prog)
        try:
            for v, n in zip(prog.constvars, const_names, strict=True):
                self.bind(v, n)
            for v, n in zip(prog.invars, in_names, strict=True):
                self.bind(v, n)
            last_use, reusable = _buffer_plan(prog)
            outs = _out_plan(prog, last_use, reusable, carries)
            runs = _blocked_runs(prog, last_use) if carries is None else {}
            in_runs = {j for start, forms in runs.items() for j in range(start, start + len(forms))}
            stacks = {j: found for j, found in _stacked_kernels(prog).items() if j not in in_runs}
            folded = {j for _, _, _, merged in stacks.values() for j in merged}
            copied: set[int] = set()
            i = 0
            while i < len(prog.eqns):
                if i in runs:
                    self.blocked_run(prog.eqns[i:i + len(runs[i])], i, runs[i], last_use)
                    i += len(runs[i])
                    continue
                if i in stacks:
                    self.stacked_kernel(prog.eqns[i], i, *stacks[i][:3], last_use)
                if i in stacks or i in folded:
                    i += 1
                    continue
                self._equation(prog.eqns[i], i, last_use, self._out_buffer(outs.get(i), copied))
                i += 1
            return [self.read(a) for a in prog.outvars]
        finally:
            self._env, self._live = outer

    def _out_buffer(self, where, copied) -> str | None:
        if where is None:
            return None
        kind, var = where
        if kind == "loop":
            name = self.fresh("b")
            self.hoist(f"{name} = {self.obj(np.empty, 'empty')}({var.aval.shape}, "
                       f"{self.obj(var.aval.dtype, 'dtype')})")
            return name
        name = self._env[var.id]
        if kind == "carry" and var.id not in copied:
            copied.add(var.id)  # the initial value may be the caller's or shared: copy it once
            self.hoist(f"{name} = {name}.copy()")
        return name

    def function(self, params) -> Callable:
        filename = f"<gpuarr-program-{next(_counter)}>"
        src = f"def program({', '.join(params)}):\n" + "\n".join(self.lines) + "\n"
        # Registering the source lets tracebacks through compiled Programs show their lines.
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, "exec"), self.namespace)
        fn = self.namespace["program"]
        fn.source = src
        return fn

    # -- a run of elementwise equations, block by block

    def blocked_run(self, eqns, start, forms, last_use) -> None:
        """Write the elementwise equations `eqns` (program indices from `start`), with their
        `_blocked_form`s `forms`, as one function over a range of rows (the leading axis),
        looping over blocks (`run_in_passes` picks their length), run on the shared threads. Values
        read after the run get full-size buffers; the others live in per-block buffers only.
        Operands are sliced, never reshaped, so broadcast and transposed views are read in
        place."""
        end = start + len(eqns)
        aval = eqns[0].outvars[0].aval
        rows, row_size = aval.shape[0], aval.size // max(aval.shape[0], 1)
        empty = self.obj(np.empty, "empty")
        defined = {v.id for e in eqns for v in e.outvars}
        block: dict[int, str] = {}  # var id -> its value within one block
        for e in eqns:  # operands from before the run
            for a in e.inputs:
                if type(a) is not Literal and a.id not in defined:
                    # An operand with one leading row broadcasts whole against each block.
                    sliced = a.aval.shape and (a.aval.shape[0] == rows or rows == 1)
                    block[a.id] = f"{self.read(a)}[s:e]" if sliced else self.read(a)
        temps = []
        for e, (kind, _) in zip(eqns, forms):
            for out in e.outvars:
                if last_use.get(out.id, end) >= end:  # read after the run, or a program output
                    full = self.bind(out)
                    self.line(f"{full} = {empty}({aval.shape}, "
                              f"{self.obj(out.aval.dtype, 'dtype')})")
                    block[out.id] = f"{full}[s:e]"
                elif kind in ("ufunc", "kernel"):
                    temp = self.fresh("t")
                    temps.append((temp, out.aval.dtype))
                    block[out.id] = f"{temp}[:e - s]"
        iotas = {}  # iota id -> (name, dtype) of the indices 0, 1, ... of one block
        for e, (kind, what) in zip(eqns, forms):
            if kind == "iota":
                iotas[e.outvars[0].id] = self.fresh("r"), what
                if e.outvars[0].id not in block:
                    temp = self.fresh("t")
                    temps.append((temp, what))
                    block[e.outvars[0].id] = f"{temp}[:e - s]"
        fn = self.fresh("run")
        self.line(f"def {fn}(lo, hi, step):")
        self.depth += 1
        aligned = self.obj(host_memory.aligned_empty, "aligned_empty")
        for temp, dtype in temps:  # from cache lines: many passes run over them
            self.line(f"{temp} = {aligned}((min(step, hi - lo),) + {aval.shape[1:]}, "
                      f"{self.obj(dtype, 'dtype')})")
        for name, dtype in iotas.values():
            self.line(f"{name} = {self.obj(np.arange, 'arange')}(min(step, hi - lo), "
                      f"dtype={self.obj(dtype, 'dtype')})")
        self.line("for s in range(lo, hi, step):")
        self.depth += 1
        self.line("e = min(hi, s + step)")
        for e, (kind, what) in zip(eqns, forms):
            args = [self.read(a) if type(a) is Literal else block[a.id] for a in e.inputs]
            out = e.outvars[0]
            if kind == "view":
                block[out.id] = f"{args[0]}.view({self.obj(what, 'dtype')})"
            elif kind == "iota":  # the block's own indices: no buffer of the whole range
                self.line(f"{self.obj(np.add, 'add')}({iotas[out.id][0]}[:e - s], s, "
                          f"{block[out.id]})")
            else:
                call = self.obj(what, f"f_{e.prim.name}_")
                targets = [block[v.id] for v in e.outvars]
                if what in KEYWORD_OUT:
                    targets = [f"out={targets[0]}"]
                self.line(f"{call}({', '.join(args + targets)})")
        self.depth -= 2
        parts = self.obj(run_in_passes, "run_in_passes")
        costly = any(e.prim.name in TRANSCENDENTAL_PRIMS for e in eqns)
        self.line(f"{parts}({fn}, {rows}, {-(-_RUN_PART // max(row_size, 1))}, {row_size}, "
                  f"{costly})")
        dead = sorted({self._env[a.id] for e in eqns for a in e.inputs
                       if type(a) is not Literal and a.id not in defined
                       and start <= last_use.get(a.id, -1) < end
                       and a.aval.size >= _MIN_MANAGED_SIZE and a.id in self._env})
        self.line(f"del {', '.join([fn] + dead)}")

    # -- a kernel writing its outputs into one stacked result

    def stacked_kernel(self, eqn, i, kernel, stacked, columns, last_use) -> None:
        """Write the block kernel `kernel` of `eqn` (program index `i`) as one call writing
        output k into column `columns[k]` of the last axis of the variable `stacked`."""
        out = stacked.aval
        fn = self.obj(functools.partial(_run_stacked, kernel, out.shape, out.dtype,
                                        tuple(columns)), f"stacked_{eqn.prim.name}_")
        args = [self.read(a) for a in eqn.inputs]
        self.line(f"{self.bind(stacked)} = {fn}({', '.join(args)})")
        dead = sorted({self._env[a.id] for a in eqn.inputs if type(a) is not Literal
                       and last_use.get(a.id) == i and a.aval.size >= _MIN_MANAGED_SIZE
                       and a.id in self._env})
        if dead:
            self.line(f"del {', '.join(dead)}")

    # -- one equation

    def _equation(self, eqn, i, last_use, out) -> None:
        rule = inline_rules.get(eqn.prim)
        if rule is None or self.depth > self.MAX_DEPTH or not rule(self, eqn):
            self.line(f"{self._targets(eqn)} = {self._call(eqn, out)}")
        # Drop dead temporaries at once so their memory is reused by the next allocation.
        # (An inline rule leaves outputs nobody reads unbound.)
        dead = sorted({self._env[v.id] for v in list(eqn.inputs) + list(eqn.outvars)
                       if type(v) is not Literal and last_use.get(v.id) == i
                       and v.aval.size >= _MIN_MANAGED_SIZE and v.id in self._env})
        if dead:
            self.line(f"del {', '.join(dead)}")

    def _targets(self, eqn) -> str:
        outs = [self.bind(v) for v in eqn.outvars]
        if not eqn.prim.multiple_results:
            return outs[0]
        return ", ".join(outs) + ("," if len(outs) == 1 else "") if outs else "_"

    def _call(self, eqn, out: str | None) -> str:
        """The call computing `eqn`, writing into the buffer `out` when given."""
        op = _scalar_operator(eqn)
        if op is not None:
            args = [self.read_scalar(a) for a in eqn.inputs]
            return f"{op} {args[0]}" if len(args) == 1 else f"{args[0]} {op} {args[1]}"
        args = [self.read(a) for a in eqn.inputs]
        expr = _expression(eqn)
        if expr is not None:
            template, objects = expr
            return template.format(*args, out=f", {out}" if out else "",
                                   **{k: self.obj(v, k) for k, v in objects.items()})
        ufunc = ufunc_of(eqn)
        out_aval = eqn.outvars[0].aval if ufunc is not None else None
        if out_aval is not None and out_aval.size >= SPLIT_UFUNC_SIZE and out_aval.shape[0] > 1:
            fn = self.obj(split_ufunc(ufunc, out_aval.shape, out_aval.dtype),
                          f"split_{eqn.prim.name}_")
            return f"{fn}({', '.join(args + ([out] if out else []))})"
        fn = self.obj(ufunc if ufunc is not None else impl_for(eqn), f"f_{eqn.prim.name}_")
        if out is not None:
            # A positional `out` is parsed faster than the keyword, except where NumPy
            # deprecates it (a third argument of maximum/minimum).
            args.append(f"out={out}" if ufunc in KEYWORD_OUT else out)
        return f"{fn}({', '.join(args)})"


KEYWORD_OUT = frozenset({np.maximum, np.minimum, np.fmax, np.fmin})


def _live_ids(prog: Program) -> set[int]:
    live = {a.id for a in prog.outvars if type(a) is not Literal}
    for eqn in prog.eqns:
        live.update(a.id for a in eqn.inputs if type(a) is not Literal)
    return live


def _expression(eqn):
    rule = expr_rules.get(eqn.prim)
    if rule is None or _is_narrow_eqn(eqn):
        return None
    return rule(*(a.aval for a in eqn.inputs), **eqn.params)


# Ufuncs that Python operators compute identically on NumPy scalars of one dtype, in tens of
# nanoseconds where a ufunc call costs half a microsecond: 0-d arithmetic (loop counters,
# convergence tests) is written with them. (ufunc, dtype kinds it applies to) -> operator.
_SCALAR_OPERATORS = {
    np.add: ("+", "iuf"), np.subtract: ("-", "iuf"), np.multiply: ("*", "iuf"),
    np.true_divide: ("/", "f"), np.negative: ("-", "if"),
    np.less: ("<", "biuf"), np.less_equal: ("<=", "biuf"), np.greater: (">", "biuf"),
    np.greater_equal: (">=", "biuf"), np.equal: ("==", "biuf"), np.not_equal: ("!=", "biuf"),
    np.bitwise_and: ("&", "biu"), np.bitwise_or: ("|", "biu"), np.bitwise_xor: ("^", "biu"),
    np.logical_and: ("&", "b"), np.logical_or: ("|", "b"),
}


def _scalar_operator(eqn):
    ufunc = ufunc_of(eqn)
    entry = _SCALAR_OPERATORS.get(ufunc) if ufunc is not None else None
    if entry is None or len(eqn.inputs) != ufunc.nin:
        return None
    op, kinds = entry
    dts = {a.aval.dtype for a in eqn.inputs}
    if len(dts) != 1 or any(a.aval.shape for a in eqn.inputs):
        return None
    (dt,) = dts
    # Only NumPy's own scalar types (bfloat16 and friends implement operators themselves).
    return op if dt.kind in kinds and dt.type.__module__ == "numpy" else None


def _buffer_plan(prog: Program):
    """Liveness for the generated code: the equation index after which each temporary is dead
    (program inputs, consts and outputs are never dropped), and the temporaries that own their
    memory exclusively (made by an elementwise ufunc or a fresh-output primitive, read only by
    those, so no view of them exists) and may be overwritten once dead."""
    keep = {v.id for v in prog.outvars if type(v) is not Literal}
    keep |= {v.id for v in prog.constvars + prog.invars}
    last_use: dict[int, int] = {}
    fresh: set[int] = set()
    shared: set[int] = set()
    for i, eqn in enumerate(prog.eqns):
        fresh_out = ufunc_of(eqn) is not None or eqn.prim in fresh_output_prims
        for v in eqn.inputs:
            if type(v) is not Literal:
                last_use[v.id] = i
                if not fresh_out:
                    shared.add(v.id)
        for v in eqn.outvars:
            last_use.setdefault(v.id, i)
            if fresh_out:
                fresh.add(v.id)
    for vid in keep:
        last_use.pop(vid, None)
    return last_use, fresh - shared - keep


def _out_plan(prog: Program, last_use, reusable, carries) -> dict:
    """Where results are written instead of fresh memory: equation index -> ("reuse", var)
    the buffer of an input that dies there, ("carry", var) the buffer of the loop-carried
    input `var` it replaces, or ("loop", var) a buffer allocated once before the loop.

    `carries` is None outside loop bodies. Inside them small arrays take part too (an
    allocation per iteration costs more than the `out` argument), while the body's outputs
    never share a buffer with a temporary, which the next iteration overwrites.
    """
    in_loop = carries is not None
    carry_in = _inplace_carries(prog, carries) if in_loop else {}
    # The index of the last equation reading each carry input (`last_use` leaves inputs out).
    last_read = {a.id: i for i, eqn in enumerate(prog.eqns) for a in eqn.inputs
                 if type(a) is not Literal} if carry_in else {}
    keep = _may_alias_outputs(prog) if in_loop else set()
    plan = {}
    for i, eqn in enumerate(prog.eqns):
        elementwise = ufunc_of(eqn) is not None
        if len(eqn.outvars) != 1 or not eqn.outvars[0].aval.shape or not (
                elementwise or "{out}" in (_expression(eqn) or ("",))[0]):
            continue
        out = eqn.outvars[0]
        ci = carry_in.get(out.id)
        # An elementwise ufunc may overwrite an operand it reads; a product may not.
        if ci is not None and last_read.get(ci.id, -1) <= i - (not elementwise):
            plan[i] = ("carry", ci)
            continue
        if in_loop and out.id in keep:
            continue
        v = _reusable_input(eqn, i, last_use, reusable, 0 if in_loop else _MIN_MANAGED_SIZE)
        if v is not None:
            plan[i] = ("reuse", v)
        elif in_loop and out.id in reusable:
            plan[i] = ("loop", out)
    return plan


def _may_alias_outputs(prog: Program) -> set:
    """Ids of the variables whose buffer may be one of the program's outputs: the outputs, and
    the operands of equations that can return an operand as it is (a cond whose branch returns
    a value it closes over, a loop, a reshape), followed back to where fresh memory is made.
    In a loop body such values become the next iteration's carries, so no buffer that the
    next iteration writes again may hold them."""
    alias = {v.id for v in prog.outvars if type(v) is not Literal}
    for eqn in reversed(prog.eqns):
        if any(v.id in alias for v in eqn.outvars) and not (
                ufunc_of(eqn) is not None or eqn.prim in fresh_output_prims):
            alias.update(a.id for a in eqn.inputs if type(a) is not Literal)
    return alias


def _inplace_carries(prog: Program, carries) -> dict:
    """Carry output id -> carry input var, for carries whose new value may overwrite the old
    one's buffer: the output is no other carry's (other outputs are copied out at the end of
    the iteration), the input is not an output, and every reader of the input is an
    elementwise ufunc or a fresh-output primitive (so no view of it exists)."""
    out_ids = [v.id for v in prog.outvars if type(v) is not Literal]
    carry_out_ids = [prog.outvars[i].id for _, i in carries if type(prog.outvars[i]) is not Literal]
    found = {}
    for i_in, i_out in carries:
        ci, co = prog.invars[i_in], prog.outvars[i_out]
        if type(co) is Literal or carry_out_ids.count(co.id) != 1 or ci.id in out_ids:
            continue
        if not ci.aval.shape or co.aval.shape != ci.aval.shape or co.aval.dtype != ci.aval.dtype:
            continue
        if all(ufunc_of(e) is not None or e.prim in fresh_output_prims
               for e in prog.eqns if any(a is ci for a in e.inputs)):
            found[co.id] = ci
    return found


def ufunc_of(eqn):
    """The NumPy ufunc computing `eqn` exactly (its impl, its `float_ufuncs` entry, or what its
    `blocked_ufunc_rules` entry gives where the ufunc's result type is the output's), or None."""
    if _is_narrow_eqn(eqn):
        return None  # NumPy's loops for the narrow types round differently from XLA
    impl = impl_rules.get(eqn.prim)
    if not eqn.params and eqn.outvars and eqn.outvars[0].aval.dtype.kind == "f":
        impl = float_ufuncs.get(eqn.prim, impl)
    if isinstance(impl, np.ufunc) and not eqn.params and impl.nout == 1:
        return impl
    rule = blocked_ufunc_rules.get(eqn.prim)
    ufunc = rule(eqn) if rule is not None and len(eqn.outvars) == 1 else None
    return ufunc if ufunc is not None and _ufunc_gives(ufunc, eqn, eqn.outvars[0].aval.dtype) \
        else None


def _ufunc_gives(ufunc, eqn, dtype) -> bool:
    """Whether `ufunc` on `eqn`'s operands (literals as the 0-d arrays the generated code
    passes) has a loop whose result type is `dtype`."""
    types = tuple(np.asarray(a.val).dtype if type(a) is Literal else a.aval.dtype
                  for a in eqn.inputs)
    try:
        return ufunc.resolve_dtypes(types + (None,))[-1] == dtype
    except (TypeError, ValueError):  # no loop for these types (extension dtypes, say)
        return False


# Runs of elementwise equations with outputs of at least _RUN_MIN_SIZE elements go block by
# block (`run_in_passes` sets the block length), each thread taking at least _RUN_PART. Below
# that size whole-array steps measured as fast (their arrays stay in a large L3 cache, and a
# block costs a NumPy call per step); at 2**22 float32 elements blocks were about 10% faster.
_RUN_MIN_SIZE = 1 << 21
_RUN_PART = 1 << 16


def _blocked_form(eqn):
    """`_elementwise_form` of an equation whose output is large enough to go block by block,
    or ("iota", dtype) for a one-dimensional iota, whose blocks are ranges of indices."""
    if not eqn.outvars or eqn.outvars[0].aval.size < _RUN_MIN_SIZE:
        return None, None
    if eqn.prim.name == "iota" and len(eqn.params["shape"]) == 1:
        return "iota", eqn.params["dtype"]
    return _elementwise_form(eqn)


def _elementwise_form(eqn):
    """("ufunc", ufunc) for an elementwise equation that may run block by block, ("kernel",
    fn) for one with a `block_kernel_rules` kernel (the only form with several outputs),
    ("view", dtype) for a bitcast between types of one size (a view of the block), else
    (None, None). Operands must be 0-d or of the output's
    shape (or, for a ufunc, its rank with size-1 axes, which NumPy broadcasts), and the ufunc's
    own result type the output's (so writing into a buffer of that type changes nothing)."""
    outs = eqn.outvars
    if not outs or any(v.aval.shape != outs[0].aval.shape for v in outs):
        return None, None
    out = outs[0].aval
    shapes = [a.aval.shape for a in eqn.inputs if type(a) is not Literal]
    if any(s not in ((), out.shape) and not _broadcasts_to(s, out.shape) for s in shapes):
        return None, None
    broadcast = any(s not in ((), out.shape) for s in shapes)  # only ufuncs broadcast
    if len(outs) == 1:  # only kernels write several outputs
        if eqn.prim.name == "bitcast_convert_type":
            src = eqn.inputs[0].aval
            same = src.shape == out.shape and src.dtype.itemsize == out.dtype.itemsize
            return ("view", out.dtype) if same else (None, None)
        ufunc = ufunc_of(eqn)
        if ufunc is not None and _ufunc_gives(ufunc, eqn, out.dtype):
            return "ufunc", ufunc
    rule = None if broadcast else block_kernel_rules.get(eqn.prim)
    kernel = rule(eqn) if rule is not None else None
    return ("kernel", kernel) if kernel is not None else (None, None)


def _broadcasts_to(shape, out_shape) -> bool:
    """Whether an operand of `shape` is `out_shape` with some axes of size 1 (lax broadcasts)."""
    return len(shape) == len(out_shape) and all(a in (1, b) for a, b in zip(shape, out_shape))


def _is_elementwise(eqn) -> bool:
    """Whether `eqn` maps its operands' elements to its output's, one by one."""
    return eqn.prim in elementwise_prims or _elementwise_form(eqn)[0] is not None


def _blocked_runs(prog: Program, last_use) -> dict:
    """start index -> the `_blocked_form`s of the run written block by block from there: at
    least two consecutive equations with a form and one output shape, whose views are read
    only inside the run (a view has no buffer of its own to be kept in)."""
    forms = [_blocked_form(e) for e in prog.eqns]
    runs, i, n = {}, 0, len(prog.eqns)
    while i < n:
        j = i
        while j < n and forms[j][0] and \
                prog.eqns[j].outvars[0].aval.shape == prog.eqns[i].outvars[0].aval.shape:
            j += 1
        while True:  # end the run before the first view read after it, until none is
            escaping = [k for k in range(i, j) if forms[k][0] == "view"
                        and last_use.get(prog.eqns[k].outvars[0].id, j) >= j]
            if not escaping:
                break
            j = escaping[0]
        if j - i >= 2 and any(kind != "view" for kind, _ in forms[i:j]):
            runs[i] = forms[i:j]
            i = j
        else:
            i += 1
    return runs


# A multiple-results kernel whose outputs are each given a trailing axis of size 1 and
# concatenated along it (`random.split`: threefry's two words of each key) writes them straight
# into the columns of the concatenation, from outputs of this many elements: no buffer of its
# own per output, no copy into the result.
_STACK_MIN_SIZE = 1 << 12


def _stacked_kernels(prog: Program) -> dict:
    """kernel equation index -> (block kernel, the concatenation's output, the column of each
    kernel output, indices of the equations the kernel's call replaces), for each kernel whose
    outputs are read only by `broadcast_in_dim`s adding a trailing axis of size 1, read only by
    one `concatenate` along that axis of just them."""
    readers: dict[int, list[int]] = {}
    for i, eqn in enumerate(prog.eqns):
        for a in eqn.inputs:
            if type(a) is not Literal:
                readers.setdefault(a.id, []).append(i)
    for a in prog.outvars:
        if type(a) is not Literal:
            readers.setdefault(a.id, []).append(-1)

    def only_reader(var, name):
        found = readers.get(var.id, ())
        ok = len(found) == 1 and found[0] >= 0 and prog.eqns[found[0]].prim.name == name
        return found[0] if ok else None

    stacks = {}
    for i, eqn in enumerate(prog.eqns):
        outs = eqn.outvars
        if len(outs) < 2 or outs[0].aval.size < _STACK_MIN_SIZE:
            continue
        kind, kernel = _elementwise_form(eqn)
        shape = outs[0].aval.shape
        if kind != "kernel" or any(v.aval.dtype != outs[0].aval.dtype for v in outs):
            continue
        grown, concats = [], set()
        for v in outs:
            b = only_reader(v, "broadcast_in_dim")
            if b is None or prog.eqns[b].params["shape"] != shape + (1,) or tuple(
                    prog.eqns[b].params["broadcast_dimensions"]) != tuple(range(len(shape))):
                break
            grown.append(b)
            concats.add(only_reader(prog.eqns[b].outvars[0], "concatenate"))
        if len(grown) < len(outs) or len(concats) != 1 or None in concats:
            continue
        c = concats.pop()
        concat = prog.eqns[c]
        if concat.params["dimension"] != len(shape) or len(concat.inputs) != len(outs):
            continue
        columns = [concat.inputs.index(prog.eqns[b].outvars[0]) for b in grown]
        stacks[i] = (kernel, concat.outvars[0], columns, grown + [c])
    return stacks


def _run_stacked(kernel, shape, dtype, columns, *operands):
    """A new array of `shape` whose last axis holds in column `columns[k]` output k of the
    block kernel `kernel` on `operands` (0-d, or of `shape` less its last axis)."""
    out = np.empty(shape, dtype)
    rows = out.reshape(-1, shape[-1])
    ops = [a if np.ndim(a) == 0 else np.ascontiguousarray(a).reshape(-1) for a in operands]
    outs = [rows[:, c] for c in columns]

    def block(s, e, _):
        kernel(*(a if a.ndim == 0 else a[s:e] for a in ops), *(o[s:e] for o in outs))
    run_in_cache_blocks(block, rows.shape[0])
    return out


# Buffers smaller than this are left to Python's allocator: for them a `del` or an `out=`
# keyword costs more than the allocation it saves (small arrays are dispatch-bound).
_MIN_MANAGED_SIZE = 4096


def _reusable_input(eqn, i, last_use, reusable, min_size=_MIN_MANAGED_SIZE):
    if ufunc_of(eqn) is None:
        return None
    out_aval = eqn.outvars[0].aval
    if out_aval.size < min_size:
        return None
    for v in eqn.inputs:
        if (type(v) is not Literal and v.id in reusable and last_use.get(v.id) == i
                and v.aval.shape == out_aval.shape and v.aval.dtype == out_aval.dtype
                and out_aval.shape):  # 0-d ufunc results are NumPy scalars, not buffers
            return v
    return None


def as_numpy(x):
    """A Program's const as a NumPy value: an Array held on a device is copied to the host."""
    if getattr(x, "_platform", None) is not None:  # an Array on a device: copy it here
        return x._host()
    buf = getattr(x, "_value", None)
    if buf is not None:
        return buf
    return np.asarray(x)


def source_of(closed: ClosedProgram) -> str:
    """The generated Python source of a compiled Program (for inspection)."""
    return compile_closed(closed).source


# The impls of primitives holding sub-programs run them through this compiler (see gpuarr.impls).
install_host_compiler(compile_closed, compile_program, _compiled.clear)
