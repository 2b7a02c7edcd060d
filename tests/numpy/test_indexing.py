"""x[idx]: NumPy indexing semantics with JAX's clamping (SPEC S12, S13), under jit, grad and vmap,
plus take / take_along_axis / put_along_axis / nonzero & co. Hypothesis draws random shapes and
index tuples and compares with NumPy after clamping the oracle's integer indices."""
import numpy as np
import pytest
from helpers import check_grads_x64, equal
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr.errors import ConcretizationTypeError, NonConcreteBooleanIndexError

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


CASES = [
    (1,), (-1,), (slice(None), 2), (Ellipsis, 1), (None, 0, None), (slice(None, None, -1),),
    (slice(1, None, 2), slice(None, None, -2)), (np.array([0, 2]),), (slice(None), np.array([1, 3])),
    (np.array([0, 2]), slice(1, 3), np.array([1, 4])),  # separated by a slice: advanced dims first
    (np.array([[0], [2]]), np.array([1, 3])),  # broadcasting index arrays
    (Ellipsis, np.array([0, -1])), (None, np.array([1]), None, 2), (1, slice(None), np.array([0, 1])),
    (slice(None, None, 2), np.array([1, 2]), slice(4, 0, -2)), (np.array([0, 2]), None, np.array([1, 3])),
    (np.array(1),), (X[..., 0] > 20,), (slice(1, None), [0, 1, 3]), (np.array([True, False, True]),),
    (np.array([], np.int32),), (np.zeros((2, 0), np.int32),), ([[0, 1], [2, 0]], slice(None), 3),
]


@pytest.mark.parametrize("idx", CASES, ids=[str(i) for i in range(len(CASES))])
def test_getitem_matches_numpy(idx):
    equal(jnp.asarray(X)[idx], X[idx])
    equal(jax.jit(lambda x: x[idx])(X), X[idx]) if not any(
        isinstance(i, np.ndarray) and i.dtype == bool for i in idx) else None


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float16, np.int64])
def test_getitem_dtypes_and_0d(dtype):
    x = (np.arange(6) % 2).astype(dtype).reshape(2, 3)
    equal(jnp.asarray(x)[np.array([1, 0]), 2], x[np.array([1, 0]), 2].astype(jnp.asarray(x).dtype))
    s = jnp.asarray(np.array(3.0, np.float32))
    equal(s[()], np.float32(3.0))
    equal(s[None], np.array([3.0], np.float32))


def test_out_of_bounds_reads_clamp():
    assert int(jnp.arange(10)[11]) == 9
    equal(jnp.arange(10)[jnp.array([11, -11, -1])], np.array([9, 0, 9], np.int32))
    equal(jax.jit(lambda x, i: x[i])(jnp.arange(10.0), 15), np.float32(9.0))
    equal(jnp.arange(10.0).at[11].get(), np.float32(9.0))


def test_traced_index_uses_dynamic_slice_and_gather():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    f = jax.jit(lambda x, i: x[i, 1:3])
    equal(f(x, 2), x[2, 1:3])
    assert "dynamic_slice" in str(jax.make_jaxpr(f)(x, 2))
    g = jax.jit(lambda x, i: x[:, i])
    equal(g(x, np.array([3, 0, -1])), x[:, [3, 0, -1]])
    assert "gather" in str(jax.make_jaxpr(g)(x, np.array([3, 0])))


def test_boolean_mask_under_jit_raises_with_where_hint():
    x = jnp.array([1.0, 2.0, jnp.nan, 3.0])
    def nansum(x):
        return x[~jnp.isnan(x)].sum()
    assert float(nansum(x)) == 6.0
    with pytest.raises(NonConcreteBooleanIndexError, match="jnp.where"):
        jax.jit(nansum)(x)
    assert float(jax.jit(lambda x: jnp.where(~jnp.isnan(x), x, 0).sum())(x)) == 6.0
    # Under grad the mask is concrete, as in JAX; under vmap it is not.
    equal(jax.grad(nansum)(x), np.array([1, 1, 0, 1], np.float32))
    with pytest.raises(NonConcreteBooleanIndexError):
        jax.vmap(nansum)(x.reshape(2, 2))
    assert issubclass(NonConcreteBooleanIndexError, IndexError)


def test_index_errors():
    x = jnp.asarray(X)
    with pytest.raises(IndexError, match="Too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(TypeError, match="integer or boolean"):
        x[np.array([0.5])]
    with pytest.raises(TypeError, match="integer or boolean"):
        x[1.0]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[np.array([0, 1]), np.array([0, 1, 2])]
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1.0


def test_getitem_grad_and_vmap():
    x = np.random.RandomState(0).standard_normal((4, 5))
    check_grads_x64(lambda x: x[np.array([0, 2, 2]), 1:4], (x,), order=2)
    check_grads_x64(lambda x: x[::-1, 1], (x,), order=1)
    g = jax.grad(lambda x: x[np.array([1, 1, 3])].sum())(x.astype(np.float32))
    equal(g, np.repeat(np.array([0, 2, 0, 1], np.float32)[:, None], 5, 1))
    xs = x.astype(np.float32)[None].repeat(3, 0) * np.arange(1, 4, dtype=np.float32)[:, None, None]
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    got = jax.vmap(lambda x, i: x[i, 2:])(xs, idx)
    equal(got, np.stack([xs[k][idx[k], 2:] for k in range(3)]))
    got = jax.vmap(lambda i: jnp.asarray(xs[0])[:, i])(np.array([0, 4, 2]))
    equal(got, np.stack([xs[0][:, i] for i in (0, 4, 2)]))


# ---------------------------------------------------------------- hypothesis


@st.composite
def shape_and_index(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    idx, dim = [], 0
    n_slots = draw(st.integers(0, len(shape) + 1))
    size = draw(st.integers(0, 3))  # index arrays share one length so that they broadcast
    used_ellipsis = False
    for _ in range(n_slots):
        kind = draw(st.sampled_from(["int", "slice", "none", "array", "ellipsis"]))
        if kind == "none":
            idx.append(None)
            continue
        if kind == "ellipsis":
            if used_ellipsis:
                continue
            used_ellipsis = True
            idx.append(Ellipsis)
            continue
        if dim >= len(shape):
            continue
        n = shape[dim]
        if kind == "int":
            idx.append(draw(st.integers(-n - 2, n + 2)))
        elif kind == "slice":
            lo = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            hi = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = draw(st.sampled_from([None, 1, 2, -1, -2]))
            idx.append(slice(lo, hi, step))
        else:
            idx.append(np.array(draw(st.lists(st.integers(-n - 2, n + 2), min_size=size, max_size=size)),
                                np.int32))
        dim += 1
    return shape, tuple(idx)


def _clamped_oracle(shape, idx):
    """The NumPy index JAX's semantics amount to: negative ints wrap, then all ints clamp."""
    out, dim = [], 0
    real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    for i in idx:
        if i is None or isinstance(i, slice):
            out.append(i)
            dim += i is not None
        elif i is Ellipsis:
            out.append(i)
            dim += len(shape) - real
        else:
            n = shape[dim]
            a = np.asarray(i)
            a = np.where(a < 0, a + n, a)
            out.append(np.clip(a, 0, n - 1) if np.ndim(i) else int(np.clip(a, 0, n - 1)))
            dim += 1
    return tuple(out)


@settings(max_examples=50, deadline=None)
@given(shape_and_index())
def test_hypothesis_getitem(case):
    shape, idx = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = x[_clamped_oracle(shape, idx)]
    equal(jnp.asarray(x)[idx], want)


@settings(max_examples=25, deadline=None)
@given(shape_and_index())
def test_hypothesis_getitem_jit(case):
    shape, idx = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    arrays = [i for i in idx if isinstance(i, np.ndarray)]
    template = [None if isinstance(i, np.ndarray) else i for i in idx]

    def f(x, *arrs):
        it = iter(arrs)
        return x[tuple(next(it) if t is None and isinstance(i, np.ndarray) else t
                       for t, i in zip(template, idx))]

    equal(jax.jit(f)(x, *arrays), x[_clamped_oracle(shape, idx)])


# ---------------------------------------------------------------- take & co.


def test_take_defaults_to_fill_and_modes():
    x = jnp.arange(5.0)
    out = np.asarray(jnp.take(x, jnp.array([-1, 7])))
    assert out[0] == 4.0 and np.isnan(out[1])
    equal(jnp.take(x, jnp.array([-1, 7]), mode="clip"), np.array([0.0, 4.0], np.float32))
    equal(jnp.take(x, jnp.array([-1, 7]), mode="wrap"), np.array([4.0, 2.0], np.float32))
    equal(jnp.take(x, jnp.array([9]), fill_value=-1.0), np.array([-1.0], np.float32))
    a = np.arange(24).reshape(2, 3, 4).astype(np.int32)
    for axis in (None, 0, 1, -1):
        idx = np.array([[0, 1], [1, 0]])
        equal(jnp.take(a, idx, axis=axis), np.take(a, idx, axis=axis))
    with pytest.raises(TypeError, match="requires ndarray"):
        jnp.take([1, 2], 0)


def test_take_along_axis_and_put_along_axis():
    a = np.random.RandomState(0).standard_normal((3, 4)).astype(np.float32)
    idx = np.argsort(a, axis=1)
    for axis in (0, 1, -1):
        i = np.argsort(a, axis=axis)
        equal(jnp.take_along_axis(a, i, axis=axis), np.take_along_axis(a, i, axis=axis))
    equal(jnp.take_along_axis(a, idx[:, :1], axis=1), np.take_along_axis(a, idx[:, :1], axis=1))
    equal(jnp.take_along_axis(a, idx[:1], axis=1), np.take_along_axis(a, idx[:1], axis=1))
    equal(jnp.take_along_axis(a.ravel(), idx.ravel(), axis=None), a.ravel()[idx.ravel()])
    want = a.copy()
    np.put_along_axis(want, idx[:, :1], 9.0, axis=1)
    equal(jnp.put_along_axis(a, idx[:, :1], 9.0, axis=1, inplace=False), want)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put_along_axis(a, idx, 1.0, axis=1)
    with pytest.raises(ValueError, match="same number of dimensions"):
        jnp.take_along_axis(a, idx[0], axis=1)
    g = jax.grad(lambda a: jnp.take_along_axis(a, idx[:, :2], axis=1).sum())(a)
    want = np.zeros_like(a)
    np.put_along_axis(want, idx[:, :2], 1.0, axis=1)
    equal(g, want)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 2, 3)])
def test_nonzero_argwhere_flatnonzero(shape):
    a = (np.random.RandomState(1).standard_normal(shape) > 0).astype(np.int32)
    for got, want in zip(jnp.nonzero(a), np.nonzero(a)):
        equal(got, want.astype(np.int32))
    equal(jnp.argwhere(a), np.argwhere(a).astype(np.int32))
    equal(jnp.flatnonzero(a), np.flatnonzero(a).astype(np.int32))
    k = int(np.count_nonzero(a))
    for size in (0, k, k + 2):
        got = jax.jit(lambda a: jnp.nonzero(a, size=size, fill_value=-1))(a)
        for g, w in zip(got, np.nonzero(a)):
            w = np.concatenate([w[:size], np.full(max(0, size - k), -1)]).astype(np.int32)
            equal(g, w)
    equal(jnp.where(a, size=k + 1)[0], np.concatenate([np.nonzero(a)[0], [0]]).astype(np.int32))


def test_nonzero_needs_size_under_jit():
    with pytest.raises(ConcretizationTypeError, match="size"):
        jax.jit(jnp.nonzero)(jnp.array([0, 1]))
    with pytest.raises(ValueError, match="0d"):
        jnp.nonzero(jnp.array(1))


@pytest.mark.parametrize("shape, idx", [
    ((3, 1, 1), (slice(None, None, 2), np.array([0, 0]), Ellipsis, 0)),
    ((1, 1, 1), (slice(None), np.array([], np.int32), Ellipsis, 0)),
    ((2, 3, 4), (np.array([1, 0]), slice(None), Ellipsis, np.array([3, 1]))),
    ((2, 3), (np.array([1, 0]), Ellipsis, np.array([2, 1]))),  # nothing to separate: adjacent
])
def test_an_ellipsis_covering_no_axes_separates_advanced_indices(shape, idx):
    # NumPy (and JAX): an Ellipsis between advanced indices keeps them apart even when it
    # stands for no axes, so their broadcast axes go first.
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    equal(jnp.asarray(x)[idx], x[idx])
    want = x.copy()
    want[idx] = -1
    equal(jnp.asarray(x).at[idx].set(-1), want)
