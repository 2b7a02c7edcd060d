"""`jax.extend.core`: primitives that libraries define (`Primitive` with `def_impl`,
`def_abstract_eval`), programs (`Jaxpr`, `ClosedJaxpr` are gpuarr's Program and ClosedProgram),
abstract values and the identity of the current trace. A library primitive's JVP, transpose and
batching rules go in `jax.interpreters.ad.primitive_jvps` / `primitive_transposes` and
`batching.primitive_batchers`; `mlir.register_lowering(p, mlir.lower_fun(f))` defines it as `f`
for jit on every platform."""
from __future__ import annotations

from collections.abc import Callable

from gpuarr import core
from gpuarr.array import Array
from gpuarr.core import ClosedProgram as ClosedJaxpr  # noqa: F401
from gpuarr.core import (  # noqa: F401
    Literal,
    OpaqueTraceState,
    ShapedArray,
    Tracer,
    Var,
    abstract_eval_rules,
    eval_jaxpr,
    eval_program,
    find_top_trace,
    get_aval,
    get_opaque_trace_state,
    mapped_aval,
    unmapped_aval,
    valid_jaxtype,
)
from gpuarr.core import Program as Jaxpr  # noqa: F401
from gpuarr.dispatch import as_array, wrap
from gpuarr.impls import impl_rules


class Effect:
    """The base class of side effects a primitive may declare (JAX's `core.Effect`)."""


class _PrimitiveType(type):
    """`isinstance(p, jax.extend.core.Primitive)` holds for gpuarr's own primitives too, as in
    JAX, where one class serves both (equinox's jaxpr interpreter annotates with it)."""

    def __instancecheck__(cls, obj):
        if cls is Primitive:
            return isinstance(obj, core.Primitive)
        return super().__instancecheck__(obj)


class Primitive(core.Primitive, metaclass=_PrimitiveType):
    """A primitive defined by a library: `def_impl(f)` gives its eager evaluation over arrays,
    `def_abstract_eval(f)` its output shapes and dtypes from the inputs' (ShapedArrays)."""

    def __init__(self, name: str):
        super().__init__(name)

    def def_impl(self, impl: Callable) -> Callable:
        """Evaluate the primitive as `impl(*arrays, **params)` (also inside compiled code)."""
        multiple = self

        def rule(*bufs, **params):
            out = impl(*[wrap(b) for b in bufs], **params)
            if multiple.multiple_results:
                return [_buffer(o) for o in out]
            return _buffer(out)
        impl_rules[self] = rule
        self.impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
        """Compute output avals as `abstract_eval(*avals, **params)` (a list of them when the
        primitive has multiple results)."""
        def rule(*avals, **params):
            out = abstract_eval(*avals, **params)
            return list(out) if self.multiple_results else [out]
        abstract_eval_rules[self] = rule
        self.abstract_eval = abstract_eval
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval: Callable) -> Callable:
        """Like def_abstract_eval, for a rule returning `(avals, effects)`; effects make the
        primitive stay in compiled programs even when its results are unused."""
        def rule(*avals, **params):
            out, effects = effectful_abstract_eval(*avals, **params)
            if effects:
                self.effectful = True
            return list(out) if self.multiple_results else [out]
        abstract_eval_rules[self] = rule
        return effectful_abstract_eval


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable:
    """A function that evaluates `closed` on its arguments (one list of outputs)."""
    return lambda *args: eval_program(closed.program, closed.consts, args)


jaxpr_as_fn = jaxpr_as_fun


def _buffer(x):
    return (x if type(x) is Array else as_array(x))._buffer
