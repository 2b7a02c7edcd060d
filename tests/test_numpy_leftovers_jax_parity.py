"""take's clip mode, searchsorted's side check, the cumulative functions' static axis, nonzero
and its family, Array.__index__, ones_like/full_like/empty_like dtypes, hsplit/dsplit and
string arguments against JAX itself: the same call through gpuarr and JAX must give the same
values, shape, dtype and weak type, or the same exception class and message."""
import operator
import re

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gjnp

jax = pytest.importorskip("jax")
rjnp = pytest.importorskip("jax.numpy")


def _message(e):
    """The message, less what names a source location or differs in wording only in the advice
    lines each library appends to a concretization error."""
    lines = []
    for line in str(e).split("\n"):
        if not line or line.startswith(("See https://", "Mark the argument static")):
            continue
        lines.append(re.sub(r" at \S+:\d+ for jit\.", ".", line))
    return "\n".join(lines)


def _describe(out):
    if isinstance(out, (tuple, list)):
        return [type(out).__name__] + [_describe(o) for o in out]
    if hasattr(out, "dtype") and hasattr(out, "shape"):
        return ("array", np.asarray(out), out.dtype, out.shape, out.weak_type)
    return ("python", type(out).__name__, out)


def _run(jx, jnp, fn):
    try:
        return ("value", _describe(fn(jx, jnp)))
    except Exception as e:  # the exception itself is what is compared
        return ("raised", type(e).__name__, _message(e))


def _same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and got[0] == want[0] and len(got) == len(want), (got, want)
        for g, w in zip(got[1:], want[1:]):
            _same(g, w)
    elif want[0] == "array":
        assert got[0] == "array", (got, want)
        assert (got[2], got[3], got[4]) == (want[2], want[3], want[4]), (got, want)
        np.testing.assert_array_equal(got[1], want[1])
    else:
        assert got == want


def check(fn):
    got, want = _run(gpuarr, gjnp, fn), _run(jax, rjnp, fn)
    assert got[0] == want[0], (got, want)
    if want[0] == "raised":
        assert got[1:] == want[1:]
    else:
        _same(got[1], want[1])


# ---------------------------------------------------------------- take, mode='clip'

X5 = np.arange(5.0, dtype=np.float32)
X34 = np.arange(12, dtype=np.int32).reshape(3, 4)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.int64])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_clip_clamps_raw_indices(dtype, axis):
    # JAX clamps to [0, n - 1]: -1 gives the first entry, not the last.
    idx = np.array([[-1, 2], [9, 0]]).astype(dtype)
    check(lambda jx, jnp: jnp.take(jnp.asarray(X34), jnp.asarray(idx), axis=axis, mode="clip"))


@pytest.mark.parametrize("mode", ["clip", "wrap", "fill", None])
@pytest.mark.parametrize("indices", [[-1, 7], [-10, -3, 2], -2, True, [True, False], [1.0], [],
                                     np.zeros(0, bool), np.zeros(0, np.float32)], ids=str)
def test_take_modes(mode, indices):
    check(lambda jx, jnp: jnp.take(jnp.asarray(X5), jnp.asarray(indices), mode=mode))


@pytest.mark.parametrize("mode", ["clip", "wrap", "fill", "raise", "foo"])
@pytest.mark.parametrize("indices", [[-1], [1.0], np.zeros((2, 0), np.int32)], ids=str)
def test_take_empty_axis(mode, indices):
    check(lambda jx, jnp: jnp.take(jnp.zeros((0, 3)), jnp.asarray(indices), axis=0, mode=mode))


def test_take_clip_method_and_jit():
    idx = np.array([-1, 7], np.int32)
    check(lambda jx, jnp: jnp.asarray(X5).take(jnp.asarray(idx), mode="clip"))
    check(lambda jx, jnp: jx.jit(lambda a, i: jnp.take(a, i, mode="clip"))(X5, idx))
    check(lambda jx, jnp: jnp.take(jnp.asarray(X5), jnp.asarray(idx), mode="clip",
                                   fill_value=7.0))


# ---------------------------------------------------------------- searchsorted's side

@pytest.mark.parametrize("side", ["middle", 3, None, "LEFT", "left", "right"])
def test_searchsorted_side(side):
    check(lambda jx, jnp: jnp.searchsorted(jnp.asarray(X5), 2.0, side=side))
    check(lambda jx, jnp: jnp.asarray(X5).searchsorted(jnp.asarray([2.0, 9.0]), side=side))


# ---------------------------------------------------------------- cumulative functions' axis

@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
@pytest.mark.parametrize("axis", [[0], np.array([0]), np.array(1), (0,), np.int64(1), 1.0, 5, -1,
                                  None], ids=repr)
def test_cumulative_static_axis(name, axis):
    # JAX's jit hashes its static axis first: lists and arrays are refused as unhashable.
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones((2, 3)), axis=axis))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative_static_axis_method_and_jit(name):
    check(lambda jx, jnp: getattr(jnp.ones((2, 3)), name)(axis=[0]))
    check(lambda jx, jnp: jx.jit(lambda a: getattr(jnp, name)(a, axis=[0]))(jnp.ones((2, 3))))
    check(lambda jx, jnp: getattr(jnp, name)([1, 2], axis=[0]))  # the axis comes first


def test_cumulative_array_axis_is_unhashable():
    for mod in (gjnp, rjnp):
        with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
            mod.cumsum(mod.ones((2, 3)), axis=mod.asarray(0))
    check(lambda jx, jnp: jnp.add.accumulate(jnp.ones((2, 3)), axis=[0]))


# ---------------------------------------------------------------- nonzero and its family

INTS = np.array([[0, 1, 2], [3, 0, 0]], np.int32)
FLOATS = np.array([0.0, 1.0, 0.0, 2.0, 3.0], np.float32)


@pytest.mark.parametrize("a", [np.int32(1), 1, 0.0, True, np.array(True)], ids=repr)
def test_nonzero_0d(a):
    check(lambda jx, jnp: jnp.nonzero(a))
    check(lambda jx, jnp: jnp.asarray(a).nonzero())
    check(lambda jx, jnp: jnp.argwhere(a))
    check(lambda jx, jnp: jnp.flatnonzero(a))


@pytest.mark.parametrize("size", [-1, -3, 0, 2, 7])
@pytest.mark.parametrize("name", ["nonzero", "flatnonzero", "argwhere"])
@pytest.mark.parametrize("a", [FLOATS, INTS, np.zeros((0, 2)), np.zeros(3), np.array(5)], ids=str)
def test_nonzero_size(name, a, size):
    check(lambda jx, jnp: getattr(jnp, name)(a, size=size, fill_value=-1))


# (A tuple of the wrong length is refused too, with another message than JAX's internal one.)
@pytest.mark.parametrize("fill_value", [(7, 8), [7, 8], np.array([7]), 1.5, np.float32(2)],
                         ids=str)
@pytest.mark.parametrize("size", [0, 5])
def test_nonzero_fill_value(fill_value, size):
    check(lambda jx, jnp: jnp.nonzero(INTS, size=size, fill_value=fill_value))


@pytest.mark.parametrize("name", ["nonzero", "flatnonzero", "argwhere"])
def test_nonzero_under_jit_needs_size(name):
    check(lambda jx, jnp: jx.jit(getattr(jnp, name))(FLOATS))
    check(lambda jx, jnp: jx.jit(lambda a: getattr(jnp, name)(a, size=4))(FLOATS))


def test_nonzero_traced_size_and_0d_argwhere():
    check(lambda jx, jnp: jx.jit(lambda s: jnp.nonzero(jnp.arange(3), size=s))(2))
    check(lambda jx, jnp: jx.jit(jnp.argwhere)(np.int32(1)))
    check(lambda jx, jnp: jx.jit(lambda a: a.nonzero())(FLOATS))
    check(lambda jx, jnp: jnp.nonzero(FLOATS, size=1.5))
    check(lambda jx, jnp: jnp.argwhere(np.float32(2), size=3, fill_value=0.5))
    check(lambda jx, jnp: jnp.flatnonzero([1, 0]))


# ---------------------------------------------------------------- Array.__index__

INDEXABLE = {
    "bool": np.array(True), "bool1d": np.array([True]), "int0d": np.array(3, np.int32),
    "uint8": np.array(200, np.uint8), "int8neg": np.array(-5, np.int8),
    "int1d": np.array([3], np.int32), "int2d": np.array([[3, 4]], np.int32),
    "float": np.array(3.0, np.float32), "float1d": np.array([3.0], np.float32),
    "complex": np.array(3j, np.complex64), "empty": np.zeros((0,), np.int32),
}


@pytest.mark.parametrize("name", list(INDEXABLE))
def test_index(name):
    x = INDEXABLE[name]
    check(lambda jx, jnp: operator.index(jnp.asarray(x)))
    check(lambda jx, jnp: list(range(jnp.asarray(x))))
    check(lambda jx, jnp: [10, 11, 12, 13, 14][jnp.asarray(x)])


def test_index_under_transformations():
    check(lambda jx, jnp: jx.grad(lambda x: x * operator.index(jnp.asarray(2)))(1.0))
    for jx in (gpuarr, jax):  # the tracer's own message is worded differently
        with pytest.raises(jx.errors.TracerIntegerConversionError):
            jx.jit(lambda a: operator.index(a))(np.int32(3))


# ---------------------------------------------------------------- *_like dtypes

@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
@pytest.mark.parametrize("dtype", ["foo", object, str, "U3", "int8", None], ids=str)
def test_like_dtypes(name, dtype):
    args = (2,) if name == "full_like" else ()
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones(3), *args, dtype=dtype))
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones(3), *args, dtype=dtype, shape=(2, 1)))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_lists(name):
    args = (2,) if name == "full_like" else ()
    check(lambda jx, jnp: getattr(jnp, name)([1, 2], *args))
    check(lambda jx, jnp: getattr(jnp, name)(np.int8(3), *args))


def test_full_like_fill_values():
    check(lambda jx, jnp: jnp.full_like(jnp.ones(2), [1, 2]))
    check(lambda jx, jnp: jnp.full_like(jnp.ones((2, 3)), jnp.arange(3.0)))
    check(lambda jx, jnp: jnp.full_like(jnp.ones(3), 2, dtype="uint8"))


# ---------------------------------------------------------------- hsplit and dsplit

@pytest.mark.parametrize("name", ["hsplit", "dsplit", "vsplit", "split", "array_split"])
@pytest.mark.parametrize("shape", [(), (4,), (4, 4), (4, 4, 4), (3, 3, 3)], ids=str)
@pytest.mark.parametrize("ios", [2, [1, 3]], ids=str)
def test_splits_by_rank(name, shape, ios):
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones(shape), ios))


@pytest.mark.parametrize("name", ["hsplit", "dsplit", "vsplit", "split", "array_split"])
def test_split_errors_name_the_function(name):
    check(lambda jx, jnp: getattr(jnp, name)([[[1, 2]]], 2))
    check(lambda jx, jnp: getattr(jnp, name)("ab", 2))
    check(lambda jx, jnp: getattr(jnp, name)(jnp.ones((4, 4, 4)), [1.5]))
    check(lambda jx, jnp: jx.jit(lambda s: getattr(jnp, name)(jnp.ones((4, 4, 4)), s))(2))
    check(lambda jx, jnp: jx.jit(lambda s: getattr(jnp, name)(jnp.ones((4, 4, 4)), s))(
        np.array([1, 2])))


# ---------------------------------------------------------------- string arguments

ONE_ARG = ["unique", "unique_all", "unique_counts", "unique_inverse", "unique_values", "nonzero",
           "argwhere"]
TWO_ARGS = ["setdiff1d", "setxor1d", "union1d", "intersect1d"]


@pytest.mark.parametrize("name", ONE_ARG)
@pytest.mark.parametrize("arg", ["a", "hello", b"a", [1, 2]], ids=str)
def test_string_argument(name, arg):
    check(lambda jx, jnp: getattr(jnp, name)(arg))


@pytest.mark.parametrize("name", TWO_ARGS)
@pytest.mark.parametrize("args", [("a", X5), (X5, "b"), ([1], X5), (X5, [1]), ([1], "b"),
                                  ("a", [1]), ("a", "b")], ids=str)
def test_string_arguments(name, args):
    check(lambda jx, jnp: getattr(jnp, name)(*args))


def test_string_index_arguments():
    check(lambda jx, jnp: jnp.unravel_index("a", (2, 3)))
    check(lambda jx, jnp: jnp.unravel_index([1], (2, 3)))
    check(lambda jx, jnp: jnp.ravel_multi_index(("a",), (2,)))
    check(lambda jx, jnp: jnp.ravel_multi_index(([1],), (2,)))
    check(lambda jx, jnp: jnp.ravel_multi_index((np.int32(1), "a"), (2, 2)))
