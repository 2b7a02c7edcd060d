"""Pytrees: flatten nested containers to a list of leaves and a structure, and back.

This mirrors `jax.tree_util`. Tuples, lists, dicts (sorted keys), None (a node with no
children), namedtuples, `collections.OrderedDict`, `collections.defaultdict` and
`Partial` are nodes; any other type is a leaf unless registered. The structure is a
hashable, immutable `PyTreeDef`, cheap to compare, so it can key a compilation cache.

gpuarr's transformations flatten with this module. Users reach it through `gpuarr.tree_util`,
which differs in one way: types registered here with `present_as_leaf` (key arrays, nodes
whose child is their raw data so that every transformation carries them) are leaves there,
as in JAX.
"""
from __future__ import annotations

import collections
import dataclasses
import difflib
import functools
import operator
import textwrap
import typing
from collections.abc import Callable, Iterable
from typing import Any

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


# ---------------------------------------------------------------------------
# Key path entries
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """Key of a tuple or list element, printed as `[0]`."""

    idx: int

    def __post_init__(self):
        operator.index(self.idx)  # only integers index sequences

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """Key of a mapping entry, printed as `['a']`."""

    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Key of an attribute (namedtuple field, dataclass field), printed as `.name`."""

    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Position of a child of a custom node registered without keys."""

    key: int

    def __post_init__(self):
        operator.index(self.key)

    def __str__(self):
        return f"[<flat index {self.key}>]"


# A key path entry (any hashable key: the classes above, or a custom node's own keys) and a
# key path, the entries from the root to a leaf (jax.tree_util.KeyEntry / KeyPath).
KeyEntry = typing.TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """Join the string forms of a key path, e.g. `"['a'][0].x"`. With `simple=True` each
    entry is printed bare (`a`, `0`, `x`), which is compact but ambiguous, and `separator`
    goes between entries."""
    str_fn = _simple_entrystr if simple else str
    return separator.join(map(str_fn, keys))


def _simple_entrystr(key) -> str:
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, DictKey):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return str(key.name)
    if isinstance(key, FlattenedIndexKey):
        return str(key.key)
    return str(key)


# ---------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------

# Node kinds; they choose the repr and the wording of mismatch errors.
_TUPLE, _LIST, _DICT, _NONE, _NAMEDTUPLE, _CUSTOM, _DATACLASS = range(7)


class _Entry:
    """How to take one node type apart and put it back together."""

    __slots__ = ("flatten", "flatten_with_keys", "kind", "type", "unflatten")

    def __init__(self, type_, kind, flatten, unflatten, flatten_with_keys):
        self.type = type_
        self.kind = kind
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys


def _sorted_keys(d) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError as e:
        raise ValueError(
            "Comparator raised exception while sorting pytree dictionary keys.") from e


def _flatten_dict(d):
    keys = _sorted_keys(d)
    return tuple([d[k] for k in keys]), keys


def _flatten_dict_with_keys(d):
    keys = _sorted_keys(d)
    return tuple([(DictKey(k), d[k]) for k in keys]), keys


def _flatten_seq_with_keys(xs):
    return tuple([(SequenceKey(i), x) for i, x in enumerate(xs)]), None


def _default_keys(flatten):
    # Custom nodes registered without keys name their children by position.
    def flatten_with_keys(x):
        children, aux = flatten(x)
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux
    return flatten_with_keys


_registry: dict[type, _Entry] = {
    type(None): _Entry(type(None), _NONE, lambda x: ((), None), lambda aux, xs: None,
                       lambda x: ((), None)),
    tuple: _Entry(tuple, _TUPLE, lambda x: (x, None), lambda aux, xs: tuple(xs),
                  _flatten_seq_with_keys),
    list: _Entry(list, _LIST, lambda x: (x, None), lambda aux, xs: list(xs),
                 _flatten_seq_with_keys),
    dict: _Entry(dict, _DICT, _flatten_dict, lambda keys, xs: dict(zip(keys, xs)),
                 _flatten_dict_with_keys),
}

# Exact type -> entry, or None for a leaf type. A cache over `_registry` plus namedtuple
# detection, so each element of a tree costs one dict lookup. It is mutated in place
# (never rebound) because hot functions hold its bound `get`.
_dispatch: dict[type, _Entry | None] = dict(_registry)
_dispatch_get = _dispatch.get
# The leaf types seen so far: `_all_leaf_types(map(type, xs))` checks a node's children
# at C speed.
_leaf_types: set[type] = set()
_all_leaf_types = _leaf_types.issuperset
_DISPATCH_LIMIT = 4096
_MISSING = object()


def _reset_caches() -> None:
    _dispatch.clear()
    _dispatch.update(_registry)
    _leaf_types.clear()


def _namedtuple_entry(cls) -> _Entry:
    fields = cls._fields
    # Children are read as a tuple's items: a namedtuple's own __len__ or __iter__ may need
    # its leaves to be arrays, and flattening also meets stand-in leaves.
    return _Entry(
        cls, _NAMEDTUPLE, lambda x: (tuple.__iter__(x), None), lambda aux, xs: cls(*xs),
        lambda x: (tuple([(GetAttrKey(f), c) for f, c in zip(fields, tuple.__iter__(x))]),
                   None))


def _classify(t: type) -> _Entry | None:
    entry = _registry.get(t)
    if entry is None and issubclass(t, tuple) and hasattr(t, "_fields"):
        entry = _namedtuple_entry(t)
    if len(_dispatch) > _DISPATCH_LIMIT:  # bound the cache if types are made on the fly
        _reset_caches()
    _dispatch[t] = entry
    if entry is None:
        _leaf_types.add(t)
    return entry


def _lookup(t: type) -> _Entry | None:
    entry = _dispatch.get(t, _MISSING)
    return _classify(t) if entry is _MISSING else entry


def _register(nodetype, kind, flatten, unflatten, flatten_with_keys):
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype!r}.")
    _registry[nodetype] = _Entry(nodetype, kind, flatten, unflatten, flatten_with_keys)
    _reset_caches()  # the type may already be cached as a leaf or a namedtuple


def register_pytree_node(nodetype, flatten_func, unflatten_func,
                         flatten_with_keys_func=None) -> None:
    """Make `nodetype` a pytree node. `flatten_func(x)` returns `(children, aux_data)`
    and `unflatten_func(aux_data, children)` rebuilds the node; `aux_data` is static,
    compared with `==` between structures. Without `flatten_with_keys_func` children get
    `FlattenedIndexKey` paths. Registering a type twice raises ValueError."""
    if flatten_with_keys_func is None:
        flatten_with_keys_func = _default_keys(flatten_func)
    _register(nodetype, _CUSTOM, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_node_class(cls):
    """Class decorator registering `cls` with its `tree_flatten()` method and its
    `tree_unflatten(aux_data, children)` classmethod; returns `cls` unchanged."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func,
                              flatten_func=None) -> None:
    """Make `nodetype` a pytree node whose `flatten_with_keys(x)` returns
    `([(key, child), ...], aux_data)`. `flatten_func` is an optional faster flatten
    without keys; it must give the same children and aux data."""
    if not flatten_func:
        def flatten_func(x):
            key_children, aux = flatten_with_keys(x)
            return [c for _, c in key_children], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls):
    """Class decorator registering `cls` with its `tree_flatten_with_keys()` method, its
    `tree_unflatten` classmethod and, if present, its `tree_flatten()` method."""
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten)
    return cls


def register_dataclass(nodetype, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass-like type: `data_fields` are children, `meta_fields` are static
    aux data, and the node is rebuilt as `nodetype(**fields)`. For a dataclass both lists
    may be omitted: fields with `metadata=dict(static=True)` are meta, other `init` fields
    not in `drop_fields` are data. Returns `nodetype`, so it works as a decorator."""
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be specified"
                f" when either is specified. Got {data_fields=} {meta_fields=}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when"
                f" nodetype is not a dataclass. Got {nodetype=}.")
        # Fields that __init__ does not take cannot be passed back to it.
        fields = [f for f in dataclasses.fields(nodetype)
                  if f.init and f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    # Tuples, so later mutation of the caller's lists cannot change the registration.
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        given = {*meta_fields, *data_fields}
        if given != init_fields:
            msg = ("data_fields and meta_fields must include all dataclass fields with"
                   " ``init=True`` and only them.")
            if missing := init_fields - given:
                msg += (f" Missing fields: {missing}. Add them to drop_fields to suppress"
                        " this error.")
            if unexpected := given - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data_fields) & set(meta_fields):
        raise ValueError(
            f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}.")

    def flatten(x):
        return (tuple([getattr(x, n) for n in data_fields]),
                tuple([getattr(x, n) for n in meta_fields]))

    def flatten_with_keys(x):
        return (tuple([(GetAttrKey(n), getattr(x, n)) for n in data_fields]),
                tuple([getattr(x, n) for n in meta_fields]))

    def unflatten(meta, data):
        kwargs = dict(zip(meta_fields, meta))
        kwargs.update(zip(data_fields, data))
        return nodetype(**kwargs)

    _register(nodetype, _DATACLASS, flatten, unflatten, flatten_with_keys)
    return nodetype


def register_static(cls):
    """Register `cls` as a node with no children whose instance is its own aux data, so
    instances are static (they must be hashable). Returns `cls`."""
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, children: x)
    return cls


register_pytree_with_keys(
    collections.OrderedDict,
    lambda x: (tuple([(DictKey(k), v) for k, v in x.items()]), tuple(x)),
    lambda keys, values: collections.OrderedDict(zip(keys, values)),
    lambda x: (tuple(x.values()), tuple(x)),
)


def _flatten_defaultdict_with_keys(d):
    keys = _sorted_keys(d)
    return tuple([(DictKey(k), d[k]) for k in keys]), (d.default_factory, keys)


def _flatten_defaultdict(d):
    keys = _sorted_keys(d)
    return tuple([d[k] for k in keys]), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict,
    _flatten_defaultdict_with_keys,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)),
    _flatten_defaultdict,
)


# Node types that `gpuarr.tree_util` shows users as leaves (`present_as_leaf`).
presented_leaves: set[type] = set()


def present_as_leaf(nodetype: type) -> None:
    """Show the registered node type `nodetype` as a leaf in `gpuarr.tree_util`'s functions,
    while this module, and so every transformation, flattens it into its children."""
    if _lookup(nodetype) is None:
        raise TypeError(f"{nodetype.__name__} is not a registered pytree node type; register "
                        "it with register_pytree_node first.")
    presented_leaves.add(nodetype)


def is_tree_node(typ: type) -> bool:
    """True if instances of `typ` are pytree nodes (registered types and namedtuples)."""
    return _lookup(typ) is not None


# ---------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------

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
# Flattening
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# Mapping and reductions
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------

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
