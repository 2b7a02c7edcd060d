"""Pytrees: flatten nested containers to a list of leaves and a structure, and back.

This mirrors `jax.tree_util`. Tuples, lists, dicts (sorted keys), None (a node with no
children), namedtuples, `collections.OrderedDict`, `collections.defaultdict` and
`Partial` are nodes; any other type is a leaf unless registered. The structure is a
hashable, immutable `PyTreeDef`, cheap to compare, so it can key a compilation cache.

gpuarr's transformations flatten with this module. Users reach it through `gpuarr.tree_util`,
which differs in one way: types registered here with `present_as_leaf` (key arrays, nodes
whose child is their raw data so that every transformation carries them) are leaves there,
as in JAX.

This package only re-exports; the implementation lives in its modules: key_paths, registry
(node types), treedef (PyTreeDef), flatten, mapping (tree_map and reductions) and partial.
Each imports only the standard library and its siblings, so the transformations can flatten
before anything else of gpuarr exists.
"""
from __future__ import annotations

from gpuarr.pytrees.flatten import (  # noqa: F401
    PyTreeRegistry,
    all_leaves,
    default_registry,
    flatten_fun,
    flatten_one_level,
    flatten_one_level_with_keys,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_structure,
    tree_unflatten,
)
from gpuarr.pytrees.key_paths import (  # noqa: F401
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    SequenceKey,
    keystr,
)

# lax's control flow reports structure mismatches with the two _equality_errors helpers.
from gpuarr.pytrees.mapping import (  # noqa: F401
    _equality_errors,
    _equality_errors_pytreedef,
    tree_all,
    tree_broadcast,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_reduce_associative,
    tree_transpose,
)
from gpuarr.pytrees.partial import Partial  # noqa: F401
from gpuarr.pytrees.registry import (  # noqa: F401
    is_tree_node,
    present_as_leaf,
    presented_leaves,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
)

# Treedefs pickled before pytrees became a package name gpuarr.pytrees._unpickle.
from gpuarr.pytrees.treedef import (  # noqa: F401
    PyTreeDef,
    _unpickle,
    build_tree,
    treedef_children,
    treedef_is_leaf,
    treedef_is_strict_leaf,
    treedef_tuple,
)

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "build_tree",
    "default_registry",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_broadcast",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_reduce_associative",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_is_strict_leaf",
    "treedef_tuple",
]
