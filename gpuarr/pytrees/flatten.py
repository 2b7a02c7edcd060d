"""Flattening: tree_flatten, tree_unflatten, tree_leaves, tree_structure and their with-path
and one-level forms, with the caches of flat structures that make flattening cheap, and
PyTreeRegistry (JAX's `default_registry`), the registry as an object."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpuarr.pytrees.registry import (
    _DICT,
    _LIST,
    _MISSING,
    _NAMEDTUPLE,
    _all_leaf_types,
    _classify,
    _dispatch_get,
    _lookup,
    _registry,
    _sorted_keys,
    register_dataclass,
    register_pytree_node,
)
from gpuarr.pytrees.treedef import _LEAF, PyTreeDef, _make, _make_flat

# Flat tuple/list structures by (type, length): the jit argument tuple hits this.
_flat_seq_defs: dict[tuple[type, int], PyTreeDef] = {}
# Flat dict structures by their keys, for keys that are all exactly `str` (so equal keys
# are identical in value and type; 1 == True would otherwise alias).
_flat_dict_defs: dict[tuple, PyTreeDef] = {}
_all_str = {str}.issuperset
_FLAT_CACHE_LIMIT = 1024


def _flat_seq_def(t: type, n: int) -> PyTreeDef:
    td = _flat_seq_defs.get((t, n))
    if td is None:
        td = _make_flat(_registry[t], None, n)
        if n <= 256:
            td._interned = True
            _flat_seq_defs[t, n] = td
    return td


def _flat_dict_def(keys: tuple) -> PyTreeDef:
    td = _flat_dict_defs.get(keys)
    if td is None or not _all_str(map(type, keys)):
        td = _make_flat(_registry[dict], keys, len(keys))
        if _all_str(map(type, keys)):
            if len(_flat_dict_defs) >= _FLAT_CACHE_LIMIT:
                _flat_dict_defs.clear()
            td._interned = True
            _flat_dict_defs[keys] = td
    return td


def _flatten(tree, leaves) -> PyTreeDef:
    entry = _dispatch_get(type(tree), _MISSING)
    if entry is _MISSING:
        entry = _classify(type(tree))
    if entry is None:
        leaves.append(tree)
        return _LEAF
    kind = entry.kind
    if kind <= _LIST:  # tuple or list
        children, aux = tree, None
        if _all_leaf_types(map(type, tree)):
            leaves.extend(tree)
            return _flat_seq_def(entry.type, len(tree))
    elif kind == _DICT:
        aux = _sorted_keys(tree)
        children = [tree[k] for k in aux]
        if _all_leaf_types(map(type, children)):
            leaves.extend(children)
            return _flat_dict_def(aux)
    else:
        children, aux = entry.flatten(tree)
        if type(children) is not tuple and type(children) is not list:
            children = tuple(children)  # it is iterated twice below
        # Common case: a node whose children are all of known leaf types.
        if _all_leaf_types(map(type, children)):
            leaves.extend(children)
            return _make_flat(entry, aux, len(children))
    return _make(entry, aux, tuple([_flatten(c, leaves) for c in children]))


def _flatten_pred(tree, is_leaf, leaves) -> PyTreeDef:
    if is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    entry = _lookup(type(tree))
    if entry is None:
        leaves.append(tree)
        return _LEAF
    children, aux = entry.flatten(tree)
    return _make(entry, aux, tuple([_flatten_pred(c, is_leaf, leaves) for c in children]))


def tree_flatten(tree: Any,
                 is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    """Flatten `tree` into `(leaves, treedef)`, leaves in left-to-right order (dicts by
    sorted key). `is_leaf(x)`, if given, is asked at every subtree and stops descent
    where it returns True."""
    leaves: list[Any] = []
    if is_leaf is not None:
        return leaves, _flatten_pred(tree, is_leaf, leaves)
    t = type(tree)
    # Hot path: a tuple or list of known leaf types, e.g. the arguments of a jitted call.
    if (t is tuple or t is list) and _all_leaf_types(map(type, tree)):
        return list(tree), _flat_seq_def(t, len(tree))
    return leaves, _flatten(tree, leaves)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a tree of structure `treedef` from `leaves` (the inverse of `tree_flatten`)."""
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of `tree` in flatten order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The `PyTreeDef` of `tree`."""
    return tree_flatten(tree, is_leaf)[1]


def flatten_fun(fun: Callable, in_tree: PyTreeDef):
    """`(flat_fun, out_tree)`: `flat_fun(*leaves)` calls `fun` on the arguments `in_tree`
    rebuilds from `leaves` and returns its output's leaves; `out_tree()` is that output's
    treedef once `flat_fun` has run (JAX's `api_util.flatten_fun_nokwargs`)."""
    box = []

    def flat_fun(*leaves):
        out_leaves, tree = tree_flatten(fun(*tree_unflatten(in_tree, list(leaves))))
        box[:] = [tree]
        return out_leaves

    return flat_fun, lambda: box[0]


def _flatten_with_path(tree, is_leaf, path, out) -> PyTreeDef:
    if is_leaf is not None and is_leaf(path, tree):
        out.append((path, tree))
        return _LEAF
    entry = _lookup(type(tree))
    if entry is None:
        out.append((path, tree))
        return _LEAF
    key_children, aux = entry.flatten_with_keys(tree)
    return _make(entry, aux, tuple([_flatten_with_path(c, is_leaf, (*path, k), out)
                                    for k, c in key_children]))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False):
    """Like `tree_flatten`, but each leaf comes as `(key_path, leaf)`, the key path being
    a tuple of key entries from the root. With `is_leaf_takes_path`, `is_leaf` is called
    as `is_leaf(key_path, x)`."""
    pred = is_leaf
    if is_leaf is not None and not is_leaf_takes_path:
        def pred(path, x):
            return is_leaf(x)
    out: list[tuple[tuple, Any]] = []
    treedef = _flatten_with_path(tree, pred, (), out)
    return out, treedef


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False):
    """The `(key_path, leaf)` pairs of `tree` in flatten order."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def _one_level(tree, with_keys: bool):
    entry = _lookup(type(tree))
    if entry is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = (entry.flatten_with_keys if with_keys else entry.flatten)(tree)
    if entry.kind == _NAMEDTUPLE:  # the class is its aux data here, as in jax
        return list(children), entry.type
    return children, aux


def flatten_one_level(tree: Any):
    """Take apart the root node only: `(children, aux_data)`. Raises ValueError on a leaf."""
    return _one_level(tree, False)


def flatten_one_level_with_keys(tree: Any):
    """Take apart the root node only: `([(key, child), ...], aux_data)`."""
    return _one_level(tree, True)


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every element of `iterable` is a leaf (None is not: it is a node)."""
    if is_leaf is None:
        return all(_lookup(type(x)) is None for x in iterable)
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


# ---------------------------------------------------------------------------
# The registry as an object
# ---------------------------------------------------------------------------

class PyTreeRegistry:
    """The registry of pytree node types, as an object (JAX's `tree_util.default_registry`):
    `flatten`, `flatten_with_path`, `flatten_one_level`, `flatten_one_level_with_keys`,
    `is_node`, `register_node` and `register_dataclass_node` act on the one global registry
    the `tree_*` functions use."""

    def flatten(self, tree, leaf_predicate=None):
        return tree_flatten(tree, leaf_predicate)

    def flatten_with_path(self, tree, leaf_predicate=None):
        return tree_flatten_with_path(tree, leaf_predicate, is_leaf_takes_path=True)

    def flatten_one_level(self, tree):
        if _lookup(type(tree)) is None:
            return None
        return flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree):
        if _lookup(type(tree)) is None:
            return None
        return flatten_one_level_with_keys(tree)

    def is_node(self, tree) -> bool:
        return _lookup(type(tree)) is not None

    def register_node(self, nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)

    def register_dataclass_node(self, nodetype, data_fields, meta_fields):
        register_dataclass(nodetype, list(data_fields), list(meta_fields))

    def __repr__(self):
        return "PyTreeRegistry()"


default_registry = PyTreeRegistry()
