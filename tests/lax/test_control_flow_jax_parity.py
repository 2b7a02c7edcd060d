"""lax.cond, switch, while_loop, fori_loop, scan, map, associative_scan and vmap against JAX.

Each case is a function of the modules `(jax, jnp, lax)`, run once with gpuarr's and once
with JAX's. Results must agree in pytree structure, Python types of Python-scalar leaves
(a carry a loop passes through comes back as the object given), and per array leaf in
shape, dtype, weak type and value; errors must agree in class and message."""
import functools
import re

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gnp
from gpuarr import lax as glax

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402
from jax import lax as jlax  # noqa: E402

# JAX warns that an iterator passed as an operand is a pytree leaf; gpuarr raises as JAX does.
pytestmark = pytest.mark.filterwarnings("ignore:Python iterable type:DeprecationWarning")

OURS = (gpuarr, gnp, glax)
THEIRS = (jax, jjnp, jlax)

X = np.arange(6, dtype=np.float32).reshape(3, 2)
Y = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
V = np.array([1.0, -2.0, 3.0], np.float32)
BR = [lambda a: a, lambda a: a * 2, lambda a: a - 1]


def _run(mods, case):
    try:
        return "ok", case(*mods)
    except Exception as e:  # the error itself is what is compared
        return "err", type(e).__name__, _normalize(str(e))


def _normalize(msg):
    """Object addresses differ between runs; the aval class lives in each library's core."""
    msg = re.sub(r" at 0x[0-9a-f]+", " at 0x", msg)
    return msg.replace("jax._src.core.ShapedArray", "gpuarr.core.ShapedArray")


def _describe(tree_util, result):
    leaves, tree = tree_util.tree_flatten(result, is_leaf=lambda v: v is None)
    out = []
    for leaf in leaves:
        if leaf is None or isinstance(leaf, (bool, int, float, complex, str)):
            out.append((type(leaf).__name__, leaf))
        else:
            a = np.asarray(leaf)
            out.append((a.shape, a.dtype, bool(getattr(leaf, "weak_type", False)), a))
    return str(tree).replace("PyTreeDef", ""), out


def check(case):
    got, want = _run(OURS, case), _run(THEIRS, case)
    assert got[0] == want[0], (got, want)
    if got[0] == "err":
        assert got[1:] == want[1:]
        return
    got_tree, got_leaves = _describe(gpuarr.tree_util, got[1])
    want_tree, want_leaves = _describe(jax.tree_util, want[1])
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        if len(w) == 2 or len(g) == 2:
            assert g == w
            continue
        assert g[:3] == w[:3], (g[:3], w[:3])
        if w[1].kind != "V":  # float0 tangents have no values
            np.testing.assert_allclose(g[3], w[3], rtol=1e-6, atol=1e-6)


def cases(table):
    return pytest.mark.parametrize("case", list(table.values()), ids=list(table))


def _with_f16(r):
    """`r` and `r + float16(1)`: the second shows whether `r` is weakly typed."""
    return r, r + np.float16(1)


def _py_partial_scan(jx, jnp, lax):
    f = functools.partial(lambda k, c, x: (c.astype(jnp.int32), x), 1)
    return lax.scan(f, 0.0, V)


SCAN = {
    "length 0": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + x, c * x), 0.0,
                                              np.zeros((0,), np.float32)),
    "length 0 xs None": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + 1.0, c), 0.0, None,
                                                      length=0),
    "xs None": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + 1, c * 2), 0, None, length=4),
    "xs None no length": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, c), 0, None),
    "pytrees": lambda jx, jnp, lax: lax.scan(
        lambda c, x: ({"a": c["a"] + x[0], "b": (c["b"][0] * 2, None)},
                      (x[1], None, {"z": x[0] * c["a"]})),
        {"a": jnp.float32(0), "b": (jnp.ones(2), None)}, (V, X)),
    "reverse": lambda jx, jnp, lax: lax.scan(lambda c, x: (c * 2 + x, c), 1.0, V, reverse=True),
    "reverse pytree unroll": lambda jx, jnp, lax: lax.scan(
        lambda c, x: (c + x["a"], {"p": c * x["b"]}), 0.0, {"a": V, "b": V * 2},
        reverse=True, unroll=2),
    "unroll forms": lambda jx, jnp, lax: [lax.scan(lambda c, x: (c + x, c), 0.0, V, unroll=u)
                                          for u in (0, 1, 2, 10, True, False)],
    "unroll negative": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, x), 0.0, V, unroll=-1),
    "ys None": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + x, None), 0.0, V),
    "ys ()": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + x, ()), 0.0, V),
    "list output": lambda jx, jnp, lax: lax.scan(lambda c, x: [c + x, x], 0.0, V),
    "passed-through Python carry": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, x * 2), 1.5, V),
    "passed-through carry leaf": lambda jx, jnp, lax: lax.scan(
        lambda c, x: ((c[0] + x, c[1]), x), (0.0, 2), V),
    "weak int carry, float32 body": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + x, c), 0, V),
    "weak int carry, weak float body": lambda jx, jnp, lax: _with_f16(
        lax.scan(lambda c, x: (c * 1.5, c), 0, None, length=3)[0]),
    "weak carry stays weak": lambda jx, jnp, lax: _with_f16(
        lax.scan(lambda c, x: (c * 2, c), 1, None, length=3)[0]),
    "weak carry to int16": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + x, c), 0,
                                                         np.arange(3, dtype=np.int16)),
    "strong carry dtype change": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + x, c),
                                                               jnp.int32(0), V),
    "float32 to float16": lambda jx, jnp, lax: lax.scan(
        lambda c, x: (c.astype(jnp.float16), c), jnp.float32(0), V),
    "weak float to int": lambda jx, jnp, lax: lax.scan(lambda c, x: (jnp.int32(1), c), 0.0, V),
    "shape change": lambda jx, jnp, lax: lax.scan(lambda c, x: (jnp.stack([c, c]), c), 0.0, V),
    "dtype and shape change": lambda jx, jnp, lax: lax.scan(
        lambda c, x: (jnp.ones(2, jnp.int32), x), jnp.float32(0), V),
    "two carry types wrong": lambda jx, jnp, lax: lax.scan(
        lambda c, x: ((c[0].astype(jnp.int32), c[1][:1]), x), (0.0, jnp.ones(2)), V),
    "carry name without signature": _py_partial_scan,
    "tree change": lambda jx, jnp, lax: lax.scan(lambda c, x: ((c, c), x), 0.0, V),
    "dict keys change": lambda jx, jnp, lax: lax.scan(lambda c, x: ({"b": c["a"]}, x),
                                                      {"a": 0.0}, V),
    "tuple length change": lambda jx, jnp, lax: lax.scan(lambda c, x: ((c[0],), x), (0.0, 1.0), V),
    "length mismatch": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, x), 0.0, (V, X[:2])),
    "length argument mismatch": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, x), 0.0, V,
                                                              length=5),
    "0-d xs": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, x), 0.0, jnp.float32(1)),
    "Python float xs": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + x, x), 0.0, [1.0, 2.0]),
    "not a pair": lambda jx, jnp, lax: lax.scan(lambda c, x: c, 0.0, V),
    "triple": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, x, x), 0.0, V),
    "None output": lambda jx, jnp, lax: lax.scan(lambda c, x: None, 0.0, V),
    "not callable": lambda jx, jnp, lax: lax.scan(3, 0.0, V),
    "str carry": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, x), "a", V),
    "iterator xs": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, x), 0.0, iter([1.0])),
    "str y": lambda jx, jnp, lax: lax.scan(lambda c, x: (c, {"a": "s"}), 0, None, length=2),
    "str output": lambda jx, jnp, lax: lax.scan(lambda c, x: "s", 0, None, length=2),
    "float length": lambda jx, jnp, lax: lax.scan(lambda c, x: (c + 1, c), 0.0, None, length=3.0),
    "jit reverse": lambda jx, jnp, lax: jx.jit(
        lambda v: lax.scan(lambda c, x: (c + x, c * x), 0.0, v, reverse=True))(V),
    "grad": lambda jx, jnp, lax: jx.grad(
        lambda v: lax.scan(lambda c, x: (c * x + 1, c), 1.0, v, reverse=True)[1].sum())(V),
    "grad weak": lambda jx, jnp, lax: jx.grad(
        lambda a: lax.scan(lambda c, x: (c * a, None), 1.0, None, length=3)[0])(2.0),
    "jvp weak": lambda jx, jnp, lax: jx.jvp(
        lambda a: lax.scan(lambda c, x: (c * a, c), 1.0, None, length=2), (2.0,), (1.0,)),
}

MAP = {
    "plain": lambda jx, jnp, lax: lax.map(lambda x: x * 2, V),
    "pytree": lambda jx, jnp, lax: lax.map(lambda t: {"s": t[0] + t[1].sum(), "n": None}, (V, X)),
    "batch_size 2": lambda jx, jnp, lax: lax.map(lambda x: x.sum(), X, batch_size=2),
    "batch_size 3": lambda jx, jnp, lax: lax.map(lambda x: x * 2, np.arange(6.0), batch_size=3),
    "batch_size 5": lambda jx, jnp, lax: lax.map(lambda x: x.sum(), X, batch_size=5),
    "batch_size 0": lambda jx, jnp, lax: lax.map(lambda x: x * 2, V, batch_size=0),
    "batch_size pytree": lambda jx, jnp, lax: lax.map(
        lambda x: {"a": x, "b": (x.sum(),)}, X, batch_size=2),
    "length 0": lambda jx, jnp, lax: lax.map(lambda x: x * 2, np.zeros((0, 2), np.float32)),
    "length 0 batch_size": lambda jx, jnp, lax: lax.map(
        lambda x: x * 2, np.zeros((0, 2), np.float32), batch_size=2),
    "Python scalar out": lambda jx, jnp, lax: lax.map(lambda x: 1.0, V),
    "None out": lambda jx, jnp, lax: lax.map(lambda x: None, V),
    "0-d xs": lambda jx, jnp, lax: lax.map(lambda x: x, jnp.float32(1)),
    "mismatch batch_size": lambda jx, jnp, lax: lax.map(lambda t: t[0], (V, X[:2]), batch_size=2),
    "empty xs": lambda jx, jnp, lax: lax.map(lambda t: 1.0, ()),
}

COND = {
    "no operands": lambda jx, jnp, lax: lax.cond(True, lambda: 1.0, lambda: 2.0),
    "several operands": lambda jx, jnp, lax: lax.cond(True, lambda a, b: a + b,
                                                      lambda a, b: a - b, V, 2.0),
    "Python bool": lambda jx, jnp, lax: lax.cond(False, lambda a: a * 2, lambda a: a + 1, V),
    "NumPy bool": lambda jx, jnp, lax: lax.cond(np.bool_(True), lambda a: a * 2,
                                                lambda a: a + 1, V),
    "int predicates": lambda jx, jnp, lax: [lax.cond(p, lambda a: a * 2, lambda a: a + 1, V)
                                            for p in (2, 0, -1, np.uint8(3), float("nan"))],
    "vector predicate": lambda jx, jnp, lax: lax.cond(np.array([True, False]), lambda a: a,
                                                      lambda a: a, V),
    "complex predicate": lambda jx, jnp, lax: lax.cond(1j, lambda a: a, lambda a: a, V),
    "str predicate": lambda jx, jnp, lax: lax.cond("a", lambda a: a, lambda a: a, V),
    "None predicate": lambda jx, jnp, lax: lax.cond(None, lambda a: a, lambda a: a, V),
    "weak type from false_fun": lambda jx, jnp, lax: [
        _with_f16(lax.cond(True, lambda: 1.0, lambda: jnp.float32(2))),
        _with_f16(lax.cond(True, lambda: jnp.float32(2), lambda: 1.0))],
    "weak ints": lambda jx, jnp, lax: lax.cond(True, lambda: 1, lambda: 2),
    "weak type vs dtype": lambda jx, jnp, lax: lax.cond(True, lambda: 1, lambda: 2.0),
    "shape mismatch": lambda jx, jnp, lax: lax.cond(True, lambda: jnp.ones(2), lambda: jnp.ones(3)),
    "several mismatches": lambda jx, jnp, lax: lax.cond(
        True, lambda: (1.0, jnp.ones(2)), lambda: (jnp.int32(1), jnp.ones(3))),
    "mismatch at path": lambda jx, jnp, lax: lax.cond(
        True, lambda: {"a": (1.0, jnp.ones(2))}, lambda: {"a": (1.0, jnp.ones(3))}),
    "tree mismatch": lambda jx, jnp, lax: lax.cond(True, lambda: (1.0, 2.0), lambda: 1.0),
    "tuple lengths": lambda jx, jnp, lax: lax.cond(True, lambda: (1.0, 2.0),
                                                   lambda: (1.0, 2.0, 3.0)),
    "tuple vs list": lambda jx, jnp, lax: lax.cond(True, lambda: {"a": (1.0, 2.0)},
                                                   lambda: {"a": [1.0, 2.0]}),
    "None outputs": lambda jx, jnp, lax: lax.cond(True, lambda x: None, lambda x: None, 1.0),
    "pytree operands": lambda jx, jnp, lax: lax.cond(
        True, lambda d: {"a": d["a"] * 2, "b": d["b"]}, lambda d: d, {"a": V, "b": (None, 1)}),
    "operand keyword": lambda jx, jnp, lax: lax.cond(True, lambda a: a * 2, lambda a: a,
                                                     operand=V),
    "operand keyword and positional": lambda jx, jnp, lax: lax.cond(
        True, lambda a: a * 2, lambda a: a, V, operand=V),
    "old five-argument form": lambda jx, jnp, lax: lax.cond(True, V, lambda a: a * 2, V,
                                                            lambda a: a),
    "not callable": lambda jx, jnp, lax: lax.cond(True, 1, lambda: 2),
    "passed-through operand": lambda jx, jnp, lax: lax.cond(True, lambda x: x, lambda x: x, 1.5),
    "passed-through NumPy operand": lambda jx, jnp, lax: type(
        lax.cond(True, lambda x: x, lambda x: x, np.ones(2))).__name__ == "ndarray",
    "str operand": lambda jx, jnp, lax: lax.cond(True, lambda a: 1.0, lambda a: 2.0, "s"),
    "iterator operand": lambda jx, jnp, lax: lax.cond(True, lambda a: 1.0, lambda a: 2.0,
                                                      iter([1])),
    "str output": lambda jx, jnp, lax: lax.cond(True, lambda: ("s",), lambda: ("s",)),
    "jit predicates": lambda jx, jnp, lax: [
        jx.jit(lambda p, a: lax.cond(p, lambda b: b * 2, lambda b: b, a))(p, V)
        for p in (True, 3, 0.0)],
    "grad": lambda jx, jnp, lax: jx.grad(
        lambda a: lax.cond(a > 0, lambda b: b ** 2, lambda b: -b, a))(3.0),
    "jvp weak": lambda jx, jnp, lax: jx.jvp(
        lambda a: lax.cond(True, lambda c: c * a, lambda c: c, 1.0), (2.0,), (1.0,)),
}

SWITCH = {
    "index clamped": lambda jx, jnp, lax: [lax.switch(i, BR, V) for i in (-1, 7, np.int64(2),
                                                                           np.uint32(1))],
    "float index": lambda jx, jnp, lax: lax.switch(1.0, BR, V),
    "bool index": lambda jx, jnp, lax: lax.switch(True, BR, V),
    "one branch": lambda jx, jnp, lax: lax.switch(5, [lambda a: a * 3], V),
    "one branch float index": lambda jx, jnp, lax: lax.switch(0.5, [lambda a: a * 3], V),
    "no branches": lambda jx, jnp, lax: lax.switch(0, [], V),
    "generator of branches": lambda jx, jnp, lax: lax.switch(1, (b for b in BR), V),
    "vector index": lambda jx, jnp, lax: lax.switch(np.array([0, 1]), BR, V),
    "not callable": lambda jx, jnp, lax: lax.switch(1, [1, 2], V),
    "mismatch": lambda jx, jnp, lax: lax.switch(1, [lambda a: a, lambda a: a.sum()], V),
    "third branch mismatch": lambda jx, jnp, lax: lax.switch(
        0, [lambda: 1.0, lambda: 1.0, lambda: jnp.ones(2)]),
    "weak type from branch 0": lambda jx, jnp, lax: _with_f16(
        lax.switch(2, [lambda: 1.0, lambda: jnp.float32(2), lambda: 3.0])),
    "jit index": lambda jx, jnp, lax: [jx.jit(lambda i: lax.switch(i, BR, V))(i) for i in (-5, 9)],
    "no operands": lambda jx, jnp, lax: lax.switch(1, [lambda: 1.0, lambda: 2.0]),
    "grad": lambda jx, jnp, lax: jx.grad(
        lambda a: lax.switch(1, [lambda b: b ** 2, lambda b: b ** 3], a))(2.0),
}

FORI = {
    "Python bounds": lambda jx, jnp, lax: _with_f16(lax.fori_loop(0, 3, lambda i, x: x + 1, 0)),
    "index is weak": lambda jx, jnp, lax: [
        lax.fori_loop(lo, hi, lambda i, x: x + i, 0)
        for lo, hi in ((jnp.int32(0), jnp.int32(4)), (np.int64(0), np.int64(4)),
                       (0, np.int16(4)), (np.uint8(1), np.uint8(4)), (False, True))],
    "unequal bound types": lambda jx, jnp, lax: lax.fori_loop(np.int8(0), np.int16(4),
                                                              lambda i, x: x + i, 0),
    "float bounds": lambda jx, jnp, lax: lax.fori_loop(0.0, 3, lambda i, x: x + i, 0),
    "float32 bound": lambda jx, jnp, lax: lax.fori_loop(0, np.float32(3), lambda i, x: x + i, 0),
    "both float bounds": lambda jx, jnp, lax: lax.fori_loop(0.0, 3.0, lambda i, x: x + i, 0),
    "traced bounds": lambda jx, jnp, lax: [
        jx.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x + i, 0))(n)
        for n in (5, np.int16(5), jnp.int32(3))],
    "traced lower": lambda jx, jnp, lax: jx.jit(
        lambda n: lax.fori_loop(n, 5, lambda i, x: x + i, 0.0))(2),
    "traced float bounds": lambda jx, jnp, lax: jx.jit(
        lambda n: lax.fori_loop(0.0, n, lambda i, x: x + i, 0.0))(3.0),
    "lower above upper": lambda jx, jnp, lax: [lax.fori_loop(5, 2, lambda i, x: x + i, 0),
                                               lax.fori_loop(-3, 2, lambda i, x: x + i, 0)],
    "lower above traced upper": lambda jx, jnp, lax: jx.jit(
        lambda a: lax.fori_loop(a, 2, lambda i, x: x + i, 0))(5),
    "zero trips promote": lambda jx, jnp, lax: lax.fori_loop(3, 3, lambda i, x: x + 1.0, 0),
    "pytree": lambda jx, jnp, lax: lax.fori_loop(
        0, 3, lambda i, c: {"a": c["a"] + i, "b": (c["b"][0] * 2, None)},
        {"a": 0, "b": (V, None)}),
    "passed-through carry": lambda jx, jnp, lax: [
        lax.fori_loop(0, 3, lambda i, x: x, 2.5),
        jx.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x, 2.5))(3)],
    "carry type change": lambda jx, jnp, lax: lax.fori_loop(0, 3, lambda i, x: x.astype(jnp.int32),
                                                            V),
    "carry type change traced": lambda jx, jnp, lax: jx.jit(
        lambda n: lax.fori_loop(0, n, lambda i, x: x.astype(jnp.int32), V))(3),
    "str output": lambda jx, jnp, lax: lax.fori_loop(0, 3, lambda i, x: "s", 0),
    "str output traced": lambda jx, jnp, lax: jx.jit(
        lambda n: lax.fori_loop(0, n, lambda i, x: "s", 0))(3),
    "unroll": lambda jx, jnp, lax: [lax.fori_loop(0, 5, lambda i, x: x * 2 + i, 1.0, unroll=u)
                                    for u in (2, True)],
    "unroll traced": lambda jx, jnp, lax: jx.jit(
        lambda n: lax.fori_loop(0, n, lambda i, x: x * 2 + i, 1.0, unroll=2))(4),
    "unroll 1 traced": lambda jx, jnp, lax: jx.jit(
        lambda n: lax.fori_loop(0, n, lambda i, x: x + i, 0, unroll=1))(3),
    "not callable": lambda jx, jnp, lax: lax.fori_loop(0, 3, 1, 0),
    "iterator in body": lambda jx, jnp, lax: (lambda it: lax.fori_loop(
        0, 3, lambda i, x: x + next(it), 0))(iter(range(10))),
    "grad": lambda jx, jnp, lax: [
        jx.grad(lambda a: lax.fori_loop(0, 3, lambda i, x: x * a, 1.0))(2.0),
        jx.jvp(lambda a: jx.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x * a, 1.0))(3),
               (2.0,), (1.0,))],
}

WHILE = {
    "pytree state": lambda jx, jnp, lax: lax.while_loop(
        lambda c: c["i"] < 3, lambda c: {"i": c["i"] + 1, "v": (c["v"][0] * 2, None)},
        {"i": 0, "v": (V, None)}),
    "carry type change": lambda jx, jnp, lax: lax.while_loop(
        lambda c: c < 3, lambda c: (c + 1).astype(jnp.float32), jnp.int32(0)),
    "weak carry promoted": lambda jx, jnp, lax: [
        lax.while_loop(lambda c: c < 3, lambda c: c + jnp.float32(1), 0),
        lax.while_loop(lambda c: c < 3, lambda c: c + jnp.int8(1), 0),
        _with_f16(lax.while_loop(lambda c: c < 3, lambda c: c + 1.5, 0))],
    "weak result": lambda jx, jnp, lax: _with_f16(lax.while_loop(lambda c: c < 3,
                                                                 lambda c: c + 1, 0)),
    "shape change": lambda jx, jnp, lax: lax.while_loop(lambda c: c.sum() < 3, lambda c: c[:1], V),
    "tree change": lambda jx, jnp, lax: lax.while_loop(lambda c: c < 3, lambda c: (c,), 0),
    "cond not bool": lambda jx, jnp, lax: lax.while_loop(lambda c: c, lambda c: c - 1, 3),
    "cond not scalar": lambda jx, jnp, lax: lax.while_loop(lambda c: c < 3, lambda c: c + 1, V),
    "cond returns tuple": lambda jx, jnp, lax: lax.while_loop(lambda c: (c < 3,),
                                                              lambda c: c + 1, 0),
    "cond returns str": lambda jx, jnp, lax: lax.while_loop(lambda c: "x", lambda c: c + 1, 0.0),
    "cond Python bool": lambda jx, jnp, lax: lax.while_loop(lambda c: False, lambda c: c + 1, 0),
    "passed-through carry": lambda jx, jnp, lax: [
        lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1]), (0, 1.5)),
        lax.while_loop(lambda c: c[0] < c[1], lambda c: (c[0] + 1, c[1]), (0, 3))],
    "not callable": lambda jx, jnp, lax: lax.while_loop(1, lambda c: c + 1, 0.0),
    "jit": lambda jx, jnp, lax: jx.jit(lambda v: lax.while_loop(
        lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2), (0, v)))(V),
    "grad": lambda jx, jnp, lax: jx.grad(
        lambda a: lax.while_loop(lambda c: c < 10, lambda c: c * a, 1.0))(2.0),
    "jvp weak": lambda jx, jnp, lax: jx.jvp(
        lambda a: lax.while_loop(lambda c: c < 10, lambda c: c * a, 1.0), (2.0,), (1.0,)),
    # linearize splits the loop: the known carries run now, the whole loop is staged for the
    # tangents; transposing that staged loop is JAX's reverse-mode error.
    "linearize": lambda jx, jnp, lax: _linearized(jx, lambda a: _three_carries(jnp, lax, a, 3)),
    "linearize traced trip count": lambda jx, jnp, lax: jx.jit(lambda a, n: _linearized(
        jx, lambda a: _three_carries(jnp, lax, a, n), a))(2.0, 3),
    "linearize a jitted loop": lambda jx, jnp, lax: _linearized(
        jx, jx.jit(lambda a: _three_carries(jnp, lax, a, 4))),
    "linearize, predicate on a tangent's carry": lambda jx, jnp, lax: _linearized(
        jx, lambda a: lax.while_loop(lambda c: c[1] < 10.0, lambda c: (c[0] + 1, c[1] * a),
                                     (0, 1.0))),
    "vjp of a linearizable loop": lambda jx, jnp, lax: jx.vjp(
        lambda a: _three_carries(jnp, lax, a, 3), 2.0)[1]((np.zeros((), jx.dtypes.float0),
                                                           V, 1.0)),
    "grad of a jitted loop": lambda jx, jnp, lax: jx.grad(
        lambda a: jx.jit(lambda a: _three_carries(jnp, lax, a, 3))(a)[1].sum())(2.0),
}


class _Unnamed:
    """A callable object whose `__name__` is a field value, not a string (equinox modules)."""
    __name__ = 42

    def __call__(self, x):
        return x * x


def _three_carries(jnp, lax, a, n):
    """A loop with a counter, a carry the argument reaches and one it does not."""
    return lax.while_loop(lambda c: c[0] < n,
                          lambda c: (c[0] + 1, jnp.sin(c[1]) * a, c[2] * 2.0), (0, V, 1.5))


def _linearized(jx, f, a=2.0):
    out, f_jvp = jx.linearize(f, a)
    return out, f_jvp(1.0), f_jvp(-0.5)

ASSOCIATIVE_SCAN = {
    "add": lambda jx, jnp, lax: [lax.associative_scan(jnp.add, V),
                                 lax.associative_scan(jnp.add, V, reverse=True)],
    "axis 1": lambda jx, jnp, lax: lax.associative_scan(jnp.add, X, axis=1),
    "pytree reverse": lambda jx, jnp, lax: lax.associative_scan(
        lambda a, b: {"s": a["s"] + b["s"], "m": (jnp.maximum(a["m"][0], b["m"][0]),)},
        {"s": X, "m": (X * -1,)}, axis=0, reverse=True),
    "pytree reverse axis 1": lambda jx, jnp, lax: lax.associative_scan(
        lambda a, b: {"x": a["x"] * b["x"], "y": a["y"] + b["y"]}, {"x": X + 1, "y": X},
        reverse=True, axis=1),
    "lengths 7, 1, 0": lambda jx, jnp, lax: [
        lax.associative_scan(jnp.add, np.arange(n, dtype=np.int32)) for n in (7, 1, 0)],
    "0-d": lambda jx, jnp, lax: lax.associative_scan(jnp.add, np.float32(1)),
    "axis out of bounds": lambda jx, jnp, lax: lax.associative_scan(jnp.add, V, axis=2),
    "unequal lengths": lambda jx, jnp, lax: lax.associative_scan(
        lambda a, b: (a[0] + b[0], a[1] + b[1]), (V, X.T)),
    "too few leaves": lambda jx, jnp, lax: lax.associative_scan(lambda a, b: (a[0] + b[0],),
                                                                (V, V)),
    "no leaves": lambda jx, jnp, lax: lax.associative_scan(jnp.add, ()),
    "not callable": lambda jx, jnp, lax: lax.associative_scan(1, V),
    "bool": lambda jx, jnp, lax: lax.associative_scan(jnp.logical_or,
                                                      np.array([False, True, False, False])),
    "weak": lambda jx, jnp, lax: _with_f16(lax.associative_scan(jnp.add,
                                                                jnp.asarray([1.0, 2.0, 3.0]))),
    "jit": lambda jx, jnp, lax: jx.jit(
        lambda x: lax.associative_scan(jnp.add, x, reverse=True, axis=1))(X),
}

VMAP = {
    "in_axes tuple and list": lambda jx, jnp, lax: [
        jx.vmap(lambda a, b: a + b, in_axes=axes)(X, V[:2]) for axes in ((0, None), [0, None])],
    "in_axes dict prefix": lambda jx, jnp, lax: [
        jx.vmap(lambda d: d["a"] + d["b"], in_axes=({"a": 0, "b": 1},))({"a": X, "b": X.T}),
        jx.vmap(lambda d: d["a"] + d["b"], in_axes=({"a": 0, "b": None},))({"a": X, "b": V[:2]})],
    "negative axes": lambda jx, jnp, lax: [
        jx.vmap(lambda x: x.sum(), in_axes=-1)(Y),
        jx.vmap(lambda x: x.sum(0), in_axes=-2, out_axes=-1)(Y),
        jx.vmap(lambda x: x * 2, out_axes=-1)(Y)],
    "out_axes pytree": lambda jx, jnp, lax: jx.vmap(
        lambda x: (x, {"s": x.sum()}), out_axes=(1, {"s": 0}))(Y),
    "out_axes None": lambda jx, jnp, lax: [
        jx.vmap(lambda x: (x, 3.0), out_axes=(0, None))(X),
        jx.vmap(lambda x, y: (x, y * 2), in_axes=(0, None), out_axes=(0, None))(X, V)],
    "out_axes None varying": lambda jx, jnp, lax: jx.vmap(lambda x: {"a": x * 2},
                                                          out_axes={"a": None})(X),
    "out_axes None varying named": lambda jx, jnp, lax: jx.vmap(lambda x: x, axis_name="i",
                                                                out_axes=None)(V),
    "out_axes out of bounds": lambda jx, jnp, lax: jx.vmap(lambda x: x * 2, out_axes=3)(X),
    "in_axes out of bounds": lambda jx, jnp, lax: jx.vmap(lambda x: x * 2, in_axes=-3)(X),
    "0-d mapped": lambda jx, jnp, lax: jx.vmap(lambda x: x * 2)(1.0),
    "axis_size with all-None in_axes": lambda jx, jnp, lax: [
        jx.vmap(lambda x: x * 2, in_axes=None, axis_size=4)(V),
        _with_f16(jx.vmap(lambda y: y * 2.0, in_axes=None, axis_size=2)(5.0)),
        jx.vmap(lambda: jnp.float32(1.0), axis_size=3)(),
        jx.vmap(lambda: 1.0, axis_size=3)()],
    "nothing mapped": lambda jx, jnp, lax: jx.vmap(lambda x: x * 2, in_axes=None)(V),
    # Unmapped leaves reach the function as given (equinox's adaptive pools type-check an
    # int size passed with in_axes None).
    "a callable whose __name__ is no string": lambda jx, jnp, lax: [
        jx.vmap(_Unnamed())(V), jx.grad(_Unnamed())(2.0)],
    "unmapped leaves as given": lambda jx, jnp, lax: jx.vmap(
        lambda x, n, f, z: x * n + 10 * (type(n) is int) + 100 * (type(f) is float)
        + 1000 * (type(z) is np.float32), (0, None, None, None))(V, 4, 2.5, np.float32(2)),
    "no arguments": lambda jx, jnp, lax: jx.vmap(lambda: 1.0)(),
    "sizes disagree": lambda jx, jnp, lax: jx.vmap(lambda a, b: a + b)(X, V[:2]),
    "sizes disagree, most common first": lambda jx, jnp, lax: jx.vmap(
        lambda a, b, c: a)(X, V[:2], Y),
    "sizes disagree in a pytree": lambda jx, jnp, lax: jx.vmap(
        lambda d: d["a"])({"a": X, "b": (V[:2], V)}),
    "sizes disagree with axis_size": lambda jx, jnp, lax: jx.vmap(
        lambda a, b: a, axis_size=5)(X, V[:2]),
    "sizes disagree, keyword": lambda jx, jnp, lax: jx.vmap(lambda a, b: a)(X, b=V[:2]),
    "sizes disagree, *args": lambda jx, jnp, lax: jx.vmap(
        lambda *a: a[0])(X, V[:2], V, V[:2], np.ones(4)),
    "sizes disagree, no signature": lambda jx, jnp, lax: jx.vmap(np.add)(X, V[:2]),
    "in_axes length": lambda jx, jnp, lax: jx.vmap(lambda a, b: a, in_axes=(0,))(X, X),
    "in_axes not a prefix": lambda jx, jnp, lax: [
        _run(OURS if jx is gpuarr else THEIRS, lambda j, n, L: j.vmap(
            lambda d: d, in_axes=axes)(arg))
        for axes, arg in ((({"a": 0},), {"b": X}), (((0, 0),), (X, X, X)),
                          (([0, 0],), (X, X)), (((0, 1),), [X, X]))],
    "in_axes dict": lambda jx, jnp, lax: jx.vmap(lambda a, b: a, in_axes={"a": 0})(X, X),
    "in_axes types": lambda jx, jnp, lax: [
        _run(OURS if jx is gpuarr else THEIRS, lambda j, n, L: j.vmap(
            lambda x: x, in_axes=axes)(X)) for axes in (0.0, "a", True, np.int64(1))],
    "out_axes types": lambda jx, jnp, lax: jx.vmap(lambda x: x, out_axes=1.0)(X),
    "out_axes not a prefix": lambda jx, jnp, lax: [
        _run(OURS if jx is gpuarr else THEIRS, lambda j, n, L: j.vmap(
            lambda x: (x, x), out_axes=axes)(X)) for axes in ((0, 0, 0), [0, 1])],
    "keyword arguments": lambda jx, jnp, lax: [
        jx.vmap(lambda a, b=1.0: a * b)(X, b=X),
        jx.vmap(lambda a, b: a * b, in_axes=(0,))(X, b=X),
        jx.vmap(lambda a, b: a * b)(X, b=2.0)],
    "collectives": lambda jx, jnp, lax: [
        jx.vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(V),
        jx.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(X),
        jx.vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(X),
        jx.vmap(lambda x: x + lax.axis_index("i"), axis_name="i")(X),
        jx.vmap(lambda x: lax.psum(1, "i"), axis_name="i")(X),
        jx.vmap(lambda x, y: lax.psum(y, "i"), in_axes=(0, None), axis_name="i")(X, V),
        jx.vmap(lambda x: lax.psum({"a": x, "b": (x * 2,)}, "i"), axis_name="i")(V),
        jx.vmap(lambda x: lax.pmean(x, "i"), axis_name="i")(np.arange(3))],
    "nested collectives": lambda jx, jnp, lax: [
        jx.vmap(jx.vmap(lambda x: lax.psum(x, ("i", "j")), axis_name="j"), axis_name="i")(X),
        jx.vmap(jx.vmap(lambda x: (lax.axis_index("i"), lax.axis_index("j"), lax.psum(x, "i")),
                        axis_name="j"), axis_name="i")(X)],
    "unbound axis name": lambda jx, jnp, lax: jx.vmap(lambda x: lax.psum(x, "j"),
                                                      axis_name="i")(X),
    "spmd_axis_name": lambda jx, jnp, lax: jx.vmap(lambda x: x * 2, spmd_axis_name="d")(X),
    "nested axes": lambda jx, jnp, lax: [
        jx.vmap(jx.vmap(lambda x: x.sum(), in_axes=1, out_axes=0), in_axes=2, out_axes=1)(Y),
        jx.vmap(jx.vmap(lambda x, y: x @ y, in_axes=(None, 1)), in_axes=(0, None))(
            np.arange(9, dtype=np.float32).reshape(3, 3), X)],
    "cond with batched predicate": lambda jx, jnp, lax: [
        jx.vmap(lambda p, x: lax.cond(p, lambda a: a * 2, lambda a: a - 1, x))(
            np.array([True, False, True]), V),
        jx.vmap(lambda p, x: lax.cond(p, lambda a: a * 2, lambda a: a - 1, x))(
            np.array([2, 0, -1]), V),
        jx.vmap(lambda p: lax.cond(p, lambda: 1, lambda: 2))(np.array([True, False])),
        jx.vmap(lambda p: lax.cond(p, lambda a: a * 2, lambda a: a - 1, V))(
            np.array([True, False]))],
    "cond weak types": lambda jx, jnp, lax: [
        _with_f16(jx.vmap(lambda p: lax.cond(p, lambda: jnp.float32(2), lambda: 1.0))(
            np.array([True, False]))),
        _with_f16(jx.vmap(lambda p, x: lax.cond(p, lambda a: a * 2, lambda a: 1.5, x))(
            np.array([True, False]), np.ones(2, np.float32)))],
    "cond with unbatched predicate": lambda jx, jnp, lax: jx.vmap(
        lambda x, y: lax.cond(x.sum() > 0, lambda a, b: (a, b), lambda a, b: (b, a), x, y),
        in_axes=(0, None))(X, V[:2]),
    "switch": lambda jx, jnp, lax: jx.vmap(lambda i, x: lax.switch(i, BR, x))(
        np.array([-1, 1, 5]), V),
    "while with batched predicate": lambda jx, jnp, lax: [
        jx.vmap(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0),
                                         (0, 1.0)))(np.array([1, 4, 2])),
        jx.vmap(lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x))(
            np.array([1.0, 3.0, 11.0], np.float32)),
        jx.vmap(lambda x: lax.while_loop(
            lambda c: c["n"] < x, lambda c: {"n": c["n"] + 1, "v": c["v"] * 2.0},
            {"n": 0, "v": 1.0}))(np.array([0, 2, 5]))],
    "fori": lambda jx, jnp, lax: [
        jx.vmap(lambda n, x: lax.fori_loop(0, n, lambda i, c: c + i, x))(np.array([1, 4, 2]), V),
        jx.vmap(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2 + i, x))(V)],
    "scan": lambda jx, jnp, lax: [
        jx.vmap(lambda x: lax.scan(lambda c, y: (c + y, c * y), 0.0, x))(X),
        jx.vmap(lambda x: lax.scan(lambda c, y: (c + y, c * y), 0.0, x), in_axes=1)(X),
        jx.vmap(lambda c0: lax.scan(lambda c, y: (c + y, c * y), c0, V))(V),
        jx.vmap(lambda c0, x: lax.scan(lambda c, y: (c * 2 + y, c), c0, x, reverse=True),
                in_axes=(0, 1))(V, X.T.copy()),
        jx.vmap(lambda x: lax.scan(lambda c, y: (c + y, c * y), 0.0, x))(
            np.zeros((3, 0), np.float32))],
    "scan pytree": lambda jx, jnp, lax: jx.vmap(
        lambda c0, x: lax.scan(lambda c, y: ({"a": c["a"] + y[0], "b": c["b"]}, (y[1], None)),
                               {"a": c0, "b": 1.0}, x), in_axes=(0, (None, 1)))(V, (V, X.T)),
    "map and associative_scan": lambda jx, jnp, lax: [
        jx.vmap(lambda x: lax.map(lambda y: y * 2, x))(X),
        jx.vmap(lambda x: lax.map(lambda y: y * 2, x, batch_size=2))(Y),
        jx.vmap(lambda x: lax.associative_scan(jnp.add, x))(X)],
    "collectives in loops": lambda jx, jnp, lax: [
        jx.vmap(lambda p, x: lax.cond(p, lambda a: lax.psum(a, "i"), lambda a: a, x),
                axis_name="i")(np.array([True, False, True]), V),
        jx.vmap(lambda x: lax.scan(lambda c, y: (c + lax.psum(y, "i"), c), 0.0, x),
                axis_name="i", in_axes=1)(X),
        jx.vmap(lambda x: lax.fori_loop(0, 2, lambda i, c: c + lax.axis_index("i"), x),
                axis_name="i")(V)],
    "grad": lambda jx, jnp, lax: [
        jx.vmap(jx.grad(lambda x: (x ** 2).sum()))(X),
        jx.vmap(jx.grad(lambda x: lax.scan(lambda c, y: (c * y, c), 1.0, x)[0]))(X),
        jx.vmap(jx.grad(lambda x: lax.cond(x > 0, lambda a: a ** 2, lambda a: -a, x)))(V),
        jx.grad(lambda x: jx.vmap(lambda a: a ** 2)(x).sum())(V),
        jx.vmap(jx.jacfwd(lambda a: lax.while_loop(lambda c: c < 10.0, lambda c: c * a, 1.0)))(
            np.array([2.0, 3.0], np.float32))],
    "jit": lambda jx, jnp, lax: [
        jx.jit(jx.vmap(lambda a, b: a * b, in_axes=(0, None)))(X, V[:2]),
        jx.vmap(jx.jit(lambda a, b: a * b), in_axes=(1, None))(X, V),
        jx.jit(jx.vmap(jx.grad(lambda x, y: (x * y).sum()), in_axes=(0, None)))(X, V[:2]),
        jx.vmap(jx.jit(lambda x: lax.psum(x, "i")), axis_name="i")(V)],
    "zero-size batch": lambda jx, jnp, lax: [
        jx.vmap(lambda x: x * 2)(np.zeros((0, 3), np.float32)),
        jx.vmap(lambda x: x.sum())(np.zeros((0, 3), np.float32)),
        jx.vmap(lambda x: lax.scan(lambda c, y: (c + y, y), 0.0, x))(
            np.zeros((0, 3), np.float32)),
        jx.vmap(lambda p, x: lax.cond(p, lambda a: a, lambda a: -a, x))(
            np.zeros((0,), bool), np.zeros((0,), np.float32)),
        jx.vmap(lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, x))(
            np.zeros((0,), np.float32)),
        jx.vmap(lambda t: (t[0] + 1, {"s": t[1].sum()}))(
            (np.zeros((0,), np.float32), np.zeros((0, 3), np.int32)))],
    "Python scalar and None outputs": lambda jx, jnp, lax: [
        jx.vmap(lambda x: 1.0)(V), jx.vmap(lambda x: 1)(V), jx.vmap(lambda x: True)(V),
        jx.vmap(lambda x: None)(V), jx.vmap(lambda x: (x, None))(V),
        jx.vmap(lambda x: np.float32(2))(V), jx.vmap(lambda x: [x, 1.0, None])(V),
        jx.vmap(lambda x: 1.0, out_axes=None)(V),
        jx.vmap(lambda x: (x, 1), out_axes=(0, 0))(X)],
    "str output": lambda jx, jnp, lax: jx.vmap(lambda x: "s")(V),
    "weak types": lambda jx, jnp, lax: [
        _with_f16(jx.vmap(lambda x: x + 1)(jnp.arange(3))),
        jx.vmap(lambda x, y: x + y, in_axes=(0, None))(jnp.arange(3, dtype=jnp.int8), 5),
        jx.vmap(lambda x, s: x * s, in_axes=(0, None))(V.astype(np.float16), 2.0)],
    "unmapped non-array arguments": lambda jx, jnp, lax: [
        jx.vmap(lambda x, s: x, in_axes=(0, None))(V, "s"),
        jx.vmap(lambda x, s: x)(V, None),
        jx.vmap(lambda t: t[0] * t[1], in_axes=((0, None),))((V, 2.0))],
    "not callable": lambda jx, jnp, lax: jx.vmap(3),
}


@cases(SCAN)
def test_scan(case):
    check(case)


@cases(MAP)
def test_map(case):
    check(case)


@cases(COND)
def test_cond(case):
    check(case)


@cases(SWITCH)
def test_switch(case):
    check(case)


@cases(FORI)
def test_fori_loop(case):
    check(case)


@cases(WHILE)
def test_while_loop(case):
    check(case)


@cases(ASSOCIATIVE_SCAN)
def test_associative_scan(case):
    check(case)


@cases(VMAP)
def test_vmap(case):
    check(case)


def test_passed_through_carries_are_the_objects_given():
    for lax_mod, jnp_mod in ((glax, gnp), (jlax, jjnp)):
        a = jnp_mod.ones(2)
        assert lax_mod.scan(lambda c, x: (c, x), a, V)[0] is a
        assert lax_mod.cond(True, lambda x: x, lambda x: x, a) is a
        assert lax_mod.switch(1, BR[:1] * 3, a) is a
        assert lax_mod.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1]), (0, a))[1] is a


# Partial evaluation of cond (reverse mode, linearize): the branches' residuals share slots
# by type (JAX's _merge_branch_residuals), the slots a branch leaves unfilled hold `empty2`
# placeholders, and a Python index of switch folds. The printed programs are JAX's, the
# values too.
M = np.linspace(0.1, 0.9, 6, dtype=np.float32).reshape(2, 3)
DIFFERENTIATED = {
    "one_type": lambda jnp, lax: lambda x: lax.cond(
        x.sum() > 0, lambda x: jnp.sin(x) * 2, lambda x: jnp.cos(x), x),
    "types_differ": lambda jnp, lax: lambda x: lax.cond(
        x.sum() > 0, lambda x: jnp.sin(x).sum() * x[0], lambda x: jnp.cos(x[0]) * jnp.exp(x[1]),
        x),
    "switch_three": lambda jnp, lax: lambda x: lax.switch(
        2, [jnp.sin, lambda x: jnp.tanh(x) * x, lambda x: jnp.log(x) ** 2], x),
    "two_operands": lambda jnp, lax: lambda x: lax.cond(
        x[0, 0] > 0, lambda a, b: a * b, lambda a, b: jnp.sin(a) + b ** 3, x, x[::-1]),
    "closure": lambda jnp, lax: lambda x: lax.cond(
        x[0, 0] > 0, lambda a: a * x.sum(), lambda a: a, x),
    "integer_output": lambda jnp, lax: lambda x: lax.cond(
        x[0, 0] > 0, lambda a: (a * 2, jnp.argmax(a)), lambda a: (jnp.exp(a), jnp.argmin(a)),
        x)[0],
    # Loops: the staged scan takes its stacked residuals after the xs, and its transpose the
    # ys cotangents before the residuals, as JAX lays them out.
    "map": lambda jnp, lax: lambda x: lax.map(lambda r: jnp.exp(r).sum(), x),
    "fori_loop": lambda jnp, lax: lambda x: lax.fori_loop(
        0, 3, lambda i, c: c * jnp.cos(c) + i, x),
    # Residuals that are xs slices are those xs (not stacked again), and a staged scan drops
    # the outputs nobody reads (JAX's dce rule for scan).
    "rnn_final_carry": lambda jnp, lax: lambda x: lax.scan(
        lambda h, r: (jnp.tanh(h * r + 1.0), h), x[0], x)[0],
}


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("transform", ["grad", "jit_grad", "vjp", "linearize"])
@pytest.mark.parametrize("name", sorted(DIFFERENTIATED))
def test_reverse_mode_through_control_flow_as_jax(name, transform, sign):
    def build(api, jnp, lax):
        f = DIFFERENTIATED[name](jnp, lax)
        if transform == "vjp":
            return lambda x: api.vjp(f, x)[1](f(x))
        if transform == "linearize":  # the linear map holds no dead tangents
            return lambda x: api.linearize(f, x)[1](x)
        g = api.grad(lambda x: f(x).sum())
        return api.jit(g) if transform == "jit_grad" else g

    ours, theirs = build(gpuarr, gnp, glax), build(jax, jjnp, jlax)
    x = sign * M
    assert str(gpuarr.make_jaxpr(ours)(x)) == str(jax.make_jaxpr(theirs)(x))
    for got, want in zip(gpuarr.tree.leaves(ours(x)), jax.tree.leaves(theirs(x)), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-6)


BATCHED_LOOPS = {
    **{name: DIFFERENTIATED[name] for name in ("map", "fori_loop", "rnn_final_carry")},
    # An unbatched initial carry is broadcast before the batched xs move.
    "cumulative": lambda jnp, lax: lambda x: lax.scan(
        lambda c, r: (c + jnp.sin(r), c * r), jnp.zeros(3), x)[1],
}


@pytest.mark.parametrize("name", sorted(BATCHED_LOOPS))
def test_vmap_of_loops_as_jax(name):
    # A batched scan moves its carries before its xs, as JAX orders the moves.
    x = np.stack([M, 2 * M])
    ours = gpuarr.vmap(BATCHED_LOOPS[name](gnp, glax))
    theirs = jax.vmap(BATCHED_LOOPS[name](jjnp, jlax))
    assert str(gpuarr.make_jaxpr(ours)(x)) == str(jax.make_jaxpr(theirs)(x))
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["one_type", "types_differ", "two_operands", "closure",
                                  "integer_output"])
def test_vmap_of_cond_with_a_batched_predicate_as_jax(name):
    # Every branch runs on every example, seeing the operands of the examples that take
    # another branch through stop_gradient, and the results are selected per example.
    x = np.stack([M, -M])
    ours = gpuarr.vmap(DIFFERENTIATED[name](gnp, glax))
    theirs = jax.vmap(DIFFERENTIATED[name](jjnp, jlax))
    assert str(gpuarr.make_jaxpr(ours)(x)) == str(jax.make_jaxpr(theirs)(x))
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=2e-6, atol=1e-6)


def test_gradients_of_batched_conds_ignore_the_branch_not_taken():
    # sqrt's derivative is NaN at -1, in the branch that example does not take.
    def f(jax, jnp, lax):
        cell = lambda x: lax.cond(x > 0, jnp.sqrt, lambda x: x, x)  # noqa: E731
        return jax.grad(lambda x: jax.vmap(cell)(x).sum())

    x = np.array([-1.0, 4.0], np.float32)
    got, want = f(*OURS)(x), f(*THEIRS)(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(got), np.array([1.0, 0.25], np.float32))


BATCHED_WHILES = {
    # The predicate varies per example: one while whose cond returns a predicate per example.
    "doubling": (lambda jax, jnp, lax: jax.vmap(
        lambda x: lax.while_loop(lambda c: c.sum() < 10, lambda c: c * 2, x)), np.stack([M, 3 * M])),
    "newton_with_count": (lambda jax, jnp, lax: jax.vmap(lambda a: lax.while_loop(
        lambda c: jnp.logical_and(jnp.abs(c[0] * c[0] - a).max() > 1e-5, c[1] < 50),
        lambda c: (0.5 * (c[0] + a / c[0]), c[1] + 1), (a, 0))), np.stack([M + 1, 4 * M + 1])),
    # Nested: the outer vmap batches the inner batched predicate again.
    "nested": (lambda jax, jnp, lax: jax.vmap(jax.vmap(
        lambda x: lax.while_loop(lambda c: c.sum() < 10, lambda c: c * 2, x))),
        np.stack([np.stack([M, 3 * M])] * 2) * np.float32([[[[1]]], [[[2]]]])),
    # The outer vmap batches only a body constant: the carries take their batch axis after
    # the inner predicate's axis.
    "outer_constant": (lambda jax, jnp, lax: jax.vmap(lambda s: jax.vmap(
        lambda x: lax.while_loop(lambda c: c[0].sum() < 10, lambda c: (c[0] * 2, c[1] + s),
                                 (x, jnp.zeros(3))))(jnp.stack([M, 3 * M]))),
        np.float32([1.0, 2.0, 3.0])),
    "jvp_of_vmap": (lambda jax, jnp, lax: lambda x: jax.jvp(jax.vmap(
        lambda x: lax.while_loop(lambda c: c.sum() < 10, lambda c: c * 2, x)), (x,), (x,)),
        np.stack([M, 3 * M])),
}


@pytest.mark.parametrize("name", sorted(BATCHED_WHILES))
def test_while_loops_with_batched_predicates_as_jax(name):
    build, x = BATCHED_WHILES[name]
    ours, theirs = build(*OURS), build(*THEIRS)
    assert str(gpuarr.make_jaxpr(ours)(x)) == str(jax.make_jaxpr(theirs)(x))
    for f in (ours, gpuarr.jit(ours)):
        for got, want in zip(gpuarr.tree.leaves(f(x)), jax.tree.leaves(theirs(x)), strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
