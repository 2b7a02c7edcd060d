"""jnp shape functions: values, shapes and dtypes against NumPy over shapes (0-d, empty,
negative axes), pad modes, gradients, vmap against a loop, and the errors JAX raises."""
import numpy as np
import pytest
from helpers import check_grads_x64
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr
import gpuarr.numpy as jnp

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
XI = np.arange(12, dtype=np.int32).reshape(3, 4)
V = np.arange(3, dtype=np.int32)


def same(out, want):
    if isinstance(want, (list, tuple)):
        assert len(out) == len(want)
        for o, w in zip(out, want):
            same(o, w)
        return
    out, want = np.asarray(out), np.asarray(want)
    assert out.shape == want.shape, (out.shape, want.shape)
    assert out.dtype == want.dtype, (out.dtype, want.dtype)
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pytest.mark.parametrize("fn", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("x", [np.float32(2), V, XI, X], ids=["0d", "1d", "2d", "3d"])
def test_atleast(fn, x):
    same(getattr(jnp, fn)(x), getattr(np, fn)(x))
    same(getattr(jnp, fn)(x, V), getattr(np, fn)(x, V))


@pytest.mark.parametrize("fn", ["hstack", "vstack", "dstack", "column_stack"])
@pytest.mark.parametrize("args", [(V, V), (XI, XI), (X, X)], ids=["1d", "2d", "3d"])
def test_stacks(fn, args):
    same(getattr(jnp, fn)(args), getattr(np, fn)(args))


@pytest.mark.parametrize("fn,ios,axis", [
    ("split", 2, 0), ("split", [1, 3], 2), ("split", [1, -1], -1), ("array_split", 3, 2),
    ("array_split", [1, 2], 1), ("hsplit", 3, None), ("vsplit", 2, None), ("dsplit", 2, None),
])
def test_splits(fn, ios, axis):
    args = (X, ios) if axis is None else (X, ios, axis)
    same(getattr(jnp, fn)(*args), getattr(np, fn)(*args))


def test_split_errors():
    with pytest.raises(ValueError, match="equal division"):
        jnp.split(X, 5, axis=2)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.split(X, 2, axis=3)


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 2, 1, 2), ()])
def test_tile(reps):
    same(jnp.tile(XI, reps), np.tile(XI, reps))
    same(jnp.tile(V, reps), np.tile(V, reps))


@pytest.mark.parametrize("repeats,axis", [(2, None), (2, 1), (np.array([1, 0, 2]), 1), (3, -1),
                                          (0, 0)])
def test_repeat(repeats, axis):
    same(jnp.repeat(X, repeats, axis), np.repeat(X, repeats, axis))


def test_repeat_total_length_and_tracers():
    out = jnp.repeat(XI, 2, 1, total_repeat_length=5)
    same(out, np.repeat(XI, 2, 1)[:, :5])
    out = jnp.repeat(XI, np.array([1, 2, 0, 1]), 1, total_repeat_length=6)
    same(out, np.concatenate([np.repeat(XI, [1, 2, 0, 1], 1), XI[:, 3:4], XI[:, 3:4]], 1))
    out = gpuarr.jit(lambda x: jnp.repeat(x, 3, axis=0))(XI)
    same(out, np.repeat(XI, 3, 0))
    with pytest.raises(gpuarr.errors.ConcretizationTypeError):
        gpuarr.jit(lambda r: jnp.repeat(XI, r))(np.int32(2))


@pytest.mark.parametrize("axis", [None, 0, (1, 2), -1])
def test_flips(axis):
    same(jnp.flip(X, axis), np.flip(X, axis))
    same(jnp.fliplr(X), np.fliplr(X))
    same(jnp.flipud(X), np.flipud(X))


@pytest.mark.parametrize("shift,axis", [(1, None), (-5, None), (2, 1), ((1, 2), (0, 2)), (7, -1),
                                        (0, 0)])
def test_roll(shift, axis):
    same(jnp.roll(X, shift, axis), np.roll(X, shift, axis))


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
@pytest.mark.parametrize("axes", [(0, 1), (1, 2), (2, 0)])
def test_rot90(k, axes):
    same(jnp.rot90(X, k, axes), np.rot90(X, k, axes))


def test_axis_moves_and_aliases():
    same(jnp.rollaxis(X, 2), np.rollaxis(X, 2))
    same(jnp.rollaxis(X, 0, 3), np.rollaxis(X, 0, 3))
    same(jnp.permute_dims(X, (2, 0, 1)), np.transpose(X, (2, 0, 1)))
    same(jnp.concat([X, X], axis=-1), np.concatenate([X, X], -1))
    same(jnp.unstack(X, axis=1), tuple(np.moveaxis(X, 1, 0)))
    assert jnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert jnp.broadcast_shapes(5, (1,)) == (5,)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        jnp.broadcast_shapes((2,), (3,))


def test_append_delete_insert():
    same(jnp.append(X, X), np.append(X, X))
    same(jnp.append(X, X, 1), np.append(X, X, 1))
    for obj, axis in [(1, None), (np.array([0, 2]), 1), (slice(0, 2), 2),
                      (np.array([True, False, True]), 1), (-1, 0)]:
        same(jnp.delete(X, obj, axis), np.delete(X, obj, axis))
    for obj, vals, axis in [(1, 99.0, None), (np.array([0, 2]), np.float32(7), 1),
                            (1, np.arange(4.0), 1), (2, np.arange(8.0).reshape(2, 4), 1),
                            (np.array([1, 1, 3]), np.array([5.0, 6.0, 7.0]), 2),
                            (0, np.array([[1.0], [2.0]]), 2), (-1, 5.0, 0)]:
        same(jnp.insert(X, obj, vals, axis), np.insert(X, obj, vals, axis))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.delete(X, [0, 1])
    with pytest.raises(IndexError):
        jnp.delete(X, 5, 0)


def test_resize_trim_diff_ediff1d_block():
    same(jnp.resize(V, (2, 5)), np.resize(V, (2, 5)))
    z = np.array([0, 0, 1, 2, 0, 3, 0], np.int32)
    for trim in ("fb", "f", "b"):
        same(jnp.trim_zeros(z, trim), np.trim_zeros(z, trim))
    for n in (0, 1, 2, 3):
        same(jnp.diff(X, n), np.diff(X, n))
        same(jnp.diff(X, n, 0, prepend=np.float32(0), append=X[:1]),
             np.diff(X, n, 0, prepend=np.float32(0), append=X[:1]) if n else X)
    same(jnp.diff(np.array([True, False, False])), np.diff(np.array([True, False, False])))
    same(jnp.ediff1d(X, to_end=np.array([1.0], np.float32), to_begin=np.array([2.0, 3.0], np.float32)),
         np.ediff1d(X, to_end=np.array([1.0], np.float32), to_begin=np.array([2.0, 3.0], np.float32)))
    a, b, c, d = (np.full(s, i, np.float32) for i, s in enumerate([(2, 2), (2, 3), (1, 2), (1, 3)]))
    same(jnp.block([[a, b], [c, d]]), np.block([[a, b], [c, d]]))
    same(jnp.block([V, V]), np.block([V, V]))


MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum",
         "minimum", "mean", "median", "empty"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad_width", [1, (1, 2), ((0, 1), (2, 3)), ((3, 5), (6, 2))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_modes_match_numpy(mode, pad_width, dtype):
    x = XI.astype(dtype)
    out = jnp.pad(x, pad_width, mode)
    if mode == "empty":
        assert out.shape == np.pad(x, pad_width, mode).shape
        return
    want = np.pad(x, pad_width, mode)
    if mode in ("mean", "median", "linear_ramp") and dtype == np.int32:
        # NumPy rounds these integer statistics; JAX too (the ramp truncates).
        np.testing.assert_allclose(out, want, atol=1)
        return
    same(out, want)


def test_pad_options_and_errors():
    same(jnp.pad(XI, 2, constant_values=((1, 2), (3, 4))), np.pad(XI, 2, constant_values=((1, 2), (3, 4))))
    x = XI.astype(np.float32)
    same(jnp.pad(x, 2, "linear_ramp", end_values=(5, -1)), np.pad(x, 2, "linear_ramp", end_values=(5, -1)))
    same(jnp.pad(x, 2, "reflect", reflect_type="odd"), np.pad(x, 2, "reflect", reflect_type="odd"))
    same(jnp.pad(x, 2, "mean", stat_length=2), np.pad(x, 2, "mean", stat_length=2))
    same(jnp.pad(np.float32(3), 2), np.pad(np.float32(3), 2))
    with pytest.raises(NotImplementedError, match="Unimplemented padding mode"):
        jnp.pad(x, 1, "bogus")
    with pytest.raises(ValueError, match="negative values"):
        jnp.pad(x, -1)
    with pytest.raises(TypeError, match="integral"):
        jnp.pad(x, 1.5)
    with pytest.raises(ValueError, match="empty axis"):
        jnp.pad(np.zeros((0, 2)), 1, "edge")


@pytest.mark.parametrize("fn", [
    lambda x: jnp.pad(x, ((1, 2), (0, 3)), "reflect"),
    lambda x: jnp.pad(x, 2, "edge"),
    lambda x: jnp.pad(x, 1, "constant", constant_values=2.0),
    lambda x: jnp.roll(x, 2, 1),
    lambda x: jnp.rot90(x),
    lambda x: jnp.tile(x, (2, 1)),
    lambda x: jnp.repeat(x, 2, 0),
    lambda x: jnp.insert(x, 1, 0.5, axis=1),
    lambda x: jnp.diff(x, 2),
    lambda x: jnp.vstack(jnp.split(x, 2, axis=1)),
], ids=["reflect", "edge", "constant", "roll", "rot90", "tile", "repeat", "insert", "diff",
        "split"])
def test_gradients_vmap_and_jit(fn):
    x = np.random.default_rng(0).normal(size=(3, 4))
    check_grads_x64(fn, (x,), order=1)
    xs = np.random.default_rng(1).normal(size=(2, 3, 4)).astype(np.float32)
    out = gpuarr.vmap(fn)(xs)
    np.testing.assert_allclose(out, np.stack([np.asarray(fn(v)) for v in xs]), rtol=1e-6)
    np.testing.assert_allclose(gpuarr.jit(fn)(xs[0]), fn(xs[0]), rtol=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(-6, 6), st.integers(0, 3))
def test_hypothesis_roll_and_tile(shape, shift, reps):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    axis = shift % len(shape)
    same(jnp.roll(x, shift, axis), np.roll(x, shift, axis))
    same(jnp.tile(x, reps), np.tile(x, reps))
    same(jnp.flip(x, -1), np.flip(x, -1))
