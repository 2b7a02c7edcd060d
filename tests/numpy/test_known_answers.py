"""gpuarr.numpy against jax.numpy: result dtypes, weak types, shapes, values and error classes
of cases where the two once differed. Expected values are JAX 0.10.2's (CPU) or NumPy's."""
import numpy as np
import pytest

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax


def check(x, dtype, shape=None, weak=False, value=None):
    assert x.dtype == np.dtype(dtype), x.dtype
    assert x.weak_type is weak, x.weak_type
    if shape is not None:
        assert x.shape == shape
    if value is not None:
        np.testing.assert_allclose(np.asarray(x), value, rtol=1e-6)


# ---------------------------------------------------------------- weak types of ufuncs


def test_comparisons_of_weak_operands_are_weak():
    b = jnp.array([True, False])
    check(jnp.equal(b, 2), bool, (2,), weak=True)  # both int32 weak after promotion
    check(jnp.less(True, 2), bool, (), weak=True)
    check(lax.eq(1.0, 2.0), bool, weak=True)
    check(lax.is_finite(1.0), bool, weak=True)
    check(jnp.isfinite(2.5), bool, weak=True)
    check(jnp.isnan(2), bool, weak=True)
    check(jnp.logical_not(2), bool, weak=True)
    check(jnp.logical_and(True, 2), bool, weak=True)
    f = jnp.array([1.0, 2.0])
    check(f == f, bool, (2,))
    check(f < 1.5, bool, (2,))
    check(gpuarr.jit(lambda x: x == 2)(b), bool, (2,), weak=True)


def test_constants_keep_weak_zero_d_values_weak():
    # JAX's _const: weak only for a weak 0-d operand.
    check(jnp.deg2rad(2), np.float32, weak=True, value=np.deg2rad(2.0))
    check(jnp.rad2deg(1 + 2j), np.complex64, weak=True)
    check(jnp.sinc(2), np.float32, weak=True)
    check(jnp.hypot(True, 2), np.float32, weak=True, value=np.hypot(1, 2))
    check(jnp.conj(1 + 2j), np.complex64, weak=True, value=1 - 2j)
    check(jnp.conj(jnp.arange(2) * 1j), np.complex64, (2,), weak=True, value=[0, -1j])
    check(jnp.real(1 + 2j), np.float32, weak=True, value=1.0)
    check(jnp.imag(1 + 2j), np.float32, weak=True, value=2.0)
    w = jnp.arange(3) * 1.0  # weak, but not 0-d
    assert w.weak_type
    check(jnp.deg2rad(w), np.float32, (3,))
    check(jnp.real(w * (1 + 1j)), np.float32, (3,), weak=True)
    # Strongly typed constants in JAX's code: not weak.
    check(jnp.log10(2), np.float32)
    check(jnp.isposinf(2.5), bool)
    check(jnp.signbit(2), bool)


def test_python_scalar_inputs_take_jax_weak_types():
    # JAX converts integers in rint, 0-d reals in angle, and builds strong constants in
    # nan_to_num and spacing; i0, logaddexp2 and the iscomplex/isreal comparisons stay weak.
    check(jnp.rint(2), np.float32, value=2.0)
    check(jnp.rint(np.int32([2, 3])), np.float32, (2,), value=[2.0, 3.0])
    check(jnp.rint(2.5), np.float32, weak=True, value=2.0)
    check(jnp.nan_to_num(2.5), np.float32, value=2.5)
    check(jnp.angle(-2.0), np.float32, value=np.pi)
    check(jnp.angle(2), np.float32, value=0.0)
    check(jnp.angle(jnp.float32([1, -2])), np.float32, (2,), value=[0, np.pi])
    check(jnp.spacing(2.0), np.float32, value=np.spacing(np.float32(2)))
    check(jnp.i0(2.0), np.float32, weak=True, value=np.i0(2.0))
    check(jnp.logaddexp2(1.0, 2.0), np.float32, weak=True, value=np.logaddexp2(1.0, 2.0))
    check(jnp.iscomplex(2.0), bool, weak=True, value=False)
    check(jnp.isreal(2.0), bool, weak=True, value=True)
    check(jnp.iscomplex(np.complex64([1j, 2])), bool, (2,), value=[True, False])
    check(jnp.isreal(np.int32([1, 2])), bool, (2,), value=[True, True])


def test_floor_divide_keeps_weak_types():
    check(jnp.array([3, -3], jnp.int8) // 2.5, np.float32, (2,), weak=True, value=[1.0, -2.0])
    check(jnp.array([True, False]) // 2, np.int32, (2,), weak=True, value=[0, 0])
    check(jnp.floor_divide(True, 2), np.int32, weak=True, value=0)
    q, r = jnp.divmod(jnp.array([True, False]), 2)
    check(q, np.int32, (2,), weak=True)
    check(r, np.int32, (2,), weak=True)


# ---------------------------------------------------------------- ufunc values and errors


def test_round_and_rint_of_complex_round_both_parts():
    check(jnp.round(jnp.array([1.26 + 2.55j]), 1), np.complex64, (1,), value=[1.3 + 2.6j])
    check(jnp.round(jnp.array([2.5 + 3.5j])), np.complex64, value=[2 + 4j])
    check(jnp.rint(jnp.array([1.5 + 2.5j])), np.complex64, value=[2 + 2j])
    check(jnp.round(jnp.array([1.2345], jnp.float16), 2), np.float16, value=np.float16([1.23]))
    with pytest.raises(ValueError):
        jnp.round(jnp.array([True]))
    with pytest.raises(NotImplementedError):
        jnp.round(jnp.arange(3), -1)


def test_complex_parts_of_infinities_and_signed_zeros():
    # lax.real/imag/conj/complex, as JAX: an infinite part stays infinite (no NaN from a
    # multiplication by 1j) and conj negates a zero imaginary part.
    z = jnp.array([complex(np.inf, 1), complex(2, -np.inf), 1 + 0j], jnp.complex64)
    np.testing.assert_array_equal(jnp.real(z), np.float32([np.inf, 2, 1]))
    np.testing.assert_array_equal(jnp.imag(z), np.float32([1, -np.inf, 0]))
    conj = np.asarray(jnp.conjugate(z))
    np.testing.assert_array_equal(conj, np.conj(np.asarray(z)))
    assert np.signbit(conj.imag[2])
    finite_imag = z[np.array([0, 2])]
    np.testing.assert_array_equal(jnp.round(finite_imag), np.asarray(finite_imag))
    np.testing.assert_array_equal(jnp.rint(finite_imag), np.asarray(finite_imag))
    np.testing.assert_array_equal(jnp.round(z), np.asarray(z))  # 2 - inf j stays 2 - inf j
    np.testing.assert_array_equal(lax.complex(np.float32([2, np.inf]), np.float32([-np.inf, 1])),
                                  np.complex64([complex(2, -np.inf), complex(np.inf, 1)]))
    np.testing.assert_allclose(jnp.angle(z), np.float32([0, -np.pi / 2, 0]), rtol=1e-6)


def test_round_and_rint_of_weak_complex_are_weak():
    check(jnp.round(1.5 + 2.5j), np.complex64, (), weak=True, value=2 + 2j)
    check(jnp.rint(1.5 + 2.5j), np.complex64, (), weak=True, value=2 + 2j)
    check(jnp.rint(lax.full((2,), 0.5 - 1.5j)), np.complex64, (2,), weak=True, value=[-2j, -2j])
    check(jnp.round(jnp.array([2.5 + 1.5j])), np.complex64, (1,), value=[2 + 2j])


@pytest.mark.parametrize("fn", [jnp.floor, jnp.ceil, jnp.trunc, jnp.fabs])
def test_rounding_functions_refuse_complex(fn):
    with pytest.raises(TypeError):
        fn(jnp.array([1 + 1j]))
    check(fn(jnp.array([3], jnp.int8)), np.float32 if fn is jnp.fabs else np.int8, (1,))


def test_complex_inputs_refused_where_jax_refuses():
    z = jnp.array([1 + 1j])
    for fn in (jnp.signbit, jnp.isposinf, jnp.isneginf):
        with pytest.raises(ValueError):
            fn(z)
    with pytest.raises(ValueError):
        jnp.hypot(z, 1.0)
    with pytest.raises(TypeError):
        jnp.copysign(z, 1.0)


def test_power_with_static_integer_exponents():
    with pytest.raises(TypeError):
        jnp.power(jnp.arange(3), -1)
    with pytest.raises(TypeError):
        jnp.arange(3) ** -2
    check(jnp.array([True, False]) ** 3, np.int32, (2,), value=[1, 0])
    check(jnp.arange(3, dtype=jnp.int8) ** np.int32(2), np.int8, value=[0, 1, 4])
    check(jnp.power(2, 3), np.int32, weak=True, value=8)
    check(jnp.power(jnp.arange(3.0), -1), np.float32, value=[np.inf, 1, 0.5])
    # An inexact base with an integer exponent array: lax.pow, weak only if both are.
    check(jnp.power(2.5, jnp.arange(3, dtype=jnp.int8)), np.float32, (3,), value=[1, 2.5, 6.25])


def test_python_ints_wrap_into_narrow_dtypes():
    u = jnp.array([0, 1, 5], jnp.uint8)
    check(u + (-1), np.uint8, value=[255, 0, 4])
    check(jnp.maximum(u, -1), np.uint8, value=[255, 255, 255])
    check(jnp.clip(u, -1, 2), np.uint8, value=[2, 2, 2])
    check(jnp.array([1, 2], jnp.int8) + 200, np.int8, value=[-55, -54])
    check(jnp.array([1], jnp.uint32) + (-1), np.uint32, value=[0])
    with pytest.raises(OverflowError):  # beyond the default integer type
        jnp.array([1], jnp.int32) + 2**40


def test_products():
    z, w = jnp.array([1 + 2j]), jnp.array([3 + 4j])
    check(jnp.vdot(z, w), np.complex64, (), value=11 - 2j)  # conj(z) . w
    check(jnp.vdot(w, jnp.array([True])), np.complex64, value=3 - 4j)
    check(jnp.dot(True, True), bool, (), value=True)
    b = jnp.array([True, False])
    check(jnp.inner(b, True), bool, (2,), value=[True, False])
    check(jnp.outer(b, b), bool, (2, 2), value=[[True, False], [False, False]])


def test_isclose_compares_integers_as_floats_and_is_never_weak():
    check(jnp.isclose(100000000, 100000001), bool, (), value=True)
    check(jnp.isclose(jnp.array([True, False]), 2), bool, (2,), value=[False, False])
    check(jnp.allclose(jnp.array([1, 2]), 2), bool, (), value=False)
    check(jnp.isclose(jnp.array([1 + 1j, np.inf]), jnp.array([1 + 1j, np.inf])), bool, value=[1, 1])


# ---------------------------------------------------------------- reductions


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "ptp", "nansum",
                                  "nanmax", "median"])
def test_reductions_of_python_scalars_are_strong(name):
    out = getattr(jnp, name)(2.5)
    check(out, np.float32, ())
    assert not gpuarr.jit(getattr(jnp, name))(jnp.arange(3) * 1.0).weak_type


def test_half_precision_sums_accumulate_in_float32():
    x = jnp.full((10000,), 10.0, jnp.float16)
    check(jnp.mean(x), np.float16, value=10.0)  # the float16 sum alone would overflow
    y = jnp.full((1000,), 1.0, jnp.bfloat16) + jnp.full((1000,), 0.01, jnp.bfloat16)
    np.testing.assert_allclose(float(jnp.sum(y)), 1007.5 * 1.0, rtol=2e-3)


def test_sum_and_prod_with_bool_dtype():
    x = jnp.array([[0.0, 2.0], [0.0, 0.0]])
    check(jnp.sum(x, axis=1, dtype=bool), bool, (2,), value=[True, False])
    check(jnp.prod(x, axis=0, dtype=bool), bool, (2,), value=[False, False])
    check(jnp.mean(jnp.array([1.0, 2.0]), dtype=jnp.int8), np.int8, value=1)


def test_var_std():
    z = jnp.array([1 + 1j, 2 - 1j, 0j])
    zn = np.array([1 + 1j, 2 - 1j, 0j])
    check(jnp.var(z), np.float32, (), value=np.var(zn))
    check(jnp.std(z, keepdims=True), np.float32, (1,), value=[np.std(zn)])
    check(jnp.nanvar(z), np.float32, (), value=np.var(zn))
    x = jnp.arange(6.0).reshape(3, 2)
    check(jnp.var(x, axis=0, ddof=3), np.float32, (2,), value=[np.nan, np.nan])
    check(jnp.var(x, axis=0, ddof=2), np.float32, (2,), value=np.var(np.arange(6.0).reshape(3, 2), 0, ddof=2))
    check(jnp.nanvar(x, dtype=jnp.int32), np.int32, ())
    with pytest.raises(ValueError):
        jnp.std(x, dtype=jnp.int32)


@pytest.mark.parametrize("name", ["sum", "max", "median", "all"])
def test_zero_d_input_has_no_axis_zero(name):
    with pytest.raises(ValueError):
        getattr(jnp, name)(jnp.array(1.0), axis=0)


def test_nan_reductions_with_initial_and_quantile_keepdims():
    empty = jnp.zeros((0,), jnp.float32)
    check(jnp.nanmax(empty, initial=1.5), np.float32, (), value=1.5)
    check(jnp.nanmin(jnp.array([np.nan]), initial=1.5), np.float32, (), value=1.5)
    check(jnp.median(jnp.array(2.0), keepdims=True), np.float32, (1,), value=[2.0])
    with pytest.raises(TypeError):
        jnp.argmax(jnp.array([1 + 1j]))


def test_cumulative_reductions():
    check(jnp.cumsum(2), np.int32, (1,), value=[2])
    check(jnp.cumsum(2.5, axis=0), np.float32, (1,), value=[2.5])
    check(jnp.cumsum(jnp.array(2.5), axis=0), np.float32, (1,), value=[2.5])  # weak 0-d
    with pytest.raises(ValueError):
        jnp.cumsum(jnp.array(1.0, jnp.float32), axis=0)
    check(jnp.cumsum(jnp.array([-1.0, 1.0, 0.0]), dtype=bool), bool, value=[True, True, True])
    check(jnp.cumprod(jnp.array([2, 0, 3]), dtype=bool), bool, value=[True, False, False])
    i8 = jnp.array([100, 100], jnp.int8)
    check(jnp.cumsum(i8), np.int8, value=[100, -56])
    check(jnp.cumulative_sum(i8), np.int32, value=[100, 200])
    check(jnp.cumulative_prod(i8), np.int8, (2,))
    check(jnp.cumulative_sum(jnp.arange(4).reshape(2, 2), axis=1, include_initial=True), np.int32,
          value=[[0, 0, 1], [0, 2, 5]])
    check(jnp.cumulative_prod(jnp.arange(1, 4), include_initial=True), np.int32, value=[1, 1, 2, 6])
    with pytest.raises(ValueError):
        jnp.cumulative_sum(jnp.ones((2, 2)))
    with pytest.raises(ValueError):
        jnp.cumulative_prod(2.0)


# ---------------------------------------------------------------- creation


def test_creation_weak_types():
    check(jnp.full((2, 3), 1.5), np.float32, (2, 3), weak=True)
    check(jnp.full(3, 1), np.int32, (3,), weak=True)
    check(jnp.full(3, 1 + 1j), np.complex64, (3,), weak=True)
    check(jnp.full(3, True), bool, (3,))
    check(jnp.full(3, 1.5, dtype=jnp.float32), np.float32, (3,))
    check(jnp.zeros_like(2.5), np.float32, (), weak=True)
    check(jnp.ones_like(2, shape=(2, 2)), np.int32, (2, 2), weak=True, value=np.ones((2, 2)))
    check(jnp.full_like(jnp.arange(3) * 1.0, 7), np.float32, (3,), weak=True)
    check(jnp.zeros_like(jnp.arange(3)), np.int32, (3,))
    check(jnp.array(np.float64(1.5)), np.float32, ())  # a NumPy scalar is not weak
    check(jnp.array(1.5), np.float32, (), weak=True)


def test_linspace():
    check(jnp.linspace(0, 10, 1), np.float32, (1,), value=[0.0])
    check(jnp.linspace(0, 10, 0), np.float32, (0,))
    out, step = jnp.linspace(0, 10, 5, retstep=True)
    check(step, np.float32, (), value=2.5)
    start = jnp.array([0.0, 1.0])
    check(jnp.linspace(start, 10, 4), np.float32, (4, 2), value=np.linspace([0.0, 1.0], 10, 4))
    check(jnp.linspace(start, 10, 4, axis=1), np.float32, (2, 4),
          value=np.linspace([0.0, 1.0], 10, 4, axis=1))
    with pytest.raises(TypeError):
        jnp.arange(5, dtype=bool)


# ---------------------------------------------------------------- indexing


def test_list_index_is_refused():
    x = jnp.arange(12).reshape(3, 4)
    with pytest.raises(TypeError):
        x[[0, 1]]
    with pytest.raises(TypeError):
        x.at[[0, 1]].set(0)
    check(x[jnp.array([0, 1])], np.int32, (2, 4))
    check(x[[0, 1], 0], np.int32, (2,), value=[0, 4])  # a list inside a tuple is fine


def test_python_ints_beyond_int32_overflow_as_in_jax():
    for value in (2**40, [1, 2**31], [[1, 2], [3, -2**31 - 5]], 2**63):
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            jnp.asarray(value)
    wrapped = jnp.asarray(np.array([2**40 + 3]))  # NumPy int64 narrows (wraps), as in JAX
    assert wrapped.dtype == np.int32 and int(wrapped[0]) == 3
    with gpuarr.enable_x64():
        assert jnp.asarray(2**40).dtype == np.int64


@pytest.mark.parametrize("sa, sb", [((2, 4, 3), (3,)), ((3,), (2, 3, 5)), ((2, 4, 3), (3, 5)),
                                     ((4, 3), (2, 3, 5)), ((1, 4, 3), (2, 3, 5)),
                                     ((2, 1, 4, 3), (5, 3, 2)), ((2, 1, 4, 3), (1, 3, 5)),
                                     ((3, 1, 2, 4, 3), (1, 5, 2, 3, 2))], ids=str)
def test_matmul_batch_axes_broadcast_as_numpy(sa, sb):
    # Batch axes of one operand only are free axes of the product (nothing is broadcast).
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=sa).astype(np.float32), rng.normal(size=sb).astype(np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    for got in (jnp.matmul(a, b), gpuarr.jit(jnp.matmul)(a, b)):
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_matmul_shape_errors_have_jax_classes():
    for a, b in (((2, 3), (2, 3)), ((3,), (4,)), ((2, 3), (4,)), ((2, 2, 3), (2, 4, 1))):
        with pytest.raises(TypeError, match="contracting dimensions"):
            jnp.matmul(jnp.ones(a), jnp.ones(b))
    with pytest.raises(ValueError, match=r"Incompatible types for matmul arguments: "
                                         r"float32\[2,2,3\] and float32\[3,3,1\]"):
        jnp.ones((2, 2, 3)) @ jnp.ones((3, 3, 1))
