"""jnp elementwise functions, table-driven: values against NumPy (computed in float64 where
precision matters) over dtypes and shapes (0-d, empty, broadcasting), result dtypes against
jax.numpy (the dtype oracle where NumPy's promotion differs), gradients, vmap, and errors."""
import numpy as np
import pytest
from helpers import check_grads_x64, jit_runs_numpy_backend
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuarr
import gpuarr.numpy as jnp
from gpuarr.backends import float_env

DTYPES = [np.bool_, np.int8, np.int32, np.uint8, np.float16, np.float32]
SHAPES = [(), (0,), (5,), (2, 3)]
RNG = np.random.default_rng(0)


def sample(shape, dtype, positive=False, small=False):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.ones(shape, bool) if positive else RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        lo = 1 if positive or dtype.kind == "u" else -5
        return RNG.integers(lo, 6, shape).astype(dtype)
    lo = 0.1 if positive else (-0.9 if small else -3)
    x = RNG.uniform(lo, 0.9 if small else 3, shape)
    return x.astype(dtype)


# name -> (numpy reference, domain): domain 'pos' for log-like, 'unit' for |x| < 1.
UNARY_FLOAT = {
    "exp": (np.exp, None), "exp2": (np.exp2, None), "expm1": (np.expm1, None),
    "log": (np.log, "pos"), "log1p": (np.log1p, "pos"), "log2": (np.log2, "pos"),
    "log10": (np.log10, "pos"), "sqrt": (np.sqrt, "pos"), "cbrt": (np.cbrt, None),
    "sin": (np.sin, None), "cos": (np.cos, None), "tan": (np.tan, "unit"),
    "arcsin": (np.arcsin, "unit"), "arccos": (np.arccos, "unit"), "arctan": (np.arctan, None),
    "sinh": (np.sinh, None), "cosh": (np.cosh, None), "tanh": (np.tanh, None),
    "arcsinh": (np.arcsinh, None), "arctanh": (np.arctanh, "unit"),
    "deg2rad": (np.deg2rad, None), "rad2deg": (np.rad2deg, None), "sinc": (np.sinc, None),
    "reciprocal": (lambda x: 1 / x, "pos"), "fabs": (np.fabs, None), "rint": (np.rint, None),
    "i0": (np.i0, None), "angle": (np.angle, None),
}
UNARY_SAME = {
    "negative": np.negative, "positive": np.positive, "absolute": np.absolute, "sign": np.sign,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "square": np.square,
    "conjugate": np.conjugate, "real": np.real, "imag": np.imag, "nan_to_num": np.nan_to_num,
}
UNARY_BOOL = {
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
    "isposinf": np.isposinf, "isneginf": np.isneginf, "logical_not": np.logical_not,
    "iscomplex": np.iscomplex, "isreal": np.isreal,
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "arctan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2, "heaviside": np.heaviside,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod,
    "power": np.power, "float_power": np.float_power, "equal": np.equal, "less": np.less,
    "greater_equal": np.greater_equal, "logical_and": np.logical_and,
    "logical_xor": np.logical_xor, "nextafter": np.nextafter,
}
INT_BINARY = {
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift, "gcd": np.gcd, "lcm": np.lcm,
}


def _ours(name, *args):
    return getattr(jnp, name)(*args)


def _check_values(out, want, exact=False):
    out = np.asarray(out)
    assert out.shape == np.shape(want)
    if exact or out.dtype.kind in "biu":
        np.testing.assert_array_equal(out, np.asarray(want).astype(out.dtype))
    else:
        tol = {2: 2e-3, 4: 2e-6, 8: 1e-12}[out.dtype.itemsize]
        np.testing.assert_allclose(out.astype(np.float64), np.asarray(want, np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_float_values(name, dtype, shape):
    ref, domain = UNARY_FLOAT[name]
    x = sample(shape, dtype, positive=domain == "pos", small=domain == "unit")
    if domain == "unit" and np.dtype(dtype).kind in "iu":
        x = (x % 2).astype(dtype) * 0
    out = _ours(name, x)
    # JAX's angle computes a 0-d float in the default float type.
    half = dtype == np.float16 and not (name == "angle" and not shape)
    assert out.dtype == (np.float16 if half else np.float32)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(out.dtype)
    _check_values(out, want.astype(np.float64))


@pytest.mark.parametrize("name", sorted(UNARY_SAME))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES[1:3] + [(2, 3)])
def test_unary_same_kind_values(name, dtype, shape):
    x = sample(shape, dtype)
    if dtype == np.bool_ and name in ("negative", "sign"):
        with pytest.raises(TypeError, match="does not accept dtype bool"):
            _ours(name, x)
        return
    out = _ours(name, x)
    want = x if dtype == np.bool_ and name == "positive" else UNARY_SAME[name](x)
    _check_values(out, want)


@pytest.mark.parametrize("name", sorted(UNARY_BOOL))
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_predicates(name, dtype):
    x = sample((7,), dtype)
    if np.dtype(dtype).kind == "f":
        x[:4] = np.array([np.nan, np.inf, -np.inf, -0.0], dtype)
    out = _ours(name, x)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, UNARY_BOOL[name](x))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.float16, np.float32])
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 1), (3,)), ((), (2, 3)), ((0, 3), (1, 3))])
def test_binary_values_with_broadcasting(name, dtype, shapes):
    x = sample(shapes[0], dtype)
    y = sample(shapes[1], dtype, positive=True)  # no division by zero
    if name == "power" and np.dtype(dtype).kind in "iu":
        y = (y % 3).astype(dtype)
    if name in ("nextafter",) and np.dtype(dtype).kind != "f":
        x, y = x.astype(np.float32), y.astype(np.float32)
    out = _ours(name, x, y)
    with np.errstate(all="ignore"):
        if out.dtype.kind == "f" and name not in ("nextafter", "floor_divide", "remainder", "fmod"):
            want = BINARY[name](x.astype(np.float64), y.astype(np.float64))
        else:
            want = BINARY[name](x, y)
    _check_values(out, want)


@pytest.mark.parametrize("name", sorted(INT_BINARY))
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16])
def test_integer_binary_values(name, dtype):
    x = sample((4, 5), dtype)
    y = np.abs(sample((5,), dtype)) % 5
    y = y.astype(dtype)
    out = _ours(name, x, y)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, INT_BINARY[name](x, y))


def test_python_rules_for_negative_division():
    x = np.array([-7, -7, 7, 7, -1, 0], np.int32)
    y = np.array([2, -2, 2, -2, 3, 5], np.int32)
    q, r = jnp.divmod(x, y)
    np.testing.assert_array_equal(q, np.floor_divide(x, y))
    np.testing.assert_array_equal(r, np.remainder(x, y))
    np.testing.assert_array_equal(jnp.fmod(x, y), np.fmod(x, y))
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    q, r = jnp.divmod(xf, yf)
    np.testing.assert_array_equal(q, np.floor_divide(xf, yf))
    np.testing.assert_array_equal(r, np.remainder(xf, yf))
    assert jnp.mod is jnp.remainder


def test_frexp_ldexp_modf_spacing():
    x = np.array([0.0, 1.0, -3.5, 1e-40, 6e4, np.inf, np.nan, 0.75], np.float32)
    m, e = jnp.frexp(x)
    mw, ew = np.frexp(x)
    assert m.dtype == np.float32 and e.dtype == np.int32
    normal = np.abs(x) != np.float32(1e-40)
    np.testing.assert_array_equal(np.asarray(m)[normal], mw[normal])
    np.testing.assert_array_equal(np.asarray(e)[np.isfinite(x) & normal], ew[np.isfinite(x) & normal])
    # A subnormal: frexp keeps JAX's program, whose `x == 0` reads a flushed subnormal as zero
    # and returns (x, 0) where JAX gives (0.5, -149) (docs/arithmetic.md); NumPy's elsewhere.
    want = (x[3], 0) if float_env.available() else np.frexp(x[3])
    assert [float(v) for v in jnp.frexp(x[3])] == [float(v) for v in want]
    np.testing.assert_array_equal(jnp.ldexp(mw, ew)[normal], np.ldexp(mw, ew)[normal])
    with pytest.raises(ValueError, match="integer"):
        jnp.ldexp(x, x)
    frac, whole = jnp.modf(x[:5])
    np.testing.assert_array_equal(np.asarray(frac)[normal[:5]], np.modf(x[:5])[0][normal[:5]])
    np.testing.assert_array_equal(whole, np.modf(x[:5])[1])
    np.testing.assert_array_equal(jnp.spacing(x[:6]), np.spacing(x[:6]))


def test_bitwise_count_and_gcd_errors():
    x = np.array([0, 1, -1, 7, 127], np.int8)
    out = jnp.bitwise_count(x)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, np.bitwise_count(x) if hasattr(np, "bitwise_count")
                                  else [0, 1, 1, 3, 7])
    with pytest.raises(ValueError, match="integers"):
        jnp.gcd(np.ones(2, np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="integer"):
        jnp.left_shift(np.ones(2, np.float32), 1)


def test_nan_to_num_and_clip_and_round():
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -2.5], np.float32)
    np.testing.assert_array_equal(jnp.nan_to_num(x), np.nan_to_num(x))
    np.testing.assert_array_equal(jnp.nan_to_num(x, nan=7, posinf=1, neginf=-1),
                                  np.nan_to_num(x, nan=7, posinf=1, neginf=-1))
    np.testing.assert_array_equal(jnp.clip(x[3:], -2, 1), np.clip(x[3:], -2, 1))
    np.testing.assert_array_equal(jnp.round(x[3:]), np.round(x[3:]))
    np.testing.assert_array_equal(jnp.round(np.float32(1.2345), 2), np.float32(1.23))


def test_lists_are_rejected():
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        jnp.exp([1.0, 2.0])
    with pytest.raises(TypeError):
        jnp.hypot([1.0], np.ones(1))
    # As in JAX: operands of one rank reach lax unbroadcast, whose error names the primitive;
    # operands of different ranks fail in the rank promotion.
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: \(3,\), \(4,\)\."):
        jnp.add(np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match=r"^max got incompatible shapes .*: \(4,\), \(3,\)\.$"):
        jnp.clip(np.ones(3), np.zeros(4), 2)
    with pytest.raises(TypeError, match=r"^add got incompatible shapes .*: \(3,\), \(4,\)\.$"):
        gpuarr.vmap(jnp.add)(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"Incompatible shapes .*: shapes=\[\(2, 3\), \(4,\)\]"):
        jnp.add(np.ones((2, 3)), np.ones(4))


def test_broadcast_to_errors_name_the_types():
    with pytest.raises(ValueError, match=r"^Incompatible types for broadcasting: input "
                                         r"type=float32\[3\] and requested type=float32\[2,4\]$"):
        jnp.broadcast_to(jnp.ones(3), (2, 4))
    with pytest.raises(ValueError, match=r"^Cannot broadcast to shape with fewer dimensions: "
                                         r"arr_shape=\(2, 3\) shape=\(3,\)$"):
        jnp.broadcast_to(jnp.ones((2, 3)), (3,))
    assert str(gpuarr.core.ShapedArray((2, 3), np.dtype(np.int32), weak_type=True)) == "~int32[2,3]"


@pytest.mark.parametrize("name", ["sinc", "hypot", "logaddexp", "copysign", "log10", "i0",
                                  "arctan2", "deg2rad", "fmax"])
def test_gradients(name):
    fn = getattr(jnp, name)
    x = np.array([0.7, -1.3, 2.1])
    if name in ("sinc", "log10", "i0", "deg2rad"):
        if name == "log10":
            x = np.abs(x)
        check_grads_x64(fn, (x,), order=1, rtol=1e-4)
    else:
        check_grads_x64(fn, (x, np.array([1.1, 0.4, -0.8])), order=1, rtol=1e-4)


def test_sinc_gradient_at_zero_is_finite():
    g = gpuarr.grad(lambda x: jnp.sinc(x))(0.0)
    assert float(g) == 0.0


@pytest.mark.parametrize("name", ["logaddexp", "hypot", "floor_divide", "heaviside", "gcd"])
def test_vmap_matches_loop(name):
    fn = getattr(jnp, name)
    dtype = np.int32 if name == "gcd" else np.float32
    x, y = sample((4, 3), dtype), sample((4, 3), dtype, positive=True)
    out = gpuarr.vmap(fn)(x, y)
    loop = np.stack([np.asarray(fn(x[i], y[i])) for i in range(4)])
    np.testing.assert_array_equal(out, loop)
    # Compiled kernels call vectorised math (libmvec, device libraries) where eager ops call
    # NumPy's: an ulp apart at most.
    rtol = 0 if jit_runs_numpy_backend() else 4e-7
    np.testing.assert_allclose(gpuarr.jit(fn)(x, y), fn(x, y), rtol=rtol, atol=0)


ALL_NAMES = sorted(set(UNARY_FLOAT) | set(UNARY_SAME) | set(UNARY_BOOL) | set(BINARY)
                   | set(INT_BINARY) | {"frexp", "modf", "divmod", "ldexp", "spacing",
                                        "bitwise_count", "invert", "isclose"})


@pytest.mark.parametrize("name", ALL_NAMES)
def test_result_dtypes_match_jax(name):
    jax = pytest.importorskip("jax")
    for dtype in DTYPES:
        x = sample((3,), dtype, positive=True)
        args = (x, x) if name in BINARY or name in INT_BINARY or name in ("divmod", "isclose") \
            else (x,)
        if name == "ldexp":
            args = (x, np.arange(3, dtype=np.int32))
        try:  # abstract evaluation only: JAX gives the dtypes without compiling anything
            want = jax.eval_shape(getattr(jax.numpy, name), *args)
        except (TypeError, ValueError) as e:
            with pytest.raises(type(e)):
                getattr(jnp, name)(*args)
            continue
        with np.errstate(all="ignore"):
            got = getattr(jnp, name)(*args)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        assert [g.dtype for g in got] == [w.dtype for w in want], (name, dtype)
        assert [g.shape for g in got] == [w.shape for w in want], (name, dtype)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-50, 50, width=32), min_size=1, max_size=8),
       st.lists(st.floats(-50, 50, width=32), min_size=1, max_size=8))
def test_hypothesis_logaddexp_hypot_against_numpy(xs, ys):
    n = min(len(xs), len(ys))
    x, y = np.array(xs[:n], np.float32), np.array(ys[:n], np.float32)
    np.testing.assert_allclose(jnp.logaddexp(x, y), np.logaddexp(x.astype(np.float64), y),
                               rtol=1e-6, atol=1e-6)
    # atol: subnormal inputs and results flush to zero, as in XLA (docs/arithmetic.md).
    np.testing.assert_allclose(jnp.hypot(x, y), np.hypot(x.astype(np.float64), y), rtol=1e-6,
                               atol=np.finfo(np.float32).tiny)


@pytest.mark.parametrize("name", ["angle", "iscomplex", "isreal"])
def test_complex_inputs_use_both_parts(name):
    z = np.array([1 + 2j, -3 + 0j, -1j, 2, 0], np.complex64)
    got, want = getattr(jnp, name)(z), getattr(np, name)(z)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_maximum_and_minimum_of_booleans():
    a, b = np.array([True, False, True]), np.array([False, False, True])
    for name in ("maximum", "minimum"):
        got = getattr(jnp, name)(a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(a, b))
