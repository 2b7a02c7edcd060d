"""Set operations (intersect1d, setdiff1d, setxor1d, union1d), the unique_* family and the index
helpers (ravel_multi_index, unravel_index, place, put, sort_complex) against NumPy, and against
JAX for JAX's own choices (size=/fill_value= padding, clipping, dtypes, gradients); jit and vmap
behaviour, error classes, and gradients by finite differences."""
from functools import partial

import numpy as np
import pytest
from helpers import check_grads_x64, equal
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr.errors import ConcretizationTypeError, NonConcreteBooleanIndexError

SETOPS = ["intersect1d", "setdiff1d", "setxor1d", "union1d"]
DTYPES = [np.int32, np.float32, np.uint8, np.int8, np.bool_]
UNIQUE = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]


def assert_tree_same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        equal(g, w)


def pairs(dtype):
    """(ar1, ar2) cases: duplicates, overlap, disjoint, identical, empty, 2-D, one element."""
    rng = np.random.RandomState(0)
    cast = (lambda x: np.asarray(x) % 2 == 1) if dtype == np.bool_ else \
        (lambda x: np.asarray(x).astype(dtype))
    return [
        (cast([3, 1, 2, 3, 1, 7]), cast([2, 5, 1, 2])),
        (cast([4, 4, 4]), cast([4])),
        (cast([1, 2, 3]), cast([5, 6])),
        (cast([5, 0, 2]), cast([2, 0, 5])),
        (cast(np.zeros(0)), cast([1, 2, 2])),
        (cast([1, 2, 2]), cast(np.zeros(0))),
        (cast(np.zeros(0)), cast(np.zeros(0))),
        (cast(rng.randint(0, 6, (3, 4))), cast(rng.randint(3, 9, (2, 3)))),
        (cast([9]), cast([9])),
    ]


def unique_pairs(dtype):
    return [(np.unique(a), np.unique(b)) for a, b in pairs(dtype)]


# ---------------------------------------------------------------- set operations vs NumPy


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", SETOPS)
def test_setops_match_numpy(name, dtype):
    for a, b in pairs(dtype):
        equal(getattr(jnp, name)(a, b), getattr(np, name)(a, b))
        equal(getattr(jnp, name)(jnp.asarray(a), jnp.asarray(b)), getattr(np, name)(a, b))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.bool_])
@pytest.mark.parametrize("name", ["intersect1d", "setdiff1d", "setxor1d"])
def test_setops_assume_unique_match_numpy(name, dtype):
    for a, b in unique_pairs(dtype):
        equal(getattr(jnp, name)(a, b, assume_unique=True),
              getattr(np, name)(a, b, assume_unique=True))


@pytest.mark.parametrize("assume_unique", [False, True])
def test_intersect1d_return_indices_match_numpy(assume_unique):
    cases = unique_pairs(np.float32) if assume_unique else pairs(np.float32)
    for a, b in cases:
        want = np.intersect1d(a, b, assume_unique=assume_unique, return_indices=True)
        got = jnp.intersect1d(a, b, assume_unique=assume_unique, return_indices=True)
        equal(got[0], want[0])
        for g, w in zip(got[1:], want[1:]):
            equal(g, w.astype(np.int32))


def test_setops_promote_like_jax():
    i, f = np.array([3, 1, 2], np.int32), np.array([2., 5.], np.float32)
    assert jnp.intersect1d(i, f).dtype == np.float32
    assert jnp.setxor1d(i, f).dtype == np.float32
    assert jnp.union1d(i, f).dtype == np.float32
    assert jnp.setdiff1d(i, f).dtype == np.int32  # keeps ar1's dtype, as in JAX
    equal(jnp.setdiff1d(i, f), np.array([1, 3], np.int32))


def test_setops_nans():
    a = np.array([np.nan, 1., np.nan, 2., 1.], np.float32)
    b = np.array([np.nan, 2.], np.float32)
    for name in SETOPS:
        equal(getattr(jnp, name)(a, b), getattr(np, name)(a, b))


def test_setops_signed_zeros_and_larger_inputs():
    z, one = np.array([-0.0, 1.], np.float32), np.array([0.0], np.float32)
    equal(jnp.setdiff1d(z, one), np.setdiff1d(z, one))
    equal(jnp.intersect1d(z, one), np.array([-0.0], np.float32))
    rng = np.random.RandomState(4)
    a, b = rng.randint(0, 300, 500).astype(np.float32), rng.randint(150, 450, 400).astype(np.float32)
    for name in SETOPS:
        want = getattr(np, name)(a, b)
        equal(getattr(jnp, name)(a, b), want)
        equal(getattr(jnp, name)(a, b, size=len(want)), want)


def test_setops_reject_lists():
    for name in SETOPS:
        with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
            getattr(jnp, name)([1, 2], np.array([1]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-4, 4), max_size=8), st.lists(st.integers(-4, 4), max_size=8),
       st.integers(1, 10))
def test_setops_random_against_numpy(xs, ys, size):
    a, b = np.array(xs, np.int32), np.array(ys, np.int32)
    for name in SETOPS:
        want = getattr(np, name)(a, b)
        equal(getattr(jnp, name)(a, b), want)
        got = np.asarray(getattr(jnp, name)(a, b, size=size, fill_value=-9))
        k = min(size, len(want))
        equal(got[:k], want[:k])
        assert (got[len(want):] == -9).all()


# ---------------------------------------------------------------- size= / fill_value= vs JAX


def _jax_call(jax_mod, name, *args, **kw):
    return getattr(jax_mod.numpy, name)(*[jax_mod.numpy.asarray(a) for a in args], **kw)


def jax_cases():
    """(ar1, ar2) pairs of fixed shapes, so JAX compiles each sized set operation once."""
    f32 = partial(np.array, dtype=np.float32)
    return [(f32([3, 1, 2, 3, 1, 7]), f32([2, 5, 1, 2])), (f32([4] * 6), f32([4] * 4)),
            (f32([1, 2, 3, 4, 5, 6]), f32([7, 8, 9, 10])), (f32([-5, -3, 7, -5, 0, 2]), f32([-3, -5, 0, 0]))]


@pytest.mark.parametrize("name", SETOPS)
def test_setops_size_padding_matches_jax(name):
    jax_ = pytest.importorskip("jax")
    for size, fill in [(2, None), (7, -1.)]:
        jitted = jax.jit(partial(getattr(jnp, name), size=size, fill_value=fill))
        for a, b in jax_cases():
            want = _jax_call(jax_, name, a, b, size=size, fill_value=fill)
            equal(getattr(jnp, name)(a, b, size=size, fill_value=fill), want)
            equal(jitted(a, b), want)


@pytest.mark.parametrize("name", SETOPS)
def test_setops_size_padding_of_empty_inputs(name):
    # No result at all: JAX pads with fill_value, or 0 (union1d, like jnp.unique, needs one).
    a, e = np.array([3, 1, 3], np.int32), np.zeros(0, np.int32)
    f = getattr(jnp, name)
    if name != "union1d":
        equal(f(e, e, size=2), np.zeros(2, np.int32))
    else:
        with pytest.raises(ValueError, match="fill_value must be specified"):
            f(e, e, size=2)
    equal(f(e, e, size=2, fill_value=-1), np.full(2, -1, np.int32))
    want = {"intersect1d": [-1, -1], "setdiff1d": [-1, -1], "setxor1d": [1, 3],
            "union1d": [1, 3]}[name]
    equal(f(e, a, size=2, fill_value=-1), np.array(want, np.int32))


@pytest.mark.parametrize("name", ["intersect1d", "setdiff1d", "setxor1d"])
def test_setops_assume_unique_size_matches_jax(name):
    jax_ = pytest.importorskip("jax")
    cases = [(np.unique(a), np.unique(b)) for a, b in jax_cases()[2:]]  # same lengths
    for a, b in cases:
        want = _jax_call(jax_, name, a, b, assume_unique=True, size=5, fill_value=3.5)
        equal(getattr(jnp, name)(a, b, assume_unique=True, size=5, fill_value=3.5), want)


@pytest.mark.parametrize("assume_unique", [False, True])
def test_intersect1d_indices_size_matches_jax(assume_unique):
    jax_ = pytest.importorskip("jax")
    cases = jax_cases()[2:] if assume_unique else jax_cases()
    for size, fill in [(1, None), (5, 9.)]:
        f = jax.jit(partial(jnp.intersect1d, assume_unique=assume_unique, return_indices=True,
                            size=size, fill_value=fill))
        for a, b in cases:
            want = _jax_call(jax_, "intersect1d", a, b, assume_unique=assume_unique,
                             return_indices=True, size=size, fill_value=fill)
            assert_tree_same(f(a, b), tuple(want))


def test_intersect1d_indices_size_with_an_empty_input():
    # Nothing in common: all padding, indices len(ar1) and len(ar2), each of length `size`.
    a, e = np.array([3, 1, 3], np.int32), np.zeros(0, np.int32)
    vals, i1, i2 = jnp.intersect1d(a, e, return_indices=True, size=2, fill_value=-1)
    equal(vals, np.array([-1, -1], np.int32))
    equal(i1, np.array([3, 3], np.int32))
    equal(i2, np.array([0, 0], np.int32))


@pytest.mark.parametrize("name", SETOPS)
def test_setops_vmap_with_size_matches_loop(name):
    rng = np.random.RandomState(1)
    a = rng.randint(0, 6, (4, 5)).astype(np.float32)
    b = rng.randint(2, 8, (4, 3)).astype(np.float32)
    f = partial(getattr(jnp, name), size=4)
    got = jax.vmap(f)(a, b)
    want = np.stack([np.asarray(f(a[i], b[i])) for i in range(4)])
    equal(got, want)
    got = jax.vmap(f, in_axes=(0, None))(a, b[0])
    equal(got, np.stack([np.asarray(f(a[i], b[0])) for i in range(4)]))


def test_intersect1d_indices_vmap_with_size_matches_loop():
    rng = np.random.RandomState(2)
    a, b = rng.randint(0, 5, (3, 6)).astype(np.int32), rng.randint(0, 5, (3, 4)).astype(np.int32)
    f = partial(jnp.intersect1d, return_indices=True, size=3)
    got = jax.vmap(f)(a, b)
    for k in range(3):
        want = np.stack([np.asarray(f(a[i], b[i])[k]) for i in range(3)])
        equal(got[k], want)


# ---------------------------------------------------------------- errors under transformations


@pytest.mark.parametrize("name", SETOPS)
def test_setops_need_size_under_jit(name):
    a, b = jnp.array([3, 1, 2]), jnp.array([2, 5])
    with pytest.raises(ConcretizationTypeError, match="size"):
        jax.jit(getattr(jnp, name))(a, b)
    with pytest.raises(ConcretizationTypeError):
        jax.vmap(getattr(jnp, name))(a[None], b[None])
    with pytest.raises(ConcretizationTypeError):  # a traced size
        jax.jit(lambda x, y, n: getattr(jnp, name)(x, y, size=n))(a, b, 3)


@pytest.mark.parametrize("name", ["intersect1d", "setxor1d"])
def test_assume_unique_without_size_is_a_boolean_index_under_jit(name):
    # As in JAX: no unique() to concretize, so the boolean-mask selection is what fails.
    with pytest.raises(NonConcreteBooleanIndexError):
        jax.jit(partial(getattr(jnp, name), assume_unique=True))(jnp.array([1, 2]),
                                                                 jnp.array([2, 3]))


def test_setdiff1d_size_under_jit_with_traced_fill():
    f = jax.jit(lambda x, y: jnp.setdiff1d(x, y, size=3, fill_value=x[0]))
    equal(f(jnp.array([3, 1, 2]), jnp.array([2, 5])), np.array([1, 3, 3], np.int32))


# ---------------------------------------------------------------- gradients


def test_setops_gradients_match_jax():
    jax_ = pytest.importorskip("jax")
    x = np.array([3., 1., 2., 7.], np.float32)
    y = np.array([1., 3., 8.], np.float32)
    w = np.array([1., 10., 100., 1000.], np.float32)
    # Without size, unique() concretizes its input in JAX, so those gradients are zero.
    fns = [("intersect1d", {}), ("intersect1d", {"size": 4}), ("setdiff1d", {"size": 4}),
           ("setxor1d", {"assume_unique": True}), ("union1d", {"size": 4})]
    for name, kw in fns:
        def loss(np_mod, x, name=name, kw=kw):
            out = getattr(np_mod, name)(x, np_mod.asarray(y), **kw)
            return (out * np_mod.asarray(w[:len(out)])).sum()
        got = jax.grad(partial(loss, jnp))(jnp.asarray(x))
        want = jax_.grad(partial(loss, jax_.numpy))(jax_.numpy.asarray(x))
        equal(got, np.asarray(want))


def test_sized_setops_gradients_by_finite_differences():
    # Away from ties (an equal pair separates under any perturbation), the sized forms are
    # permutations plus padding, so their gradients are well defined.
    x, y = np.array([3.5, 1.5, 2.25, 7.]), np.array([1., 3.])
    for name in ["setdiff1d", "setxor1d", "union1d"]:
        check_grads_x64(lambda x: getattr(jnp, name)(x, y, size=7, fill_value=0.5), (x,), order=2)


# ---------------------------------------------------------------- the unique_* family


def unique_inputs():
    return [np.array([[3, 1], [3, 2]], np.int32), np.array([np.nan, 1., np.nan, 2., 1.], np.float32),
            np.array([2, 2, 0], np.uint8), np.array([True, False, True]), np.array(5, np.int32)]


@pytest.mark.parametrize("name", UNIQUE)
def test_unique_family_matches_numpy(name):
    for x in unique_inputs() + [np.zeros(0, np.float32)]:
        got, want = getattr(jnp, name)(x), getattr(np, name)(x)
        if name == "unique_values":
            equal(got, want)
            continue
        assert type(got).__name__ == "_" + type(want).__name__  # JAX's class names
        assert got._fields == want._fields
        for field in want._fields:
            w = getattr(want, field)
            w = w.astype(np.int32) if w.dtype == np.int64 else w
            equal(getattr(got, field), w)


def test_unique_all_fields_and_printing():
    res = jnp.unique_all(jnp.array([[3, 1], [3, 2]]))
    assert type(res).__name__ == "_UniqueAllResult"
    assert res._fields == ("values", "indices", "inverse_indices", "counts")
    assert res.inverse_indices.shape == (2, 2)
    equal(res.values[res.inverse_indices], np.array([[3, 1], [3, 2]], np.int32))
    assert jnp.unique_counts(jnp.array([1]))._fields == ("values", "counts")
    assert jnp.unique_inverse(jnp.array([1]))._fields == ("values", "inverse_indices")


@pytest.mark.parametrize("name", UNIQUE)
def test_unique_family_size_matches_jax(name):
    jax_ = pytest.importorskip("jax")
    for x in unique_inputs() + [np.zeros(0, np.int32)]:
        for size, fill in [(2, None), (4, None), (6, 7)]:
            if x.size == 0 and fill is None:
                with pytest.raises(ValueError, match="fill_value must be specified"):
                    getattr(jnp, name)(x, size=size)
                continue
            want = _jax_call(jax_, name, x, size=size, fill_value=fill)
            want = tuple(want) if isinstance(want, tuple) else want
            got = getattr(jnp, name)(x, size=size, fill_value=fill)
            assert_tree_same(tuple(got) if isinstance(got, tuple) else got, want)
            jitted = jax.jit(partial(getattr(jnp, name), size=size, fill_value=fill))(x)
            assert_tree_same(tuple(jitted) if isinstance(jitted, tuple) else jitted, want)


@pytest.mark.parametrize("name", UNIQUE)
def test_unique_family_jit_and_vmap(name):
    x = jnp.array([3, 1, 3])
    with pytest.raises(ConcretizationTypeError):
        jax.jit(getattr(jnp, name))(x)
    xs = np.array([[3, 1, 3, 0], [2, 2, 2, 2], [5, 4, 3, 2]], np.int32)
    f = partial(getattr(jnp, name), size=3, fill_value=-1)
    got = jax.vmap(f)(xs)
    got = tuple(got) if isinstance(got, tuple) else (got,)
    for k, g in enumerate(got):
        want = [f(row) for row in xs]
        want = [w[k] if isinstance(w, tuple) else w for w in want]
        equal(g, np.stack([np.asarray(w) for w in want]))


# ---------------------------------------------------------------- ravel_multi_index / unravel_index


IDX = (np.array([0, 1, 1, 2], np.int32), np.array([2, 0, 3, 1], np.int32))


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("mode", ["raise", "clip", "wrap"])
def test_ravel_multi_index_matches_numpy(mode, order):
    shift = 0 if mode == "raise" else 3  # out of bounds for clip and wrap
    idx = (IDX[0], IDX[1] + shift)
    want = np.ravel_multi_index(idx, (3, 4), mode=mode, order=order).astype(np.int32)
    equal(jnp.ravel_multi_index(idx, (3, 4), mode=mode, order=order), want)
    if mode != "raise":
        f = jax.jit(lambda i, j: jnp.ravel_multi_index((i, j), (3, 4), mode=mode, order=order))
        equal(f(*idx), want)
        got = jax.vmap(lambda i, j: jnp.ravel_multi_index((i, j), (3, 4), mode=mode))(*idx)
        equal(got, np.ravel_multi_index(idx, (3, 4), mode=mode).astype(np.int32))


def test_ravel_multi_index_dtypes_like_jax():
    jax_ = pytest.importorskip("jax")
    for idx, dims, kw in [
        ((IDX[0].astype(np.int8), IDX[1].astype(np.int8)), (3, 4), {}),
        ((IDX[0].astype(np.uint8), IDX[1].astype(np.int16)), (3, 4), {}),
        (IDX, (3, 4), {"dtype": np.int16}),
        ((1, 2), (3, 4), {}),
        ((np.int32(1), np.int32(2)), (3, 4), {"order": "F"}),
    ]:
        want = jax_.numpy.ravel_multi_index(idx, dims, **kw)
        got = jnp.ravel_multi_index(idx, dims, **kw)
        equal(got, np.asarray(want))
        assert got.weak_type == want.weak_type


def test_ravel_multi_index_errors():
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.ravel_multi_index((IDX[0], IDX[1] + 3), (3, 4))
    with pytest.raises(ConcretizationTypeError, match="mode='wrap' or mode='clip'"):
        jax.jit(lambda i, j: jnp.ravel_multi_index((i, j), (3, 4)))(*IDX)
    with pytest.raises(TypeError, match="only int indices"):
        jnp.ravel_multi_index((IDX[0].astype(np.float32), IDX[1]), (3, 4), dtype=np.int32)
    with pytest.raises(ValueError, match="not large enough"):
        jnp.ravel_multi_index((IDX[0].astype(np.int8), IDX[1].astype(np.int8)), (30, 40))
    with pytest.raises(ValueError, match="not an integer type"):
        jnp.ravel_multi_index(IDX, (3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="invalid mode"):
        jnp.ravel_multi_index(IDX, (3, 4), mode="bad")
    with pytest.raises(ValueError, match="invalid order"):
        jnp.ravel_multi_index(IDX, (3, 4), order="X")
    with pytest.raises(ValueError, match="len"):
        jnp.ravel_multi_index(IDX, (3, 4, 5))


@pytest.mark.parametrize("shape", [(2, 3), (6,), (2, 1, 3), (4, 5)])
def test_unravel_index_matches_numpy_in_bounds(shape):
    flat = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(-1, 2 if len(shape) > 1 else 1)
    want = np.unravel_index(flat, shape)
    got = jnp.unravel_index(flat, shape)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        equal(g, w.astype(np.int32))
    back = jnp.ravel_multi_index(got, shape)
    equal(back, flat)


def test_unravel_index_clips_like_jax():
    jax_ = pytest.importorskip("jax")
    for idx in [np.arange(-8, 16, dtype=np.int32), np.arange(10, dtype=np.uint8),
                np.array([3, 7], np.int16), np.array(5, np.int32)]:
        for shape in [(2, 3), (6,), 6, (2, 1, 3), ()]:
            want = jax_.numpy.unravel_index(idx, shape)
            got = jnp.unravel_index(idx, shape)
            assert_tree_same(tuple(got), tuple(np.asarray(w) for w in want))
            jitted = jax.jit(partial(jnp.unravel_index, shape=shape))(idx)
            assert_tree_same(tuple(jitted), tuple(np.asarray(w) for w in want))
    with pytest.raises(ValueError, match="scalar or 1D"):
        jnp.unravel_index(np.array([1]), [(2, 3)])


# ---------------------------------------------------------------- place, put


X = np.arange(12, dtype=np.float32).reshape(3, 4)
MASK = (np.arange(12) % 3 == 0).reshape(3, 4)


def np_place(arr, mask, vals):
    out = np.array(arr)
    np.place(out, mask, vals)
    return out


def np_put(a, ind, v, mode):
    out = np.array(a)
    np.put(out, ind, v, mode=mode)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_])
def test_place_matches_numpy(dtype):
    x, vals = X.astype(dtype), np.array([10, 20, 30, 40, 50, 60], dtype)
    for mask, v in [(MASK, vals[:2]), (MASK, vals), (MASK.ravel(), vals[:5]), (~MASK, vals[:1]),
                    (np.zeros_like(MASK), vals)]:
        equal(jnp.place(x, mask, v, inplace=False), np_place(x, mask, v))
    scalar = True if dtype == np.bool_ else 7
    equal(jnp.place(x, MASK, scalar, inplace=False), np_place(x, MASK, scalar))
    empty = np.zeros(0, dtype)
    equal(jnp.place(empty, np.zeros(0, bool), vals, inplace=False), empty)


def test_place_jit_vmap_and_errors():
    f = jax.jit(lambda x, m, v: jnp.place(x, m, v, inplace=False))
    v = np.array([1., 2.], np.float32)
    equal(f(X, MASK, v), np_place(X, MASK, v))
    masks = np.stack([MASK, ~MASK])
    got = jax.vmap(lambda m: jnp.place(X, m, v, inplace=False))(masks)
    equal(got, np.stack([np_place(X, m, v) for m in masks]))
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.place(X, MASK, v)
    with pytest.raises(ValueError, match="same size"):
        jnp.place(X, MASK[:2], v, inplace=False)
    with pytest.raises(ValueError, match="empty array"):
        jnp.place(X, MASK, np.zeros(0, np.float32), inplace=False)
    with pytest.raises(TypeError):
        jnp.place(X, MASK, [1., 2.], inplace=False)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8])
def test_put_matches_numpy(mode, dtype):
    x = X.astype(dtype)
    for ind, v in [(np.array([0, 5, 11]), np.array([1, 2, 3], dtype)),
                   (np.array([[1, 2], [3, 4]]), np.array([7], dtype)),
                   (np.array([2, 9, 14, 30]), np.array([5, 6], dtype))]:
        equal(jnp.put(x, ind, v, mode=mode, inplace=False), np_put(x, ind, v, mode))
    in_bounds = np.array([4, 0, 7])
    equal(jnp.put(x, in_bounds, 9, inplace=False), np_put(x, in_bounds, 9, "raise"))


def test_put_default_mode_and_negatives_like_jax():
    jax_ = pytest.importorskip("jax")
    ind = np.array([0, 5, 13, -1, -30], np.int32)
    v = np.array([1., 2., 3.], np.float32)
    for mode in [None, "clip", "wrap"]:
        want = jax_.numpy.put(X, ind, v, mode=mode, inplace=False)
        equal(jnp.put(X, ind, v, mode=mode, inplace=False), np.asarray(want))
        f = jax.jit(lambda x, i, v: jnp.put(x, i, v, mode=mode, inplace=False))
        equal(f(X, ind, v), np.asarray(want))


def test_put_errors_and_empty_inputs():
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put(X, np.array([0]), 1.)
    with pytest.raises(NotImplementedError, match="raise"):
        jnp.put(X, np.array([0]), 1., mode="raise", inplace=False)
    with pytest.raises(ValueError, match="mode"):
        jnp.put(X, np.array([0]), 1., mode="bad", inplace=False)
    equal(jnp.put(X, np.zeros(0, np.int32), 1., inplace=False), X)
    equal(jnp.put(X, np.array([1]), np.zeros(0, np.float32), inplace=False), X)


def test_put_vmap_matches_loop():
    inds = np.array([[0, 3], [5, 5], [11, 1]], np.int32)
    vals = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32)
    got = jax.vmap(lambda i, v: jnp.put(X, i, v, inplace=False))(inds, vals)
    equal(got, np.stack([np_put(X, i, v, "clip") for i, v in zip(inds, vals)]))


def test_place_and_put_gradients():
    mask = MASK.astype(bool)
    check_grads_x64(lambda x, v: jnp.place(x, mask, v, inplace=False),
                (X.astype(np.float64), np.array([1., 2., 3.])), order=2)
    check_grads_x64(lambda x, v: jnp.put(x, np.array([0, 5, 11, 5]), v, inplace=False),
                (X.astype(np.float64), np.array([1., 2.])), order=2)
    # Each value lands in every masked slot it is tiled to: its gradient counts them.
    g = jax.grad(lambda v: jnp.place(X, mask, v, inplace=False).sum())(np.array([1., 2.], np.float32))
    equal(g, np.array([2., 2.], np.float32))


# ---------------------------------------------------------------- sort_complex


@pytest.mark.parametrize("dtype", [np.complex64, np.float32, np.int32, np.uint8, np.bool_])
def test_sort_complex_matches_numpy(dtype):
    rng = np.random.RandomState(3)
    x = rng.randint(-3, 4, (3, 5)).astype(dtype)
    if dtype == np.complex64:
        x = x + 1j * rng.randint(-2, 3, (3, 5)).astype(np.float32)
    got = jnp.sort_complex(x)
    want = np.sort_complex(x)
    assert got.dtype == np.complex64  # JAX's complex type for 32-bit and smaller inputs
    equal(got, want.astype(np.complex64))
    equal(jax.jit(jnp.sort_complex)(x), want.astype(np.complex64))
    equal(jax.vmap(jnp.sort_complex)(x), want.astype(np.complex64))


def test_sort_complex_nans_and_x64():
    jax_ = pytest.importorskip("jax")
    x = np.array([1. + np.nan * 1j, 1. + 0j, np.nan + 0j, -1 + 2j, -1 - 2j], np.complex64)
    equal(jnp.sort_complex(x), np.asarray(jax_.numpy.sort_complex(x)))
    equal(jnp.sort_complex(np.zeros((2, 0), np.float32)), np.zeros((2, 0), np.complex64))
    with jax.enable_x64():
        assert jnp.sort_complex(np.array([2., 1.])).dtype == np.complex128


def test_sort_complex_gradient():
    w = np.array([1., 10., 100., 1000.])
    check_grads_x64(lambda x: jnp.real(jnp.sort_complex(x)) * w, (np.array([3., -1., 2.5, 0.]),),
                order=2)
    g = jax.grad(lambda x: (jnp.real(jnp.sort_complex(x)) * w.astype(np.float32)).sum())(
        np.array([3., -1., 2.5, 0.], np.float32))
    equal(g, np.array([1000., 1., 100., 10.], np.float32))


def test_unique_size_with_a_traced_fill_value():
    x = np.array([3, 1, 3, 2], np.int32)
    out = jax.jit(lambda v, f: jnp.unique(v, size=5, fill_value=f))(x, np.int32(-1))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, 2, 3, -1, -1])
    out = jax.vmap(lambda f: jnp.unique(x, size=5, fill_value=f))(np.arange(2, dtype=np.int32))
    np.testing.assert_array_equal(out, [[1, 2, 3, 0, 0], [1, 2, 3, 1, 1]])
    np.testing.assert_array_equal(jnp.unique(x, size=5, fill_value=7.9), [1, 2, 3, 7, 7])


def test_unique_size_of_an_empty_input_gives_fill_values():
    # As JAX: `fill_value` repeated `size` times, empty index and count arrays and an inverse of
    # the input's shape; with no fill_value (and size > 0) a ValueError.
    i32 = np.int32
    e = np.zeros((0, 2), np.float32)
    vals, index, inverse, counts = jnp.unique(e, size=3, fill_value=1, return_index=True,
                                              return_inverse=True, return_counts=True)
    equal(vals, np.ones(3, np.float32))
    equal(index, np.zeros(0, i32))
    equal(inverse, np.zeros((0, 2), i32))
    equal(counts, np.zeros(0, i32))
    equal(jnp.unique(np.zeros(0, i32), size=2, fill_value=7.9), np.array([7, 7], i32))
    equal(jnp.unique(np.zeros(0, i32), size=0), np.zeros(0, i32))
    out = jax.jit(lambda f: jnp.unique(np.zeros(0, np.float32), size=3, fill_value=f))(2.5)
    equal(out, np.full(3, 2.5, np.float32))
    with pytest.raises(ValueError, match="fill_value must be specified"):
        jnp.unique(np.zeros(0, np.float32), size=3)
    with pytest.raises(ValueError, match="fill_value must be a scalar"):
        jnp.unique(np.zeros(0, np.float32), size=3, fill_value=np.ones(2))
    # unique_values and unique agree.
    equal(jnp.unique_values(np.zeros(0, np.float32), size=3, fill_value=1),
          jnp.unique(np.zeros(0, np.float32), size=3, fill_value=1))
