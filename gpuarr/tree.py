"""`gpuarr.tree`: the pytree functions under short names (JAX's `jax.tree`).

`tree.map(f, x)` is `tree_util.tree_map(f, x)`, and likewise for the others; see
`gpuarr.tree_util` for the pytree model (which types are nodes, key paths, registration).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from gpuarr import tree_util

__all__ = [
    "all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
    "map_with_path", "reduce", "reduce_associative", "static", "structure", "transpose",
    "unflatten",
]

_UNSPECIFIED = tree_util._UNSPECIFIED


def all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every leaf of `tree` is truthy (`tree_util.tree_all`)."""
    return tree_util.tree_all(tree, is_leaf=is_leaf)


def broadcast(prefix_tree: Any, full_tree: Any,
              is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Repeat each leaf of `prefix_tree` over the subtree of `full_tree` it is a prefix of,
    giving a tree of `full_tree`'s structure (`tree_util.tree_broadcast`)."""
    return tree_util.tree_broadcast(prefix_tree, full_tree, is_leaf=is_leaf)


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """`(leaves, treedef)`: the leaves of `tree` in order and its structure
    (`tree_util.tree_flatten`)."""
    return tree_util.tree_flatten(tree, is_leaf)


def flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                      is_leaf_takes_path: bool = False):
    """Like `flatten`, with each leaf paired with its key path
    (`tree_util.tree_flatten_with_path`)."""
    return tree_util.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)


def leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of `tree` in flatten order (`tree_util.tree_leaves`)."""
    return tree_util.tree_leaves(tree, is_leaf)


def leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                     is_leaf_takes_path: bool = False) -> list:
    """The `(key_path, leaf)` pairs of `tree` (`tree_util.tree_leaves_with_path`)."""
    return tree_util.tree_leaves_with_path(tree, is_leaf, is_leaf_takes_path)


def map(f: Callable[..., Any], tree: Any, *rest: Any,
        is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply `f` to the leaves of `tree` (and the matching leaves of each tree in `rest`),
    keeping the structure (`tree_util.tree_map`)."""
    return tree_util.tree_map(f, tree, *rest, is_leaf=is_leaf)


def map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                  is_leaf: Callable[..., bool] | None = None,
                  is_leaf_takes_path: bool = False) -> Any:
    """Like `map`, with `f(key_path, leaf, *rest_leaves)` (`tree_util.tree_map_with_path`)."""
    return tree_util.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf,
                                        is_leaf_takes_path=is_leaf_takes_path)


def reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _UNSPECIFIED,
           is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Fold `function` over the leaves of `tree` from the left, starting from `initializer`
    when given (`tree_util.tree_reduce`)."""
    return tree_util.tree_reduce(function, tree, initializer, is_leaf=is_leaf)


def reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
                       identity: Any = _UNSPECIFIED,
                       is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Combine the leaves of `tree` with an associative `operation` as a balanced tree,
    `identity` being the result for no leaves (`tree_util.tree_reduce_associative`)."""
    return tree_util.tree_reduce_associative(operation, tree, identity=identity, is_leaf=is_leaf)


def structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """The `PyTreeDef` of `tree` (`tree_util.tree_structure`)."""
    return tree_util.tree_structure(tree, is_leaf)


def transpose(outer_treedef, inner_treedef, pytree_to_transpose: Any) -> Any:
    """Turn a tree of structure outer(inner) into one of structure inner(outer)
    (`tree_util.tree_transpose`)."""
    return tree_util.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def unflatten(treedef, leaves: Iterable[Any]) -> Any:
    """Rebuild a tree of structure `treedef` from `leaves` (`tree_util.tree_unflatten`)."""
    return tree_util.tree_unflatten(treedef, leaves)


def static(**kwargs):
    """A `dataclasses.field` marked static (`metadata={'static': True}`), so that
    `tree_util.register_dataclass` makes it aux data rather than a child. Takes the
    arguments of `dataclasses.field`."""
    metadata = {"static": True, **(kwargs.pop("metadata", {}) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
