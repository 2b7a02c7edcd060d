"""jnp's shape and selection functions on typed key arrays (dtype `key<fry>`), as in JAX.

A key array holds its raw uint32 data with a trailing key-data axis of two words. Each function
here runs on that raw data with the key-data axis batched (as vmap batches an axis), so it sees
arrays of the keys' own shape: `stack`, `where`, `take`, `reshape` and the rest need no
key-specific code, and their axis arguments mean what they mean for the keys. The results are
wrapped as keys again. Arithmetic on keys stays an error, as in JAX.
"""
from __future__ import annotations

import functools

from gpuarr import pytrees
from gpuarr.core import get_aval
from gpuarr.interpreters import batching
from gpuarr.prng import PRNGKeyArray


def _is_key(x) -> bool:
    return isinstance(x, PRNGKeyArray)


def _holds_keys(args, kwargs) -> bool:
    """Whether a key array is among the arguments or the items of a list or tuple argument
    (`stack([k1, k2])`): a cheap test, made on every call of the wrapped functions."""
    for a in args:
        t = type(a)
        if t is PRNGKeyArray or ((t is tuple or t is list) and PRNGKeyArray in map(type, a)):
            return True
    return bool(kwargs) and _holds_keys(tuple(kwargs.values()), {})


def on_key_data(fun, args, kwargs):
    """`fun(*args, **kwargs)` with every key array replaced by its raw data and the key-data
    axis batched; array results come back as key arrays."""
    leaves, tree = pytrees.tree_flatten((args, kwargs), is_leaf=_is_key)
    vals = [x._base_array if _is_key(x) else x for x in leaves]
    dims = [get_aval(v).ndim - 1 if _is_key(x) else batching.not_mapped
            for x, v in zip(leaves, vals)]
    out_tree = []

    def flat_fun(*flat):
        a, kw = pytrees.tree_unflatten(tree, list(flat))
        outs, treedef = pytrees.tree_flatten(fun(*a, **kw))
        out_tree.append(treedef)
        return outs

    outs, out_dims = batching.batch_flat(flat_fun, 2, vals, dims)
    keys = [PRNGKeyArray(batching.move_to(o, d, get_aval(o).ndim - (d is not batching.not_mapped), 2))
            for o, d in zip(outs, out_dims)]
    return pytrees.tree_unflatten(out_tree[0], keys)


def accepting_keys(fun):
    """`fun`, also taking key arrays (run through `on_key_data`)."""
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        if _holds_keys(args, kwargs):
            return on_key_data(fun, args, kwargs)
        return fun(*args, **kwargs)
    return wrapped


def accepting_key_arrays(fun):
    """`jnp.array`/`jnp.asarray`: a key array comes back as it is (copied for `array`)."""
    @functools.wraps(fun)
    def wrapped(a, *args, **kwargs):
        if type(a) is PRNGKeyArray:
            return a.copy() if kwargs.get("copy", True) else a
        return fun(a, *args, **kwargs)
    return wrapped


def comparing_keys(fun, compare):
    """`jnp.equal`/`jnp.not_equal` (`fun`), also comparing key arrays key by key with the key
    arrays' own `compare` (`==`, `!=`), as JAX does; a key array against another dtype is
    JAX's TypeError."""
    @functools.wraps(fun)
    def wrapped(x, y, /):
        if _is_key(x) or _is_key(y):
            if not (_is_key(x) and _is_key(y)):
                raise TypeError(f"{fun.__name__} does not accept dtypes {get_aval(x).dtype}, "
                                f"{get_aval(y).dtype}.")
            return compare(x, y)
        return fun(x, y)
    return wrapped
