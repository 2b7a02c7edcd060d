"""Tests for gpuarr.tree_util; tests that need it use jax.tree_util as the oracle."""
import ast
import collections
import dataclasses
import functools
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

from gpuarr import pytrees
from gpuarr import tree_util as tu

PACKAGE_DIR = pathlib.Path(pytrees.__file__).parent  # the implementation: a leaf package


# ---------------------------------------------------------------------------
# Test node types, registered here and (lazily) in jax with the same functions.
# ---------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")
Tri = collections.namedtuple("Tri", "x y z")


class Box:
    """Custom node with two children and string aux data."""

    def __init__(self, a, b, meta="m"):
        self.a, self.b, self.meta = a, b, meta

    def __eq__(self, other):
        return (type(other) is Box
                and (self.a, self.b, self.meta) == (other.a, other.b, other.meta))

    def __repr__(self):
        return f"Box({self.a!r}, {self.b!r}, {self.meta!r})"


def _box_flatten(b):
    return (b.a, b.b), b.meta


def _box_unflatten(meta, children):
    return Box(*children, meta=meta)


class Var:
    """Custom node with any number of children and no aux data."""

    def __init__(self, *xs):
        self.xs = xs

    def __eq__(self, other):
        return type(other) is Var and self.xs == other.xs

    def __repr__(self):
        return f"Var{self.xs!r}"


def _var_flatten(v):
    return v.xs, None


def _var_unflatten(aux, children):
    return Var(*children)


class Keyed:
    """Custom node registered with key paths."""

    def __init__(self, w, b):
        self.w, self.b = w, b

    def __eq__(self, other):
        return type(other) is Keyed and (self.w, self.b) == (other.w, other.b)

    def __repr__(self):
        return f"Keyed({self.w!r}, {self.b!r})"


def _keyed_unflatten(aux, children):
    return Keyed(*children)


@dataclasses.dataclass
class Params:
    w: object
    b: object
    name: str = dataclasses.field(default="lin", metadata={"static": True})


class Mode:
    """A static value: a node with no children whose instance is the aux data."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other) is Mode and other.v == self.v

    def __hash__(self):
        return hash(self.v)

    def __repr__(self):
        return f"Mode({self.v!r})"


def _register(mod):
    mod.register_pytree_node(Box, _box_flatten, _box_unflatten)
    mod.register_pytree_node(Var, _var_flatten, _var_unflatten)
    def keyed_flatten_with_keys(k):
        return [(mod.GetAttrKey("w"), k.w), (mod.GetAttrKey("b"), k.b)], None

    mod.register_pytree_with_keys(Keyed, keyed_flatten_with_keys, _keyed_unflatten)
    mod.register_dataclass(Params)
    mod.register_static(Mode)


_register(tu)
_jax_ready = []


def _jtu():
    """jax.tree_util with the test node types registered (once)."""
    jtu = pytest.importorskip("jax.tree_util")
    if not _jax_ready:
        _register(jtu)
        _jax_ready.append(True)
    return jtu


def _to_jax(tree, jtu):
    """The same tree with Partial nodes rebuilt as jax Partials."""
    if isinstance(tree, tu.Partial):
        return jtu.Partial(tree.func, *_to_jax(list(tree.args), jtu),
                           **_to_jax(dict(tree.keywords), jtu))
    if type(tree) in (list, tuple):
        return type(tree)(_to_jax(x, jtu) for x in tree)
    if type(tree) is dict:
        return {k: _to_jax(v, jtu) for k, v in tree.items()}
    return tree


A, B, C = np.arange(3.0), np.ones((2, 2)), np.float32(7)

TREES = [
    1,
    None,
    (),
    [],
    {},
    (A, B, C),
    [A, (B, None), {"z": C, "a": 1}],
    {"b": [1, 2], "a": (3, {"d": None, "c": 4})},
    {3: "x", 1: "y", 2: None},
    (None, (None,), [None, [None]]),
    Point(A, [B, C]),
    Point(Point(1, 2), None),
    collections.OrderedDict([("b", 1), ("a", [2, 3])]),
    collections.defaultdict(list, {"y": 1, "x": (2,)}),
    Box(A, [B, C]),
    Box(1, 2, meta=("k", 3)),
    Var(1, (2, 3), None),
    Var(),
    Keyed(A, {"q": B}),
    Params(w=A, b=[B, C], name="dense"),
    [Mode("train"), 1, (Mode("eval"),)],
    tu.Partial(max, 1, key=None),
    {"f": tu.Partial(max, A), "g": [1]},
    "a string is a leaf",
    b"bytes too",
    np.int64(3),
    {"dict subclass": collections.Counter(a=1)},
    (1, (2, (3, (4, (5,))))),
]

TREE_IDS = [f"tree{i}" for i in range(len(TREES))]


# ---------------------------------------------------------------------------
# Against the jax oracle
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_flatten_matches_jax(tree):
    jtu = _jtu()
    leaves, treedef = tu.tree_flatten(tree)
    jleaves, jtreedef = jtu.tree_flatten(_to_jax(tree, jtu))
    assert len(leaves) == len(jleaves)
    assert all(ours is theirs for ours, theirs in zip(leaves, jleaves))
    assert repr(treedef) == repr(jtreedef)
    assert str(treedef) == str(jtreedef)
    assert treedef.num_leaves == jtreedef.num_leaves
    assert treedef.num_nodes == jtreedef.num_nodes
    assert [repr(c) for c in treedef.children()] == [repr(c) for c in jtreedef.children()]
    assert tu.treedef_is_leaf(treedef) == jtu.treedef_is_leaf(jtreedef)


@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_unflatten_round_trip_matches_jax(tree):
    jtu = _jtu()
    leaves, treedef = tu.tree_flatten(tree)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    jtree = _to_jax(tree, jtu)
    jrebuilt = jtu.tree_unflatten(jtu.tree_structure(jtree), jtu.tree_leaves(jtree))
    assert type(rebuilt) is type(tree)
    assert all(a is b for a, b in zip(tu.tree_leaves(rebuilt), leaves))
    assert repr(tu.tree_structure(rebuilt)) == repr(jtu.tree_structure(jrebuilt))
    if isinstance(tree, dict):
        # Both rebuild dicts in flatten order: sorted keys, or insertion order.
        assert list(rebuilt) == list(jrebuilt)
    if isinstance(tree, collections.defaultdict):
        assert rebuilt.default_factory is tree.default_factory


@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_key_paths_match_jax(tree):
    jtu = _jtu()
    pairs, treedef = tu.tree_flatten_with_path(tree)
    jpairs, jtreedef = jtu.tree_flatten_with_path(_to_jax(tree, jtu))
    assert repr(treedef) == repr(jtreedef)
    assert [repr(p) for p, _ in pairs] == [repr(p) for p, _ in jpairs]
    assert [tu.keystr(p) for p, _ in pairs] == [jtu.keystr(p) for p, _ in jpairs]
    assert ([tu.keystr(p, simple=True, separator="/") for p, _ in pairs]
            == [jtu.keystr(p, simple=True, separator="/") for p, _ in jpairs])
    assert len(pairs) == len(jpairs)
    assert all(a is b for (_, a), (_, b) in zip(pairs, jpairs))


def test_treedef_equality_and_hash_match_jax():
    jtu = _jtu()
    trees = [
        (1, 2), (3, 4), [1, 2], (1, (2,)), (1, None), (None, 1),
        {"a": 1, "b": 2}, {"b": 5, "a": 6}, {"a": 1, "c": 2},
        Point(1, 2), (1, 2, 3),
        collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=1, a=2),
        collections.defaultdict(int, a=1), collections.defaultdict(list, a=1),
        Box(1, 2), Box(3, 4), Box(1, 2, meta="z"), Var(1, 2), Var(1, 2, 3),
        Params(1, 2), Params(1, 2, name="other"), Mode("a"), Mode("b"), Mode("a"),
    ]
    ours = [tu.tree_structure(t) for t in trees]
    theirs = [jtu.tree_structure(t) for t in trees]
    for i in range(len(trees)):
        for j in range(len(trees)):
            assert (ours[i] == ours[j]) == (theirs[i] == theirs[j]), (trees[i], trees[j])
            assert (ours[i] != ours[j]) == (theirs[i] != theirs[j])
            if ours[i] == ours[j]:
                assert hash(ours[i]) == hash(ours[j])


FLATTEN_UP_TO_CASES = [
    ((1, 2), (1, 2, 3)),
    ((1, 2), [1, 2]),
    ([1], [1, 2]),
    ([1], (1,)),
    ((1, 2), Point(1, 2)),
    (Point(1, 2), (1, 2)),
    (Point(1, 2), Tri(1, 2, 3)),
    ({"a": 1, "b": 2}, {"a": 1}),
    ({"a": 1}, {"a": 1, "b": 2}),
    ({"a": 1}, collections.OrderedDict(a=1)),
    (collections.OrderedDict(a=1), {"a": 1}),
    (collections.OrderedDict(a=1), collections.OrderedDict(b=1)),
    (Box(1, 2), Box(1, 2, meta="z")),
    (Box(1, 2), (1, 2)),
    ((1, 2), Box(1, 2)),
    (Var(1, 2), Var(1, 2, 3)),
    (Params(1, 2), Params(1, 2, name="x")),
    (Params(1, 2), Box(1, 2)),
    ({"a": 1}, {1: 2, "b": 3}),
]


@pytest.mark.parametrize("prefix,full", FLATTEN_UP_TO_CASES,
                         ids=[f"case{i}" for i in range(len(FLATTEN_UP_TO_CASES))])
def test_flatten_up_to_errors_match_jax(prefix, full):
    jtu = _jtu()
    with pytest.raises(ValueError) as ours:
        tu.tree_structure(prefix).flatten_up_to(full)
    with pytest.raises(ValueError) as theirs:
        jtu.tree_structure(prefix).flatten_up_to(full)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("prefix,full", FLATTEN_UP_TO_CASES[:-1],
                         ids=[f"case{i}" for i in range(len(FLATTEN_UP_TO_CASES) - 1)])
def test_tree_map_errors_match_jax(prefix, full):
    jtu = _jtu()
    with pytest.raises(ValueError) as ours:
        tu.tree_map(lambda x, y: x, prefix, full)
    with pytest.raises(ValueError) as theirs:
        jtu.tree_map(lambda x, y: x, prefix, full)
    # Same explanation as jax, followed by the low-level mismatch.
    assert str(ours.value).startswith(str(theirs.value))
    low_level = tu.tree_structure(prefix)
    with pytest.raises(ValueError) as detail:
        low_level.flatten_up_to(full)
    assert str(ours.value).endswith(f"\nDetail: {detail.value}")


def test_none_mismatch_matches_jax_first_line():
    jtu = _jtu()
    with pytest.raises(ValueError) as ours:
        tu.tree_structure((None,)).flatten_up_to((1,))
    with pytest.raises(ValueError) as theirs:
        jtu.tree_structure((None,)).flatten_up_to((1,))
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]
    assert str(ours.value).splitlines()[0] == "Expected None, got 1."


def test_tree_map_nested_error_key_path_matches_jax():
    jtu = _jtu()
    a = {"a": [1, (2, 3)], "b": None}
    b = {"a": [1, (2,)], "b": None}
    with pytest.raises(ValueError) as ours:
        tu.tree_map(lambda x, y: x, a, b)
    with pytest.raises(ValueError) as theirs:
        jtu.tree_map(lambda x, y: x, a, b)
    assert str(ours.value).startswith(str(theirs.value))
    assert "tree_map tree['a'][1]" in str(ours.value)


@pytest.mark.parametrize("tree,pred", [
    ([1, (2, 3), {"a": (4,)}], lambda x: isinstance(x, tuple)),
    ([None, (None,), 1], lambda x: x is None),
    (None, lambda x: x is None),
    (Box((1, 2), 3), lambda x: isinstance(x, Box)),
    ({"a": Point(1, 2)}, lambda x: isinstance(x, Point)),
])
def test_is_leaf_matches_jax(tree, pred):
    jtu = _jtu()
    leaves, treedef = tu.tree_flatten(tree, is_leaf=pred)
    jleaves, jtreedef = jtu.tree_flatten(tree, is_leaf=pred)
    assert leaves == jleaves
    assert repr(treedef) == repr(jtreedef)
    assert (tu.tree_map(lambda x: [x], tree, is_leaf=pred)
            == jtu.tree_map(lambda x: [x], tree, is_leaf=pred))
    paths = [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(tree, is_leaf=pred)[0]]
    jpaths = [jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path(tree, is_leaf=pred)[0]]
    assert paths == jpaths


def test_tree_map_with_rest_and_paths_match_jax():
    jtu = _jtu()
    a = {"x": 1, "y": [2, None], "z": Point(3, 4)}
    b = {"x": 10, "y": [(20, 21), None], "z": Point({"k": 30}, 40)}

    def f(x, y):
        return (x, y)

    assert tu.tree_map(f, a, b) == jtu.tree_map(f, a, b)

    def g(path, x, y):
        return (tu.keystr(path), x, y)

    def jg(path, x, y):
        return (jtu.keystr(path), x, y)

    assert tu.tree_map_with_path(g, a, b) == jtu.tree_map_with_path(jg, a, b)
    pred = lambda p, x: len(p) == 2
    ours = tu.tree_leaves_with_path(b, is_leaf=pred, is_leaf_takes_path=True)
    theirs = jtu.tree_leaves_with_path(b, is_leaf=pred, is_leaf_takes_path=True)
    assert [(repr(p), x) for p, x in ours] == [(repr(p), x) for p, x in theirs]


def test_reductions_and_transpose_match_jax():
    jtu = _jtu()
    tree = [1, (2, 3), {"a": 4, "b": None}]
    assert tu.tree_reduce(lambda a, b: a + b, tree) == jtu.tree_reduce(lambda a, b: a + b, tree)
    assert tu.tree_reduce(lambda a, b: a * b, tree, 10) == jtu.tree_reduce(
        lambda a, b: a * b, tree, 10)
    assert tu.tree_all([1, (True, 2)]) == jtu.tree_all([1, (True, 2)]) is True
    assert tu.tree_all([1, (True, 0)]) == jtu.tree_all([1, (True, 0)]) is False
    assert tu.tree_reduce_associative(lambda a, b: a + b, tree) == 10
    outer = [(1, 2), (3, 4), (5, 6)]
    ours = tu.tree_transpose(tu.tree_structure([0, 0, 0]), tu.tree_structure((0, 0)), outer)
    theirs = jtu.tree_transpose(jtu.tree_structure([0, 0, 0]), jtu.tree_structure((0, 0)),
                                outer)
    assert ours == theirs == ([1, 3, 5], [2, 4, 6])
    assert tu.tree_transpose(tu.tree_structure([0, 0, 0]), None, outer) == ours
    assert (tu.tree_broadcast((1, {"a": 2}), ((0, 0), {"a": [0, 0]}))
            == jtu.tree_broadcast((1, {"a": 2}), ((0, 0), {"a": [0, 0]})))


def test_all_leaves_and_one_level_match_jax():
    jtu = _jtu()
    for items in ([1, 2], [None, 1], [1, (2,)], [], [A, "s"], [Mode("x")]):
        assert tu.all_leaves(items) == jtu.all_leaves(items), items
    pred = lambda x: isinstance(x, tuple)
    assert tu.all_leaves([1, (2,)], is_leaf=pred) == jtu.all_leaves([1, (2,)], is_leaf=pred)
    for tree in ({"b": 1, "a": 2}, (1, [2]), None, Point(1, 2)):
        ours, theirs = tu.flatten_one_level(tree), jtu.flatten_one_level(tree)
        assert tuple(ours[0]) == tuple(theirs[0]) and ours[1] == theirs[1]
    for cls in (Point, int, type(None), dict, Box, np.ndarray):
        assert tu.is_tree_node(cls) == jtu.is_tree_node(cls)


def test_treedef_methods_match_jax():
    jtu = _jtu()
    for tree in [(1, {"b": 2, "a": None}), Point(1, 2), 1, None,
                 collections.OrderedDict(a=1), collections.defaultdict(int, a=1),
                 Params(1, 2)]:
        assert tu.tree_structure(tree).node_data() == jtu.tree_structure(tree).node_data()
    outer, inner = ({"a": 1, "b": [2]}, (1, None))
    assert (repr(tu.tree_structure(outer).compose(tu.tree_structure(inner)))
            == repr(jtu.tree_structure(outer).compose(jtu.tree_structure(inner))))
    structure = (1, [2, 3], {"a": 4})
    xs = (1, [2, 3], [4])
    assert (tu.tree_structure(structure).from_iterable_tree(xs)
            == jtu.tree_structure(structure).from_iterable_tree(xs) == (1, [2, 3], {"a": 4}))
    parts = [tu.tree_structure(1), tu.tree_structure([1, None])]
    jparts = [jtu.tree_structure(1), jtu.tree_structure([1, None])]
    assert repr(tu.treedef_tuple(parts)) == repr(jtu.treedef_tuple(jparts))


def test_key_entries_match_jax():
    jtu = _jtu()
    pairs = [(tu.SequenceKey(2), jtu.SequenceKey(2)), (tu.DictKey("a"), jtu.DictKey("a")),
             (tu.DictKey(3), jtu.DictKey(3)), (tu.GetAttrKey("w"), jtu.GetAttrKey("w")),
             (tu.FlattenedIndexKey(1), jtu.FlattenedIndexKey(1))]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        assert str(ours) == str(theirs)


def test_unflatten_count_errors_match_jax():
    jtu = _jtu()
    tree = (1, {"a": 2})
    for leaves in ([1], [1, 2, 3]):
        with pytest.raises(ValueError) as ours:
            tu.tree_unflatten(tu.tree_structure(tree), leaves)
        with pytest.raises(ValueError) as theirs:
            jtu.tree_unflatten(jtu.tree_structure(tree), leaves)
        assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------------------
# Without jax
# ---------------------------------------------------------------------------

def test_flatten_order_and_structure():
    tree = {"b": (A, None), "a": [B, {"y": C, "x": 1}]}
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves[0] is B and leaves[1] == 1 and leaves[2] is C and leaves[3] is A
    assert len(leaves) == 4
    assert repr(treedef) == "PyTreeDef({'a': [*, {'x': *, 'y': *}], 'b': (*, None)})"
    assert treedef.num_leaves == 4
    assert treedef.num_nodes == 9
    assert tu.tree_leaves(tree) == leaves
    assert tu.tree_structure(tree) == treedef


def test_repr_of_builtin_nodes():
    assert repr(tu.tree_structure((A, {"a": B, "b": None}))) == "PyTreeDef((*, {'a': *, 'b': None}))"
    assert repr(tu.tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tu.tree_structure(())) == "PyTreeDef(())"
    assert repr(tu.tree_structure([])) == "PyTreeDef([])"
    assert repr(tu.tree_structure({})) == "PyTreeDef({})"
    assert repr(tu.tree_structure(None)) == "PyTreeDef(None)"
    assert repr(tu.tree_structure(A)) == "PyTreeDef(*)"
    assert repr(tu.tree_structure(Point(1, 2))) == "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"
    assert (repr(tu.tree_structure(collections.OrderedDict(b=1, a=2)))
            == "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))")
    assert (repr(tu.tree_structure(collections.defaultdict(list, b=1, a=2)))
            == "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))")
    assert repr(tu.tree_structure(Box(1, 2))) == "PyTreeDef(CustomNode(Box[m], [*, *]))"
    assert (repr(tu.tree_structure(Params(1, 2)))
            == "PyTreeDef(CustomNode(Params[('lin',)], [*, *]))")


def test_none_is_an_empty_node():
    leaves, treedef = tu.tree_flatten([None, 1, (None,)])
    assert leaves == [1]
    assert treedef.num_leaves == 1 and treedef.num_nodes == 5
    assert tu.tree_unflatten(treedef, ["x"]) == [None, "x", (None,)]
    assert tu.tree_map(lambda x: x + 1, {"a": None, "b": 1}) == {"a": None, "b": 2}
    assert tu.treedef_is_leaf(tu.tree_structure(None))
    assert not tu.treedef_is_strict_leaf(tu.tree_structure(None))
    assert tu.treedef_is_strict_leaf(tu.tree_structure(A))
    assert tu.tree_leaves(None) == []
    assert tu.tree_leaves([None, 2], is_leaf=lambda x: x is None) == [None, 2]


def test_treedef_hash_equality_and_immutability():
    t1 = tu.tree_structure((A, B, {"a": C}))
    t2 = tu.tree_structure((1, 2, {"a": 3}))
    t3 = tu.tree_structure((1, 2, {"b": 3}))
    t4 = tu.tree_structure([1, 2, {"a": 3}])
    assert t1 == t2 and hash(t1) == hash(t2)
    assert t1 != t3 and t1 != t4 and t3 != t4
    assert len({t1, t2, t3, t4}) == 3
    cache = {t1: "hit"}
    assert cache[t2] == "hit"
    assert (t1 == "not a treedef") is False
    with pytest.raises(AttributeError):
        t1.num_leaves = 9
    with pytest.raises(AttributeError):
        t1.extra = 1
    with pytest.raises(TypeError):
        tu.PyTreeDef()
    # Dict insertion order does not matter; OrderedDict order does.
    assert tu.tree_structure({"a": 1, "b": 2}) == tu.tree_structure({"b": 1, "a": 2})
    assert (tu.tree_structure(collections.OrderedDict(a=1, b=2))
            != tu.tree_structure(collections.OrderedDict(b=1, a=2)))
    # Unhashable aux data is still compared with ==.
    assert tu.tree_structure(Box(1, 2, meta=[1])) == tu.tree_structure(Box(3, 4, meta=[1]))
    assert tu.tree_structure(Box(1, 2, meta=[1])) != tu.tree_structure(Box(1, 2, meta=[2]))
    assert hash(tu.tree_structure(Box(1, 2, meta=[1]))) == hash(
        tu.tree_structure(Box(5, 6, meta=[1])))


def test_treedef_pickles():
    for tree in [(1, {"a": 2, "b": None}), Point(1, [2]), A, collections.OrderedDict(z=1)]:
        treedef = tu.tree_structure(tree)
        copy = pickle.loads(pickle.dumps(treedef))
        assert copy == treedef and hash(copy) == hash(treedef)
        assert repr(copy) == repr(treedef)


def test_flat_sequence_round_trip():
    xs = tuple(np.full(2, i) for i in range(8))
    leaves, treedef = tu.tree_flatten(xs)
    assert all(a is b for a, b in zip(leaves, xs)) and len(leaves) == 8
    assert tu.tree_structure(tuple(range(8))) == treedef
    assert tu.tree_unflatten(treedef, leaves) == xs
    assert tu.tree_unflatten(treedef, iter(range(8))) == tuple(range(8))
    list_def = tu.tree_structure(list(xs))
    assert list_def != treedef
    assert tu.tree_unflatten(list_def, range(8)) == list(range(8))


def test_unflatten_wrong_leaf_count():
    treedef = tu.tree_structure((1, [2, 3]))
    with pytest.raises(ValueError, match="Too few leaves for PyTreeDef; expected 3, got 2"):
        treedef.unflatten([1, 2])
    with pytest.raises(ValueError, match="Too many leaves for PyTreeDef; expected 3"):
        treedef.unflatten([1, 2, 3, 4])


def test_namedtuple_nodes():
    p = Point(A, {"k": B})
    leaves, treedef = tu.tree_flatten(p)
    assert leaves[0] is A and leaves[1] is B
    rebuilt = tu.tree_unflatten(treedef, [1, 2])
    assert type(rebuilt) is Point and rebuilt == Point(1, {"k": 2})
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure((1, 2))
    Other = collections.namedtuple("Point", "x y")
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure(Other(1, 2))
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(p)]
    assert paths == [".x", ".y['k']"]


def test_ordered_dict_and_defaultdict():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tu.tree_flatten(od)
    assert leaves == [1, 2]
    rebuilt = tu.tree_unflatten(treedef, [10, 20])
    assert type(rebuilt) is collections.OrderedDict and list(rebuilt.items()) == [("b", 10), ("a", 20)]
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, treedef = tu.tree_flatten(dd)
    assert leaves == [2, 1]
    rebuilt = tu.tree_unflatten(treedef, [5, 6])
    assert type(rebuilt) is collections.defaultdict and rebuilt.default_factory is list
    assert dict(rebuilt) == {"a": 5, "b": 6}
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(od)] == ["['b']", "['a']"]
    assert tu.tree_structure({"a": 1}) != tu.tree_structure(collections.OrderedDict(a=1))


def test_register_pytree_node_class_and_duplicates():
    @tu.register_pytree_node_class
    class Pair:
        def __init__(self, first, second):
            self.first, self.second = first, second

        def tree_flatten(self):
            return (self.first, self.second), "aux"

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == "aux"
            return cls(*children)

    assert tu.tree_leaves(Pair(1, [2, 3])) == [1, 2, 3]
    out = tu.tree_map(lambda x: x * 2, Pair(1, [2, 3]))
    assert type(out) is Pair and out.first == 2 and out.second == [4, 6]
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Pair(1, 2))] == [
        "[<flat index 0>]", "[<flat index 1>]"]
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        tu.register_pytree_node(Pair, lambda x: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(tuple, lambda x: (x, None), lambda a, c: tuple(c))


def test_registering_a_type_seen_as_leaf():
    class Late:
        def __init__(self, v):
            self.v = v

    assert tu.tree_leaves([Late(1)])[0].v == 1  # cached as a leaf type
    tu.register_pytree_node(Late, lambda x: ((x.v,), None), lambda a, c: Late(*c))
    assert tu.tree_leaves([Late(1), Late(2)]) == [1, 2]
    assert tu.tree_leaves(Late(3)) == [3]


def test_register_with_keys_class():
    @tu.register_pytree_with_keys_class
    class Layer:
        def __init__(self, w, b):
            self.w, self.b = w, b

        def tree_flatten_with_keys(self):
            return ((tu.GetAttrKey("w"), self.w), (tu.GetAttrKey("b"), self.b)), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    pairs = tu.tree_leaves_with_path({"layer": Layer(1, [2])})
    assert [(tu.keystr(p), x) for p, x in pairs] == [("['layer'].w", 1), ("['layer'].b[0]", 2)]
    out = tu.tree_map(lambda x: -x, Layer(1, 2))
    assert (out.w, out.b) == (-1, -2)


def test_register_dataclass():
    leaves, treedef = tu.tree_flatten(Params(w=A, b=[B], name="x"))
    assert leaves[0] is A and leaves[1] is B
    assert treedef.node_data() == (Params, ("x",))
    assert tu.tree_unflatten(treedef, [1, 2]) == Params(1, [2], name="x")
    assert tu.tree_structure(Params(1, 2, "x")) != tu.tree_structure(Params(1, 2, "y"))
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Params(1, [2]))] == [".w", ".b[0]"]

    @functools.partial(tu.register_dataclass, data_fields=["x"], meta_fields=["op"])
    @dataclasses.dataclass
    class Explicit:
        x: int
        op: str

    assert tu.tree_leaves(Explicit(3, "add")) == [3]
    assert tu.tree_map(lambda v: v + 1, Explicit(3, "add")) == Explicit(4, "add")

    @dataclasses.dataclass
    class WithDerived:
        x: int
        cache: int = dataclasses.field(default=0, init=False)

    tu.register_dataclass(WithDerived)  # init=False fields cannot be rebuilt: left out
    assert tu.tree_leaves(WithDerived(5)) == [5]

    class NotDataclass:
        pass

    with pytest.raises(TypeError, match="required when nodetype is not a dataclass"):
        tu.register_dataclass(NotDataclass)
    with pytest.raises(TypeError, match="must both be specified"):
        tu.register_dataclass(NotDataclass, data_fields=["a"])

    @dataclasses.dataclass
    class Partly:
        x: int
        y: int

    with pytest.raises(ValueError, match="Missing fields: {'y'}"):
        tu.register_dataclass(Partly, data_fields=["x"], meta_fields=[])
    with pytest.raises(ValueError, match="must not overlap"):
        tu.register_dataclass(Partly, data_fields=["x", "y"], meta_fields=["y"])


def test_register_static():
    leaves, treedef = tu.tree_flatten([Mode("train"), 1])
    assert leaves == [1]
    assert tu.tree_structure([Mode("train"), 1]) == tu.tree_structure([Mode("train"), 2])
    assert tu.tree_structure([Mode("train"), 1]) != tu.tree_structure([Mode("eval"), 1])
    assert tu.tree_unflatten(treedef, [5]) == [Mode("train"), 5]
    assert repr(tu.tree_structure(Mode("t"))) == "PyTreeDef(CustomNode(Mode[Mode('t')], []))"


def test_partial_is_a_pytree():
    p = tu.Partial(max, A, key=B)
    leaves, treedef = tu.tree_flatten(p)
    assert leaves[0] is A and leaves[1] is B
    rebuilt = tu.tree_unflatten(treedef, [3, None])
    assert isinstance(rebuilt, tu.Partial) and rebuilt.func is max
    assert rebuilt(5) == 5 and rebuilt(1) == 3
    assert tu.tree_structure(tu.Partial(max, 1)) == tu.tree_structure(tu.Partial(max, 2))
    assert tu.tree_structure(tu.Partial(max, 1)) != tu.tree_structure(tu.Partial(min, 1))
    # A wrapped functools.partial stays static: only the outer arguments are children.
    inner = functools.partial(max, 1)
    outer = tu.Partial(inner, 2)
    assert tu.tree_leaves(outer) == [2]
    assert outer(0) == 2 and outer(5) == 5
    assert outer.func.func is max and outer.func.args == (1,)
    doubled = tu.tree_map(lambda x: x * 10, outer)
    assert doubled(0) == 20


def test_key_entries_and_keystr():
    path = (tu.DictKey("a"), tu.SequenceKey(0), tu.GetAttrKey("x"), tu.FlattenedIndexKey(2))
    assert tu.keystr(path) == "['a'][0].x[<flat index 2>]"
    assert tu.keystr(path, simple=True, separator="/") == "a/0/x/2"
    assert tu.keystr(()) == ""
    assert repr(tu.SequenceKey(0)) == "SequenceKey(idx=0)"
    assert repr(tu.DictKey("a")) == "DictKey(key='a')"
    assert repr(tu.GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert repr(tu.FlattenedIndexKey(1)) == "FlattenedIndexKey(key=1)"
    assert tu.DictKey("a") == tu.DictKey("a") and hash(tu.DictKey("a")) == hash(tu.DictKey("a"))
    assert tu.SequenceKey(0) != tu.FlattenedIndexKey(0)
    assert (tu.DictKey("a").key, tu.SequenceKey(3).idx, tu.GetAttrKey("n").name) == ("a", 3, "n")
    with pytest.raises(TypeError):
        tu.SequenceKey("a")
    match tu.GetAttrKey("w"):
        case tu.GetAttrKey(name=name):
            assert name == "w"


def test_flatten_with_path_and_map_with_path():
    tree = {"a": [1, (2, None)], "b": Point(3, 4)}
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert [(tu.keystr(p), x) for p, x in pairs] == [
        ("['a'][0]", 1), ("['a'][1][0]", 2), ("['b'].x", 3), ("['b'].y", 4)]
    assert treedef == tu.tree_structure(tree)
    out = tu.tree_map_with_path(lambda p, x: tu.keystr(p, simple=True, separator="."), tree)
    assert out == {"a": ["a.0", ("a.1.0", None)], "b": Point("b.x", "b.y")}
    with pytest.raises(ValueError, match="tree_map_with_path tree\\['a'\\]"):
        tu.tree_map_with_path(lambda p, x, y: x, tree, {"a": (1, 2), "b": Point(3, 4)})


def test_tree_map_prefix_and_errors():
    assert tu.tree_map(lambda x, y: (x, y), (1, 2), ([3], {"a": 4})) == ((1, [3]), (2, {"a": 4}))
    assert tu.tree_map(lambda x, y: x + y, {"a": 1, "b": 2}, {"b": 20, "a": 10}) == {
        "a": 11, "b": 22}
    with pytest.raises(ValueError, match="Tuple arity mismatch: 2 != 3"):
        tu.tree_map(lambda x, y: x, (1, 2, 3), (1, 2))
    with pytest.raises(ValueError, match="Dict key mismatch"):
        tu.tree_map(lambda x, y: x, {"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match="Custom node type mismatch: expected type"):
        tu.tree_map(lambda x, y: x, Box(1, 2), (1, 2))
    with pytest.raises(ValueError, match="different types at key path"):
        tu.tree_map(lambda x, y: x, [1], (1,))
    with pytest.raises(ValueError, match="Expected None, got 4"):
        tu.tree_map(lambda x, y: x, (1, None), (3, 4))
    # None in the other tree at a leaf position is just a value.
    assert tu.tree_map(lambda x, y: (x, y), (1, 2), (3, None)) == ((1, 3), (2, None))


def test_flatten_up_to_prefix():
    treedef = tu.tree_structure((1, {"a": 2, "b": None}))
    assert treedef.flatten_up_to(([1, 2], {"a": (3,), "b": None})) == [[1, 2], (3,)]
    with pytest.raises(ValueError, match=r"Tuple arity mismatch: 3 != 2; tuple: \(1, 2, 3\)"):
        treedef.flatten_up_to((1, 2, 3))
    with pytest.raises(ValueError, match="Expected tuple, got \\[1, 2\\]"):
        treedef.flatten_up_to([1, 2])


def test_dict_keys_that_do_not_sort():
    with pytest.raises(ValueError, match="Comparator raised exception"):
        tu.tree_flatten({1: "a", "b": 2})
    assert tu.tree_leaves({3: "c", 1: "a", 2: "b"}) == ["a", "b", "c"]


def test_is_leaf_stops_descent():
    tree = [1, (2, 3), [(4,)]]
    calls = []

    def pred(x):
        calls.append(x)
        return isinstance(x, tuple)

    assert tu.tree_leaves(tree, is_leaf=pred) == [1, (2, 3), (4,)]
    assert calls[0] is tree  # asked at the root too
    assert tu.tree_structure(tree, is_leaf=pred).num_leaves == 3
    assert tu.all_leaves([(1,), 2], is_leaf=pred)
    assert not tu.all_leaves([(1,), [2]], is_leaf=pred)


def test_leaves_and_leaf_types():
    assert tu.all_leaves([A, 1, "s", b"b", 1.5, np.float32(1), object])
    assert not tu.all_leaves([1, None])
    assert not tu.all_leaves([1, [2]])
    sub = collections.Counter(a=1)  # dict subclasses are leaves, as in jax
    assert tu.tree_leaves([sub]) == [sub]
    assert tu.tree_leaves(A)[0] is A


def test_compose_children_and_build_tree():
    outer = tu.tree_structure([1, 2])
    inner = tu.tree_structure((1, None))
    composed = outer.compose(inner)
    assert repr(composed) == "PyTreeDef([(*, None), (*, None)])"
    assert composed == tu.tree_structure([(0, None), (0, None)])
    assert composed.children() == [inner, inner]
    assert tu.treedef_children(composed) == [inner, inner]
    assert tu.build_tree(tu.tree_structure((0, [0, 0])), (1, [2, 3])) == (1, [2, 3])
    assert tu.build_tree(tu.tree_structure({"a": 0}), [7]) == {"a": 7}
    with pytest.raises(ValueError, match="Arity mismatch"):
        tu.build_tree(tu.tree_structure((0, 0)), [1])
    assert tu.treedef_tuple([tu.tree_structure(1), inner]) == tu.tree_structure((1, (2, None)))


def test_reductions_without_jax():
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tu.tree_reduce(lambda a, b: a + b, [], 10) == 10
    with pytest.raises(TypeError):
        tu.tree_reduce(lambda a, b: a + b, [])
    assert tu.tree_reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    assert tu.tree_all({"a": True, "b": (1, None)}) is True
    assert tu.tree_all([]) is True
    with pytest.raises(TypeError, match="Mismatch"):
        tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0)), [(1, 2), (3,)])


def test_custom_flatten_may_return_iterators():
    class Lazy:
        def __init__(self, *xs):
            self.xs = xs

    tu.register_pytree_node(Lazy, lambda x: (iter(x.xs), None), lambda a, c: Lazy(*c))
    leaves, treedef = tu.tree_flatten(Lazy(1, 2, 3))
    assert leaves == [1, 2, 3] and treedef.num_leaves == 3
    assert tu.tree_unflatten(treedef, [4, 5, 6]).xs == (4, 5, 6)
    assert treedef.flatten_up_to(Lazy(7, 8, 9)) == [7, 8, 9]


def test_module_is_a_leaf_module():
    # Each module of the package imports only the standard library and its siblings.
    for path in sorted(PACKAGE_DIR.glob("*.py")):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module or "")
        siblings = {m for m in imported if m.startswith("gpuarr.pytrees.")}
        assert imported, f"expected some imports in {path.name}"
        assert {m.split(".")[0] for m in imported - siblings} <= set(sys.stdlib_module_names) | {
            "numpy", "__future__"}, path.name
    # It loads with none of the rest of gpuarr: an empty stand-in for the gpuarr package.
    code = ("import importlib, sys, types\n"
            "pkg = sys.modules['gpuarr'] = types.ModuleType('gpuarr')\n"
            f"pkg.__path__ = [{str(PACKAGE_DIR.parent)!r}]\n"
            "mod = importlib.import_module('gpuarr.pytrees')\n"
            "rest = sorted(m for m in sys.modules if m.startswith('gpuarr.')"
            " and not m.startswith('gpuarr.pytrees'))\n"
            "print('jax' in sys.modules, rest, mod.tree_leaves((1, [2])))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split(None, 2)
    assert out == ["False", "[]", "[1, 2]\n"]


def test_structure_caches_stay_correct_when_full():
    # Enough distinct structures and types to overflow every internal cache.
    for i in range(5000):
        tree = [(0,) * (i % 200), [0] * (i // 200), {f"k{i % 1100}": 0, "z": None}]
        treedef = tu.tree_structure(tree)
        assert treedef.num_leaves == i % 200 + i // 200 + 1
        assert tu.tree_unflatten(treedef, tu.tree_leaves(tree)) == tree
        assert treedef == tu.tree_structure(tu.tree_unflatten(treedef, [1] * treedef.num_leaves))
    types = [type(f"Leaf{i}", (), {}) for i in range(4200)]
    leaves = tu.tree_leaves([t() for t in types])
    assert [type(x) for x in leaves] == types
    assert tu.tree_leaves(Point(1, (2,))) == [1, 2]


def test_dict_keys_equal_but_of_other_types():
    by_bool = tu.tree_structure({True: "x"})
    by_int = tu.tree_structure({1: "x"})
    assert by_bool == by_int and hash(by_bool) == hash(by_int)  # keys compare equal
    assert repr(by_bool) == "PyTreeDef({True: *})"
    assert repr(by_int) == "PyTreeDef({1: *})"
    (key,) = tu.tree_unflatten(by_bool, [0])
    assert key is True

    class Name(str):
        pass

    rebuilt = tu.tree_unflatten(tu.tree_structure({Name("a"): 1}), [2])
    assert type(next(iter(rebuilt))) is Name


def test_flatten_fun_records_the_output_tree():
    args = ({"a": 1, "b": (2, 3)}, [4])
    leaves, in_tree = tu.tree_flatten(args)
    flat_fun, out_tree = tu.flatten_fun(lambda d, l: (d["b"][1] + l[0], {"s": d["a"]}),
                                                in_tree)
    assert flat_fun(*leaves) == [7, 1]
    assert tu.tree_unflatten(out_tree(), [7, 1]) == (7, {"s": 1})
