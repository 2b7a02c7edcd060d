"""Sorting, searching, set operations, select, take, take_along_axis and unravel_index against
JAX itself: the same call through gpuarr and JAX must give the same values, shapes, dtypes and
weak types (of every output, for the functions that return several), or the same exception."""
import ml_dtypes
import numpy as np
import pytest

import gpuarr

jax = pytest.importorskip("jax")
rjnp = pytest.importorskip("jax.numpy")

bf16 = ml_dtypes.bfloat16
NANS = np.array([3.0, np.nan, 1.0, np.inf, -np.inf, np.nan, 1.0, -0.0, 0.0], np.float32)


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [type(out).__name__, len(out)] + [x for o in out for x in _leaves(o)]
    return [(np.asarray(out), np.dtype(out.dtype), bool(out.weak_type))]


def _run(mod, jit, fn, args):
    def call(*xs):
        return fn(mod.numpy, *xs)
    if jit:
        call = mod.jit(call)
    try:
        out = call(*[mod.numpy.asarray(x) for x in args])
    except Exception as e:  # the exception itself is what is compared
        return ("raised", type(e).__name__, str(e).split("\n")[0])
    return ("value", _leaves(out))


def check(fn, *args, jit=False, message=True):
    got = _run(gpuarr, jit, fn, args)
    want = _run(jax, jit, fn, args)
    assert got[0] == want[0], (got, want)
    if got[0] == "raised":
        assert got[1:] == want[1:] if message else got[1] == want[1], (got, want)
        return
    assert len(got[1]) == len(want[1])
    for g, w in zip(got[1], want[1]):
        if not isinstance(w, tuple):  # container type and length
            assert g == w
            continue
        assert g[0].shape == w[0].shape, (g, w)
        assert g[1:] == w[1:], (g, w)
        gv, wv = g[0], w[0]
        if wv.dtype == bf16:
            gv, wv = gv.astype(np.float32), wv.astype(np.float32)
        np.testing.assert_array_equal(gv, wv)


# ---------------------------------------------------------------- sort, sort_complex


@pytest.mark.parametrize("kw", [{}, {"descending": True}, {"stable": False},
                                {"axis": None}, {"axis": 0}])
def test_sort_nan_and_signed_zero(kw):
    check(lambda m, x: m.sort(x, **kw), NANS)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.float16, bf16, np.complex64])
def test_sort_dtypes_descending(dtype):
    x = (np.arange(12).reshape(3, 4) * 7 % 5 - 2).astype(dtype)
    check(lambda m, x: m.sort(x, axis=0, descending=True), x)


@pytest.mark.parametrize("x", [np.array(2.5, np.float32), 3, 1j], ids=repr)
def test_sort_complex_of_a_scalar_is_a_value_error(x):
    check(lambda m, x: m.sort_complex(x), x)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, bf16, np.complex64])
def test_sort_complex_dtypes(dtype):
    x = (np.arange(8).reshape(2, 4) * 5 % 7 - 3).astype(dtype)
    check(lambda m, x: m.sort_complex(x), x)


# ---------------------------------------------------------------- searchsorted

SORTED_C = np.array([-2 + 1j, -1 + 0j, -1 + 2j, 0j, 1 - 1j, np.nan + 0j], np.complex64)
QUERY_C = np.array([[-1 + 1j, -1 + 2j, 5j], [np.nan + 0j, 1 - 1j, -3 + 0j]], np.complex64)


@pytest.mark.parametrize("method", ["scan", "scan_unrolled", "sort", "compare_all"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_complex(method, side):
    check(lambda m, a, v: m.searchsorted(a, v, side=side, method=method), SORTED_C, QUERY_C)


@pytest.mark.parametrize("method", ["scan", "sort", "compare_all"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_nan_inf_signed_zero(method, side):
    a = np.array([-np.inf, -1.0, 0.0, 0.0, 2.5, np.inf, np.nan], np.float32)
    v = np.array([np.nan, -np.inf, -0.0, 0.0, 2.5, 9.0, np.inf], np.float32)
    check(lambda m, a, v: m.searchsorted(a, v, side=side, method=method), a, v)


def test_searchsorted_complex_under_jit():
    check(lambda m, a, v: m.searchsorted(a, v, side="right"), SORTED_C, QUERY_C, jit=True)


@pytest.mark.parametrize("a,v", [
    (np.array([1, 2, 3], np.uint8), np.array([-1, 2], np.int8)),
    (np.array([1, 2, 3], np.int32), np.array([1.5, 2.5], np.float32)),
    (np.array([False, True, True]), np.array(True)),
    (np.array([1.0, 2.0], np.float16), np.array([2.0], bf16)),
], ids=str)
def test_searchsorted_promotion(a, v):
    check(lambda m, a, v: m.searchsorted(a, v), a, v)


def test_searchsorted_sorter():
    a = np.array([3.0, 1.0, 2.0, 0.0], np.float32)
    v = np.array([2.5, -1.0, 5.0], np.float32)
    check(lambda m, a, v, s: m.searchsorted(a, v, sorter=s), a, v, np.array([3, 1, 2, 0]))
    # out-of-bound sorter entries are clamped, as indexing clamps them
    check(lambda m, a, v, s: m.searchsorted(a, v, sorter=s), a, v, np.array([3, 1, 9, 9]))
    check(lambda m, a, v, s: m.searchsorted(a, v, sorter=s), a, v, np.arange(4.0), message=False)


def test_searchsorted_bad_arguments():
    a, v = np.array([1.0, 2.0], np.float32), np.array([1.5], np.float32)
    check(lambda m, a, v: m.searchsorted(a, v, method="foo"), a, v)
    check(lambda m, a, v: m.searchsorted(a, v, sorter=[1, 0]), a, v)
    check(lambda m, a, v: m.searchsorted(a.reshape(2, 1), v, side="foo"), a, v)
    check(lambda m, a, v: m.searchsorted(a, v, side="middle"), a, v)


# ---------------------------------------------------------------- unique and its family

UNIQUE_INPUTS = {
    "bool": np.array([True, False, True, True]),
    "int8": np.array([[3, -1, 3], [0, -1, 5]], np.int8),
    "uint8": np.array([7, 7, 0, 200, 0], np.uint8),
    "float16": np.array([1.5, np.nan, 1.5, -2.0, np.nan], np.float16),
    "bfloat16": np.array([1.5, np.nan, 1.5, -2.0, np.nan], bf16),
    "float32": NANS,
    "complex64": np.array([1 + 1j, 1 + 0j, 1 + 1j, np.nan + 0j, np.nan * 1j, -1j], np.complex64),
}


@pytest.mark.parametrize("name,equal_nan", [
    ("bool", True), ("bfloat16", True), ("float32", True), ("complex64", True),
    ("complex64", False)])
def test_unique_all_outputs(name, equal_nan):
    check(lambda m, x: m.unique(x, True, True, True, equal_nan=equal_nan), UNIQUE_INPUTS[name])


@pytest.mark.parametrize("name", ["bfloat16", "float32", "complex64"])
@pytest.mark.parametrize("size,fill", [(8, None), (2, 1)])
def test_unique_size_fill(name, size, fill):
    check(lambda m, x: m.unique(x, True, True, True, size=size, fill_value=fill),
          UNIQUE_INPUTS[name])


@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("size", [None, 2, 4])
def test_unique_axis_with_and_without_size(axis, size):
    x = np.array([[1, 2, 1], [3, 4, 3], [1, 2, 1]], np.int32)
    check(lambda m, x: m.unique(x, True, True, True, axis=axis, size=size, fill_value=0), x)


@pytest.mark.parametrize("equal_nan", [True, False])
def test_unique_axis_nan_columns(equal_nan):
    x = np.array([[np.nan, np.nan, 0.0], [1.0, 1.0, 2.0]], np.float32)
    check(lambda m, x: m.unique(x, axis=1, equal_nan=equal_nan), x)


def test_unique_under_jit():
    x = np.array([3, 5, -2, 5, -2], np.int32)
    check(lambda m, x: m.unique(x, True, True, True, size=4), x, jit=True)
    check(lambda m, x: m.unique(x, return_inverse=True, axis=0, size=2, fill_value=0),
          x.reshape(5, 1), jit=True)
    check(lambda m, x: m.unique(x), x, jit=True)  # needs a static size


@pytest.mark.parametrize("call", [
    lambda m, x: m.unique(x, size=2.0),
    lambda m, x: m.unique(x, size=3, fill_value=m.arange(3.0)),  # broadcasts
    lambda m, x: m.unique(x, size=3, fill_value=m.array([1, 2])),
    lambda m, x: m.unique(x, axis=2),
    lambda m, x: m.unique(x[:0], size=2),
    lambda m, x: m.unique(x[:0], True, True, True, size=2, fill_value=7),
    lambda m, x: m.unique(x, sorted=False),
    lambda m, x: m.unique(3.5, size=2),
])
def test_unique_arguments(call):
    check(call, np.array([3, 5, -2, 5, -2], np.int32))


@pytest.mark.parametrize("fn", ["unique_all", "unique_counts", "unique_inverse", "unique_values"])
def test_unique_family(fn):
    x = UNIQUE_INPUTS["float16"]
    check(lambda m, x: getattr(m, fn)(x), x)
    check(lambda m, x: getattr(m, fn)(x, size=7, fill_value=0), x)


@pytest.mark.parametrize("fn", ["unique_all", "unique_values"])
def test_unique_family_size_under_jit(fn):
    check(lambda m, x: getattr(m, fn)(x, size=6), np.array([[3, 1, 3], [2, 2, 5]], np.int32),
          jit=True)


# ---------------------------------------------------------------- set operations


@pytest.mark.parametrize("fn,kw", [
    ("setdiff1d", {}), ("setdiff1d", {"size": 7, "fill_value": -1}), ("setxor1d", {}),
    ("setxor1d", {"size": 7}), ("union1d", {"size": 7})], ids=str)
def test_setops_nan(fn, kw):
    x = np.array([np.nan, 1.0, np.nan, 2.0, np.inf, -0.0], np.float32)
    y = np.array([np.nan, 2.0, 3.0, 0.0], np.float32)
    check(lambda m, x, y: getattr(m, fn)(x, y, **kw), x, y)


@pytest.mark.parametrize("fn,dtypes,kw", [
    ("setdiff1d", (np.int8, np.uint8), {}), ("setdiff1d", (bf16, np.complex64), {"size": 9}),
    ("setxor1d", (bf16, np.complex64), {}), ("setxor1d", (np.int8, np.uint8), {"size": 9}),
    ("union1d", (np.bool_, np.int32), {"size": 9})], ids=str)
def test_setops_mixed_dtypes(fn, dtypes, kw):
    x = (np.arange(6) % 4 - 1).astype(dtypes[0])
    y = np.array([0, 2, 5]).astype(dtypes[1])
    check(lambda m, x, y: getattr(m, fn)(x, y, **kw), x, y)


@pytest.mark.parametrize("fn", ["setdiff1d", "setxor1d"])
def test_setops_assume_unique(fn):
    x, y = np.array([5, 1, 3, 7], np.int32), np.array([3, 8, 1], np.int32)
    check(lambda m, x, y: getattr(m, fn)(x, y, assume_unique=True), x, y)
    check(lambda m, x, y: getattr(m, fn)(x, y, assume_unique=True, size=6), x, y, jit=True)


@pytest.mark.parametrize("fn", ["setdiff1d", "setxor1d", "union1d", "intersect1d"])
def test_setops_size_zero(fn):
    # setdiff1d, setxor1d and intersect1d fail as JAX's do; union1d gives an empty array
    x, y = np.array([-4, 2, -2, 1], np.int32), np.array([0, 2, 5], np.int32)
    # (setdiff1d's IndexError words the bad index differently)
    check(lambda m, x, y: getattr(m, fn)(x, y, size=0), x, y, message=fn != "setdiff1d")
    check(lambda m, x, y: getattr(m, fn)(x, y, size=0, fill_value=1), x, y,
          message=fn != "setdiff1d")


@pytest.mark.parametrize("fn", ["setdiff1d", "setxor1d", "union1d"])
def test_setops_need_a_static_size_under_jit(fn):
    x, y = np.array([-4, 2, -2, 1], np.int32), np.array([0, 2, 5], np.int32)
    check(lambda m, x, y: getattr(m, fn)(x, y), x, y, jit=True)


@pytest.mark.parametrize("fn", ["setdiff1d", "union1d"])
def test_setops_traced_size(fn):
    x, y = np.array([-4, 2, -2, 1], np.int32), np.array([0, 2, 5], np.int32)
    check(lambda m, x, y, s: getattr(m, fn)(x, y, size=s), x, y, np.array(3), jit=True)


# ---------------------------------------------------------------- select


@pytest.mark.parametrize("cond_dtype", [np.bool_, np.int32, np.float32])
def test_select_conditions_of_any_dtype(cond_dtype):
    c1 = np.array([1, 0, 2, 0]).astype(cond_dtype)
    c2 = np.array([1, 1, 0, 0]).astype(cond_dtype)
    x, y = np.arange(4, dtype=np.float32), -np.arange(4, dtype=np.float32)
    check(lambda m, c1, c2, x, y: m.select([c1, c2], [x, y], default=9), c1, c2, x, y)
    check(lambda m, c1, c2, x, y: m.select([c1, c2], [x, y]), c1, c2, x, y, jit=True)


@pytest.mark.parametrize("dtypes", [(np.int8, np.uint8), (bf16, np.float16)], ids=str)
def test_select_promotion(dtypes):
    c = np.array([[True, False, False], [False, True, False]])
    x, y = np.ones((2, 3), dtypes[0]), np.zeros((2, 3), dtypes[1])
    check(lambda m, c, x, y: m.select([c, ~c], [x, y]), c, x, y)
    check(lambda m, c, x: m.select([c], [x], default=2.5), c, x)


@pytest.mark.parametrize("call", [
    lambda m, c, x: m.select([c[:2]], [x]),
    lambda m, c, x: m.select([c], [x], default=x[:2]),
    lambda m, c, x: m.select([c], [x, x]),
    lambda m, c, x: m.select([c], [x], default=None),
    lambda m, c, x: m.select([c], [x], default=[1, 2, 3]),
    lambda m, c, x: m.select([], []),
    lambda m, c, x: m.select([c.reshape(3, 1)], [x], default=x.reshape(1, 3)),
    lambda m, c, x: m.select([c[0]], [x]),
])
def test_select_shapes_and_errors(call):
    check(call, np.array([True, False, True]), np.array([1.0, 2.0, 3.0], np.float32))


# ---------------------------------------------------------------- take, take_along_axis


@pytest.mark.parametrize("idx", [True, np.array([True, False]), np.array([1, 2], np.uint8)],
                         ids=str)
def test_take_boolean_and_narrow_indices(idx):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(lambda m, x: m.take(x, idx), x)
    check(lambda m, x: m.take(x, idx, axis=0), x)


@pytest.mark.parametrize("mode", [None, "fill", "wrap", "promise_in_bounds", "raise", "foo"])
def test_take_modes(mode):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(lambda m, x, i: m.take(x, i, axis=1, mode=mode), x, np.array([-5, -1, 0, 3, 4, 9]))


@pytest.mark.parametrize("dtype,fill", [(np.float32, 1j), (np.int32, 1j), (bf16, 1j),
                                        (np.bool_, 1j), (np.int32, 2.5), (np.uint8, -1),
                                        (np.int32, np.nan)], ids=str)
def test_take_fill_value(dtype, fill):
    x = np.arange(6).astype(dtype)
    check(lambda m, x, i: m.take(x, i, fill_value=fill), x, np.array([0, 99]))


def test_take_from_an_empty_axis():
    e = np.zeros((0, 3), np.float32)
    check(lambda m, e: m.take(e, m.array([0])), e)
    check(lambda m, e: m.take(e, m.array([0]), axis=0, mode="clip"), e)
    check(lambda m, e: m.take(e, m.array([], m.int32), axis=0), e)
    check(lambda m, e: m.take(e, m.array([0, 4]), axis=1), e)


@pytest.mark.parametrize("axis", [None, 0])
def test_take_along_axis_none_needs_1d_indices(axis):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(lambda m, x, i: m.take_along_axis(x, i, axis=axis), x, np.array([[0, 11]]))
    check(lambda m, x, i: m.take_along_axis(x, i, axis=None), x, np.array([0, 11, -1, 12]),
          jit=True)


def test_take_along_axis_errors():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(lambda m, x, i: m.take_along_axis(x, i, axis=0), x, np.array([[0, 2]] * 3))
    check(lambda m, x, i: m.take_along_axis(x, i), x, np.array([[0, 2]] * 2))
    check(lambda m, x, i: m.take_along_axis(x, i), x, np.array([0, 2]))
    check(lambda m, x, i: m.take_along_axis(x, i), x, np.array([[0.0]]))
    check(lambda m, i: m.take_along_axis(m.array(2.0), i), np.array(0))
    check(lambda m, i: m.take_along_axis(m.array(2.0), i, axis=None), np.array(0))
    check(lambda m, x, i: m.take_along_axis(x, i, fill_value=1j), x, np.array([[0, 9]] * 3))


@pytest.mark.parametrize("axis", [0, 1])
def test_take_along_axis_empty(axis):
    check(lambda m, x, i: m.take_along_axis(x, i, axis=axis), np.zeros((0, 3), np.float32),
          np.array([[0, 1, 2]]))
    check(lambda m, x, i: m.take_along_axis(x, i, axis=axis), np.zeros((0, 3), np.float32),
          np.array([[0, 1, 2]]), jit=True)


@pytest.mark.parametrize("mode", [None, "fill", "clip", "promise_in_bounds"])
@pytest.mark.parametrize("wrap", [None, False])
def test_take_along_axis_modes(mode, wrap):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([[-5, -1, 0, 3, 4]] * 3)
    if mode == "promise_in_bounds":
        i = np.array([[-4, -1, 0, 3]] * 3)  # out-of-bound results are unspecified
    check(lambda m, x, i: m.take_along_axis(x, i, axis=1, mode=mode,
                                            wrap_negative_indices=wrap), x, i)


# ---------------------------------------------------------------- unravel_index


@pytest.mark.parametrize("shape", [(3, 4), (12,), 12, (2, 3, 2), (), (3, 0), (1, 1)], ids=str)
def test_unravel_index_out_of_range(shape):
    idx = np.array([-14, -13, -12, -2, -1, 0, 5, 11, 12, 13, 100], np.int32)
    check(lambda m, i: m.unravel_index(i, shape), idx)


@pytest.mark.parametrize("idx", [np.array([0, 11, 12, 255], np.uint8),
                                 np.array([-128, 127, -1, -2], np.int8),
                                 np.array([2 ** 31 - 1, -2 ** 31], np.int32),
                                 np.array([True, False]), np.array([1.0], np.float32)], ids=str)
def test_unravel_index_dtypes(idx):
    check(lambda m, i: m.unravel_index(i, (3, 4)), idx)


def test_unravel_index_under_jit():
    check(lambda m, i: m.unravel_index(i, (3, 4)), np.array([-13, -1, 5, 13], np.int32), jit=True)
