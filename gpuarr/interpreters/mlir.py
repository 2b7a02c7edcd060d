"""`jax.interpreters.mlir` for libraries' own primitives: `register_lowering(prim,
lower_fun(f))` defines a primitive by a function of other operations. gpuarr compiles Programs,
not MLIR, so such a definition becomes the primitive's decomposition (`impls.decompositions`):
eager evaluation runs `f`, and the compiler inlines `f`'s equations in place of the primitive.
A rule written against MLIR itself runs when a Program holding the primitive is compiled, with
gpuarr's traced values standing for MLIR values: a rule that only emits Python callbacks
(`emit_python_callback`) compiles to host callbacks, as in JAX; one that builds MLIR operations
cannot run, and the primitive's `def_impl` then serves evaluation and compilation."""
from __future__ import annotations

from collections.abc import Callable

from gpuarr import core, impls
from gpuarr.array import Array
from gpuarr.callbacks import io_callback_p, pure_callback_p
from gpuarr.dispatch import as_array, wrap

# prim -> the MLIR lowering rules registered for it ({platform: rule}); kept for inspection.
_lowerings: dict = {}


class LoweredFun:
    """A lowering rule that stands for a function of other operations (`lower_fun`)."""

    __slots__ = ("fun", "multiple_results")

    def __init__(self, fun: Callable, multiple_results: bool):
        self.fun = fun
        self.multiple_results = multiple_results

    def __call__(self, ctx, *args, **params):
        raise NotImplementedError("gpuarr lowers primitives to its own Programs, not to MLIR; "
                                  "this rule only defines the primitive's decomposition.")


def lower_fun(fun: Callable, multiple_results: bool = True) -> LoweredFun:
    """A lowering rule that implements a primitive as `fun(*args, **params)`, a function of
    other operations (jax.interpreters.mlir.lower_fun); register it with register_lowering."""
    return LoweredFun(fun, multiple_results)


def register_lowering(prim, rule, platform: str | None = None, **kwargs) -> None:
    """Register `rule` as how `prim` compiles (for `platform`, or all). A rule made by
    lower_fun defines the primitive's decomposition, used on every platform: the primitive
    then evaluates eagerly, under jit and after grad or vmap as `rule.fun` does."""
    _lowerings.setdefault(prim, {})[platform] = rule
    if platform is not None and prim in impls.decompositions:
        return  # a platform-specific variant: the generic decomposition stays
    if isinstance(rule, LoweredFun):
        fun, multiple_results = rule.fun, rule.multiple_results
    elif platform in (None, "cpu") and (prim not in impls.decompositions or isinstance(
            impls.decompositions[prim][0], _RuleDecomposition)):
        fun, multiple_results = _RuleDecomposition(prim, rule), prim.multiple_results
    else:
        return
    impls.decompositions[prim] = (fun, multiple_results)
    if prim not in impls.impl_rules or getattr(impls.impl_rules[prim], "_decomposed", False):
        impls.impl_rules[prim] = decomposition_impl(fun, multiple_results)


def decomposition_impl(fun: Callable, multiple_results: bool) -> Callable:
    """An impl (over buffers) that runs `fun` on Arrays."""
    def impl(*bufs, **params):
        out = fun(*[wrap(b) for b in bufs], **params)
        if multiple_results:
            return [_buffer(o) for o in out]
        return _buffer(out)
    impl._decomposed = True
    return impl


def _buffer(x):
    return (x if type(x) is Array else as_array(x))._buffer


# ---------------------------------------------------------------- rules written against MLIR


class IrValue:
    """What a lowering rule handles as an MLIR value: a traced value of the Program being
    built from the rule (see `_RuleDecomposition`)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class ModuleContext:
    """The module a rule lowers into: its platforms and the objects it must keep alive."""

    def __init__(self, platforms=("cpu",)):
        self.platforms = tuple(platforms)
        self.keepalives: list = []

    def add_keepalive(self, keepalive) -> None:
        self.keepalives.append(keepalive)


class LoweringRuleContext:
    """A rule's context (JAX's names): the primitive, its input and output avals."""

    def __init__(self, primitive, avals_in, avals_out, module_context=None):
        self.primitive, self.avals_in, self.avals_out = primitive, avals_in, avals_out
        self.module_context = module_context or ModuleContext()
        self.tokens_in = self.tokens_out = None


class _RuleDecomposition:
    """A primitive's decomposition from a rule written against MLIR: the rule runs on IrValues
    over the traced inputs, and the values it returns must be ones it made through
    `emit_python_callback`; otherwise it raises NotImplementedError and the compiler keeps the
    primitive (its impl runs)."""

    def __init__(self, prim, rule):
        self.prim, self.rule = prim, rule

    def __call__(self, *args, **params):
        avals_in = [core.get_aval(a) for a in args]
        avals_out = core.abstract_eval_rules[self.prim](*avals_in, **params)
        ctx = LoweringRuleContext(self.prim, avals_in, avals_out)
        try:
            outs = list(self.rule(ctx, *[IrValue(a) for a in args], **params))
        except Exception as e:
            raise NotImplementedError(f"the MLIR lowering rule of {self.prim} builds MLIR "
                                      "operations, which gpuarr does not run") from e
        if len(outs) != len(avals_out) or not all(type(o) is IrValue for o in outs):
            raise NotImplementedError(f"the MLIR lowering rule of {self.prim} returned values "
                                      "that are not results of emit_python_callback")
        values = [o.value for o in outs]
        return values if self.prim.multiple_results else values[0]


class _EmittedCallback:
    """A callback given to emit_python_callback, as callbacks.py calls its functions: NumPy
    arguments in, a list of results out. Equal for the same function, so that calls of a pure
    one on the same operands merge (CSE), as XLA merges them."""

    __slots__ = ("callback",)

    def __init__(self, callback):
        self.callback = callback

    def __eq__(self, other):
        return type(other) is _EmittedCallback and other.callback == self.callback

    def __hash__(self):
        try:
            return hash(self.callback)
        except TypeError:
            return id(self.callback)

    def __call__(self, *args):
        return list(self.callback(*args))


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                         has_side_effect: bool, returns_token: bool = True,
                         partitioned: bool = False, sharding=None):
    """Call `callback` on the host from a lowering rule (JAX's `mlir.emit_python_callback`):
    `(results, token, keepalive)`, the results IrValues of `result_avals`. A callback with side
    effects is an io_callback (never removed), else a pure_callback."""
    if partitioned and result_avals:
        raise ValueError("Partitioned callback not supported with return values.")
    fn = _EmittedCallback(callback)
    avals = tuple(core.ShapedArray(tuple(a.shape), a.dtype) for a in result_avals)
    values = [o.value for o in operands]
    if has_side_effect:
        outs = io_callback_p.bind(*values, callback=fn, result_avals=avals, sharding=None,
                                  ordered=False)
    else:
        outs = pure_callback_p.bind(*values, callback=fn, result_avals=avals, sharding=None,
                                    vmap_method=None)
    return [IrValue(o) for o in outs], token, fn
