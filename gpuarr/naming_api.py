"""Named scopes (`named_scope`, `named_call`) and `ensure_compile_time_eval`, which evaluates
operations on concrete values at once while a function is traced."""
from __future__ import annotations

import functools
from collections.abc import Callable

from gpuarr import core
from gpuarr.core import Tracer
from gpuarr.dispatch import eval_trace


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """Wrap `fun` so that it runs inside `named_scope(name)` (default: the function's name).
    The wrapped function behaves, traces and differentiates exactly as `fun` does; gpuarr
    does not yet write the name into printed programs."""
    return named_scope(getattr(fun, "__name__", "fun") if name is None else name)(fun)


class named_scope:
    """Context manager (also usable as a decorator) that opens a scope called `name`; the
    open scopes are `named_scope.current()`. Results, traced programs and derivatives are
    those of the code without it (gpuarr does not yet attach the names to equations, which
    JAX shows in profiles). `name` must be a string."""

    _stack: list = []

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError("named_scope name argument must be a string.")
        self.name = name

    def __enter__(self):
        named_scope._stack.append(self.name)
        return self

    def __exit__(self, *exc):
        named_scope._stack.pop()
        return False

    def __call__(self, fun: Callable) -> Callable:
        @functools.wraps(fun)
        def scoped(*args, **kwargs):
            with named_scope(self.name):
                return fun(*args, **kwargs)
        return scoped

    @staticmethod
    def current() -> str:
        """The '/'-joined names of the scopes open now ('' outside every scope)."""
        return "/".join(named_scope._stack)


class _CompileTimeEvalTrace(core.Trace):
    """Inside `ensure_compile_time_eval`: primitives whose operands are all concrete run
    eagerly on the base trace; any other goes to the trace that was current on entry."""

    __slots__ = ("inner",)

    def __init__(self, inner: core.Trace):
        super().__init__(inner)
        self.inner = inner

    def process_primitive(self, prim, args, params):
        target = self.inner if any(isinstance(a, Tracer) for a in args) else eval_trace
        with core.set_current_trace(target):
            return target.process_primitive(prim, args, params)

    def __repr__(self):
        return repr(self.inner)


class ensure_compile_time_eval:
    """Context manager under which operations on concrete values are evaluated right away,
    even while a function is being traced by jit (or vmap, grad): their results are concrete
    arrays rather than staged values, so Python can branch on them. Operations that involve
    traced values are staged as usual. Outside any transformation it changes nothing."""

    def __enter__(self):
        trace = core.current_trace()
        self._cm = None
        if trace is not eval_trace:
            self._cm = core.set_current_trace(_CompileTimeEvalTrace(trace))
            self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cm is not None:
            self._cm.__exit__(*exc)
        return False
