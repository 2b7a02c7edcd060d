"""Sorting, searching, selection and cumulative reductions (lax and gpuarr.numpy) against NumPy
(and JAX for JAX-specific outputs), with gradients by finite differences and vmap vs a loop."""
import numpy as np
import pytest
from helpers import check_grads_x64, close, rand
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax


def loop_vmap(f, *args):
    return np.stack([np.asarray(f(*[a[i] for a in args])) for i in range(len(args[0]))])


# ---------------------------------------------------------------- lax.sort / top_k


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.int8, np.bool_, np.float16])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -1), ((0, 3), 1)])
def test_lax_sort(dtype, shape, dim):
    x = (rand(shape) * 4).astype(dtype)
    close(lax.sort(x, dimension=dim), np.sort(x, axis=dim, kind="stable"), 1e-6)


def test_lax_sort_nans_last_and_multi_operand():
    x = np.array([1.0, np.nan, -0.0, 0.0, -np.inf, -1.0], np.float32)
    out = np.asarray(lax.sort(x))
    assert np.array_equal(out[:5], [-np.inf, -1.0, 0.0, 0.0, 1.0]) and np.isnan(out[5])
    k1 = np.array([2, 1, 2, 1, 0], np.int32)
    k2 = np.array([5.0, 3.0, 1.0, 3.0, 9.0], np.float32)
    v = np.arange(5, dtype=np.int32)
    a, b, c = lax.sort((k1, k2, v), num_keys=2)
    order = np.lexsort((k2, k1))
    close(a, k1[order], 1e-6)
    close(b, k2[order], 1e-6)
    close(c, v[order], 1e-6)
    keys, vals = lax.sort_key_val(k2, v)
    close(vals, v[np.argsort(k2, kind="stable")], 1e-6)
    with pytest.raises(TypeError, match="same shape"):
        lax.sort((k1, v[:3]))
    with pytest.raises(ValueError, match="num_keys"):
        lax.sort((k1, v), num_keys=3)


def test_lax_sort_grad_and_vmap():
    x = np.random.RandomState(0).permutation(6).astype(np.float64) * 0.7
    check_grads_x64(lambda x: lax.sort(x), (x,), order=2)
    check_grads_x64(lambda x, y: lax.sort((x, y))[1], (x, x[::-1] * 2), order=1)
    xs = rand((3, 4, 5))
    close(jax.vmap(lambda x: lax.sort(x, 0))(xs), loop_vmap(lambda x: lax.sort(x, 0), xs), 1e-6)
    ys = rand((3, 4, 5), seed=1)
    f = lambda x, y: lax.sort_key_val(x, y, 1)[1]  # noqa: E731
    close(jax.vmap(f, (0, None))(xs, ys[0]), loop_vmap(lambda x: f(x, ys[0]), xs), 1e-6)


def test_top_k_matches_jax_ties_and_nans():
    x = np.array([1.0, np.nan, 3.0, 3.0, -np.inf], np.float32)
    vals, idx = lax.top_k(x, 5)
    assert np.isnan(np.asarray(vals)[0]) and np.array_equal(np.asarray(vals)[1:], [3, 3, 1, -np.inf])
    close(idx, np.array([1, 2, 3, 0, 4], np.int32), 1e-6)
    for dtype in (np.int32, np.uint8, np.int8):
        a = (np.arange(12) * 7 % 11).astype(dtype).reshape(3, 4)
        v, i = lax.top_k(a, 2)
        order = np.argsort(-a.astype(np.int64), axis=-1, kind="stable")[:, :2]
        close(i, order.astype(np.int32), 1e-6)
        close(v, np.take_along_axis(a, order, -1), 1e-6)
    v, i = lax.top_k(rand((4, 3)), 2, axis=0)
    assert np.asarray(v).shape == (2, 3)
    with pytest.raises(ValueError, match="k argument"):
        lax.top_k(x, 6)
    xs = rand((3, 6))
    check_grads_x64(lambda x: lax.top_k(x, 3)[0], (xs.astype(np.float64),), order=2)
    close(jax.vmap(lambda x: lax.top_k(x, 2)[1])(xs), loop_vmap(lambda x: lax.top_k(x, 2)[1], xs), 1e-6)


# ---------------------------------------------------------------- cumulative (lax and numpy)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8])
def test_lax_cumulative(name, dtype):
    x = (rand((3, 5)) * 3).astype(dtype)
    ref = {"cumsum": np.cumsum, "cumprod": np.cumprod, "cummax": np.maximum.accumulate,
           "cummin": np.minimum.accumulate}[name]
    fn = getattr(lax, name)
    for axis in (0, 1, -1):
        want = ref(x, axis=axis, dtype=dtype) if name in ("cumsum", "cumprod") else ref(x, axis=axis)
        close(fn(x, axis), want.astype(dtype), 1e-5)
        rev = np.flip(ref(np.flip(x, axis), axis=axis), axis).astype(dtype)
        close(fn(x, axis, reverse=True), rev, 1e-5)
    close(jax.vmap(lambda r: fn(r, 0))(x), loop_vmap(lambda r: fn(r, 0), x), 1e-5)


def test_cumulative_grads():
    x = np.random.RandomState(0).permutation(6).astype(np.float64) * 0.7 - 1.5
    for fn in (lax.cumsum, lax.cumprod, lax.cummax, lax.cummin):
        check_grads_x64(lambda x: fn(x, 0), (x,), order=2)
        check_grads_x64(lambda x: fn(x, 0, reverse=True), (x,), order=1)
    x2 = np.random.RandomState(1).standard_normal((3, 4))
    check_grads_x64(lambda x: lax.cumprod(x, 1), (x2,), order=1)
    check_grads_x64(lambda x: lax.cumprod(jnp.asarray(x).at[1].set(0.0), 0), (x,), order=1)  # zeros are fine


def test_cumlogsumexp_values_infinities_grads_and_vmap():
    x = rand((3, 5))
    for axis in (0, 1):
        want = np.log(np.cumsum(np.exp(x.astype(np.float64)), axis=axis)).astype(np.float32)
        close(lax.cumlogsumexp(x, axis), want, 1e-6)
        rev = np.flip(np.log(np.cumsum(np.exp(np.flip(x, axis).astype(np.float64)), axis)), axis)
        close(lax.cumlogsumexp(x, axis, reverse=True), rev.astype(np.float32), 1e-6)
    big = np.array([1000.0, 1000.0, -np.inf, 999.0], np.float32)  # no overflow, -inf is fine
    close(lax.cumlogsumexp(big), np.array(
        [1000, 1000 + np.log(2), 1000 + np.log(2), 1000 + np.log(2 + np.exp(-1))], np.float32), 1e-6)
    close(lax.cumlogsumexp(np.array([-np.inf, -np.inf, 0.0], np.float32)),
          np.array([-np.inf, -np.inf, 0.0], np.float32), 1e-6)
    x64 = x.astype(np.float64)[0]
    check_grads_x64(lambda v: lax.cumlogsumexp(v, 0), (x64,), order=2)
    check_grads_x64(lambda v: lax.cumlogsumexp(v, 0, reverse=True), (x64,), order=1)
    g = jax.grad(lambda v: lax.cumlogsumexp(v)[-1])(big)  # the softmax of the whole prefix
    close(g, np.array([1, 1, 0, np.exp(-1)], np.float32) / np.float32(2 + np.exp(-1)),
          1e-5)
    close(jax.vmap(lambda r: lax.cumlogsumexp(r, 0))(x),
          loop_vmap(lambda r: lax.cumlogsumexp(r, 0), x), 1e-6)
    with pytest.raises(TypeError, match="floating-point"):
        lax.cumlogsumexp(np.arange(3))


def test_cummax_grad_ties_match_jax():
    # JAX 0.10.2 gives these values (ties split the tangent evenly).
    x = np.array([1.0, 3.0, 2.0, 3.0, 5.0], np.float32)
    for reverse, want in ((False, [1.0, 2.5, 0.0, 0.5, 1.0]), (True, [0.0, 0.0, 0.0, 0.0, 5.0])):
        got = jax.grad(lambda x: lax.cummax(x, reverse=reverse).sum())(x)
        close(got, np.array(want, np.float32), 1e-6)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
def test_numpy_cumulative(name):
    x = rand((3, 4))
    x[1, 2] = np.nan
    ref = getattr(np, name)
    for axis in (None, 0, -1):
        close(getattr(jnp, name)(x, axis=axis), ref(x, axis=axis), 1e-5)
    close(jnp.cumsum(np.array([True, True, False])), np.array([1, 2, 2], np.int32), 1e-6)
    close(jnp.cumsum(np.array([1, 2], np.int8)), np.array([1, 3], np.int8), 1e-6)
    close(jnp.cumsum(np.arange(3), dtype=jnp.float32), np.array([0, 1, 3], np.float32), 1e-6)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.cumsum(x, axis=2)


def test_nanargmin_nanargmax():
    x = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, -2.0], [3.0, 3.0, np.nan]], np.float32)
    close(jnp.nanargmin(x, axis=1), np.array([-1, 2, 0], np.int32), 1e-6)
    close(jnp.nanargmax(x, axis=1), np.array([-1, 0, 0], np.int32), 1e-6)
    close(jnp.nanargmax(x, axis=1, keepdims=True), np.array([[-1], [0], [0]], np.int32), 1e-6)
    assert int(jnp.nanargmax(x)) == 6 and int(jnp.nanargmin(x)) == 5
    close(jnp.nanargmin(np.array([3, 1, 2])), np.int32(1), 1e-6)


# ---------------------------------------------------------------- numpy sorting


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_sort_argsort(axis):
    x = np.round(rand((4, 5)) * 2).astype(np.float32)
    close(jnp.sort(x, axis=axis), np.sort(x, axis=axis), 1e-6)
    close(jnp.argsort(x, axis=axis), np.argsort(x, axis=axis, kind="stable").astype(np.int32), 1e-6)
    close(jnp.sort(x, axis=axis, descending=True),
          np.flip(np.sort(x, axis=axis), axis=0 if axis is None else axis), 1e-6)
    got = np.asarray(jnp.argsort(x, axis=axis, descending=True))
    ax = 0 if axis is None else axis
    src = x.ravel() if axis is None else x
    want = np.flip(np.argsort(np.flip(src, ax), axis=ax, kind="stable"), ax)
    want = src.shape[ax] - 1 - want
    close(got, want.astype(np.int32), 1e-6)


def test_lexsort_partition_argpartition():
    a = np.array([1, 5, 1, 4, 3, 4, 4], np.int32)
    b = np.array([9, 4, 0, 4, 0, 2, 1], np.int32)
    close(jnp.lexsort((b, a)), np.lexsort((b, a)).astype(np.int32), 1e-6)
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0], np.float32)
    close(jnp.partition(x, 2), np.array([1, 1, 2, 9, 5, 4, 3], np.float32), 1e-6)
    close(jnp.argpartition(x, 2), np.array([1, 3, 6, 0, 2, 4, 5], np.int32), 1e-6)
    p = np.asarray(jnp.partition(rand((3, 6)), 3, axis=1))
    assert (p[:, :3] <= p[:, 3:4]).all() and (p[:, 4:] >= p[:, 3:4]).all()
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.partition(x, 7)


def test_unique():
    x = np.array([3, 1, 1, 2, 3, 3], np.int32)
    u, i, inv, c = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    nu, ni, ninv, nc = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    close(u, nu, 1e-6)
    close(i, ni.astype(np.int32), 1e-6)
    close(inv, ninv.astype(np.int32), 1e-6)
    close(c, nc.astype(np.int32), 1e-6)
    got = jax.jit(lambda x: jnp.unique(x, size=5, return_index=True, return_inverse=True,
                                       return_counts=True))(x)
    close(got[0], np.array([1, 2, 3, 1, 1], np.int32), 1e-6)
    close(got[1], np.array([1, 3, 0, 1, 1], np.int32), 1e-6)
    close(got[2], ninv.astype(np.int32), 1e-6)
    close(got[3], np.array([2, 1, 3, 0, 0], np.int32), 1e-6)
    close(jnp.unique(x, size=2, fill_value=0), np.array([1, 2], np.int32), 1e-6)
    f = np.array([1.0, np.nan, np.nan, 0.5], np.float32)
    out = np.asarray(jnp.unique(f))
    assert out.shape == (3,) and np.isnan(out[-1])
    close(jnp.unique(np.array([[1, 2], [1, 2], [0, 1]]), axis=0), np.array([[0, 1], [1, 2]], np.int32), 1e-6)


def test_searchsorted_digitize_bincount():
    a = np.array([1.0, 2.0, 2.0, 3.0], np.float32)
    v = np.array([[2.0, 0.0], [3.5, np.nan]], np.float32)
    for side in ("left", "right"):
        close(jnp.searchsorted(a, v, side=side), np.searchsorted(a, v, side=side).astype(np.int32), 1e-6)
    close(jax.jit(lambda a, v: jnp.searchsorted(a, v))(a, v), np.searchsorted(a, v).astype(np.int32), 1e-6)
    shuffled = a[[1, 3, 2, 0]]
    close(jnp.searchsorted(shuffled, v, sorter=np.argsort(shuffled)),
          np.searchsorted(a, v).astype(np.int32), 1e-6)
    x = np.array([0.0, 1.0, 1.5, 3.0, 4.0], np.float32)
    for bins in (np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])):
        for right in (False, True):
            want = np.digitize(x, bins, right=right).astype(np.int32)
            close(jnp.digitize(x, bins, right=right), want, 1e-6)
    close(jnp.bincount(np.array([0, 1, 1, 4])), np.bincount([0, 1, 1, 4]).astype(np.int32), 1e-6)
    close(jnp.bincount(np.array([-1, 0, 2, 5]), length=4), np.array([2, 0, 1, 0], np.int32), 1e-6)
    w = np.array([0.5, 1.0, 2.0], np.float32)
    close(jnp.bincount(np.array([0, 2, 2]), weights=w, minlength=4),
          np.bincount([0, 2, 2], weights=w, minlength=4).astype(np.float32), 1e-6)
    close(jax.jit(lambda x: jnp.bincount(x, length=3))(np.array([0, 2, 2])),
          np.array([1, 0, 2], np.int32), 1e-6)
    with pytest.raises(TypeError, match="integer"):
        jnp.bincount(np.array([0.5]))
    with pytest.raises(ValueError, match="invalid argument side='middle', expected 'left' or "
                       "'right'"):
        jnp.searchsorted(a, v, side="middle")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=8), st.lists(st.integers(-6, 6), max_size=5),
       st.sampled_from(["left", "right"]))
def test_hypothesis_searchsorted(a, v, side):
    a = np.sort(np.array(a, np.int32))
    v = np.array(v, np.int32)
    close(jnp.searchsorted(a, v, side=side), np.searchsorted(a, v, side=side).astype(np.int32), 1e-6)


# ---------------------------------------------------------------- select, choose, compress


def test_select_choose_compress_extract():
    x = np.arange(6, dtype=np.float32)
    conds = [x < 2, x > 3]
    choices = [x * 10, -x]
    close(jnp.select(conds, choices, default=7.0), np.select(conds, choices, default=7.0), 1e-6)
    with pytest.raises(ValueError, match="length"):
        jnp.select(conds, choices[:1])
    a = np.array([0, 1, 2, 1])
    ch = [np.arange(4), np.arange(4) * 10, np.arange(4) * 100]
    close(jnp.choose(a, ch), np.choose(a, ch).astype(np.int32), 1e-6)
    close(jnp.choose(np.array([3, -1, 5, 0]), ch, mode="clip"),
          np.choose(np.array([3, -1, 5, 0]), ch, mode="clip").astype(np.int32), 1e-6)
    close(jnp.choose(np.array([3, -1, 5, 0]), ch, mode="wrap"),
          np.choose(np.array([3, -1, 5, 0]), ch, mode="wrap").astype(np.int32), 1e-6)
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.choose(np.array([3]), ch)
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    cond = np.array([True, False, True])
    close(jnp.compress(cond, m, axis=0), np.compress(cond, m, axis=0), 1e-6)
    close(jnp.compress(cond, m, axis=1), np.compress(cond, m, axis=1), 1e-6)
    close(jnp.compress(cond, m), np.compress(cond, m), 1e-6)
    got = jax.jit(lambda c, m: jnp.compress(c, m, axis=0, size=3, fill_value=-1.0))(cond, m)
    close(got, np.concatenate([m[[0, 2]], np.full((1, 4), -1, np.float32)]), 1e-6)
    close(jnp.extract(m > 5, m), np.extract(m > 5, m), 1e-6)
    close(jax.jit(lambda m: jnp.extract(m > 9, m, size=3))(m), np.array([10, 11, 0], np.float32), 1e-6)
