"""lax gather / scatter / dynamic_slice: values against NumPy oracles, modes, errors, gradients
by finite differences, vmap against a Python loop, and JAX as an oracle for the general forms."""
import numpy as np
import pytest
from helpers import check_grads_x64, rand

import gpuarr as jax
import gpuarr.numpy as jnp
from gpuarr import lax

GDN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
SDN = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))
ROWS = np.array([[0], [2], [2]], np.int32)


def loop_vmap(f, *args):
    return np.stack([np.asarray(f(*[a[i] for a in args])) for i in range(len(args[0]))])


def assert_same(got, want, dtype=None):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == (dtype or want.dtype), (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- gather


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.uint8, np.bool_, np.float16])
def test_gather_rows_all_dtypes(dtype):
    x = (np.arange(12).reshape(4, 3) % 3).astype(dtype)
    out = lax.gather(x, ROWS, GDN, (1, 3))
    assert_same(out, x[[0, 2, 2]])


def test_gather_modes_and_default_fills():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([[1], [7], [-1]], np.int32)
    assert_same(lax.gather(x, idx, GDN, (1, 3)), x[[1, 3, 0]])  # promise_in_bounds clamps
    assert_same(lax.gather(x, idx, GDN, (1, 3), mode="clip"), x[[1, 3, 0]])
    filled = np.asarray(lax.gather(x, idx, GDN, (1, 3), mode="fill"))
    assert np.array_equal(filled[0], x[1]) and np.isnan(filled[1:]).all()
    out = lax.gather(x, idx, GDN, (1, 3), mode=lax.GatherScatterMode.FILL_OR_DROP, fill_value=-5)
    assert_same(out[1:], np.full((2, 3), -5, np.float32))
    for dt, fill in [(np.int32, np.iinfo(np.int32).min), (np.uint8, 255), (np.bool_, True)]:
        got = lax.gather(x.astype(dt), idx, GDN, (1, 3), mode="fill")
        assert np.asarray(got)[1, 0] == fill and np.asarray(got).dtype == dt


def test_gather_window_partly_out_of_bounds_fills_whole_window():
    x = np.arange(10, dtype=np.float32)
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    idx = np.array([[2], [8]], np.int32)
    out = np.asarray(lax.gather(x, idx, dn, (3,), mode="fill"))
    assert np.array_equal(out[0], [2, 3, 4]) and np.isnan(out[1]).all()
    assert_same(lax.gather(x, idx, dn, (3,), mode="clip"), np.array([[2, 3, 4], [7, 8, 9]], np.float32))


def test_gather_matches_jax_general_dimension_numbers():
    jjax = pytest.importorskip("jax")
    x = rand((3, 4, 5))
    idx = np.array([[[0, 1], [2, 3]], [[1, 0], [2, 4]]], np.int32)  # batch (2, 2), vector of 2
    dn = lax.GatherDimensionNumbers(offset_dims=(1, 3), collapsed_slice_dims=(1,),
                                    start_index_map=(2, 1))
    jdn = jjax.lax.GatherDimensionNumbers(offset_dims=(1, 3), collapsed_slice_dims=(1,),
                                          start_index_map=(2, 1))
    got = lax.gather(x, idx, dn, (2, 1, 3), mode="clip")
    want = jjax.lax.gather(x, idx, jdn, (2, 1, 3), mode="clip")
    assert_same(got, want)
    bdn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
                                     operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    jbdn = jjax.lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,),
                                           start_index_map=(1,), operand_batching_dims=(0,),
                                           start_indices_batching_dims=(0,))
    bidx = np.array([[[1], [3]], [[0], [0]], [[2], [1]]], np.int32)
    assert_same(lax.gather(x[:, :, 0], bidx, bdn, (1, 1)),
                jjax.lax.gather(x[:, :, 0], bidx, jbdn, (1, 1)))


def test_gather_errors():
    x = rand((4, 3))
    with pytest.raises(TypeError, match="integer"):
        lax.gather(x, ROWS.astype(np.float32), GDN, (1, 3))
    with pytest.raises(TypeError, match="slice_sizes"):
        lax.gather(x, ROWS, GDN, (1, 4))
    with pytest.raises(TypeError, match="start_index_map"):
        lax.gather(x, np.zeros((3, 2), np.int32), GDN, (1, 3))
    with pytest.raises(ValueError, match="Unknown gather mode"):
        lax.gather(x, ROWS, GDN, (1, 3), mode="wrap")


def test_gather_grad_is_scatter_add_and_vmap():
    x = rand((4, 3)).astype(np.float64)
    check_grads_x64(lambda x: lax.gather(x, ROWS, GDN, (1, 3)), (x,), order=2)
    g = jax.grad(lambda x: lax.gather(x, ROWS, GDN, (1, 3)).sum())(x.astype(np.float32))
    assert_same(g, np.array([[1] * 3, [0] * 3, [2] * 3, [0] * 3], np.float32))
    xs = rand((3, 4, 3))
    idxs = np.array([[[0], [3]], [[1], [1]], [[2], [0]]], np.int32)
    f = lambda x, i: lax.gather(x, i, GDN, (1, 3))  # noqa: E731
    assert_same(jax.vmap(f)(xs, idxs), loop_vmap(f, xs, idxs))
    assert_same(jax.vmap(f, (0, None))(xs, ROWS), loop_vmap(lambda x: f(x, ROWS), xs))
    assert_same(jax.vmap(f, (None, 0))(xs[0], idxs), loop_vmap(lambda i: f(xs[0], i), idxs))
    jaxpr = str(jax.make_jaxpr(jax.grad(lambda x: lax.gather(x, ROWS, GDN, (1, 3)).sum()))(x))
    assert "scatter-add" in jaxpr  # JAX's printed name


# ---------------------------------------------------------------- scatter


def _np_scatter(kind, x, rows, upd):
    out = x.copy()
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum,
           "max": np.maximum}
    if kind == "set":
        out[rows] = upd
    else:
        ops[kind].at(out, rows, upd)
    return out


@pytest.mark.parametrize("kind", ["set", "add", "sub", "mul", "min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_scatter_family_repeated_indices(kind, dtype):
    fn = {"set": lax.scatter, "add": lax.scatter_add, "sub": lax.scatter_sub,
          "mul": lax.scatter_mul, "min": lax.scatter_min, "max": lax.scatter_max}[kind]
    x = (np.arange(12).reshape(4, 3) - 4).astype(dtype)
    upd = (np.arange(9).reshape(3, 3) - 3).astype(dtype)
    with jax.enable_x64(dtype == np.float64):  # float64 stays float64 only with x64 on
        out = fn(x, ROWS, upd, SDN)
    assert_same(out, _np_scatter(kind, x, [0, 2, 2], upd))


def test_float64_inputs_become_float32_without_x64():
    x = np.zeros((4, 3))
    out = lax.scatter_add(x, ROWS, np.ones((3, 3)), SDN)
    assert_same(out, _np_scatter("add", x, [0, 2, 2], np.ones((3, 3))).astype(np.float32))


def test_scatter_out_of_bounds_dropped_or_clipped():
    x = np.zeros((4, 2), np.float32)
    idx = np.array([[1], [9], [-1]], np.int32)
    upd = np.ones((3, 2), np.float32)
    want = x.copy()
    want[1] = 1
    assert_same(lax.scatter_add(x, idx, upd, SDN), want)
    assert_same(lax.scatter_add(x, idx, upd, SDN, mode="promise_in_bounds"), want)
    clipped = want.copy()
    clipped[3] += 1
    clipped[0] += 1
    assert_same(lax.scatter_add(x, idx, upd, SDN, mode="clip"), clipped)


def test_scatter_errors():
    x = rand((4, 3))
    with pytest.raises(TypeError, match="dtype"):
        lax.scatter_add(x, ROWS, np.ones((3, 3), np.int32), SDN)
    with pytest.raises(TypeError, match="updates"):
        lax.scatter_add(x, ROWS, np.ones((2, 3), np.float32), SDN)
    with pytest.raises(TypeError, match="ScatterDimensionNumbers"):
        lax.scatter_add(x, ROWS, np.ones((3, 3), np.float32), GDN)


def test_scatter_grads():
    x, u = rand((4, 3)).astype(np.float64), rand((3, 3), seed=1).astype(np.float64)
    uniq = np.array([[0], [2]], np.int32)
    check_grads_x64(lambda x, u: lax.scatter_add(x, ROWS, u, SDN), (x, u), order=2)
    check_grads_x64(lambda x, u: lax.scatter_sub(x, ROWS, u, SDN), (x, u), order=1)
    check_grads_x64(lambda x, u: lax.scatter(x, uniq, u, SDN, unique_indices=True), (x, u[:2]), order=2)
    check_grads_x64(lambda x, u: lax.scatter_mul(x, uniq, u, SDN, unique_indices=True), (x, u[:2]), order=1)
    check_grads_x64(lambda x, u: lax.scatter_max(x, uniq, u, SDN), (x, u[:2]), order=1)
    # With repeated indices the last update wins, and only it receives a gradient.
    g = jax.grad(lambda u: lax.scatter(np.zeros((4, 3), np.float32), ROWS, u, SDN).sum())(
        u.astype(np.float32))
    assert_same(g, np.array([[1] * 3, [0] * 3, [1] * 3], np.float32))
    with pytest.raises(NotImplementedError, match="unique_indices"):
        jax.grad(lambda u: lax.scatter_mul(x, ROWS, u, SDN).sum())(u)


@pytest.mark.parametrize("fn", [lax.scatter_add, lax.scatter, lax.scatter_max])
def test_scatter_vmap(fn):
    xs, us = rand((3, 4, 3)), rand((3, 3, 3), seed=2)
    idxs = np.array([[[0], [3], [1]], [[1], [1], [2]], [[2], [0], [3]]], np.int32)
    f = lambda x, i, u: fn(x, i, u, SDN)  # noqa: E731
    assert_same(jax.vmap(f)(xs, idxs, us), loop_vmap(f, xs, idxs, us))
    assert_same(jax.vmap(f, (0, None, 0))(xs, ROWS, us), loop_vmap(lambda x, u: f(x, ROWS, u), xs, us))
    assert_same(jax.vmap(f, (None, 0, None))(xs[0], idxs, us[0]),
                loop_vmap(lambda i: f(xs[0], i, us[0]), idxs))


def test_scatter_apply_repeats_per_occurrence():
    x = np.zeros(4, np.float32)
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    out = lax.scatter_apply(x, np.array([[0], [0], [2]], np.int32), lambda v: v + 1, dn,
                            update_shape=(3,))
    assert_same(out, np.array([2, 0, 1, 0], np.float32))
    vm = jax.vmap(lambda x: lax.scatter_apply(x, np.array([[1]], np.int32), jnp.exp, dn,
                                              update_shape=(1,)))(np.zeros((2, 3), np.float32))
    assert_same(vm, np.array([[0, 1, 0]] * 2, np.float32))


# ---------------------------------------------------------------- dynamic slicing


def test_dynamic_slice_clamps_and_wraps_negative():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    assert_same(lax.dynamic_slice(x, (1, 2), (2, 2)), x[1:3, 2:4])
    assert_same(lax.dynamic_slice(x, (3, 4), (2, 2)), x[2:4, 3:5])  # clamped
    assert_same(lax.dynamic_slice(x, (-1, -2), (1, 2)), x[3:4, 3:5])  # negative counts from end
    assert_same(lax.dynamic_slice(x, jnp.array([1, 1]), (2, 3)), x[1:3, 1:4])
    assert_same(lax.dynamic_slice_in_dim(x, 1, 2, axis=1), x[:, 1:3])
    assert_same(lax.dynamic_index_in_dim(x, 2, axis=0, keepdims=False), x[2])
    assert_same(lax.index_in_dim(x, -1, axis=1), x[:, 4:5])
    with pytest.raises(ValueError, match="Length of slice indices"):  # JAX's class and words
        lax.dynamic_slice(x, (1,), (2, 2))
    with pytest.raises(TypeError, match="slice_sizes"):
        lax.dynamic_slice(x, (0, 0), (5, 1))


def test_dynamic_update_slice():
    x = np.zeros((4, 5), np.float32)
    u = np.ones((2, 2), np.float32)
    want = x.copy()
    want[2:4, 3:5] = 1
    assert_same(lax.dynamic_update_slice(x, u, (3, 9)), want)
    want = x.copy()
    want[:, 1] = 7
    assert_same(lax.dynamic_update_index_in_dim(x, np.full(4, 7, np.float32), 1, axis=1), want)
    with pytest.raises(TypeError, match="dtype"):
        lax.dynamic_update_slice(x, u.astype(np.int32), (0, 0))
    with pytest.raises(TypeError, match="must be smaller than operand shape"):
        lax.dynamic_update_slice(x, np.ones((5, 1), np.float32), (0, 0))


def test_dynamic_slice_under_jit_with_traced_start():
    x = np.arange(10, dtype=np.float32)
    f = jax.jit(lambda x, i: lax.dynamic_slice(x, (i,), (3,)))
    for i in (0, 4, 9, -2):
        j = min(max(i % 10 if i < 0 else i, 0), 7)
        assert_same(f(x, i), x[j:j + 3])
    assert "dynamic_slice" in str(jax.make_jaxpr(f)(x, 1))


def test_dynamic_slice_grads_and_vmap():
    x = rand((4, 5)).astype(np.float64)
    check_grads_x64(lambda x: lax.dynamic_slice(x, (1, 2), (2, 2)), (x,), order=2)
    check_grads_x64(lambda x, u: lax.dynamic_update_slice(x, u, (1, 2)), (x, x[:2, :2] * 3), order=2)
    g = jax.grad(lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 2)).sum())(x.astype(np.float32), 1)
    want = np.zeros((4, 5), np.float32)
    want[1:3, 1:3] = 1
    assert_same(g, want)
    xs = rand((3, 4, 5))
    starts = np.array([0, 2, 3], np.int32)
    f = lambda x, i: lax.dynamic_slice(x, (i, i), (2, 2))  # noqa: E731
    assert_same(jax.vmap(f)(xs, starts), loop_vmap(f, xs, starts))
    assert_same(jax.vmap(f, (None, 0))(xs[0], starts), loop_vmap(lambda i: f(xs[0], i), starts))
    assert_same(jax.vmap(lambda x: f(x, 1))(xs), loop_vmap(lambda x: f(x, 1), xs))
    u = rand((3, 2, 2), seed=4)
    h = lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1))  # noqa: E731
    assert_same(jax.vmap(h)(xs, u, starts), loop_vmap(h, xs, u, starts))
    assert_same(jax.vmap(h, (0, 0, None))(xs, u, 1), loop_vmap(lambda x, u: h(x, u, 1), xs, u))
    assert_same(jax.vmap(h, (None, None, 0))(xs[0], u[0], starts),
                loop_vmap(lambda i: h(xs[0], u[0], i), starts))


def test_index_take():
    x = rand((3, 4, 5))
    i0, i1 = np.array([0, 2]), np.array([1, 3])
    assert_same(lax.index_take(x, (i0, i1), (0, 1)), x[i0, i1])
