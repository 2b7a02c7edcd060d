"""Creation, manipulation, product and reduction functions against JAX itself (split, vsplit,
squeeze, stack, swapaxes, tile, unstack, trim_zeros, tri, tril, triu, vander, zeros_like,
logspace, tensordot, trace, vdot, vecdot, vecmat, sum, std, var and the other reductions'
`axis`, size, trapezoid, tril_indices, unpackbits, unwrap): the same call through gpuarr and
JAX must give the same values, shapes, dtypes and weak types, or the same exception."""
import warnings

import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as gjnp

jax = pytest.importorskip("jax")
rjnp = pytest.importorskip("jax.numpy")

BF16 = np.dtype(gjnp.bfloat16)


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [(type(out).__name__, len(out))] + [x for o in out for x in _leaves(o)]
    if isinstance(out, (gpuarr.Array, jax.Array)):
        return [("array", np.asarray(out), np.dtype(out.dtype), bool(out.weak_type))]
    return [("value", out)]


def _run(lib, fn, arrays, jit):
    jnp = gjnp if lib is gpuarr else rjnp

    def call(*xs):
        return fn(jnp, *xs)
    if jit:
        call = lib.jit(call)
    try:
        out = call(*[jnp.asarray(a) for a in arrays])
    except Exception as e:  # the exception itself is what is compared
        return ("raised", type(e).__name__, str(e).split("\n")[0])
    return ("value", _leaves(out))


def check(fn, *arrays, jit=False, message=True):
    """fn(jnp, *arrays) through gpuarr and JAX: the same result, or the same exception class
    (and first line of its message unless message=False)."""
    got, want = _run(gpuarr, fn, arrays, jit), _run(jax, fn, arrays, jit)
    assert got[0] == want[0], (got, want)
    if got[0] == "raised":
        assert got[1] == want[1], (got, want)
        if message:
            assert got[2] == want[2], (got, want)
        return
    assert len(got[1]) == len(want[1]), (got, want)
    for g, w in zip(got[1], want[1]):
        assert g[0] == w[0], (g, w)
        if g[0] != "array":
            assert g == w
            continue
        assert g[1].shape == w[1].shape, (g, w)
        assert (g[2], g[3]) == (w[2], w[3]), (g, w)
        gv, wv = g[1], w[1]
        if gv.dtype in (BF16, np.float16):
            gv, wv = gv.astype(np.float32), wv.astype(np.float32)
        tol = 1e-2 if g[2] in (BF16, np.float16) else 1e-5
        np.testing.assert_allclose(gv, wv, rtol=tol, atol=tol, equal_nan=True)


def A(dtype, shape, seed=0):
    """Small deterministic test values of `dtype`."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        v = rng.integers(0, 2, n)
    elif dtype in ("int8", "int32", "uint8"):
        v = rng.integers(0 if dtype == "uint8" else -4, 6, n)
    elif dtype == "complex64":
        v = np.round(rng.standard_normal(n), 2) + 1j * np.round(rng.standard_normal(n), 2)
    else:
        v = np.round(rng.standard_normal(n) * 2, 2)
    return v.astype(BF16 if dtype == "bfloat16" else dtype).reshape(shape)


DTYPES = ["bool", "int8", "uint8", "int32", "float16", "bfloat16", "float32", "complex64"]
X3 = A("float32", (2, 3, 4))
X2 = A("float32", (3, 4), seed=1)


# ---------------------------------------------------------------- reductions: axis

@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "all", "any", "mean", "var",
                                  "std", "ptp", "average"])
@pytest.mark.parametrize("axis", [[0, 1], [-1], [], np.array([0, 2]), np.array(1)], ids=str)
def test_sequence_axis(name, axis):
    # A list (or NumPy array) of axes reads as a tuple, as in JAX.
    check(lambda m, x: getattr(m, name)(x, axis=axis), X3)


@pytest.mark.parametrize("name", ["sum", "var"])
def test_sequence_axis_jit(name):
    check(lambda m, x: getattr(m, name)(x, axis=[0, 2], keepdims=True), X3, jit=True)


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
                                  "nanstd", "median", "nanmedian", "count_nonzero"])
@pytest.mark.parametrize("axis", [[0, 1], np.array([0, 1])], ids=str)
def test_unhashable_axis(name, axis):
    # These take `axis` statically in JAX: a list or an array is refused as unhashable.
    check(lambda m, x: getattr(m, name)(x, axis=axis), X3)


@pytest.mark.parametrize("name", ["quantile", "nanquantile", "percentile", "nanpercentile"])
def test_unhashable_axis_quantiles(name):
    check(lambda m, x: getattr(m, name)(x, 0.5, axis=[0]), X3)


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std"])
@pytest.mark.parametrize("axis", [[0, 0], 3, -4, (0, 3)], ids=str)
def test_bad_axis(name, axis):
    # mean, var and std index the shape with the axis (IndexError); sum checks it (ValueError).
    check(lambda m, x: getattr(m, name)(x, axis=axis), X3)


@pytest.mark.parametrize("name", ["mean", "var"])
def test_bad_axis_with_where(name):
    check(lambda m, x: getattr(m, name)(x, axis=3, where=x > 0), X3)
    check(lambda m, x: getattr(m, name)(x, axis=0), np.float32(2.5))


@pytest.mark.parametrize("name", ["mean", "var", "std"])
def test_where_not_broadcastable(name):
    check(lambda m, x, w: getattr(m, name)(x, where=w), X2, np.ones(5, bool))


# ---------------------------------------------------------------- reductions: dtype

@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_given_half_dtype_accumulates_in_it(name, dtype):
    x = np.linspace(-3, 5, 40, dtype=np.float32).reshape(4, 10) / 3
    check(lambda m, x: getattr(m, name)(x, dtype=getattr(m, dtype)), x)
    check(lambda m, x: getattr(m, name)(x, axis=1, dtype=getattr(m, dtype)), x, jit=True)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_sum_without_dtype_accumulates_in_float32(dtype):
    check(lambda m, x: m.sum(x), np.linspace(-3, 5, 40).astype(BF16 if dtype == "bfloat16"
                                                                 else dtype))


@pytest.mark.parametrize("name", ["sum", "std", "var"])
@pytest.mark.parametrize("dt", DTYPES)
def test_reductions_dtypes(name, dt):
    check(lambda m, x: getattr(m, name)(x, axis=1), A(dt, (3, 4)))


@pytest.mark.parametrize("call", [
    lambda m, x: m.sum(x, dtype="foo"), lambda m, x: m.var(x, dtype="foo"),
    lambda m, x: m.std(x, dtype=int), lambda m, x: m.std(x, axis=0, dtype=m.int8),
    lambda m, x: m.var(x.astype(m.complex64), dtype=m.float32),
    lambda m, x: m.std(x, ddof=1, correction=1),
])
def test_dtype_and_ddof_errors(call):
    check(call, X2)


@pytest.mark.parametrize("kw", [{}, {"ddof": 1}, {"correction": 2}, {"ddof": 13},
                                {"keepdims": True}, {"axis": (0, 1)}])
@pytest.mark.parametrize("name", ["std", "var"])
def test_std_var_values(name, kw):
    check(lambda m, x: getattr(m, name)(x, **kw), X2)


def test_sum_keywords():
    check(lambda m, x: m.sum(x, initial=2.5, axis=0), X2)
    check(lambda m, x, w: m.sum(x, where=w, initial=1), X2, X2 > 0)
    check(lambda m, x: m.sum(x, promote_integers=False), A("int8", (3, 4)))
    check(lambda m, x: m.sum(x, axis=1), np.full((2, 40), 100, np.int8))


# ---------------------------------------------------------------- creation

@pytest.mark.parametrize("axis", [0, -1, -2, 1, 2, -3])
@pytest.mark.parametrize("num", [0, 1, 4])
def test_logspace_axis_scalar_bounds(axis, num):
    # JAX places the samples by inserting into (and, for num > 1, indexing) a list of dims.
    check(lambda m: m.logspace(0.0, 2.0, num, axis=axis))
    check(lambda m: m.linspace(0.0, 2.0, num, axis=axis))


@pytest.mark.parametrize("axis", [0, 1, -1, -2, 2])
def test_logspace_axis_array_bounds(axis):
    check(lambda m, s, e: m.logspace(s, e, 4, axis=axis), np.array([0.0, 1.0], np.float32),
          np.array([2.0, 3.0], np.float32))


def test_logspace_axis_jit():
    check(lambda m, s, e: m.logspace(s, e, 4, axis=1), np.float32(0), np.float32(2), jit=True)


@pytest.mark.parametrize("dt", DTYPES)
def test_vander_dtypes(dt):
    # The powers have x's dtype: integers wrap around, booleans are refused.
    check(lambda m, x: m.vander(x, 4), A(dt, (3,)))


@pytest.mark.parametrize("call", [
    lambda m, x: m.vander(x), lambda m, x: m.vander(x, 0), lambda m, x: m.vander(x, -1),
    lambda m, x: m.vander(x, 3.0), lambda m, x: m.vander(x, increasing=True),
    lambda m, x: m.vander(x[:, None]), lambda m, x: m.vander(x, "a"),
])
def test_vander_args(call):
    check(call, np.array([100, 3, -2], np.int8))


@pytest.mark.parametrize("call", [
    lambda m: m.tri(3), lambda m: m.tri(3, 4, -1), lambda m: m.tri(3.0), lambda m: m.tri(3, 4.0),
    lambda m: m.tri(3, k=1.0), lambda m: m.tri("a"), lambda m: m.tri(None),
    lambda m: m.tri(3, -2), lambda m: m.tri(3, dtype=m.int8),
])
def test_tri(call):
    check(call)


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("k", [0, 1, -5, np.int64(1), 1.0, "a", None])
def test_tril_triu(name, k):
    check(lambda m, x: getattr(m, name)(x, k), A("float32", (2, 3, 4)))


@pytest.mark.parametrize("name", ["tril", "triu", "vander"])
def test_static_int_arrays_refused(name):
    # k and N are static in JAX: an array is unhashable (its class is named in the message).
    check(lambda m, x: getattr(m, name)(x, m.int32(1)), X2 if name != "vander" else X2[0],
          message=False)


@pytest.mark.parametrize("dt", DTYPES)
def test_zeros_like(dt):
    check(lambda m, x: m.zeros_like(x), A(dt, (2, 3)))
    check(lambda m, x: m.zeros_like(x, dtype=m.int8, shape=(3,)), A(dt, (2, 3)))


def test_zeros_like_bad_dtype():
    check(lambda m, x: m.zeros_like(x, dtype="foo"), X2)
    check(lambda m: m.zeros_like(2.5))


# ---------------------------------------------------------------- products

@pytest.mark.parametrize("dts", [("complex64", "complex64"), ("complex64", "float32"),
                                 ("float32", "complex64"), ("int8", "uint8"),
                                 ("bfloat16", "float16"), ("bool", "bool")], ids=str)
def test_vecdot_conjugates_first(dts):
    check(lambda m, a, b: m.vecdot(a, b), A(dts[0], (2, 3)), A(dts[1], (2, 3), seed=1))
    check(lambda m, a, b: m.vecdot(a, b, axis=0), A(dts[0], (3, 2)), A(dts[1], (3, 1), seed=1))


def test_vecdot_vdot_vecmat():
    c = np.array([[1 + 2j, 3 - 1j]], np.complex64)
    check(lambda m, a, b: m.vecdot(a, b), c, c[:, ::-1], jit=True)
    check(lambda m, a, b: m.vdot(a, b), c, c[:, ::-1])
    check(lambda m, a, b: m.vecmat(a, b), c[0], np.ones((2, 3), np.complex64))
    check(lambda m: m.vecdot([1, 2], [3, 4]))


@pytest.mark.parametrize("axes", [0, 1, 2, ([1, 2], [0, 1]), (1, 0), 2.0, ([1, 2],), None,
                                  "a", ([1], [0, 1])], ids=str)
def test_tensordot_axes(axes):
    check(lambda m, a, b: m.tensordot(a, b, axes), A("float32", (2, 3, 4)),
          A("float32", (3, 4, 2), seed=1))


def test_tensordot_scalars():
    check(lambda m, a, b: m.tensordot(a, b, 0), np.float32(2.5), A("float32", (3,)))
    check(lambda m, a: m.tensordot(a, 2.0, 0), A("float32", (2, 3)), jit=True)
    check(lambda m, a, b: m.tensordot(a, b, 1), np.float32(2.5), A("float32", (3,)))


@pytest.mark.parametrize("kw", [{}, {"offset": 1}, {"offset": -5}, {"axis1": 2, "axis2": 0},
                                {"dtype": "int8"}, {"axis1": 1, "axis2": 1}])
def test_trace(kw):
    check(lambda m, x: m.trace(x, **kw), A("int8", (3, 4, 2)))


def test_trace_float_offset():
    # JAX's message shows its tracer of the offset.
    check(lambda m, x: m.trace(x, 1.0), X2, message=False)


def test_trace_traced_offset():
    # The offset may be traced, as JAX's trace builds its mask with a dynamic k.
    check(lambda m, x, k: m.trace(x, k), X2, np.int32(1), jit=True)


# ---------------------------------------------------------------- manipulation

@pytest.mark.parametrize("ios", [2, [1, 3], [], [1.0], [[1], [2]], 0, "a", np.array([1, 2])],
                         ids=str)
@pytest.mark.parametrize("name", ["split", "vsplit"])
def test_split_sections(name, ios):
    check(lambda m, x: getattr(m, name)(x, ios), A("float32", (4, 3)))


def test_vsplit_shapes():
    check(lambda m, x: m.vsplit(x, 2), A("float32", (4,)))
    check(lambda m, x: m.vsplit(x, 2), np.float32(1))
    check(lambda m: m.vsplit([[1, 2], [3, 4]], 2))
    check(lambda m, x: m.split(x, 3, axis=-1), A("int8", (2, 6)), jit=True)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), [0, 2], 1, 1.0, (0, 0), ()], ids=str)
def test_squeeze(axis):
    check(lambda m, x: m.squeeze(x, axis), A("float32", (1, 3, 1)))


@pytest.mark.parametrize("call", [
    lambda m, x: m.stack([x, x], out=x), lambda m, x: m.stack([x, x], axis=-1, dtype=m.int8),
    lambda m, x: m.stack([x, x[1:]]), lambda m, x: m.vstack([x, x[0]]),
    lambda m, x: m.vstack([x[0, 0], x[0, 0]]), lambda m, x: m.vstack([x, x], dtype=m.float16),
])
def test_stack(call):
    check(call, X2)


@pytest.mark.parametrize("axes", [(0, 2), (-1, 0), (1, 1), (0, 3), (1.0, 0), (None, 1), ("a", 1)],
                         ids=str)
def test_swapaxes(axes):
    check(lambda m, x: m.swapaxes(x, *axes), X3)


def test_swapaxes_scalar():
    check(lambda m: m.swapaxes(3.0, 0, 1))


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 2, 1, 2), (), 0, np.int64(2)], ids=str)
def test_tile(reps):
    check(lambda m, x: m.tile(x, reps), A("int8", (2, 3)))


def test_tile_array_reps():
    check(lambda m, x: m.tile(x, m.int32(2)), A("int8", (2, 3)))


@pytest.mark.parametrize("axis", [0, 1, -1, 2, None])
def test_unstack(axis):
    check(lambda m, x: m.unstack(x, axis=axis), A("bfloat16", (2, 3)))


def test_unstack_scalar():
    check(lambda m, x: m.unstack(x), np.float32(2))


@pytest.mark.parametrize("trim", ["fb", "f", "b", "B", ""])
def test_trim_zeros(trim):
    check(lambda m, x: m.trim_zeros(x, trim), np.array([0, 0, 1, 2, 0, 3, 0, 0], np.int8))


def test_trim_zeros_traced():
    check(lambda m, x: m.trim_zeros(x), np.array([0.0, 1.0, 0.0], np.float32), jit=True,
          message=False)


# ---------------------------------------------------------------- misc

@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1), [0, 1], (0, 0), 2])
def test_size(axis):
    check(lambda m, x: m.size(x, axis), X2)


def test_size_and_shape_scalar():
    check(lambda m, x: m.size(x, 0), np.float32(1))
    check(lambda m, x: (m.shape(x), m.size(x), m.ndim(x)), X3, jit=True)


@pytest.mark.parametrize("name", ["shape", "size", "ndim"])
def test_shape_of_list_warns(name):
    # JAX answers for a list but warns that a future release will refuse it.
    seen = []
    for mod in (gjnp, rjnp):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = getattr(mod, name)([[1, 2, 3]])
        assert out == {"shape": (1, 3), "size": 3, "ndim": 2}[name]
        seen.append([(w.category, str(w.message)) for w in caught])
    assert seen[0] == seen[1]
    assert seen[0][0] == (DeprecationWarning, f"{name} requires ndarray or scalar arguments, got "
                          "<class 'list'> at position 0. In a future JAX release this will be "
                          "an error.")


@pytest.mark.parametrize("dts", [("bool", "bool"), ("uint8", "uint8"), ("float16", "float32"),
                                 ("int32", "int32"), ("bfloat16", "bfloat16")], ids=str)
def test_trapezoid_promotes_y_and_x_together(dts):
    check(lambda m, y, x: m.trapezoid(y, x), A(dts[0], (4,)), A(dts[1], (4,), seed=1))


@pytest.mark.parametrize("kw", [{}, {"dx": 2}, {"dx": 0.5}, {"axis": 0}, {"axis": -2},
                                {"axis": 2}])
def test_trapezoid_spacing(kw):
    check(lambda m, y: m.trapezoid(y, **kw), A("float32", (3, 4)))
    check(lambda m, y: m.trapezoid(y, **kw), A("int8", (3, 4)), jit="axis" in kw)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (1,), ()], ids=str)
def test_trapezoid_short_axes(shape):
    check(lambda m, y: m.trapezoid(y), A("float32", shape))


def test_trapezoid_sample_points():
    check(lambda m, y, x: m.trapezoid(y, x), A("float32", (3, 4)), A("float32", (4,), seed=2))
    check(lambda m, y, x: m.trapezoid(y, x, axis=0), A("float32", (3, 4)),
          A("float32", (3, 4), seed=2))
    check(lambda m, y, d: m.trapezoid(y, dx=d), A("float32", (3, 4)), A("float32", (3, 1)))
    check(lambda m, y: m.trapezoid(y, x=[0.0, 1.0, 3.0, 4.0]), A("float32", (3, 4)))


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("args", [(3,), (3, 1), (3, -1, 4), (0,), (-1,), (3, 1.0), (3.0,),
                                  (3, 0, 4.0), (None,), (3, None), (4, 1, 2)], ids=str)
def test_tri_indices(name, args):
    check(lambda m: getattr(m, name)(*args))


@pytest.mark.parametrize("name", ["tril_indices_from", "triu_indices_from"])
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (3,), (2, 3, 4), ()], ids=str)
def test_tri_indices_from(name, shape):
    check(lambda m, x: getattr(m, name)(x, 1), A("float32", shape))


@pytest.mark.parametrize("name", ["tril_indices_from", "triu_indices_from"])
def test_tri_indices_from_args(name):
    check(lambda m: getattr(m, name)([[1, 2], [3, 4]]))
    check(lambda m, x: getattr(m, name)(x, 1.0), X2)


UB = np.array([[2, 7, 255], [0, 128, 17]], np.uint8)


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": -1}, {"axis": 2}, {"axis": -3},
                                {"axis": 1.0}, {"axis": (0,)}, {"count": 5}, {"count": -3},
                                {"count": 20}, {"count": 60}, {"count": -60},
                                {"axis": 1, "count": 30}, {"axis": 0, "count": -2},
                                {"count": 2.0}, {"bitorder": "little"}], ids=str)
def test_unpackbits(kw):
    check(lambda m, x: m.unpackbits(x, **kw), UB)


def test_unpackbits_scalar_and_static_count():
    check(lambda m, x: m.unpackbits(x, axis=0), np.uint8(5))
    check(lambda m, x: m.unpackbits(x, axis=1, count=3), UB, jit=True)
    check(lambda m, x: m.unpackbits(x, count=m.int32(3)), UB, message=False)


@pytest.mark.parametrize("dt", ["int32", "int8", "uint8", "float16", "float32"])
@pytest.mark.parametrize("period", [4, 5, 4.5, None])
def test_unwrap_dtypes(dt, period):
    # p and period are promoted together: integer phases keep their dtype (and wrap around).
    kw = {} if period is None else {"period": period}
    check(lambda m, p: m.unwrap(p, **kw), np.array([0, 3, 7, 1, 6], dt))


@pytest.mark.parametrize("kw", [{}, {"discont": 1.0}, {"axis": 0}, {"axis": 1}, {"axis": -3},
                                {"axis": 1.0}, {"period": 1j}, {"discont": 1.0, "period": 3.5}])
def test_unwrap_args(kw):
    check(lambda m, p: m.unwrap(p, **kw), np.array([[0.0, 1.0, 3.5, 7.0], [-2.0, 0.5, 6.5, 13.0]],
                                                   np.float32))


def test_unwrap_edge_inputs():
    check(lambda m, p: m.unwrap(p), np.array([0j, 4j], np.complex64))
    check(lambda m, p: m.unwrap(p), np.array([3], np.int32))
    check(lambda m, p: m.unwrap(p), np.zeros((2, 0), np.float32))
    check(lambda m, p: m.unwrap(p, period=4), np.array([0, 3, 7, 1], np.int32), jit=True)


def _loaded(lib, tmp_path):
    """jnp.load of what np.save wrote: bfloat16 comes back as bfloat16 (NumPy saved it as
    two-byte voids), a float32 array as an Array, an object array as it was saved."""
    import ml_dtypes
    out = []
    for k, value in enumerate([np.array([1.5, -2.0], ml_dtypes.bfloat16),
                               np.array([1.0, 2.0], np.float32),
                               np.array([{"a": 1}], dtype=object)]):
        path = tmp_path / f"{lib.__name__}{k}.npy"
        np.save(path, value, allow_pickle=True)
        got = lib.numpy.load(path, allow_pickle=True)
        out.append((isinstance(got, np.ndarray), str(got.dtype), got.tolist()))
    return out


def test_load_restores_bfloat16_as_jax(tmp_path):
    assert _loaded(gpuarr, tmp_path) == _loaded(jax, tmp_path)


def test_jnp_dtype_is_numpys_dtype_class_as_jax():
    # Libraries write types with it (orbax: `DType = jnp.dtype | np.dtype`).
    assert gjnp.dtype is rjnp.dtype is np.dtype
    for x in ["bfloat16", float, np.int8]:
        assert gjnp.dtype(x) == rjnp.dtype(x)
    assert gjnp.dtype(gjnp.ones(3)) == rjnp.dtype(rjnp.ones(3))
