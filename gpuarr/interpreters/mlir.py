"""`jax.interpreters.mlir` for libraries' own primitives: `register_lowering(prim,
lower_fun(f))` defines a primitive by a function of other operations. gpuarr compiles Programs,
not MLIR, so such a definition becomes the primitive's decomposition (`impls.decompositions`):
eager evaluation runs `f`, and the compiler inlines `f`'s equations in place of the primitive.
A rule written against MLIR itself is kept but cannot run; the primitive's `def_impl` then
serves evaluation and compilation."""
from __future__ import annotations

from collections.abc import Callable

from gpuarr import impls
from gpuarr.array import Array
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
    if not isinstance(rule, LoweredFun):
        return
    if platform is not None and prim in impls.decompositions:
        return  # a platform-specific variant: the generic decomposition stays
    impls.decompositions[prim] = (rule.fun, rule.multiple_results)
    if prim not in impls.impl_rules or getattr(impls.impl_rules[prim], "_decomposed", False):
        impls.impl_rules[prim] = decomposition_impl(rule.fun, rule.multiple_results)


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
