"""Key paths: the entries (SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey) that name a leaf's
place in a pytree, and keystr, which prints them."""
from __future__ import annotations

import dataclasses
import operator
import typing
from typing import Any


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
