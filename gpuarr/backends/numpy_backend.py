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
    namespace: dict[str, object] = {}

    def name_of(atom) -> str:
        if isinstance(atom, Literal):
            key = f"k{len(namespace)}"
            namespace[key] = atom.val
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
    for i, eqn in enumerate(prog.eqns):
        fn_name = f"f{i}_{eqn.prim.name}"
        namespace[fn_name] = _impl_for(eqn)
        args = ", ".join(name_of(a) for a in eqn.inputs)
        outs = [bind_name(v) for v in eqn.outvars]
        if eqn.prim.multiple_results:
            target = ", ".join(outs) + ("," if len(outs) == 1 else "") if outs else "_"
        else:
            target = outs[0]
        lines.append(f"    {target} = {fn_name}({args})")
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


def _as_numpy(x):
    buf = getattr(x, "_value", None)
    if buf is not None:
        return buf
    return np.asarray(x)


def source_of(closed: ClosedProgram) -> str:
    """The generated Python source of a compiled Program (for inspection)."""
    return compile_closed(closed).source
