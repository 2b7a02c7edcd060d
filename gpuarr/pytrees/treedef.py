"""PyTreeDef: the hashable, interned structure of a pytree (its nodes' types and aux data, and
its children), with unflattening, printing, pickling and the treedef_* functions."""
from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

from gpuarr.pytrees.registry import (
    _DATACLASS,
    _DICT,
    _LIST,
    _NAMEDTUPLE,
    _NONE,
    _TUPLE,
    _Entry,
    _lookup,
    _registry,
    _sorted_keys,
)


class PyTreeDef:
    """The structure of a pytree: node types, aux data and arity, with leaves left out.
    Immutable and hashable (the hash is computed once at construction), compared with
    `==`. Build one with `tree_structure` or `tree_flatten`."""

    __slots__ = ("_aux", "_children", "_entry", "_flat", "_hash", "_interned", "_num_leaves",
                 "_num_nodes")

    def __init__(self):
        raise TypeError("PyTreeDef cannot be built directly; use tree_structure().")

    @property
    def num_leaves(self) -> int:
        """Number of leaves in the structure."""
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        """Number of nodes, leaves and None included."""
        return self._num_nodes

    def children(self) -> list[PyTreeDef]:
        """Structures of the immediate children of the root node."""
        return list(self._children)

    def node_data(self):
        """`(node_type, aux_data)` of the root, or None for a leaf; for a dict the aux
        data is its sorted key list."""
        entry = self._entry
        if entry is None:
            return None
        if entry.kind == _DICT:
            return dict, list(self._aux)
        return entry.type, self._aux

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Build the tree of this structure from `leaves`, in flatten order."""
        leaves = leaves if type(leaves) in (list, tuple) else list(leaves)
        if len(leaves) != self._num_leaves:
            if len(leaves) < self._num_leaves:
                raise ValueError(f"Too few leaves for PyTreeDef; expected "
                                 f"{self._num_leaves}, got {len(leaves)}")
            raise ValueError(f"Too many leaves for PyTreeDef; expected {self._num_leaves}.")
        if self._flat:  # a single node of leaves: no recursion needed
            return self._entry.unflatten(self._aux, tuple(leaves))
        return _build(self, iter(leaves))

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Split `tree` at this structure: the subtrees found at this structure's leaves.
        `tree` must match at every node (type, arity, keys, aux data); this structure
        is then a prefix of it. Raises ValueError naming the expected and actual node."""
        out: list[Any] = []
        _flatten_up_to(self, tree, out)
        return out

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure made by putting `inner` at every leaf of this one."""
        def go(td):
            if td._entry is None:
                return inner
            return _make(td._entry, td._aux, tuple([go(c) for c in td._children]))
        return go(self)

    def from_iterable_tree(self, xs: Any) -> Any:
        """Build a tree of this structure from nested iterables `xs`: each node's value is
        iterated for its children, and values at leaf positions are kept as they are."""
        def go(td, x):
            if td._entry is None:
                return x
            items = list(x)
            if len(items) != len(td._children):
                raise ValueError("Arity mismatch between trees")
            return td._entry.unflatten(
                td._aux, tuple([go(c, v) for c, v in zip(td._children, items)]))
        return go(self, xs)

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        if self._hash != other._hash or self._num_nodes != other._num_nodes:
            return False
        return _same(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"PyTreeDef({_repr(self)})"

    def __reduce__(self):
        entry = self._entry
        return _unpickle, (None if entry is None else entry.type, self._aux, self._children)


_new_treedef = object.__new__
_LEAF_HASH = hash("gpuarr.tree_util.leaf")


def _aux_hash(aux) -> int:
    try:
        return hash(aux)
    except TypeError:  # unhashable aux data still compares with ==
        return 0


def _new_node(entry: _Entry | None, aux, children: tuple) -> PyTreeDef:
    td = _new_treedef(PyTreeDef)
    td._entry = entry
    td._aux = aux
    td._children = children
    td._interned = False
    if entry is None:
        td._num_leaves = td._num_nodes = 1
        td._hash = _LEAF_HASH
        td._flat = False
        return td
    num_leaves, num_nodes = 0, 1
    hashes = [entry.type, entry.kind, 0 if aux is None else _aux_hash(aux)]
    for c in children:
        num_leaves += c._num_leaves
        num_nodes += c._num_nodes
        hashes.append(c._hash)
    td._num_leaves, td._num_nodes = num_leaves, num_nodes
    # Every child is a single leaf exactly when these counts hold.
    n = len(children)
    td._flat = num_leaves == n and num_nodes == n + 1
    td._hash = hash(tuple(hashes))
    return td


# Shared structures for nodes without aux data whose children are all shared, keyed by
# the children's ids: a cached structure holds its children, so their ids stay unique
# while the key exists. This makes e.g. the (args, kwargs) structure of a call free.
_interned: dict[tuple, PyTreeDef] = {}
_is_interned = operator.attrgetter("_interned")
_INTERN_LIMIT = 4096


def _make(entry: _Entry | None, aux, children: tuple) -> PyTreeDef:
    if aux is not None:
        return _new_node(entry, aux, children)
    key = (entry.type, entry.kind, *map(id, children))
    td = _interned.get(key)
    if td is not None:
        return td
    td = _new_node(entry, aux, children)
    if all(map(_is_interned, children)):  # else the key could never match again
        td._interned = True
        if len(_interned) >= _INTERN_LIMIT:
            _interned.clear()
        _interned[key] = td
    return td


def _make_flat(entry: _Entry, aux, n: int) -> PyTreeDef:
    """`_make(entry, aux, (leaf,) * n)`, without the per-child loop."""
    td = _new_treedef(PyTreeDef)
    td._entry = entry
    td._aux = aux
    td._children = (_LEAF,) * n
    td._num_leaves, td._num_nodes, td._flat = n, n + 1, True
    td._interned = False
    aux_hash = 0 if aux is None else _aux_hash(aux)
    td._hash = hash((entry.type, entry.kind, aux_hash) + (_LEAF_HASH,) * n)
    return td


_LEAF = _new_node(None, None, ())
_LEAF._interned = True


def _same(a: PyTreeDef, b: PyTreeDef) -> bool:
    if a is b:
        return True
    ea, eb = a._entry, b._entry
    if ea is not eb and (ea is None or eb is None or ea.type is not eb.type
                         or ea.kind != eb.kind):
        return False
    if len(a._children) != len(b._children):
        return False
    if a._aux is not b._aux and a._aux != b._aux:
        return False
    return all(map(_same, a._children, b._children))


def _unpickle(node_type, aux, children) -> PyTreeDef:
    if node_type is None:
        return _LEAF
    entry = _lookup(node_type)
    if entry is None:
        raise ValueError(f"Cannot rebuild a PyTreeDef for unregistered type {node_type!r}.")
    return _make(entry, aux, tuple(children))


def _build(td: PyTreeDef, it) -> Any:
    entry = td._entry
    if entry is None:
        return next(it)
    return entry.unflatten(td._aux, tuple([_build(c, it) for c in td._children]))


def _repr(td: PyTreeDef) -> str:
    entry = td._entry
    if entry is None:
        return "*"
    kids = [_repr(c) for c in td._children]
    kind = entry.kind
    if kind == _NONE:
        return "None"
    if kind == _TUPLE:
        return f"({kids[0]},)" if len(kids) == 1 else f"({', '.join(kids)})"
    if kind == _LIST:
        return f"[{', '.join(kids)}]"
    if kind == _DICT:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(td._aux, kids)) + "}"
    name = "namedtuple" if kind == _NAMEDTUPLE else entry.type.__name__
    data = entry.type.__name__ if kind == _NAMEDTUPLE else str(td._aux)
    return f"CustomNode({name}[{data}], [{', '.join(kids)}])"


_NONE_NOTE = (
    "\n\nNone is a pytree node with no children, not a prefix of other values. To map"
    " over trees holding None where the other tree has values, write:\n"
    "  tree_map(lambda x, y: None if x is None else f(x, y), a, b,"
    " is_leaf=lambda x: x is None)")


def _flatten_up_to(td: PyTreeDef, x: Any, out: list) -> None:
    entry = td._entry
    if entry is None:
        out.append(x)
        return
    kind, n = entry.kind, len(td._children)
    if kind == _TUPLE or kind == _LIST:
        name = "tuple" if kind == _TUPLE else "list"
        if type(x) is not entry.type:
            raise ValueError(f"Expected {name}, got {x!r}.")
        if len(x) != n:
            raise ValueError(f"{name.capitalize()} arity mismatch: {len(x)} != {n}; "
                             f"{name}: {x!r}.")
        children = x
    elif kind == _DICT:
        if type(x) is not dict:
            raise ValueError(f"Expected dict, got {x!r}.")
        keys = _sorted_keys(x)
        if keys != td._aux:
            raise ValueError(f"Dict key mismatch; expected keys: {list(td._aux)!r}; "
                             f"present keys: {list(keys)!r}.")
        children = [x[k] for k in keys]
    elif kind == _NONE:
        if x is not None:
            raise ValueError(f"Expected None, got {x!r}.{_NONE_NOTE}")
        return
    elif kind == _NAMEDTUPLE:
        if not (isinstance(x, tuple) and hasattr(x, "_fields")):
            raise ValueError(f"Expected named tuple, got {x!r}.")
        if len(x) != n:
            raise ValueError(f"Named tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
        if type(x) is not entry.type:
            raise ValueError(f"Named tuple type mismatch: expected type: {entry.type!r}, "
                             f"tuple: {x!r}.")
        children = x
    else:
        what = "dataclass node" if kind == _DATACLASS else "node"
        if _lookup(type(x)) is not entry:
            raise ValueError(f"Custom {what} type mismatch: expected type: "
                             f"{entry.type!r}, value: {x!r}.")
        children, aux = entry.flatten(x)
        children = list(children)
        if aux is not td._aux and aux != td._aux:
            raise ValueError(f"Mismatch custom {what} data: {td._aux!r} != {aux!r}; "
                             f"value: {x!r}.")
        if len(children) != n:
            raise ValueError(f"Custom type arity mismatch: {len(children)} != {n}; "
                             f"value: {x!r}.")
    for c, child in zip(td._children, children):
        _flatten_up_to(c, child, out)


# ---------------------------------------------------------------------------
# Structures
# ---------------------------------------------------------------------------

def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True if `treedef` has a single node: a leaf, None or an empty node type."""
    return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
    """True if `treedef` is exactly one leaf."""
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """Structures of the immediate children of `treedef`'s root."""
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose elements have the structures `treedefs`."""
    return _make(_registry[tuple], None, tuple(treedefs))


def build_tree(treedef: PyTreeDef, xs: Any) -> Any:
    """Build a tree of structure `treedef` from nested iterables `xs`
    (see `PyTreeDef.from_iterable_tree`)."""
    return treedef.from_iterable_tree(xs)
