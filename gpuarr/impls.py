"""What each primitive computes, over NumPy values: the reference every backend agrees with.

`impl_rules` is registered beside each primitive in its stanza (lax, random, the custom rules)
and run by the eager trace (`gpuarr.dispatch`), by host steps of the kernel compiler and by the
NumPy backend's generated code. The tables here describe the implementations themselves;
how a backend writes a primitive into generated code lives with that backend
(`gpuarr.backends.numpy` for the NumPy backend).

Primitives that hold sub-programs (jit, the loops, composite, remat, the custom rules) are
defined by their sub-programs, and their impls run them through the host compiler
(`compile_closed`, `compile_program`): Programs compiled to Python callables over NumPy
values, so an eager loop runs the code a jitted one contains. The NumPy backend installs
itself as that compiler when imported (`gpuarr.backends.numpy`; `import gpuarr` does so);
this module only names the slot, so primitive meaning needs no backend.
"""
from __future__ import annotations

from collections.abc import Callable

from gpuarr import narrow_types
from gpuarr.core import ClosedProgram, Primitive, Program

# prim -> impl(*numpy_values, **params) -> value (or a sequence for multiple results), of the
# exact output dtypes.
impl_rules: dict[Primitive, Callable] = {}

# prim -> (fun, multiple_results): primitives defined as a function of other operations
# (JAX's `mlir.lower_fun`, for libraries' own primitives). Their impls run `fun` eagerly; the
# compiler's inline pass replaces their equations by `fun`'s, so fusion sees through them.
decompositions: dict[Primitive, tuple] = {}

# The properties below are facts about the impls (what their results are, what they cost), so
# they are registered beside them; backends read them to plan their code.

# Primitives that map operand elements to output elements one by one (operands of the
# output's shape or 0-d).
elementwise_prims: set[Primitive] = set()
# Primitives that reduce their one operand over the dimensions `axes` (a param), each result
# element computed from one line of operand elements along them: split along the other
# dimensions, each piece reduces to the matching piece of the result.
axis_reduction_prims: set[Primitive] = set()
# Primitives whose impl always returns a new array (never a view of an input), so a dead
# result may be overwritten by a later elementwise step (matrix products, say).
fresh_output_prims: set[Primitive] = set()
# Elementwise primitives whose impl costs many NumPy passes per value (XLA's erf_inv and log,
# emulated): a chain through them from an integer with few values is worth a table of its
# results (`gpuarr.backends.lookup_tables`).
costly_prims: set[Primitive] = set()

# Operands of the narrow ml_dtypes types (float8_*, float4_e2m1fn, int2/int4/uint2/uint4):
# NumPy's loops for them round differently from XLA (see gpuarr.narrow_types), so an equation
# with such an operand or result runs `host_impl`'s choice instead of its ufunc:
# prim -> implementation (impl_rules' signature) for narrow types. Elementwise primitives
# without an entry compute in the narrow type's wider compute type (`narrow_types.elementwise`);
# the others run their impl, which moves narrow values about or converts them itself.
narrow_rules: dict[Primitive, Callable] = {}
NARROW = narrow_types.NARROW


def narrow_impl(prim) -> Callable:
    """The implementation of `prim` for operands or results of narrow types."""
    rule = narrow_rules.get(prim)
    if rule is None:
        impl = impl_rules[prim]
        rule = narrow_types.elementwise(impl) if prim in elementwise_prims else impl
        narrow_rules[prim] = rule
    return rule


def host_impl(prim, dtypes) -> Callable:
    """The NumPy implementation of `prim` for operands (or results) of these dtypes: its
    impl_rules entry, or `narrow_impl(prim)` when one of them is narrow."""
    if NARROW and any(dt in NARROW for dt in dtypes):
        return narrow_impl(prim)
    return impl_rules[prim]


def impl_for_values(prim, values) -> Callable:
    """`host_impl` for these operand values (NumPy arrays or scalars)."""
    return host_impl(prim, [getattr(v, "dtype", None) for v in values])


# -- the host compiler

_host_compiler: list = []  # [(compile_closed, compile_program, clear)] once installed


def install_host_compiler(compile_closed_fn: Callable, compile_program_fn: Callable,
                          clear_fn: Callable) -> None:
    """Make these the host compiler (the NumPy backend calls this when imported)."""
    _host_compiler[:] = [(compile_closed_fn, compile_program_fn, clear_fn)]


def compile_closed(closed: ClosedProgram) -> Callable:
    """A Python callable taking the Program's inputs (NumPy values), returning a tuple."""
    return _host_compiler[0][0](closed)


def compile_program(prog: Program) -> Callable:
    """Like `compile_closed` for a Program without consts (constvars become leading inputs)."""
    return _host_compiler[0][1](prog)


def clear_compiled() -> None:
    """Drop the host compiler's compiled Programs."""
    for _, _, clear in _host_compiler:
        clear()
