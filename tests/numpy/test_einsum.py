"""jnp.einsum and jnp.einsum_path against numpy.einsum: values, shapes, dtypes, gradients,
vmap, every optimize mode, the greedy fallback used without opt_einsum, and bad subscripts."""
import importlib

import numpy as np
import pytest
from helpers import check_grads_x64, rand
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr
import gpuarr.numpy as jnp

# The module (gpuarr.numpy.einsum the attribute is the function).
einsum_module = importlib.import_module("gpuarr.numpy.einsum")


# (subscripts, operand shapes)
PATTERNS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),                 # matmul
    ("ij,jk", [(2, 3), (3, 4)]),                     # implicit output
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),        # batch matmul
    ("ii->", [(4, 4)]),                              # trace
    ("ii", [(4, 4)]),                                # implicit trace
    ("ii->i", [(4, 4)]),                             # diagonal
    ("bii->bi", [(3, 4, 4)]),                        # batched diagonal
    ("i,j->ij", [(3,), (4,)]),                       # outer
    ("ij->ji", [(2, 3)]),                            # transpose
    ("ijk->kij", [(2, 3, 4)]),                       # permutation
    ("ijk->", [(2, 3, 4)]),                          # full sum
    ("ijk->j", [(2, 3, 4)]),                         # sum over axes
    ("i,i->", [(5,), (5,)]),                         # inner product
    ("i,i->i", [(5,), (5,)]),                        # elementwise product
    ("...ij,...jk->...ik", [(2, 3, 2, 3), (3, 3, 4)]),  # ellipsis with broadcasting
    ("...i,...i", [(2, 3), (3,)]),                   # implicit ellipsis output
    ("i...->...", [(3, 2, 4)]),                      # ellipsis sum
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),      # chain of three
    ("ab,bc,ca->", [(3, 4), (4, 5), (5, 3)]),        # cyclic trace of three
    ("ijk,jl,kl->il", [(2, 3, 4), (3, 5), (4, 5)]),  # three operands, shared index
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),             # diagonal inside a product
    ("iji->j", [(3, 4, 3)]),                         # non-adjacent repeated index
    ("ij,ij->i", [(3, 4), (3, 4)]),                  # row-wise dot
    ("ij,kj->ikj", [(3, 4), (2, 4)]),                # batch over a shared kept index
    ("i,jk->", [(3,), (4, 5)]),                      # disconnected sums
    ("ij,j->i", [(1, 4), (4,)]),                     # size-1 dimension
    ("ij,ij->ij", [(1, 4), (3, 4)]),                 # size-1 broadcast of a named index
    (",ij->ij", [(), (2, 3)]),                       # scalar operand
    ("abc,cd,de,ef->abf", [(2, 2, 3), (3, 4), (4, 2), (2, 3)]),  # four operands
]


@pytest.mark.parametrize("subscripts,shapes", PATTERNS, ids=[p[0] for p in PATTERNS])
@pytest.mark.parametrize("optimize", ["auto", True, False, "greedy"])
def test_matches_numpy(subscripts, shapes, optimize):
    ops = [rand(s, seed=i) for i, s in enumerate(shapes)]
    got = jnp.einsum(subscripts, *ops, optimize=optimize)
    want = np.einsum(subscripts, *[o.astype(np.float64) for o in ops])
    assert got.dtype == np.float32
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("subscripts,shapes", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_float64(subscripts, shapes):
    with gpuarr.enable_x64():
        ops = [rand(s, np.float64, seed=i) for i, s in enumerate(shapes)]
        got = jnp.einsum(subscripts, *ops)
        assert got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), np.einsum(subscripts, *ops), rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("subscripts,shapes", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_greedy_fallback_without_opt_einsum(subscripts, shapes, monkeypatch):
    monkeypatch.setattr(einsum_module, "opt_einsum", None)
    ops = [rand(s, seed=i) for i, s in enumerate(shapes)]
    got = jnp.einsum(subscripts, *ops)
    np.testing.assert_allclose(np.asarray(got), np.einsum(subscripts, *ops), rtol=1e-5, atol=1e-5)


def test_explicit_paths():
    ops = [rand((2, 3), seed=1), rand((3, 4), seed=2), rand((4, 5), seed=3)]
    want = np.einsum("ij,jk,kl->il", *ops)
    for path in ([(0, 1), (0, 1)], [(1, 2), (0, 1)], ["einsum_path", (0, 2), (0, 1)], [(0, 1, 2)]):
        got = jnp.einsum("ij,jk,kl->il", *ops, optimize=path)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    path, _ = jnp.einsum_path("ij,jk,kl->il", *ops, optimize="optimal")
    np.testing.assert_allclose(np.asarray(jnp.einsum("ij,jk,kl->il", *ops, optimize=path)), want,
                               rtol=1e-5, atol=1e-5)


def test_einsum_path():
    a, b, c = np.ones((10, 2)), np.ones((2, 10)), np.ones((10, 3))
    path, info = jnp.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
    assert path == [(1, 2), (0, 1)]
    assert "Complete contraction" in str(info)
    path, _ = jnp.einsum_path("ij,jk,kl->il", a, b, c, optimize=False)
    assert path == [(0, 1), (0, 1)]


def test_einsum_path_fallback(monkeypatch):
    monkeypatch.setattr(einsum_module, "opt_einsum", None)
    a, b, c = np.ones((10, 2)), np.ones((2, 10)), np.ones((10, 3))
    path, info = jnp.einsum_path("ij,jk,kl->il", a, b, c)
    assert path == [(1, 2), (0, 1)]
    assert "ij,jk,kl->il" in info


def test_dtypes():
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = jnp.einsum("ij,kj->ik", i, i)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.einsum("ij,kj->ik", i, i))
    mixed = jnp.einsum("ij,kj->ik", i, rand((2, 3)))
    assert mixed.dtype == np.float32
    pet = jnp.einsum("ij,jk->ik", i, i.T, preferred_element_type=np.float32)
    assert pet.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(pet), (i @ i.T).astype(np.float32))
    single = jnp.einsum("ii->", np.eye(3, dtype=np.int32), preferred_element_type=np.float32)
    assert single.dtype == np.float32 and float(single) == 3.0
    h = jnp.einsum("i,i->", np.ones(3, np.float16), np.ones(3, np.float16))
    assert h.dtype == np.float16


@pytest.mark.slow
def test_matches_jax_dtypes_and_shapes():
    jax = pytest.importorskip("jax")
    for subscripts, shapes in PATTERNS:
        ops = [rand(s, seed=i) for i, s in enumerate(shapes)]
        ours, theirs = jnp.einsum(subscripts, *ops), jax.numpy.einsum(subscripts, *ops)
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, subscripts


GRAD_PATTERNS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("bii->b", [(2, 3, 3)]),
                 ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
                 ("...i,...i", [(2, 3), (3,)]), ("ij,ij->ij", [(1, 4), (3, 4)]),
                 ("ijk->j", [(2, 3, 4)])]


@pytest.mark.parametrize("subscripts,shapes", GRAD_PATTERNS, ids=[p[0] for p in GRAD_PATTERNS])
def test_grads(subscripts, shapes):
    ops = tuple(rand(s, np.float64, seed=i) for i, s in enumerate(shapes))
    check_grads_x64(lambda *xs: jnp.einsum(subscripts, *xs), ops, order=2)


def test_vmap_matches_loop():
    a, b = rand((4, 2, 3), seed=1), rand((3, 5), seed=2)
    f = lambda x, y: jnp.einsum("ij,jk->ki", x, y)
    got = gpuarr.vmap(f, in_axes=(0, None))(a, b)
    want = np.stack([np.asarray(f(x, b)) for x in a])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    g = lambda x: jnp.einsum("ii->i", x)
    xs = rand((3, 4, 4), seed=3)
    got = gpuarr.vmap(g, in_axes=2)(np.moveaxis(xs, 0, 2))
    np.testing.assert_allclose(np.asarray(got), np.stack([np.diag(x) for x in xs]), rtol=1e-6)


def test_jit():
    a, b = rand((2, 3), seed=1), rand((3, 4), seed=2)
    f = gpuarr.jit(lambda x, y: jnp.einsum("ij,jk->ik", x, y))
    np.testing.assert_allclose(np.asarray(f(a, b)), a @ b, rtol=1e-5, atol=1e-5)
    assert "dot_general" in str(gpuarr.make_jaxpr(lambda x, y: jnp.einsum("ij,jk", x, y))(a, b))


@pytest.mark.parametrize("subscripts,shapes,match", [
    ("ij,jk", [(2, 3), (2, 2)], "Size of label 'j'"),
    ("ij,jk", [(2, 3)], "Number of einsum subscripts, 2, must be equal to the number of operands, 1"),
    ("ij->k", [(2, 3)], "Output character 'k' did not appear in the input"),
    ("ijk", [(2, 3)], "does not contain the correct number of indices for operand 0"),
    ("ij->ii", [(2, 3)], "includes output subscript 'i' multiple times"),
    ("i$", [(2, 3)], "invalid subscript"),
    ("i->i->i", [(2,)], "at most one '->'"),
    ("...ijk", [(2, 3)], "does not contain the correct number of indices"),
])
def test_bad_subscripts(subscripts, shapes, match):
    with pytest.raises(ValueError, match=match):
        jnp.einsum(subscripts, *[np.ones(s, np.float32) for s in shapes])


def test_other_errors():
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.einsum("i,i", [1.0, 2.0], np.ones(2))
    with pytest.raises(NotImplementedError, match="'out'"):
        jnp.einsum("i->i", np.ones(2), out=np.ones(2))


# ---------------------------------------------------------------- random subscripts

LETTERS = "abcd"
SIZES = {"a": 2, "b": 3, "c": 1, "d": 4}


@st.composite
def einsum_problems(draw):
    n_ops = draw(st.integers(1, 3))
    terms = [draw(st.text(LETTERS, min_size=0, max_size=3)) for _ in range(n_ops)]
    used = sorted(set("".join(terms)))
    out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
    return ",".join(terms) + "->" + out


@settings(max_examples=40, deadline=None)
@given(einsum_problems(), st.sampled_from(["auto", False, "greedy"]))
def test_random_subscripts_match_numpy(subscripts, optimize):
    terms = subscripts.split("->")[0].split(",")
    ops = [rand(tuple(SIZES[c] for c in t), np.float64, seed=i) for i, t in enumerate(terms)]
    with gpuarr.enable_x64():
        got = jnp.einsum(subscripts, *ops, optimize=optimize)
    want = np.einsum(subscripts, *ops)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)
