"""Ahead-of-time compilation stages, as in `jax.stages`.

`jit(f).trace(*args)` gives a `Traced` (the Program as traced), `.lower()` a `Lowered` (the
Program after the compiler's passes), `.compile()` a `Compiled`: a callable bound to one input
signature, which checks its arguments against that signature as JAX's does. Each stage prints
what gpuarr actually runs: `Lowered.as_text()` the optimized Program, `Compiled.as_text()` the
generated code (the Python source of the NumPy backend, or the fused kernels and their CUDA /
OpenCL source on a kernel platform). Arguments may be arrays or `ShapeDtypeStruct`s.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, Union, runtime_checkable

import numpy as np

from gpuarr import api_util, compilation, core, pytrees
from gpuarr.core import TRANSCENDENTAL_PRIMS, ClosedProgram, ShapedArray, subprograms


class ArgInfo:
    """The type of one argument of a traced function, and whether it is donated."""

    __slots__ = ("_aval", "donated")

    def __init__(self, aval: ShapedArray, donated: bool):
        self._aval = aval
        self.donated = donated

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)

    def __repr__(self):
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"

    def __eq__(self, other):
        return isinstance(other, ArgInfo) and (self._aval, self.donated) == (
            other._aval, other.donated)

    def __hash__(self):
        return hash((self._aval, self.donated))


class _Stage:
    """What every stage knows: the function's name and its input and output types."""

    def __init__(self, closed: ClosedProgram, in_tree, out_tree, args_info, fun_name: str,
                 donate_argnums: tuple, out_info):
        self._closed = closed
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.args_info = args_info
        self.fun_name = fun_name
        self.donate_argnums = donate_argnums
        self.out_info = out_info

    @property
    def in_avals(self):
        """The inputs' types, in the arguments' pytree structure."""
        return pytrees.tree_unflatten(self.in_tree, list(self._closed.in_avals))

    def cost_analysis(self) -> dict:
        """Estimated costs of the Program, counted the way XLA's cost analysis counts them:
        'flops' (one per element of each arithmetic result, two per multiply-add of a matrix
        product, one per element folded by a reduction), 'transcendentals' (one per element of
        exp, log, tanh, ...), and 'bytes accessed' (operands read plus results written by each
        equation, as if nothing were fused; loops count their body once per known trip)."""
        return _costs(self._closed.program, 1)


class Traced(_Stage):
    """A function traced for one input signature: `.jaxpr` is its Program."""

    def __init__(self, closed, in_tree, out_tree, args_info, fun_name, donate_argnums,
                 out_info, lower: Callable):
        super().__init__(closed, in_tree, out_tree, args_info, fun_name, donate_argnums,
                         out_info)
        self._lower = lower

    jaxpr = property(lambda self: self._closed)
    @property
    def out_avals(self):
        """The outputs' types, in the outputs' pytree structure."""
        return pytrees.tree_unflatten(self.out_tree, list(self._closed.out_avals))

    def lower(self) -> Lowered:
        """Run the compiler's passes over the Program."""
        return self._lower(self)


class Lowered(_Stage):
    """A traced function after the compiler's passes, ready to compile."""

    def __init__(self, closed, in_tree, out_tree, args_info, fun_name, donate_argnums,
                 out_info, compile: Callable, arg_names=()):
        super().__init__(closed, in_tree, out_tree, args_info, fun_name, donate_argnums,
                         out_info)
        self._compile = compile
        self._arg_names = tuple(arg_names)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The optimized Program, in JAX's jaxpr syntax (with source lines if `debug_info`);
        with `dialect="hlo"`, its HLO text as XLA prints it."""
        if _check_dialect(dialect) == "hlo":
            return self.compiler_ir("hlo").as_hlo_text()
        return self._closed.pretty(source_info=debug_info)

    def compiler_ir(self, dialect: str | None = None):
        """The optimized Program itself; with `dialect="hlo"`, its HLO module (an object whose
        `as_hlo_text()` is the text XLA prints, see gpuarr.compiler.hlo_text)."""
        if _check_dialect(dialect) == "hlo":
            return _hlo_module(self._closed, self.fun_name, self._arg_names)
        return self._closed

    def compile(self, compiler_options=None) -> Compiled:
        """Compile for the current default platform. `compiler_options` are XLA's: checked
        as JAX checks them (`compilation.check_compiler_options`), with no effect here."""
        compilation.check_compiler_options(compiler_options)
        return self._compile(self)


class Compiled(_Stage):
    """A function compiled for one input signature. Calling it checks that the arguments have
    that signature (pytree structure, shapes and dtypes) and runs the compiled code."""

    def __init__(self, closed, in_tree, out_tree, args_info, fun_name, donate_argnums,
                 out_info, run: Callable, arg_names, text: Callable):
        super().__init__(closed, in_tree, out_tree, args_info, fun_name, donate_argnums,
                         out_info)
        self._run = run
        self._arg_names = arg_names
        self._text = text

    def __call__(self, *args, **kwargs):
        leaves, in_tree = pytrees.tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(
                "Function compiled with input pytree does not match the input pytree it was "
                f"called with: compiled for {self.in_tree}, called with {in_tree}. Call it with "
                "arguments of the structure it was lowered with (static arguments are left out).")
        self._check_types(leaves)
        return self._run(leaves)

    call = __call__

    def _check_types(self, leaves):
        mismatches = []
        for i, (leaf, want) in enumerate(zip(leaves, self._closed.in_avals)):
            got = api_util.abstractify(leaf)
            # the compiled Program takes an extended dtype's physical data
            if (got.shape, got.dtype) != (want.shape, want.dtype) and not (
                    core.has_extended_dtype(got) and core.physical_aval(got) == want):
                name = self._arg_names[i] if i < len(self._arg_names) else f"args[{i}]"
                mismatches.append(f"Argument '{name}' compiled with {_type_str(want)} and "
                                  f"called with {_type_str(got)}")
        if mismatches:
            raise TypeError(
                "Argument types differ from the types for which this computation was compiled. "
                "Perhaps you are calling the compiled executable with a different enable_x64 "
                "mode than when it was AOT compiled? The mismatches are:\n"
                + "\n".join(mismatches))

    def as_text(self) -> str:
        """The generated code: the NumPy backend's Python function, or on a kernel platform
        each fused kernel with its source."""
        return self._text()

    def memory_analysis(self) -> dict:
        """Bytes of the arguments and of the results."""
        return {"argument_size_in_bytes": sum(map(_nbytes, self._closed.in_avals)),
                "output_size_in_bytes": sum(map(_nbytes, self._closed.out_avals)),
                "alias_size_in_bytes": 0}

    def runtime_executable(self) -> Callable:
        """The compiled callable over flat input buffers, returning a tuple of buffers."""
        return self._run


# (ClosedProgram, function name, argument names) -> HLO module: filled by
# gpuarr.compiler.hlo_text at import (the compiler sits above this module).
_hlo_module = None


def _check_dialect(dialect):
    if dialect not in (None, "stablehlo", "hlo"):
        raise ValueError(f"unknown dialect: {dialect}. The dialects are 'stablehlo' (gpuarr's "
                         "optimized Program) and 'hlo' (its HLO text).")
    return dialect


def _type_str(aval) -> str:
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


# ---------------------------------------------------------------- cost analysis

_FREE = frozenset((  # moves or reinterprets data, no arithmetic
    "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose", "convert_element_type",
    "bitcast_convert_type", "slice", "dynamic_slice", "dynamic_update_slice", "concatenate",
    "pad", "gather", "rev", "copy", "copy_p", "iota", "select_n", "device_put"))
_REDUCTIONS = frozenset(("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                         "reduce_or", "reduce_xor", "argmax", "argmin"))


def _nbytes(aval) -> int:
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize


def _size(aval) -> int:
    return math.prod(aval.shape)


def _eqn_costs(eqn) -> dict:
    ins = [v.aval for v in eqn.inputs]
    outs = [v.aval for v in eqn.outvars]
    name = eqn.prim.name
    flops = transcendentals = 0
    if name == "dot_general":
        (contract, _), _ = eqn.params["dimension_numbers"]
        flops = 2 * _size(outs[0]) * math.prod(ins[0].shape[d] for d in contract)
    elif name in _REDUCTIONS:
        flops = max(_size(ins[0]) - _size(outs[0]), 0)
    elif name in TRANSCENDENTAL_PRIMS:
        transcendentals = _size(outs[0])
    elif name not in _FREE and outs:
        flops = _size(outs[0])
    moved = sum(map(_nbytes, ins)) + sum(map(_nbytes, outs))
    return {"flops": flops, "transcendentals": transcendentals, "bytes accessed": moved}


def _costs(program, repeat: int) -> dict:
    total = {"flops": 0, "transcendentals": 0, "bytes accessed": 0}
    for eqn in program.eqns:
        subs = list(subprograms(eqn.params))
        if subs:
            trips = eqn.params.get("length", 1) if eqn.prim.name == "scan" else 1
            parts = [_costs(s.program if isinstance(s, ClosedProgram) else s, trips)
                     for s in subs]
            if eqn.prim.name == "cond":  # one branch runs: count the dearest
                parts = [max(parts, key=lambda c: c["flops"] + c["transcendentals"])]
        else:
            parts = [_eqn_costs(eqn)]
        for part in parts:
            for k in total:
                total[k] += part[k]
    return {k: float(v * repeat) for k, v in total.items()}


# Options `Lowered.compile(compiler_options=...)` takes, as JAX types them.
CompilerOptions = dict[str, Union[str, bool]]

@runtime_checkable
class Wrapped(Protocol):
    """A function ready to be traced, lowered and compiled: what `jit` returns. Calling it
    traces, compiles and runs as needed; `trace(*args)` and `lower(*args)` take the first
    stages explicitly."""

    def __call__(self, *args, **kwargs):
        """Run the wrapped function, tracing and compiling as needed."""
        raise NotImplementedError

    def trace(self, *args, **kwargs) -> Traced:
        """The function traced for these arguments."""
        raise NotImplementedError

    def lower(self, *args, **kwargs) -> Lowered:
        """The function traced and lowered for these arguments."""
        raise NotImplementedError

