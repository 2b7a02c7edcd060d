"""The NumPy backend: the CPU default and the reference every other backend is tested against.

A Program compiles to straight-line Python source, one line per equation, calling the
primitive's NumPy implementation from `impl_rules`. Calling a compiled Program costs a
Python function call plus the NumPy calls themselves: no per-equation interpretation.
"""
from __future__ import annotations

import functools
import linecache
import weakref
from collections.abc import Callable

import numpy as np

from gpuarr.core import ClosedProgram, Literal, Primitive, Program

# prim -> impl(*numpy_values, **params) -> value (or a sequence for multiple results).
impl_rules: dict[Primitive, Callable] = {}
# prim -> the NumPy ufunc that implements it exactly on floating-point operands, for
# primitives whose general impl is a Python function (integer division rules, say): compiled
# Programs call the ufunc directly and can give it an `out=` buffer.
float_ufuncs: dict[Primitive, np.ufunc] = {}
# Primitives whose NumPy impl always returns a new array (never a view of an input), so a dead
# result may be overwritten by a later elementwise step (matrix products, say).
fresh_output_prims: set[Primitive] = set()

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


def _impl_for(eqn) -> Callable:
    impl = impl_rules.get(eqn.prim)
    if impl is None:
        raise NotImplementedError(f"the NumPy backend has no implementation of {eqn.prim.name}")
    return functools.partial(impl, **eqn.params) if eqn.params else impl


def _compile(prog: Program, consts) -> Callable:
    names: dict[int, str] = {}
    # The module name lets gpuarr's warnings filter (see gpuarr.dispatch) cover compiled code.
    namespace: dict[str, object] = {"__name__": "gpuarr.backends.compiled_program"}

    def name_of(atom) -> str:
        if isinstance(atom, Literal):
            key = f"k{len(namespace)}"
            # 0-d arrays, not NumPy scalars: ufuncs take them about 30% faster.
            namespace[key] = np.asarray(atom.val)
            return key
        return names[atom.id]

    def bind_name(var) -> str:
        names[var.id] = n = f"v{len(names)}"
        return n

    lines = []
    params = []
    if consts is None:
        params = [bind_name(v) for v in prog.constvars]
    else:
        for v, c in zip(prog.constvars, consts, strict=True):
            n = bind_name(v)
            namespace[n] = _as_numpy(c)
    params += [bind_name(v) for v in prog.invars]
    last_use, reusable = _buffer_plan(prog)
    for i, eqn in enumerate(prog.eqns):
        fn_name = f"f{i}_{eqn.prim.name}"
        args = ", ".join(name_of(a) for a in eqn.inputs)
        out_buf = _reusable_input(eqn, i, last_use, reusable)
        ufunc = _ufunc_of(eqn)
        namespace[fn_name] = ufunc if ufunc is not None else _impl_for(eqn)
        if out_buf is not None:
            # An elementwise ufunc writes into a dead temporary of the same type instead of
            # allocating: a jitted chain touches as little fresh memory as eager NumPy does.
            args += f", out={names[out_buf.id]}"
        outs = [bind_name(v) for v in eqn.outvars]
        if eqn.prim.multiple_results:
            target = ", ".join(outs) + ("," if len(outs) == 1 else "") if outs else "_"
        else:
            target = outs[0]
        lines.append(f"    {target} = {fn_name}({args})")
        # Drop dead temporaries at once so their memory is reused by the next allocation.
        dead = sorted({names[v.id] for v in list(eqn.inputs) + list(eqn.outvars)
                       if type(v) is not Literal and last_use.get(v.id) == i
                       and v.aval.size >= _MIN_MANAGED_SIZE})
        if dead:
            lines.append(f"    del {', '.join(dead)}")
    results = ", ".join(name_of(a) for a in prog.outvars)
    lines.append(f"    return ({results}{',' if len(prog.outvars) == 1 else ''})")
    filename = f"<gpuarr-program-{next(_counter)}>"
    src = f"def program({', '.join(params)}):\n" + "\n".join(lines) + "\n"
    # Registering the source lets tracebacks through compiled Programs show their lines.
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), namespace)
    fn = namespace["program"]
    fn.source = src
    return fn


def _buffer_plan(prog: Program):
    """Liveness for the generated code: the equation index after which each temporary is dead
    (program inputs, consts and outputs are never dropped), and the temporaries that own their
    memory exclusively (made by an elementwise ufunc, read only by elementwise ufuncs, so no
    view of them exists) and may be overwritten once dead."""
    keep = {v.id for v in prog.outvars if type(v) is not Literal}
    keep |= {v.id for v in prog.constvars + prog.invars}
    last_use: dict[int, int] = {}
    fresh: set[int] = set()
    shared: set[int] = set()
    for i, eqn in enumerate(prog.eqns):
        elementwise = _ufunc_of(eqn) is not None
        for v in eqn.inputs:
            if type(v) is not Literal:
                last_use[v.id] = i
                if not elementwise:
                    shared.add(v.id)
        for v in eqn.outvars:
            last_use.setdefault(v.id, i)
            if elementwise or eqn.prim in fresh_output_prims:
                fresh.add(v.id)
    for vid in keep:
        last_use.pop(vid, None)
    return last_use, fresh - shared - keep


def _ufunc_of(eqn):
    impl = impl_rules.get(eqn.prim)
    if not eqn.params and eqn.outvars and eqn.outvars[0].aval.dtype.kind == "f":
        impl = float_ufuncs.get(eqn.prim, impl)
    if isinstance(impl, np.ufunc) and not eqn.params and impl.nout == 1:
        return impl
    return None


# Buffers smaller than this are left to Python's allocator: for them a `del` or an `out=`
# keyword costs more than the allocation it saves (small arrays are dispatch-bound).
_MIN_MANAGED_SIZE = 4096


def _reusable_input(eqn, i, last_use, reusable):
    if _ufunc_of(eqn) is None:
        return None
    out_aval = eqn.outvars[0].aval
    if out_aval.size < _MIN_MANAGED_SIZE:
        return None
    for v in eqn.inputs:
        if (type(v) is not Literal and v.id in reusable and last_use.get(v.id) == i
                and v.aval.shape == out_aval.shape and v.aval.dtype == out_aval.dtype
                and out_aval.shape):  # 0-d ufunc results are NumPy scalars, not buffers
            return v
    return None


def _as_numpy(x):
    buf = getattr(x, "_value", None)
    if buf is not None:
        return buf
    return np.asarray(x)


def source_of(closed: ClosedProgram) -> str:
    """The generated Python source of a compiled Program (for inspection)."""
    return compile_closed(closed).source
