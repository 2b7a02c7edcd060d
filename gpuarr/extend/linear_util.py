"""`jax.extend.linear_util`: functions wrapped with their static parameters
(`wrap_init(f, params)`), the form some libraries hand to tracing utilities."""
from __future__ import annotations

from collections.abc import Callable


class WrappedFun:
    """`f` with keyword parameters fixed; `call_wrapped(*args)` applies it."""

    __slots__ = ("f", "params", "debug_info")

    def __init__(self, f: Callable, params: dict, debug_info=None):
        self.f = f
        self.params = dict(params)
        self.debug_info = debug_info

    def call_wrapped(self, *args, **kwargs):
        return self.f(*args, **self.params, **kwargs)

    def __call__(self, *args, **kwargs):
        return self.call_wrapped(*args, **kwargs)

    def __repr__(self):
        return f"Wrapped function {getattr(self.f, '__name__', self.f)!r}"


def wrap_init(f: Callable, params=None, *, debug_info=None) -> WrappedFun:
    """Wrap `f` with the keyword parameters `params` (linear_util.wrap_init)."""
    return WrappedFun(f, params or {}, debug_info)
