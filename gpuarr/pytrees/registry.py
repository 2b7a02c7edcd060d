"""The registry of pytree node types: the built-in containers, namedtuples, registered classes
and dataclasses (register_pytree_node and its variants), the per-type dispatch cache, and the
types `gpuarr.tree_util` presents as leaves."""
from __future__ import annotations

import collections
import dataclasses
import operator

from gpuarr.pytrees.key_paths import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

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
