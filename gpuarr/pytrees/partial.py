"""Partial: a functools.partial that is a pytree (its bound arguments are children)."""
from __future__ import annotations

import functools

from gpuarr.pytrees.registry import register_pytree_node


class _HashableCallableShim:
    """Wraps a callable, delegating call, hash and equality to it."""

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kw):
        return self.fun(*args, **kw)

    def __hash__(self):
        return hash(self.fun)

    def __eq__(self, other):
        if isinstance(other, _HashableCallableShim):
            return self.fun == other.fun
        return self.fun == other

    def __repr__(self):
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
    """A `functools.partial` that is a pytree: the function is static aux data, and the
    bound positional and keyword arguments are children, so it can be passed through
    transformed functions."""

    def __new__(cls, func, *args, **kw):
        # functools.partial merges a partial `func` into this one, which would make its
        # arguments children; box it so exactly the arguments given here are children.
        if isinstance(func, functools.partial):
            original = func
            func = _HashableCallableShim(original)
            out = super().__new__(cls, func, *args, **kw)
            func.func = original.func
            func.args = original.args
            func.keywords = original.keywords
            return out
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)
