"""gpuarr.tree (jax.tree): the short-named pytree functions, their agreement with
gpuarr.tree_util, and the key-path aliases and registry object of tree_util."""
import collections
import dataclasses

import numpy as np
import pytest

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import tree_util

TREE = {"b": (1, 2.0), "a": [3, {"c": 4}], "n": None}


def test_package_attribute_and_names():
    assert jax.tree is __import__("gpuarr.tree", fromlist=["map"])
    expected = {"all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
                "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
                "transpose", "unflatten"}
    assert expected <= set(dir(jax.tree))


def test_map_leaves_structure_flatten_unflatten():
    out = jax.tree.map(lambda x: x * 10, TREE)
    assert out == {"b": (10, 20.0), "a": [30, {"c": 40}], "n": None}
    assert jax.tree.map(lambda x, y: x + y, (1, [2]), (10, [20])) == (11, [22])
    assert jax.tree.leaves(TREE) == [3, 4, 1, 2.0]  # dict keys sorted, None has no leaves
    leaves, treedef = jax.tree.flatten(TREE)
    assert leaves == [3, 4, 1, 2.0]
    assert treedef == jax.tree.structure(TREE) == tree_util.tree_structure(TREE)
    assert jax.tree.unflatten(treedef, [5, 6, 7, 8]) == {"b": (7, 8), "a": [5, {"c": 6}], "n": None}
    # is_leaf stops the descent
    assert jax.tree.leaves(TREE, is_leaf=lambda x: isinstance(x, tuple)) == [3, 4, (1, 2.0)]
    assert jax.tree.map(lambda x: len(x) if isinstance(x, tuple) else x, TREE,
                        is_leaf=lambda x: isinstance(x, tuple))["b"] == 2


def test_map_on_arrays_under_jit():
    params = {"w": jnp.ones((2, 3)), "b": jnp.zeros(3)}
    out = jax.jit(lambda p: jax.tree.map(lambda x: x * 2 + 1, p))(params)
    np.testing.assert_array_equal(out["w"], np.full((2, 3), 3.0))
    np.testing.assert_array_equal(out["b"], np.ones(3))


def test_reduce_all_and_reduce_associative():
    assert jax.tree.reduce(lambda a, b: a + b, TREE) == 10.0
    assert jax.tree.reduce(lambda a, b: a + b, TREE, 100) == 110.0
    assert jax.tree.reduce(lambda a, b: a + [b], [1, 2], []) == [1, 2]
    assert jax.tree.all({"a": True, "b": (1, [2])})
    assert not jax.tree.all({"a": True, "b": (0, [2])})
    assert jax.tree.all([])
    assert jax.tree.reduce_associative(lambda a, b: a * b, (1, [2, 3], {"x": 4})) == 24
    assert jax.tree.reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    with pytest.raises(TypeError):
        jax.tree.reduce(lambda a, b: a + b, [])


def test_paths():
    pairs = jax.tree.leaves_with_path({"a": [5, 6], "b": 7})
    assert [(jax.tree_util.keystr(p), v) for p, v in pairs] == [("['a'][0]", 5), ("['a'][1]", 6),
                                                               ("['b']", 7)]
    pairs2, treedef = jax.tree.flatten_with_path({"a": [5, 6], "b": 7})
    assert pairs2 == pairs and treedef == jax.tree.structure({"a": [0, 0], "b": 0})
    out = jax.tree.map_with_path(lambda p, x: f"{jax.tree_util.keystr(p)}={x}", {"a": (1,)})
    assert out == {"a": ("['a'][0]=1",)}
    # is_leaf_takes_path: the predicate sees the path too
    pairs3 = jax.tree.leaves_with_path({"a": [5, 6]}, is_leaf=lambda p, x: len(p) == 1,
                                       is_leaf_takes_path=True)
    assert pairs3 == [((tree_util.DictKey("a"),), [5, 6])]


def test_transpose_and_broadcast():
    outer = jax.tree.structure([0, 0])
    inner = jax.tree.structure((0, 0, 0))
    assert jax.tree.transpose(outer, inner, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    assert jax.tree.transpose(outer, None, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    assert jax.tree.broadcast((1, 2), ((0, 0), [0, 0, 0])) == ((1, 1), [2, 2, 2])
    assert jax.tree.broadcast({"a": 1}, {"a": {"x": 0, "y": 0}}) == {"a": {"x": 1, "y": 1}}
    with pytest.raises(ValueError):
        jax.tree.broadcast((1, 2, 3), (0, 0))


def test_static_dataclass_field():
    @tree_util.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: object
        y: object
        op: str = jax.tree.static(default="add")

    m = Op(jnp.ones(2), jnp.arange(2.0))
    leaves, treedef = jax.tree.flatten(m)
    assert len(leaves) == 2  # `op` is aux data, not a leaf
    rebuilt = jax.tree.unflatten(treedef, [1, 2])
    assert rebuilt == Op(1, 2, "add")
    f = dataclasses.fields(Op)[2]
    assert f.metadata["static"] is True and f.default == "add"
    # metadata given by the caller is kept next to the static flag
    g = jax.tree.static(default=0, metadata={"doc": "d"})
    assert dict(g.metadata) == {"static": True, "doc": "d"}


def test_keypath_aliases_and_default_registry():
    assert tree_util.KeyPath == tuple[tree_util.KeyEntry, ...]
    reg = tree_util.default_registry
    leaves, treedef = reg.flatten([1, (2, 3)])
    assert leaves == [1, 2, 3] and treedef == jax.tree.structure([1, (2, 3)])
    leaves, _ = reg.flatten([1, (2, 3)], lambda x: isinstance(x, tuple))
    assert leaves == [1, (2, 3)]
    assert reg.flatten_one_level((2, 3)) == ((2, 3), None)
    assert reg.flatten_one_level(5) is None
    assert reg.flatten_with_path({"a": 1}, None)[0] == [((tree_util.DictKey("a"),), 1)]
    assert reg.is_node((1,)) and not reg.is_node(1.0)

    Pt = collections.namedtuple("Pt", "x")

    class Box:
        def __init__(self, v):
            self.v = v

    reg.register_node(Box, lambda b: ((b.v,), None), lambda aux, ch: Box(*ch))
    assert jax.tree.leaves([Box(Pt(4)), 5]) == [4, 5]
    assert jax.tree.map(lambda x: x + 1, Box(1)).v == 2
