"""Collectives over a vmap's named axis (lax.psum, pmean, pmax, pmin, axis_index): values
against NumPy reductions over the batch axis, nesting, jit on either side, control flow inside,
gradients, and JAX's NameError for an axis name no vmap binds."""
import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr as jax
from gpuarr import lax

X = np.arange(12, dtype=np.float32).reshape(4, 3) - 5


def named(f, **kw):
    return jax.vmap(f, axis_name="i", **kw)


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("collective,reduce", [
    (lax.psum, np.sum), (lax.pmax, np.max), (lax.pmin, np.min),
    (lax.pmean, np.mean),
])
def test_reductions_over_the_named_axis(collective, reduce):
    want = np.broadcast_to(reduce(X, axis=0), X.shape)
    assert_same(named(lambda v: collective(v, "i"))(X), want)
    assert_same(jax.jit(named(lambda v: collective(v, "i")))(X), want)
    assert_same(named(jax.jit(lambda v: collective(v, "i")))(X), want)


def test_unmapped_values_count_once_per_position():
    out = named(lambda v, w: lax.psum(w, "i") + 0 * v, in_axes=(0, None))(X, X[0])
    assert_same(out, np.broadcast_to(4 * X[0], X.shape))
    assert_same(named(lambda v: lax.psum(1, "i") + 0 * v)(X), np.full(X.shape, 4, np.float32))
    out = named(lambda v, w: lax.pmax(w, "i") + 0 * v, in_axes=(0, None))(X, X[0])
    assert_same(out, np.broadcast_to(X[0], X.shape))


def test_psum_of_constants_is_the_axis_size_times_them_as_jax_folds_it():
    """No traced leaf: the value is the same at every position, so psum is the value times
    the axis size, with no collective in the program; a Python number keeps its type and a
    NumPy value its dtype, as in JAX (pmean's divisor is such a psum)."""
    jax_ = pytest.importorskip("jax")
    for lib in (jax, jax_):
        seen = []

        def f(v, lib=lib, seen=seen):
            seen.append([lib.lax.psum(1, "i"), lib.lax.psum(np.float32(2), "i"),
                         lib.lax.psum(np.ones(2, np.int32), "i")])
            return v / lib.lax.psum(1, "i")
        out = lib.vmap(f, axis_name="i")(X)
        assert_same(out, X / 4)
        assert [(type(v), np.asarray(v).dtype) for v in seen[0]] == [
            (int, np.dtype(np.int64)), (np.float32, np.dtype(np.float32)),
            (np.ndarray, np.dtype(np.int32))], lib
        assert seen[0][0] == 4 and seen[0][1] == 8 and seen[0][2].tolist() == [4, 4]
        program = str(lib.make_jaxpr(lib.vmap(f, axis_name="i"))(X))
        assert "psum" not in program and "reduce_sum" not in program, program
    out = named(lambda v: lax.pmean(v, "i"))(X)  # only the operand is summed
    assert str(jax.make_jaxpr(named(lambda v: lax.pmean(v, "i")))(X)).count("reduce_sum") == 1
    assert_same(out, np.broadcast_to(X.mean(0), X.shape))


def test_pmean_of_integers_is_float_and_pytrees_map():
    out = named(lambda v: lax.pmean(v, "i"))(np.arange(4, dtype=np.int32))
    assert_same(out, np.full(4, 1.5, np.float32))
    out = named(lambda v: lax.psum({"a": v, "b": v[0]}, "i"))(X)
    assert_same(out["a"], np.broadcast_to(X.sum(0), X.shape))
    assert_same(out["b"], np.full(4, X[:, 0].sum(), np.float32))


def test_axis_index_is_the_position():
    assert_same(named(lambda v: lax.axis_index("i") + 0 * v[0].astype(np.int32))(X),
                np.arange(4, dtype=np.int32))
    assert_same(named(jax.jit(lambda v: v * lax.axis_index("i")))(X),
                X * np.arange(4, dtype=np.float32)[:, None])


def test_nested_names_reduce_their_own_axis():
    inner = jax.vmap(lambda v: (lax.psum(v, "i"), lax.psum(v, "j"), lax.psum(v, ("i", "j"))),
                     axis_name="j")
    by_i, by_j, both = jax.vmap(inner, axis_name="i")(X)
    assert_same(by_i, np.broadcast_to(X.sum(0, keepdims=True), X.shape))
    assert_same(by_j, np.broadcast_to(X.sum(1, keepdims=True), X.shape))
    assert_same(both, np.full(X.shape, X.sum(), np.float32))


def test_collectives_inside_control_flow():
    def f(v):
        return lax.scan(lambda c, e: (c + lax.psum(e, "i"), c), np.float32(0), v)[0]
    assert_same(named(f)(X), np.full(4, X.sum(), np.float32))
    g = named(lambda v: lax.cond(v[0] > 0, lambda u: lax.pmax(u, "i"), lambda u: u, v))
    want = np.where(X[:, :1] > 0, X.max(0), X)
    assert_same(g(X), want)


def test_gradients():
    def centred_sq(w):
        return named(lambda v: (v * w - lax.pmean(v * w, "i")) ** 2)(X).sum()
    w = np.float32(1.5)
    check_grads_x64(centred_sq, (w,), order=2, rtol=2e-2)
    want = 2 * ((X - X.mean(0)) ** 2).sum() * w
    np.testing.assert_allclose(jax.grad(centred_sq)(w), want, rtol=1e-5)
    # d/dv of psum(v) . v: psum(v) directly, plus psum's transpose (a psum) of the cotangent v,
    # so twice the batch sum for every example, as in JAX.
    per_example = named(jax.grad(lambda v: (lax.psum(v, "i") * v).sum()))(X)
    assert_same(per_example, np.broadcast_to(2 * X.sum(0), X.shape))


def test_unbound_axis_names_raise_name_error():
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(X, "i")
    with pytest.raises(NameError, match="unbound axis name: k"):
        named(lambda v: lax.psum(v, "k"))(X)
    with pytest.raises(NameError, match="unbound axis name: k"):
        jax.jit(named(lambda v: lax.axis_index("k") * v))(X)
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        named(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]))(X)
