"""Program-structure operations of lax: `composite` (a named op defined by its decomposition),
`dce_sink` (keeps a value alive through dead-code elimination), `stage` and
`shape_as_value`.

A composite is a call: `composite_p` holds the decomposition traced to a ClosedProgram, runs it
when evaluated, and is inlined by the compiler's passes like a nested jit, so fusion sees
through it. As in JAX it has no JVP, transpose or batching rule (wrap it in custom_jvp or
custom_vjp to differentiate it).
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from gpuarr import pytrees
from gpuarr.core import Primitive, Tracer, abstract_eval_rules, get_aval
from gpuarr.dispatch import as_array
from gpuarr.errors import UnexpectedTracerError
from gpuarr.impls import compile_closed, impl_rules
from gpuarr.interpreters import ad
from gpuarr.interpreters import partial_eval as pe
from gpuarr.interpreters.batching import batch_rules

composite_p = Primitive("composite", multiple_results=True)


def _composite_jvp(primals, tangents, **params):
    raise ValueError("JVP rule for composite not implemented. You can use `jax.custom_jvp` to "
                     "add support. See https://docs.jax.dev/en/latest/_autosummary/"
                     "jax.custom_jvp.html")


def _composite_transpose(cts, *args, **params):
    raise ValueError("Transpose rule for composite not implemented. You can use "
                     "`jax.custom_jvp` or `jax.custom_vjp` to add support. See "
                     "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


impl_rules[composite_p] = lambda *args, jaxpr, **_: compile_closed(jaxpr)(*args)
abstract_eval_rules[composite_p] = lambda *avals, jaxpr, **_: list(jaxpr.out_avals)
ad.jvp_rules[composite_p] = _composite_jvp
ad.transpose_rules[composite_p] = _composite_transpose


def composite(decomposition: Callable, name: str, version: int = 0):
    """A function that applies `decomposition` as one op called `name` (of `version`):
    positional arguments are its operands, keyword arguments its static attributes (None
    values are dropped from the attributes). Its value is the decomposition's; a compiler may
    recognise the op by name and emit something faster (lax.composite)."""
    @functools.wraps(decomposition)
    def op(*args, **kwargs):
        if any(isinstance(v, Tracer) for v in pytrees.tree_leaves(kwargs)):
            raise UnexpectedTracerError(
                "Found a JAX Tracer as an attribute in the decomposition for the composite op "
                f"'{name}'. This means that the decomposition function closes over a value that "
                "is involved in a JAX transformation. Any values that aren't explicitly known "
                "at compile time must be explicitly passed as arguments to the composite.\n\n"
                "Note: If you are passing jax arrays as attributes, use numpy arrays instead.")
        flat_args, in_tree = pytrees.tree_flatten(args)
        avals = [get_aval(x) for x in flat_args]
        out_tree_box = []

        def flat_fun(*flat):
            out = decomposition(*pytrees.tree_unflatten(in_tree, list(flat)), **kwargs)
            leaves, out_tree = pytrees.tree_flatten(out)
            out_tree_box.append(out_tree)
            return leaves

        closed = pe.trace_to_program(flat_fun, avals, debug_info=(name, None))
        attributes = tuple((k, tuple(pytrees.tree_leaves(v)), pytrees.tree_structure(v))
                           for k, v in kwargs.items() if v is not None)
        outs = composite_p.bind(*flat_args, name=name, attributes=attributes, version=version,
                                jaxpr=closed)
        return pytrees.tree_unflatten(out_tree_box[0], outs)
    return op


# dce_sink: an effect with no results, so dead-code elimination keeps its operand computed.
dce_sink_p = Primitive("dce_sink", multiple_results=True, effectful=True)
impl_rules[dce_sink_p] = lambda x, *, prevent_mlir_dce: []
abstract_eval_rules[dce_sink_p] = lambda x, *, prevent_mlir_dce: []
ad.defjvp_zero(dce_sink_p)
batch_rules[dce_sink_p] = lambda size, vals, dims, **params: (dce_sink_p.bind(*vals, **params),
                                                              [])


def dce_sink(val, *, prevent_mlir_dce: bool = False):
    """Keep each leaf of the pytree `val` from being removed as dead code (lax.dce_sink);
    returns None."""
    for leaf in pytrees.tree_leaves(val):
        dce_sink_p.bind(leaf, prevent_mlir_dce=prevent_mlir_dce)


def stage(x, /):
    """`x` as an Array of the current trace (lax.stage): a traced value stays as it is, a
    Python scalar becomes a weakly typed Array, a NumPy value an Array of its canonical
    dtype."""
    return x if isinstance(x, Tracer) else as_array(x)


def shape_as_value(shape):
    """The shape `shape` as an int32 value (lax.shape_as_value); gpuarr shapes are static, so
    this is a NumPy array (an empty shape gives an empty Array, as in JAX)."""
    if not shape:
        return stage(np.zeros((0,), np.int32))
    return np.array(shape, np.int32)
