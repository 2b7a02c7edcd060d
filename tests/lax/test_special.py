"""lax special functions (erf, erfc, erf_inv, lgamma, digamma, polygamma) and bit-level
elementwise primitives (clamp, population_count, clz, bitcast_convert_type): values against
SciPy/NumPy in float64, dtypes, finite-difference gradients, vmap against a Python loop, jit."""
import numpy as np
import pytest
from helpers import check_grads_x64

import gpuarr
import gpuarr.numpy as jnp
from gpuarr import lax

sp = pytest.importorskip("scipy.special")

RNG = np.random.default_rng(0)

UNARY = [
    # (lax function, scipy reference, sample points in float64)
    (lax.erf, sp.erf, np.concatenate([np.linspace(-7, 7, 2001), [0.0, -0.0, 1e-300, 1.5, -1.5]])),
    (lax.erfc, sp.erfc, np.linspace(-7, 26, 2001)),
    (lax.erf_inv, sp.erfinv, np.concatenate([np.linspace(-0.999999, 0.999999, 2001),
                                             1 - np.geomspace(1e-15, 1e-2, 50)])),
    (lax.lgamma, sp.gammaln, np.concatenate([np.linspace(-20.5, 40, 2001),
                                             np.geomspace(1e-8, 1e30, 100)])),
    (lax.digamma, sp.digamma, np.concatenate([np.linspace(-20.3, 40, 2001),
                                              np.geomspace(1e-8, 1e30, 100)])),
]


@pytest.mark.parametrize("fn,ref,x", UNARY, ids=lambda v: getattr(v, "__name__", ""))
def test_float64_values_match_scipy(fn, ref, x):
    with gpuarr.enable_x64():
        out = fn(jnp.asarray(x))
        assert out.dtype == np.float64
        want = ref(x)
        np.testing.assert_allclose(np.asarray(out), want, rtol=5e-12, atol=1e-13)


@pytest.mark.parametrize("fn,ref,x", UNARY, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_narrow_floats_keep_dtype_and_are_correctly_rounded(fn, ref, x, dtype):
    x = x[np.abs(x) < np.finfo(dtype).max]
    xs = x.astype(dtype)
    if fn in (lax.lgamma, lax.digamma):  # rounding may land on a pole, where SciPy's sign differs
        xs = xs[(xs > 0) | (xs != np.floor(xs))]
        xs = xs[np.isfinite(xs)]
    out = fn(xs)
    assert out.dtype == dtype and out.shape == xs.shape
    with np.errstate(over="ignore"):  # lgamma of large float16 values overflows to inf
        want = ref(xs.astype(np.float64)).astype(dtype)
    # Computed in float64 then rounded once: within one unit in the last place.
    np.testing.assert_allclose(np.asarray(out, np.float64), want.astype(np.float64),
                               rtol=2 * np.finfo(dtype).eps, atol=np.finfo(dtype).tiny)


def test_special_values():
    np.testing.assert_array_equal(lax.erf(np.array([np.inf, -np.inf, 0.0, np.nan], np.float32)),
                                  [1, -1, 0, np.nan])
    np.testing.assert_array_equal(lax.erfc(np.array([np.inf, -np.inf, np.nan], np.float32)),
                                  [0, 2, np.nan])
    np.testing.assert_array_equal(lax.erf_inv(np.array([1, -1, 2, np.nan], np.float32)),
                                  [np.inf, -np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(lax.lgamma(np.array([0, -1, -2, np.inf], np.float32)),
                                  [np.inf] * 4)
    # JAX gives NaN for digamma at its poles.
    assert np.isnan(np.asarray(lax.digamma(np.array([0.0, -1.0, -7.0], np.float32)))).all()


def test_polygamma_matches_scipy():
    x = np.concatenate([np.geomspace(1e-3, 1e3, 200), -np.array([0.5, 1.5, 2.25, 7.75])])
    with gpuarr.enable_x64():
        for m in range(0, 5):
            out = lax.polygamma(np.full_like(x, m), x)
            np.testing.assert_allclose(np.asarray(out), sp.polygamma(m, x), rtol=1e-10)
    out = lax.polygamma(np.float32(1), np.array([0.0, -2.0, 0.5], np.float32))
    assert out.dtype == np.float32
    assert np.isinf(np.asarray(out)[:2]).all()
    assert np.isnan(np.asarray(lax.polygamma(np.float32(1.5), np.float32(2.0))))


@pytest.mark.parametrize("fn", [lax.erf, lax.erfc, lax.erf_inv, lax.lgamma, lax.digamma])
def test_python_scalars_are_weakly_typed(fn):
    out = fn(0.5)
    assert out.dtype == np.float32 and out.weak_type and out.shape == ()


@pytest.mark.parametrize("fn", [lax.erf, lax.erfc, lax.erf_inv, lax.lgamma, lax.digamma])
def test_integer_input_is_a_type_error(fn):
    with pytest.raises(TypeError, match="Accepted dtypes are subtypes of floating"):
        fn(np.arange(3, dtype=np.int32))


@pytest.mark.parametrize("fn,x", [
    (lax.erf, np.array([-1.3, 0.2, 2.0])),
    (lax.erfc, np.array([-1.3, 0.2, 2.0])),
    (lax.erf_inv, np.array([-0.7, 0.1, 0.9])),
    (lax.lgamma, np.array([-2.5, 0.3, 4.0])),
    (lax.digamma, np.array([-2.5, 0.3, 4.0])),
    (lambda x: lax.polygamma(np.float64(2), x), np.array([0.3, 1.0, 4.0])),
], ids=["erf", "erfc", "erf_inv", "lgamma", "digamma", "polygamma"])
def test_gradients_by_finite_differences(fn, x):
    check_grads_x64(fn, (x,), order=2, rtol=1e-4, atol=1e-6)


def test_documented_derivatives():
    x = np.array([-0.9, -0.3, 0.4, 0.95], np.float32)
    g = gpuarr.vmap(gpuarr.grad(lax.erf_inv))(x)
    want = np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(x.astype(np.float64)) ** 2)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)
    g = gpuarr.vmap(gpuarr.grad(lax.lgamma))(np.array([0.5, 3.0], np.float32))
    np.testing.assert_allclose(np.asarray(g), sp.digamma([0.5, 3.0]), rtol=1e-5)
    g = gpuarr.vmap(gpuarr.grad(lax.digamma))(np.array([0.5, 3.0], np.float32))
    np.testing.assert_allclose(np.asarray(g), sp.polygamma(1, [0.5, 3.0]), rtol=1e-5)


@pytest.mark.parametrize("fn", [lax.erf, lax.erfc, lax.lgamma, lax.digamma])
def test_vmap_matches_loop_and_jit_matches_eager(fn):
    x = RNG.uniform(0.1, 3.0, size=(4, 5)).astype(np.float32)
    batched = gpuarr.vmap(fn, in_axes=1)(x)
    loop = np.stack([np.asarray(fn(x[:, i])) for i in range(x.shape[1])])
    np.testing.assert_array_equal(np.asarray(batched), loop)
    np.testing.assert_array_equal(np.asarray(gpuarr.jit(fn)(x)), np.asarray(fn(x)))


# ---------------------------------------------------------------- clamp


def test_clamp_values_dtypes_and_scalar_bounds():
    x = np.array([-3, -1, 0, 2, 9], np.int32)
    out = lax.clamp(np.int32(-1), x, np.int32(2))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.clip(x, -1, 2))
    lo = np.array([0, 0, 1, 1, 1], np.float32)
    out = lax.clamp(lo, x.astype(np.float32), 3.0)
    np.testing.assert_array_equal(out, np.clip(x.astype(np.float32), lo, 3.0))


def test_clamp_errors_name_the_shapes():
    with pytest.raises(TypeError, match="min"):
        lax.clamp(np.zeros(2, np.float32), np.zeros(3, np.float32), np.float32(1))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.clamp(np.int32(0), np.zeros(3, np.float32), np.float32(1))


@pytest.mark.parametrize("fn,array,scalar", [
    (lax.add, np.arange(3, dtype=np.int32), 1.5),      # float into an integer type
    (lax.mul, np.arange(3, dtype=np.float32), 2j),     # complex into a real type
    (lax.sub, np.arange(3, dtype=np.int8), 300),       # out of int8's range
    (lax.max, np.arange(3, dtype=np.uint8), -1),       # out of uint8's range
    (lax.bitwise_and, np.array([True, False]), 2),     # int into bool
])
def test_python_scalars_that_would_change_value_are_type_errors(fn, array, scalar):
    with pytest.raises(TypeError, match="same dtypes"):
        fn(array, scalar)
    with pytest.raises(TypeError, match="same dtypes"):
        gpuarr.jit(lambda a: fn(scalar, a))(array)


def test_python_scalars_that_keep_their_value_take_the_array_dtype():
    x = np.array([1, 2, 3], np.int8)
    out = lax.add(x, 3)
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, [4, 5, 6])
    out = lax.mul(2.5, np.ones(2, np.float16))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, [2.5, 2.5])


def test_clamp_gradient_flows_to_the_active_argument():
    def f(lo, x, hi):
        return lax.clamp(lo, x, hi).sum()
    lo, hi = np.float32(-1.0), np.float32(1.0)
    x = np.array([-2.0, 0.5, 3.0], np.float32)
    glo, gx, ghi = gpuarr.grad(f, argnums=(0, 1, 2))(lo, x, hi)
    np.testing.assert_array_equal(gx, [0, 1, 0])
    assert float(glo) == 1.0 and float(ghi) == 1.0
    check_grads_x64(lambda x: lax.clamp(-1.0, x, 1.0), (np.array([-2.0, 0.5, 3.0]),), order=1)


def test_clamp_vmap_over_each_argument():
    lo = np.array([-1.0, 0.0, 0.5], np.float32)
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    out = gpuarr.vmap(lambda lo, x: lax.clamp(lo, x, np.float32(0.8)))(lo, x)
    loop = np.stack([np.clip(x[i], lo[i], 0.8) for i in range(3)])
    np.testing.assert_array_equal(out, loop)
    out = gpuarr.vmap(lambda x: lax.clamp(lo[0], x, lo[2]), in_axes=1)(x)
    np.testing.assert_array_equal(out, np.clip(x, -1.0, 0.5).T)


# ---------------------------------------------------------------- bit operations


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64])
def test_population_count_and_clz(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, 2, 3, 7, info.max, info.min, info.max // 3], dtype)
    bits = np.dtype(dtype).itemsize * 8
    u = x.view(np.dtype(f"u{np.dtype(dtype).itemsize}")).astype(object)
    with gpuarr.enable_x64():
        pc = lax.population_count(x)
        lz = lax.clz(x)
    assert pc.dtype == dtype and lz.dtype == dtype
    np.testing.assert_array_equal(pc, [bin(int(v)).count("1") for v in u])
    np.testing.assert_array_equal(lz, [bits - int(v).bit_length() for v in u])


def test_bit_ops_reject_floats():
    with pytest.raises(TypeError, match="integer"):
        lax.population_count(np.ones(2, np.float32))


def test_bitcast_convert_type_shapes_and_values():
    x = np.array([1.0, -2.5], np.float32)
    out = lax.bitcast_convert_type(x, np.int32)
    assert out.dtype == np.int32 and out.shape == (2,)
    np.testing.assert_array_equal(out, x.view(np.int32))
    narrow = lax.bitcast_convert_type(x, np.uint8)
    assert narrow.shape == (2, 4)
    np.testing.assert_array_equal(narrow, x.view(np.uint8).reshape(2, 4))
    back = lax.bitcast_convert_type(narrow, np.float32)
    np.testing.assert_array_equal(back, x)
    assert lax.bitcast_convert_type(np.float32(1.0), np.int32).shape == ()
    with pytest.raises(ValueError, match=r"Attempting to convert array of shape \(2, 3\) from "
                                         r"uint8 of size 8 bits to float32 of size 32, bits but "
                                         r"3 \* 8 != 32"):  # JAX's words
        lax.bitcast_convert_type(np.zeros((2, 3), np.uint8), np.float32)
    out = gpuarr.vmap(lambda v: lax.bitcast_convert_type(v, np.uint8), in_axes=0)(x)
    assert out.shape == (2, 4)
    out = gpuarr.jit(lambda v: lax.bitcast_convert_type(v, np.uint16))(x)
    np.testing.assert_array_equal(out, x.view(np.uint16).reshape(2, 2))


def test_jax_agrees_on_dtypes_and_values():
    jax = pytest.importorskip("jax")
    x = np.array([0.1, 0.5, 1.7], np.float32)
    for name in ("erf", "erfc", "lgamma", "digamma"):
        ours, theirs = getattr(lax, name)(x), getattr(jax.lax, name)(x)
        assert ours.dtype == theirs.dtype
        # JAX's float32 digamma is a few ulps off; ours rounds a float64 result once.
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(lax.erf_inv(x / 2)), np.asarray(jax.lax.erf_inv(x / 2)),
                               rtol=2e-6)
