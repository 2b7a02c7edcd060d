"""Mapping and reductions over pytrees: tree_map (with paths), tree_broadcast, tree_reduce,
tree_all, tree_transpose, and the messages that say where two structures differ."""
from __future__ import annotations

import difflib
import functools
import textwrap
from collections.abc import Callable
from typing import Any

from gpuarr.pytrees.flatten import (
    flatten_one_level,
    flatten_one_level_with_keys,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_structure,
    tree_unflatten,
)
from gpuarr.pytrees.key_paths import _simple_entrystr, keystr
from gpuarr.pytrees.registry import _lookup
from gpuarr.pytrees.treedef import PyTreeDef, treedef_is_strict_leaf


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply `f` leafwise: `f(x, *ys)` for each leaf `x` of `tree` and the matching
    subtrees `ys` of `rest`, whose structure must have `tree`'s as a prefix. Returns a
    tree of `tree`'s structure. A mismatch raises ValueError naming where and how the
    structures differ."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    all_leaves_ = [leaves]
    for r in rest:
        try:
            all_leaves_.append(treedef.flatten_up_to(r))
        except ValueError as e:
            pred = None if is_leaf is None else (lambda path, x: is_leaf(x))
            raise _mismatch_error("tree_map tree", tree, r, pred, e) from None
    return treedef.unflatten(list(map(f, *all_leaves_)))


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like `tree_map`, but calls `f(key_path, x, *ys)`."""
    path_leaves, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    columns = [[p for p, _ in path_leaves], [x for _, x in path_leaves]]
    leaf_pred = is_leaf
    if is_leaf is not None and not is_leaf_takes_path:
        def leaf_pred(path, x):
            return is_leaf(x)
    for r in rest:
        try:
            columns.append(treedef.flatten_up_to(r))
        except ValueError as e:
            raise _mismatch_error("tree_map_with_path tree", tree, r, leaf_pred, e) from None
    return treedef.unflatten(list(map(f, *columns)))


def _mismatch_error(name, prefix, full, is_leaf, cause) -> ValueError:
    try:
        msg = next(_prefix_errors((), prefix, full, is_leaf), None)
    except (ValueError, TypeError):  # explaining failed (unsortable keys): keep the cause
        msg = None
    if msg is None:
        return cause
    return ValueError(f"{msg(name)}\nDetail: {cause}")


def _child_keys(tree) -> tuple:
    return tuple(k for k, _ in flatten_one_level_with_keys(tree)[0])


def _prefix_errors(key_path, prefix_tree, full_tree, is_leaf):
    """Yield message makers (taking the tree's name) for the places where `prefix_tree`
    is not a prefix of `full_tree`; `is_leaf(key_path, x)` marks extra leaves."""
    if ((is_leaf is not None and is_leaf(key_path, prefix_tree))
            or _lookup(type(prefix_tree)) is None):
        return  # a leaf is a prefix of anything
    if type(prefix_tree) is not type(full_tree):
        yield lambda name: (
            "pytree structure error: different types at key path\n"
            f"    {name}{keystr(key_path)}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix_tree)}\n"
            "but at the same key path the full pytree has a subtree of different type\n"
            f"    {type(full_tree)}.")
        return
    p_children, p_meta = flatten_one_level(prefix_tree)
    f_children, f_meta = flatten_one_level(full_tree)
    p_children, f_children = tuple(p_children), tuple(f_children)
    p_keys, f_keys = _child_keys(prefix_tree), _child_keys(full_tree)
    if isinstance(prefix_tree, (list, tuple)):
        if len(prefix_tree) != len(full_tree):
            ty = type(prefix_tree).__name__
            yield lambda name: (
                f"pytree structure error: different lengths of {ty} at key path\n"
                f"    {name}{keystr(key_path)}\n"
                f"At that key path, the prefix pytree {name} has a subtree of type "
                f"{ty} of length {len(prefix_tree)}, but the full pytree has a subtree "
                f"of the same type but of length {len(full_tree)}.")
            return
    elif len(p_children) != len(f_children):
        try:
            diff = set(p_keys).symmetric_difference(f_keys)
        except TypeError:
            diff = None
        yield lambda name: (
            "pytree structure error: different numbers of pytree children at key path\n"
            f"    {name}{keystr(key_path)}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix_tree)}\n"
            f"with {len(p_children)} child keys\n"
            f"    {' '.join(_simple_entrystr(k) for k in p_keys)}\n"
            "but at the same key path the full pytree has a subtree of the same type but"
            f" with {len(f_children)} child keys\n"
            f"    {' '.join(_simple_entrystr(k) for k in f_keys)}\n"
            + ("" if diff is None else
               "so the symmetric difference on key sets is\n"
               f"    {' '.join(_simple_entrystr(k) for k in diff)}"))
        return
    if p_meta != f_meta:
        p_str, f_str = str(p_meta), str(f_meta)
        diff_text = textwrap.indent(
            "\n".join(difflib.ndiff(p_str.splitlines(), f_str.splitlines())), "    ")
        yield lambda name: (
            "pytree structure error: different pytree metadata at key path\n"
            f"    {name}{keystr(key_path)}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix_tree)}\n"
            "with metadata\n"
            f"    {p_str}\n"
            "but at the same key path the full pytree has a subtree of the same type but"
            " with metadata\n"
            f"    {f_str}\n"
            "so the diff in the metadata at these pytree nodes is\n"
            f"{diff_text}")
        return
    for k, c1, c2 in zip(p_keys, p_children, f_children):
        yield from _prefix_errors((*key_path, k), c1, c2, is_leaf)


def _equality_errors(path, t1, t2):
    """Yield (key path, thing1, thing2, explanation) where the trees `t1` and `t2` differ in
    structure, as JAX's `equality_errors` words them for its control-flow messages."""
    if (treedef_is_strict_leaf(tree_structure(t1))
            and treedef_is_strict_leaf(tree_structure(t2))):
        return
    if type(t1) is not type(t2):
        yield path, str(type(t1)), str(type(t2)), "their Python types differ"
        return
    if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
        yield (path, f"{type(t1).__name__} of length {len(t1)}",
               f"{type(t2).__name__} of length {len(t2)}", "the lengths do not match")
        return
    c1, meta1 = flatten_one_level(t1)
    c2, meta2 = flatten_one_level(t2)
    c1, c2 = tuple(c1), tuple(c2)
    k1, k2 = _child_keys(t1), _child_keys(t2)
    try:
        diff = " ".join(repr(k.key) for k in set(k1).symmetric_difference(set(k2)))
    except Exception:  # unhashable or keyless entries: no key set to show
        diff = ""
    if len(c1) != len(c2):
        def children(n):
            return f"{n} child{'ren' if n > 1 else ''}"
        yield (path, f"{type(t1)} with {children(len(c1))}", f"{type(t2)} with {children(len(c2))}",
               "the numbers of children do not match"
               + (diff and f", with the symmetric difference of key sets: {{{diff}}}"))
        return
    if meta1 != meta2:
        yield (path, f"{type(t1)} with pytree metadata {meta1}",
               f"{type(t2)} with pytree metadata {meta2}", "the pytree node metadata does not match")
        return
    for k, a, b in zip(k1, c1, c2):
        yield from _equality_errors((*path, k), a, b)


class _LeafType(type):
    def __repr__(cls):
        return "pytree leaf"


class _Leaf(metaclass=_LeafType):
    """A stand-in leaf: `str(type(leaf))` reads `pytree leaf`, as in JAX's messages."""


def _equality_errors_pytreedef(tree1: PyTreeDef, tree2: PyTreeDef):
    """`_equality_errors` of two structures; their leaves print as `pytree leaf`."""
    leaf = _Leaf()
    return _equality_errors((), tree_unflatten(tree1, [leaf] * tree1.num_leaves),
                            tree_unflatten(tree2, [leaf] * tree2.num_leaves))


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Repeat each leaf of `prefix_tree` over the matching subtree of `full_tree`; the
    result has `full_tree`'s structure."""
    out: list[Any] = []

    def add(x, subtree):
        out.extend([x] * tree_structure(subtree).num_leaves)

    tree_map(add, prefix_tree, full_tree, is_leaf=is_leaf)
    return tree_structure(full_tree).unflatten(out)


class _Unspecified:
    pass


_UNSPECIFIED = _Unspecified()


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any,
                initializer: Any = _UNSPECIFIED,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`functools.reduce(function, leaves)`, with `initializer` when given."""
    leaves = tree_leaves(tree, is_leaf=is_leaf)
    if initializer is _UNSPECIFIED:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
                            identity: Any = _UNSPECIFIED,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Reduce the leaves pairwise as a balanced tree; `operation` must be associative.
    `identity` is returned for a tree without leaves."""
    def reduce(seq):
        if len(seq) == 1:
            return seq[0]
        mid = len(seq) // 2
        return operation(reduce(seq[:mid]), reduce(seq[mid:]))

    leaves = tree_leaves(tree, is_leaf=is_leaf)
    if not leaves:
        if identity is _UNSPECIFIED:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    return reduce(leaves)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf=is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turn an outer tree of inner trees into an inner tree of outer trees. With
    `inner_treedef=None` it is read from the first inner tree. Raises TypeError if the
    leaf count is not outer leaves times inner leaves."""
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    rows = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
    outers = [outer_treedef.unflatten(col) for col in zip(*rows)]
    return inner_treedef.unflatten(outers)
