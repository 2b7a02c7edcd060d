"""The printed programs of the jax.numpy functions JAX wraps in jits (cumulative reductions,
nanargmax, tril, trace, kron, linspace...) match JAX's, and their eager results (values, dtype,
shape, weak type, or error class and message) still match JAX's."""
import numpy as np
import pytest
from jax_compare import outcome, same_results

import gpuarr
import gpuarr.numpy as gnp

jax = pytest.importorskip("jax")
jnp = jax.numpy

X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
V = np.array([1.0, np.nan, 4.0], np.float32)
X3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _printed(fn, *args):
    """(JAX's printed program, gpuarr's) of fn(numpy_module, *args)."""
    want = jax.make_jaxpr(lambda *a: fn(jnp, *a))(*args).pretty_print(use_color=False)
    got = str(gpuarr.make_jaxpr(lambda *a: fn(gnp, *a))(*args))
    return got, want


PRINTED = {
    "cumsum": (lambda m, a: m.cumsum(a), X),
    "cumsum_axis": (lambda m, a: m.cumsum(a, axis=-1), X.astype(np.int32)),
    "cumprod_dtype": (lambda m, a: m.cumprod(a, dtype=np.float32), X.astype(np.int8)),
    "cumsum_bool": (lambda m, a: m.cumsum(a, 0), X > 2),
    "cumsum_weak_scalar": (lambda m, a: m.cumsum(3.0) + a, V),
    "nancumsum": (lambda m, a: m.nancumsum(a), X),
    "nancumsum_int": (lambda m, a: m.nancumsum(a, 0), X.astype(np.int32)),
    "nancumprod_bool_dtype": (lambda m, a: m.nancumprod(a, dtype=bool), X),
    "nanargmax": (lambda m, a: m.nanargmax(a), X),
    "nanargmax_keepdims": (lambda m, a: m.nanargmax(a, axis=1, keepdims=True), X),
    "nanargmin_int": (lambda m, a: m.nanargmin(a, -1), X.astype(np.int32)),
    "tril": (lambda m, a: m.tril(a), X),
    "tril_batched": (lambda m, a: m.tril(a, 2), X3),
    "triu": (lambda m, a: m.triu(a, -1), X > 2),
    "tri": (lambda m, a: m.tri(3, 4, 1), X),
    "trace": (lambda m, a: m.trace(a), X),
    "trace_offset_axes": (lambda m, a: m.trace(a, 1, axis1=2, axis2=0, dtype="int32"), X3),
    "kron": (lambda m, a, b: m.kron(a, b), X, V),
    "outer": (lambda m, a, b: m.outer(a, b), X > 2, X3),
    "cross": (lambda m, a, b: m.cross(a, b), X, X[::-1]),
    "cross_2d": (lambda m, a, b: m.cross(a, b, axis=1), X[:, :2].astype(np.int32), X),
    "lexsort": (lambda m, a: m.lexsort((a[0], a[1])), X),
    "lexsort_tuple": (lambda m, a: m.lexsort((a, a + 1), axis=0), X3),
    "sort_complex": (lambda m, a: m.sort_complex(a), X.astype(np.int32)),
    "matvec": (lambda m, a, b: m.matvec(a, b), X, X[0]),
    "diag": (lambda m, a: m.diag(a, 1), V),
    "diag_bool": (lambda m, a: m.diag(a, -2), V > 1),
    "linspace": (lambda m, a, b: m.linspace(a, b), X, X),
    "linspace_kwargs": (lambda m, a, b: m.linspace(a, b, 4, axis=-1, retstep=True), X, V),
    "linspace_int": (lambda m, a: m.linspace(a, 10, 7, dtype=np.int32), X),
    "linspace_scalar": (lambda m, a: m.linspace(0, a, 4, endpoint=False), V),
    "logspace": (lambda m, a, b: m.logspace(a, b), X, X),
    "logspace_kwargs": (lambda m, a: m.logspace(a, 3, 4, base=2.0, dtype=np.float16), V),
    "geomspace": (lambda m, a, b: m.geomspace(a, b), X, X),
    "geomspace_axis": (lambda m, a: m.geomspace(a, 3, 4, axis=1), V),
    "arange_traced": (lambda m, a: a + m.arange(1, 7, 2), V),
    # The default is converted at trace time (a literal), as JAX's promote_dtypes does.
    "select": (lambda m, a: m.select([a > 0.5, a < 0.2], [a, -a]), X),
    "select_default": (lambda m, a: m.select([a > 0.5], [a], default=7), X),
}


@pytest.mark.parametrize("name", PRINTED)
def test_printed_program_matches_jax(name):
    fn, *args = PRINTED[name]
    got, want = _printed(fn, *args)
    assert got == want


def _same_eager(fn, *args):
    want = outcome(jax, lambda *a: fn(jnp, *a), args)
    got = outcome(gpuarr, lambda *a: fn(gnp, *a), args)
    for g, w in same_results(got, want):
        np.testing.assert_allclose(g.astype(np.complex128), w.astype(np.complex128),
                                   rtol=1e-6, atol=1e-6)


EAGER = {
    "cumsum": (lambda m, a: m.cumsum(a, axis=1), X),
    "cumsum_scalar": (lambda m: m.cumsum(2.5),),
    "cumsum_0d_array": (lambda m, a: m.cumsum(a), np.float32(3)),
    "cumsum_empty": (lambda m, a: m.cumsum(a, 0), np.zeros((0, 2), np.int8)),
    "cumprod_bool_dtype": (lambda m, a: m.cumprod(a, dtype=bool), np.array([-1, 1, 2])),
    "nancumsum": (lambda m, a: m.nancumsum(a), V),
    "nancumprod_f16": (lambda m, a: m.nancumprod(a.astype(np.float16)), V),
    "nancumsum_int": (lambda m, a: m.nancumsum(a), np.array([1, 2, 3], np.uint8)),
    "cumsum_out": (lambda m, a: m.cumsum(a, out=a), X),
    "cumsum_list_axis": (lambda m, a: m.cumsum(a, axis=[0]), X),
    "cumsum_bad_axis": (lambda m, a: m.cumsum(a, axis=2), X),
    "nanargmax": (lambda m, a: m.nanargmax(a), V),
    "nanargmax_all_nan": (lambda m, a: m.nanargmax(a, axis=0), np.full((2, 2), np.nan)),
    "nanargmin_keepdims": (lambda m, a: m.nanargmin(a, -1, keepdims=True), X),
    "nanargmin_int": (lambda m, a: m.nanargmin(a), np.array([3, 1, 2], np.int8)),
    "nanargmax_float_axis": (lambda m, a: m.nanargmax(a, axis=1.0), X),
    "nanargmax_out": (lambda m, a: m.nanargmax(a, out=a), X),
    "select": (lambda m, a: m.select([a > 2, a < 2], [a, -a], default=7), X),
    "select_int_conditions": (lambda m, a: m.select([a, a - 1], [1.5, a]), np.arange(3)),
    "select_shapes": (lambda m, a, b: m.select([a > 0, b > 0], [1, 2]), np.ones(3), np.ones(2)),
    "select_empty": (lambda m: m.select([], []),),
    "tril": (lambda m, a: m.tril(a, -1), X3),
    "triu_bool": (lambda m, a: m.triu(a > 3, 1), X),
    "tril_1d": (lambda m, a: m.tril(a), V),
    "trace": (lambda m, a: m.trace(a, -1, 2, 1), X3),
    "trace_traced_offset": (lambda m, a, k: m.trace(a, k), X, np.int32(1)),
    "trace_same_axes": (lambda m, a: m.trace(a, axis1=1, axis2=-2), X3),
    "trace_dtype": (lambda m, a: m.trace(a, dtype=np.int8), X.astype(np.uint8)),
    "kron": (lambda m, a, b: m.kron(a, b), X.astype(np.int8), np.array([2, 3])),
    "kron_bool": (lambda m, a: m.kron(a, a), X > 2),
    "outer": (lambda m, a: m.outer(a, 2), X),
    "outer_out": (lambda m, a: m.outer(a, a, out=a), V),
    "cross": (lambda m, a, b: m.cross(a, b), X, X[::-1] * 2),
    "cross_mixed": (lambda m, a, b: m.cross(a, b), X[:, :2], X.astype(np.int32)),
    "cross_bad_dim": (lambda m, a: m.cross(a, a), X3),
    "lexsort": (lambda m, a: m.lexsort(a), np.array([[1, 2, 1], [3, 1, 3]])),
    "lexsort_0d": (lambda m: m.lexsort((np.float32(1),)),),
    "lexsort_shapes": (lambda m: m.lexsort((np.ones(2), np.ones(3))),),
    "lexsort_empty": (lambda m: m.lexsort(()),),
    "sort_complex": (lambda m, a: m.sort_complex(a), np.array([3.0, 1.0, 2.0], np.float16)),
    "sort_complex_0d": (lambda m, a: m.sort_complex(a), np.float32(1)),
    "matvec": (lambda m, a, b: m.matvec(a, b), X3, X3[0, 0]),
    "matvec_mismatch": (lambda m, a, b: m.matvec(a, b), X, V[:2]),
    "diagonal": (lambda m, a: m.diagonal(a, 1, 2, 0), X3),
    "diagonal_square": (lambda m, a: m.diagonal(a), np.arange(9).reshape(3, 3)),
    "diagonal_1d": (lambda m, a: m.diagonal(a), V),
    "diag": (lambda m, a: m.diag(a, -1), V),
    "diag_2d": (lambda m, a: m.diag(a, 2), X),
    "diag_3d": (lambda m, a: m.diag(a), X3),
    "diagflat": (lambda m, a: m.diagflat(a, 1), X),
    "diagflat_bool": (lambda m, a: m.diagflat(a > 2, -2), X),
    "linspace": (lambda m: m.linspace(-3, 10, 7, dtype=np.int32),),
    "linspace_retstep": (lambda m: m.linspace(0.0, 1.0, 4, endpoint=False, retstep=True),),
    "linspace_one": (lambda m, a: m.linspace(a, 2 * a, 1, retstep=True), X),
    "linspace_none": (lambda m, a: m.linspace(a, 2 * a, 0), X),
    "linspace_axis": (lambda m, a: m.linspace(a, 3.0, 4, axis=1), V),
    "linspace_bfloat16": (lambda m: m.linspace(1, 3, 5, dtype=jnp.bfloat16),),
    "linspace_complex": (lambda m: m.linspace(1j, 3, 5),),
    "linspace_negative": (lambda m: m.linspace(0, 1, -1),),
    "logspace": (lambda m, a: m.logspace(a, 2 * a, 3, base=2, axis=-1, dtype=np.float16), X),
    "logspace_int": (lambda m: m.logspace(0, 3, 4, dtype=np.int32),),
    "geomspace": (lambda m: m.geomspace(1, 1000, 4),),
    "geomspace_negative": (lambda m, a: m.geomspace(-a, -100 * a, 3, axis=2, endpoint=False), X),
    "geomspace_int": (lambda m: m.geomspace(1, 256, 9, dtype=np.int32),),
}


@pytest.mark.parametrize("name", EAGER)
def test_eager_results_match_jax(name):
    fn, *args = EAGER[name]
    _same_eager(fn, *args)


def test_jitted_results_match_jax():
    def fn(m, a, b):
        return (m.cumsum(a, 1), m.nanargmax(b), m.tril(a, 1), m.trace(a, 1), m.kron(a, b),
                m.diag(b), m.linspace(a, 2 * a, 3), m.lexsort(a), m.cross(a, a[::-1]))
    want = outcome(jax, lambda *a: fn(jnp, *a), (X, V), jit=True)
    got = outcome(gpuarr, lambda *a: fn(gnp, *a), (X, V), jit=True)
    for g, w in same_results(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_square_diagonal_under_jit_and_grad_matches_jax():
    # A square matrix's main diagonal goes through a platform-dependent branch, as in JAX.
    a = np.arange(9, dtype=np.float32).reshape(3, 3)

    def diagonal_and_grad(api):
        m = api.numpy
        return lambda a: (m.diagonal(a), api.grad(lambda a: (m.diagonal(a) ** 2).sum())(a))
    want = outcome(jax, diagonal_and_grad(jax), (a,), jit=True)
    got = outcome(gpuarr, diagonal_and_grad(gpuarr), (a,), jit=True)
    for g, w in same_results(got, want):
        np.testing.assert_allclose(g, w)
