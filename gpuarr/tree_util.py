"""Pytrees as JAX users see them (`jax.tree_util`): `gpuarr.pytrees` with key arrays as leaves.

gpuarr's transformations flatten a key array into its raw `uint32[..., 2]` data, so that jit,
vmap, scan and the others carry keys with no key type in their programs. JAX users see a key
array as one leaf: `tree_leaves(key)` is `[key]` and `tree_map(f, key)` is `f(key)`. The
functions here that take `is_leaf` stop at the types `pytrees.present_as_leaf` names; every
other name is `gpuarr.pytrees`'.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpuarr import pytrees
from gpuarr.pytrees import (  # noqa: F401
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    Partial,
    PyTreeDef,
    SequenceKey,
    build_tree,
    default_registry,
    flatten_one_level,
    flatten_one_level_with_keys,
    is_tree_node,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_is_strict_leaf,
    treedef_tuple,
)
from gpuarr.pytrees.mapping import _UNSPECIFIED
from gpuarr.pytrees.treedef import _unpickle  # noqa: F401

__all__ = pytrees.__all__



def _leaf(is_leaf):
    """`is_leaf`, also true at the presented leaf types."""
    presented = pytrees.presented_leaves
    if not presented:
        return is_leaf
    if is_leaf is None:
        return lambda x: type(x) in presented
    return lambda x: type(x) in presented or is_leaf(x)


def _leaf_with_path(is_leaf, takes_path: bool):
    """`_leaf` for the with-path functions: called as `(key_path, x)`."""
    presented = pytrees.presented_leaves
    if not presented:
        return is_leaf, takes_path
    if is_leaf is None:
        return (lambda path, x: type(x) in presented), True
    if takes_path:
        return (lambda path, x: type(x) in presented or is_leaf(path, x)), True
    return (lambda path, x: type(x) in presented or is_leaf(x)), True


def tree_flatten(tree: Any,
                 is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    """Flatten `tree` into `(leaves, treedef)`, leaves in left-to-right order (dicts by
    sorted key). `is_leaf(x)`, if given, is asked at every subtree and stops descent
    where it returns True."""
    return pytrees.tree_flatten(tree, _leaf(is_leaf))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of `tree` in flatten order."""
    return pytrees.tree_leaves(tree, _leaf(is_leaf))


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The `PyTreeDef` of `tree`."""
    return pytrees.tree_structure(tree, _leaf(is_leaf))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False):
    """Like `tree_flatten`, but each leaf comes as `(key_path, leaf)`, the key path being
    a tuple of key entries from the root. With `is_leaf_takes_path`, `is_leaf` is called
    as `is_leaf(key_path, x)`."""
    return pytrees.tree_flatten_with_path(tree, *_leaf_with_path(is_leaf, is_leaf_takes_path))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False):
    """The `(key_path, leaf)` pairs of `tree` in flatten order."""
    return pytrees.tree_leaves_with_path(tree, *_leaf_with_path(is_leaf, is_leaf_takes_path))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every element of `iterable` is a leaf (None is not: it is a node)."""
    return pytrees.all_leaves(iterable, _leaf(is_leaf))


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply `f` leafwise: `f(x, *ys)` for each leaf `x` of `tree` and the matching
    subtrees `ys` of `rest`, whose structure must have `tree`'s as a prefix. Returns a
    tree of `tree`'s structure. A mismatch raises ValueError naming where and how the
    structures differ."""
    return pytrees.tree_map(f, tree, *rest, is_leaf=_leaf(is_leaf))


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like `tree_map`, but calls `f(key_path, x, *ys)`."""
    pred, takes_path = _leaf_with_path(is_leaf, is_leaf_takes_path)
    return pytrees.tree_map_with_path(f, tree, *rest, is_leaf=pred,
                                      is_leaf_takes_path=takes_path)


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Repeat each leaf of `prefix_tree` over the matching subtree of `full_tree`; the
    result has `full_tree`'s structure."""
    return pytrees.tree_broadcast(prefix_tree, full_tree, _leaf(is_leaf))


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any,
                initializer: Any = _UNSPECIFIED,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`functools.reduce(function, leaves)`, with `initializer` when given."""
    return pytrees.tree_reduce(function, tree, initializer, is_leaf=_leaf(is_leaf))


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
                            identity: Any = _UNSPECIFIED,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Reduce the leaves pairwise as a balanced tree; `operation` must be associative.
    `identity` is returned for a tree without leaves."""
    return pytrees.tree_reduce_associative(operation, tree, identity=identity,
                                           is_leaf=_leaf(is_leaf))


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every leaf is truthy."""
    return pytrees.tree_all(tree, is_leaf=_leaf(is_leaf))


def __getattr__(name):  # the rest of gpuarr.pytrees (flatten_fun and the like)
    return getattr(pytrees, name)
