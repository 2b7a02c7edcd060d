"""lax.integer_pow, max, min, sign, pow, broadcast_in_dim, gather modes and split, and the
complex max/min reductions of gpuarr.numpy, against JAX itself: the same call through gpuarr
and JAX must give the same values, shape, dtype and weak type, or the same exception."""
import ml_dtypes
import numpy as np
import pytest
from jax_compare import outcome, same_results

import gpuarr

jax = pytest.importorskip("jax")

NAN, INF = np.nan, np.inf


def _parts(a):
    a = np.asarray(a)
    if a.dtype in (ml_dtypes.bfloat16, np.float16):
        a = a.astype(np.float32)
    return (np.real(a), np.imag(a)) if a.dtype.kind == "c" else (a,)


def check(fn, *args, jit=False, exact=True, rtol=1e-6, atol=0.0):
    """fn(module, *args) through gpuarr and through JAX (arrays as each one's arrays).
    `exact`: the same values bit for bit up to NaN payloads (signed zeros included), real and
    imaginary parts separately; otherwise within `rtol` and `atol`."""
    got = outcome(gpuarr, lambda *xs: fn(gpuarr, *xs), args, jit, arrays_only=True)
    want = outcome(jax, lambda *xs: fn(jax, *xs), args, jit, arrays_only=True)
    for g, w in same_results(got, want):
        for gp, wp in zip(_parts(g), _parts(w)):
            if exact:
                np.testing.assert_array_equal(gp, wp)
                if gp.dtype.kind == "f":  # signed zeros (a NaN's sign bit is no value)
                    np.testing.assert_array_equal(np.signbit(gp) & ~np.isnan(gp),
                                                  np.signbit(wp) & ~np.isnan(wp))
            else:
                np.testing.assert_allclose(gp, wp, rtol=rtol, atol=atol, equal_nan=True)


def c64(*values):
    return np.array(values, np.complex64)


# ---------------------------------------------------------------- integer_pow


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, ml_dtypes.int4])
@pytest.mark.parametrize("y", [-1, -2, -(2 ** 40)])
@pytest.mark.parametrize("jit", [False, True])
def test_integer_pow_negative_exponent_of_integers(dtype, y, jit):
    check(lambda m, x: m.lax.integer_pow(x, y), np.array([1, 3], dtype), jit=jit)
    check(lambda m, x: m.lax.integer_pow(x, y), np.array(3, dtype), jit=jit)


def test_integer_pow_negative_exponent_messages():
    check(lambda m: m.lax.integer_pow(3, -1))  # weak: ~int32[]
    # After a positive exponent has run on the same dtype, too.
    x = np.array([[2, 3]], np.int32)
    check(lambda m, x: m.lax.integer_pow(x, 2), x)
    check(lambda m, x: m.lax.integer_pow(x, -3), x)
    check(lambda m, x: m.numpy.power(x, -1), x)


INT_BASES = [-3, -2, -1, 0, 1, 2, 3, 5, 7, 127]


@pytest.mark.parametrize("dtype,y", [
    (np.int32, 2 ** 40), (np.int32, 2 ** 40 + 1), (np.int32, 2 ** 31), (np.int32, 2 ** 31 + 3),
    (np.int32, 2 ** 31 - 1), (np.int8, 300), (np.int8, 129), (np.uint8, 256), (np.uint8, 255),
    (np.uint8, 1001), (ml_dtypes.int4, 9), (ml_dtypes.int4, 17), (np.int32, 3), (np.int8, 5)])
def test_integer_pow_integers_any_exponent(dtype, y):
    info = ml_dtypes.iinfo(dtype)
    x = np.array([v for v in INT_BASES if info.min <= v <= info.max], dtype)
    check(lambda m, x: m.lax.integer_pow(x, y), x)


@pytest.mark.parametrize("dtype,y", [
    (np.float16, 65505), (np.float16, -65505), (np.float16, 2049), (np.float16, 2 ** 40 + 1),
    (ml_dtypes.bfloat16, 65505), (ml_dtypes.bfloat16, 257), (ml_dtypes.bfloat16, -257),
    (np.float32, 2 ** 24 + 1), (np.float32, 2 ** 40 + 1), (np.float32, -(2 ** 40 + 1)),
    (np.float32, 2 ** 40), (np.float32, 2 ** 2000 + 1), (np.float32, -(2 ** 2000))])
def test_integer_pow_floats_exponent_past_the_type(dtype, y):
    x = np.array([-2.0, -1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 2.0, INF, -INF, NAN], dtype)
    check(lambda m, x: m.lax.integer_pow(x, y), x)


@pytest.mark.parametrize("y", [2 ** 40, 2 ** 40 + 1, 2 ** 40 + 2, 2 ** 40 + 3, 101, -101, 1000])
def test_integer_pow_complex_large_exponents(y):
    x = c64(1j, -1j, 1 + 0j, -1 + 0j, 0j)
    check(lambda m, x: m.lax.integer_pow(x, y), x)


@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, -1, -3, 99])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_integer_pow_small_exponents(y, dtype):
    rng = np.random.default_rng(y + 10)
    x = rng.uniform(0.5, 1.5, 64).astype(np.float32)
    if dtype == np.complex64:
        x = (x * np.exp(1j * rng.uniform(-3, 3, 64))).astype(dtype)
    # Real floats as XLA computes them, bit for bit: each multiplication rounds.
    exact = dtype == np.float32
    check(lambda m, x: m.lax.integer_pow(x, y), x, exact=exact, rtol=2e-5 * max(abs(y), 1))


def test_integer_pow_large_exponent_under_jit_and_grad():
    x = np.array([3, 2, -1, 5], np.int32)
    check(lambda m, x: m.lax.integer_pow(x, 2 ** 40 + 1), x, jit=True)
    f = np.array([-1.0, 1.0], np.float32)
    check(lambda m, x: m.lax.integer_pow(x, 2 ** 24 + 1), f, jit=True)
    check(lambda m, x: m.grad(lambda v: m.lax.integer_pow(v, 2 ** 24 + 1).sum())(x), f)


# ---------------------------------------------------------------- max and min

CX = c64(1 + 1j, 1 + 2j, NAN + 0j, 2 + 0j, 1 + 0j, complex(1, NAN), 3 + 0j, complex(NAN, NAN),
         0j, complex(-0.0, 0.0), complex(0.0, -0.0), complex(INF, 1), -INF + 0j)
CY = c64(1 + 2j, 1 + 1j, 2 + 0j, NAN + 0j, complex(1, NAN), 1 + 0j, complex(3, NAN), 5 + 0j,
         complex(-0.0, 0.0), 0j, 0j, complex(INF, 2), complex(-INF, -1))


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("jit", [False, True])
def test_max_min_complex(name, jit):
    check(lambda m, x, y: getattr(m.lax, name)(x, y), CX, CY, jit=jit)
    check(lambda m, x, y: getattr(m.lax, name)(x, y), CY, CX, jit=jit)
    check(lambda m, x, y: getattr(m.numpy, name + "imum")(x, y), CX, CY, jit=jit)
    check(lambda m, x: getattr(m.numpy, name + "imum")(x, 1 + 0j), CX, jit=jit)
    check(lambda m, x: getattr(m.lax, name)(x, x[2]), CX, jit=jit)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_real_unchanged(name):
    x = np.array([1.0, NAN, -0.0, 0.0, INF, 2.0], np.float32)
    y = np.array([NAN, 1.0, -1.0, 1.0, 3.0, -INF], np.float32)
    check(lambda m, x, y: getattr(m.lax, name)(x, y), x, y)
    check(lambda m, x, y: getattr(m.lax, name)(x, y), x, y, jit=True)
    i = np.array([3, -2, 7], np.int32)
    check(lambda m, x, y: getattr(m.lax, name)(x, y), i, i[::-1].copy(), jit=True)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_complex_grad(name):
    x = c64(1 + 1j, 3j, 2j, 3 + 0j)
    check(lambda m, x: m.grad(lambda v: getattr(m.numpy, name)(v, 1 + 1j).real.sum())(x), x)


# ---------------------------------------------------------------- sign


SIGN_CASES = c64(INF + 1j, 1 + INF * 1j, complex(INF, INF), complex(-INF, 2), 0j,
                 complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0), 3 + 4j, -3 - 4j,
                 complex(NAN, 1), complex(1, NAN), 1e-30 + 1e-30j, 1e30 - 1e30j, 5j, -2 + 0j)


@pytest.mark.parametrize("jit", [False, True])
def test_sign_complex(jit):
    check(lambda m, x: m.lax.sign(x), SIGN_CASES, jit=jit)
    check(lambda m, x: m.numpy.sign(x), SIGN_CASES, jit=jit)


def test_sign_complex_random_and_grad():
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))).astype(np.complex64)
    check(lambda m, x: m.lax.sign(x), x, exact=False)
    check(lambda m, x: m.grad(lambda v: m.numpy.sign(v).real.sum())(x), x[0])
    check(lambda m, x: m.lax.sign(x), np.array([-0.0, 0.0, -2.0, NAN, INF], np.float32))


# ---------------------------------------------------------------- pow of a complex zero

_PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, INF, -INF, NAN]
EXPONENTS = np.array([complex(a, b) for a in _PARTS for b in _PARTS], np.complex64)


@pytest.mark.parametrize("base", [0j, complex(-0.0, 0.0), complex(0.0, -0.0),
                                  complex(-0.0, -0.0)], ids=str)
def test_pow_complex_zero_base(base):
    check(lambda m, x, y: m.lax.pow(x, y), np.full(EXPONENTS.shape, base, np.complex64),
          EXPONENTS)


def test_pow_complex_zero_base_jit_and_numpy():
    x = c64(0j, 0j, 0j, 0j, 1 + 1j)
    y = c64(1 + 1j, 2 + 0j, 0j, -1 + 0j, 2 + 0j)
    # XLA computes (1 + 1j) ** 2 as exp(2 log(1 + 1j)): its real part is -8.7e-8, not 0
    check(lambda m, x, y: m.lax.pow(x, y), x, y, jit=True, exact=False, atol=1e-6)
    check(lambda m, x, y: m.numpy.power(x, y), x, y, exact=False, atol=1e-6)
    check(lambda m, x: m.lax.pow(x, np.array([2, 0, -1], np.int32)), x[:3])


POW_BASE = np.array([0.0, 0.5, 1.5, 2.0], np.float32)
POW_CASES = {
    "python_int": lambda m, x: m.lax.pow(x, 2),
    "python_float": lambda m, x: m.lax.pow(x, 2.0),
    "int32_scalar": lambda m, x: m.lax.pow(x, np.int32(3)),
    "int32_array": lambda m, x: m.lax.pow(x, np.array([0, 2, -1, 3], np.int32)),
    "uint8": lambda m, x: m.lax.pow(x, np.uint8(2)),
    "float16_int": lambda m, x: m.lax.pow(x.astype(np.float16), np.int32(2)),
    "complex_int": lambda m, x: m.lax.pow(x.astype(np.complex64), np.int32(2)),
    "float16_python_float": lambda m, x: m.lax.pow(x.astype(np.float16), 2.0),  # TypeError
    "bool_exponent": lambda m, x: m.lax.pow(x, x > 1),  # TypeError
    "int_base": lambda m, x: m.lax.pow(x.astype(np.int32), np.int32(2)),  # TypeError
    # Derivatives: an integer exponent of 0 has derivative 0, a float one NaN at x = 0.
    "grad_int_exponent": lambda m, x: m.grad(
        lambda x: m.lax.pow(x, np.array([0, 2, -1, 3], np.int32)).sum())(x),
    "grad_float_zero_exponent": lambda m, x: m.grad(lambda x: m.lax.pow(x, 0.0).sum())(x),
    "grad_exponent": lambda m, x: m.grad(lambda y: m.lax.pow(x + 1, y).sum())(x),
}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name", sorted(POW_CASES))
def test_pow_exponents_of_integer_and_float_types(name, jit):
    # JAX's pow keeps an integer exponent as it is (XLA converts it to the base's type).
    # The derivative in the exponent goes through log and pow: within an ulp of XLA's.
    check(POW_CASES[name], POW_BASE, jit=jit, exact=name != "grad_exponent", rtol=3e-7)
    if "float16_python" not in name and "bool" not in name and "int_base" not in name:
        printed = [str(api.make_jaxpr(lambda x: POW_CASES[name](api, x))(POW_BASE))
                   for api in (gpuarr, jax)]
        assert printed[0] == printed[1]


# ---------------------------------------------------------------- broadcast_in_dim


@pytest.mark.parametrize("shape,dims,x", [
    ((-1,), (), np.float32(1)), ((2, -1), (0,), np.ones(2, np.float32)),
    ((2, 3), (-1,), np.ones(3, np.float32)), ((2, 3), (1,), np.ones(3, np.float32)),
    ((0, 3), (1,), np.ones(3, np.float32))], ids=str)
@pytest.mark.parametrize("jit", [False, True])
def test_broadcast_in_dim_shapes(shape, dims, x, jit):
    check(lambda m, x: m.lax.broadcast_in_dim(x, shape, dims), np.asarray(x), jit=jit)


def test_broadcast_negative_size():
    check(lambda m, x: m.lax.broadcast(x, (-2,)), np.ones(3, np.float32))


# ---------------------------------------------------------------- gather modes


@pytest.mark.parametrize("mode", ["bogus", "CLIP", 3, "clip", "fill", "promise_in_bounds"])
def test_gather_modes(mode):
    def fn(m, x, i):
        dnums = m.lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                             start_index_map=(0,))
        return m.lax.gather(x, i, dnums, (1,), mode=mode, fill_value=-1)
    check(fn, np.arange(3, dtype=np.float32), np.array([[1], [5]], np.int32))


# ---------------------------------------------------------------- split


@pytest.mark.parametrize("sizes", [[-1, 4], [4, -1], [5, -2], [], [1, 1], [1, 2], [0, 3, 0],
                                   (2, 1)], ids=str)
def test_split_sizes(sizes):
    check(lambda m, x: m.lax.split(x, sizes), np.arange(3, dtype=np.float32))


def test_split_axis():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(lambda m, x: m.lax.split(x, [1, -1, 4], axis=-1), x)
    check(lambda m, x: m.lax.split(x, [3, 1], axis=1), x)
    check(lambda m, x: m.lax.split(x, [], axis=0), x)


def test_split_transformations():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def loss(m, x):
        a, b = m.lax.split(x, [1, 3], axis=1)
        return (a * 2 + m.numpy.sin(b).sum(1, keepdims=True)).sum()
    check(lambda m, x: m.grad(lambda x: loss(m, x))(x), x, exact=False)
    check(lambda m, x: m.tree_util.tree_leaves(
        m.jvp(lambda x: m.lax.split(x, [2, 1], 0), (x,), (x * 3,))), x)
    check(lambda m, x: m.vmap(lambda r: m.lax.split(r, [3, 1]), in_axes=0, out_axes=1)(x), x)
    check(lambda m, x: m.lax.split(x, (np.int64(2), np.int64(1))), x, jit=True)


# ---------------------------------------------------------------- stack and unstack


@pytest.mark.parametrize("axis", [0, 1, -1, 2, 3, -4], ids=str)
def test_stack_axes(axis):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda m, x: m.lax.stack([x, x * 2, x + 1], axis), x)
    check(lambda m, x: m.lax.unstack(x, axis % 4 - 2 if axis in (-1, 2) else 0), x)


def test_stack_unstack_errors_and_transformations():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda m, x: m.lax.stack([x, x[0]]), x)
    check(lambda m, x: m.lax.stack([x, x.T]), x)
    check(lambda m, x: m.lax.stack([]), x)
    check(lambda m, x: m.lax.unstack(x[0, 0]), x)
    check(lambda m, x: m.lax.unstack(x, 2), x)
    check(lambda m, x: m.grad(lambda x: (m.lax.stack([x, x * x], 1) ** 2).sum())(x), x,
          exact=False)
    check(lambda m, x: m.grad(lambda x: m.lax.unstack(x * x, 1)[2].sum())(x), x, exact=False)
    check(lambda m, x: m.vmap(lambda r: m.lax.stack([r, r * 2], 0), in_axes=1)(x), x)
    check(lambda m, x: m.vmap(lambda r, s: m.lax.stack([r, s], 1), in_axes=(0, None))(
        x, x[0]), x)
    check(lambda m, x: m.vmap(lambda r: m.lax.unstack(r), in_axes=1, out_axes=0)(x), x)
    check(lambda m, x: m.jit(lambda x: m.lax.unstack(m.lax.stack([x, x], 2), 1))(x), x)


def test_split_prints_as_jax():
    x = np.ones((2, 4), np.float32)
    for fn in (lambda m: lambda x: m.lax.split(x, (1, 3), axis=-1),
               lambda m: lambda x: m.grad(lambda x: (m.lax.split(x, (1, 1))[1] ** 2).sum())(x),
               lambda m: m.nn.glu, lambda m: m.grad(lambda x: m.nn.glu(x).sum()),
               lambda m: lambda x: m.numpy.split(x, [1, 3], axis=1),
               lambda m: lambda x: m.numpy.stack([x, x], -1),
               lambda m: lambda x: m.numpy.unstack(x, axis=1),
               lambda m: m.grad(lambda x: m.numpy.stack([x, x * x]).sum()),
               lambda m: m.vmap(lambda r: m.numpy.unstack(m.numpy.stack([r, r]), axis=1))):
        want = jax.make_jaxpr(fn(jax))(x).pretty_print(use_color=False)
        assert str(gpuarr.make_jaxpr(fn(gpuarr))(x)) == want


# ---------------------------------------------------------------- complex max/min reductions


def _complex_data(shape, nan_fraction, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    re = rng.integers(-3, 4, n).astype(np.float32)
    im = rng.integers(-3, 4, n).astype(np.float32)
    re[rng.random(n) < nan_fraction] = NAN
    im[rng.random(n) < nan_fraction] = NAN
    re[rng.random(n) < 0.1] *= -0.0
    im[rng.random(n) < 0.1] *= -0.0
    return (re + 1j * im).astype(np.complex64).reshape(shape)


@pytest.mark.parametrize("name", ["max", "min"])
def test_reduce_complex_examples(name):
    x = c64(1 + 1j, NAN + 0j, 2j)
    check(lambda m, x: getattr(m.numpy, name)(x), x)
    check(lambda m, x: getattr(m.numpy, name)(x), c64(NAN + 0j, 1 + 1j, 2j, complex(0, NAN)))
    check(lambda m, x: getattr(m.numpy, name + "imum").reduce(x), x)
    check(lambda m, x: getattr(m.numpy, name)(x), x, jit=True)
    check(lambda m, x: getattr(m.numpy, name)(x[:0], initial=1j), x)


# Axes longer than 32 are reduced by XLA in windows of 32 (the order shows with NaN parts).
@pytest.mark.parametrize("shape,axis", [
    ((7,), None), ((33,), None), ((100,), 0), ((2000,), None), ((40, 50), None), ((40, 50), 1),
    ((40, 50), 0), ((3, 70, 5), 1), ((70, 3, 40), (0, 2)), ((4, 0), 1), ((3, 4), ())], ids=str)
@pytest.mark.parametrize("name", ["max", "min"])
def test_reduce_complex_orders(shape, axis, name):
    for seed, fraction in enumerate([0.02, 0.2]):
        x = _complex_data(shape, fraction, seed)
        check(lambda m, x: getattr(m.numpy, name)(x, axis=axis), x)
        check(lambda m, x: getattr(m.lax, "reduce_" + name)(x, (0,)), x.reshape(-1))


@pytest.mark.parametrize("name", ["max", "min"])
def test_reduce_complex_keywords(name):
    x = _complex_data((4, 6), 0.2, 7)
    where = np.random.default_rng(0).random((4, 6)) < 0.6
    check(lambda m, x: getattr(m.numpy, name)(x, axis=1, keepdims=True), x)
    check(lambda m, x: getattr(m.numpy, name)(x, axis=-1, where=where, initial=1 + 1j), x)
    check(lambda m, x: getattr(m.numpy, name)(x, where=where), x)
    check(lambda m, x: getattr(m.numpy, name)(x, initial=2 + 0j), x)
    check(lambda m, x: getattr(m.numpy, name + "imum").reduce(x, axis=0), x, jit=True)
    check(lambda m, x: m.vmap(lambda r: getattr(m.lax, "reduce_" + name)(r, (0,)))(x), x)
